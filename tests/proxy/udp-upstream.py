#!/usr/bin/python3
"""SOCKS5 UDP never bypasses an upstream proxy: with an upstream HTTP proxy
configured (which cannot carry datagrams) and socks5-udp yes, UDP
ASSOCIATE is refused and audited, and no datagram leaves the proxy's own
socket; TCP still goes through the upstream."""

import socket

from proxytest import (Proxy, Tap, deadline, free_port, socks_open, start_tinyproxy)

deadline(60)
t = Tap()
tp = start_tinyproxy()
if tp is None:
    t.skip("UDP with an upstream", "tinyproxy is not installed")
    t.done()
_, tp_port, _ = tp
P = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
allow *
allow-local yes
socks5-udp yes
upstream http://127.0.0.1:%d
""" % tp_port)
C = P.register()
target = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
target.bind(("127.0.0.1", 0))
target.settimeout(1)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
s, rep = socks_open(P, C, b"\x05\x03\x00\x01\x7f\x00\x00\x01" +
                    u.getsockname()[1].to_bytes(2, "big"))
got = b""
if len(rep) >= 10 and rep[1] == 0:
    relay = (socket.inet_ntoa(rep[4:8]), int.from_bytes(rep[8:10], "big"))
    u.sendto(b"\x00\x00\x00\x01\x7f\x00\x00\x01" + target.getsockname()[1].to_bytes(2, "big") +
             b"direct", relay)
    try:
        got = target.recvfrom(100)[0]
    except OSError:
        pass
s.close()
t.ok(len(rep) > 1 and rep[1] == 2, "UDP ASSOCIATE with an upstream: refused (not allowed)", rep)
t.ok(got == b"", "no datagram goes around the upstream", got)
ev = P.wait_audit(lambda e: e.get("method") == "UDP_ASSOCIATE")
t.ok(ev is not None and ev.get("decision") == "deny" and ev.get("reason") == "udp_via_upstream",
     "the refusal is audited (udp_via_upstream)", ev)
t.ok(C.reply.get("socks5_enabled") is True, "SOCKS5 TCP is still offered")
t.done()
