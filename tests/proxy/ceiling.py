#!/usr/bin/python3
"""The operator's policy is a ceiling: every field of a process policy
(allow, deny, ports, allow_local, mode, socks5, socks5_udp, enabled) can
only narrow the configuration's, never widen it.  Each field is tried
with a process policy wider than the configuration's."""

import socket

from proxytest import (Dnsmasq, EchoServer, Origin, Proxy, Tap, connect_via_http, curl,
                       deadline, raw_http, socks_open)

deadline(90)
t = Tap()
origin = Origin()
echo = EchoServer()
O, E = origin.port, echo.port
dns = Dnsmasq({"a.test": "127.0.0.1", "b.test": "127.0.0.1", "d.test": "127.0.0.1"})
UDP_ASSOC = b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00"


def socks_connect(P, C, host, port):
    h = host.encode()
    s, rep = socks_open(P, C, b"\x05\x01\x00\x03" + bytes([len(h)]) + h + port.to_bytes(2, "big"))
    s.close()
    return rep[1] if len(rep) > 1 else -1


def refused(P, C, host, port, what):
    r = curl("-x", C.http_url, "http://%s:%d/x" % (host, port))
    t.ok(r.code == 403, what + " (HTTP)", r)
    t.ok(socks_connect(P, C, host, port) not in (0, -1), what + " (SOCKS5)")


# ------------------------------------------------ narrow global, local off
A = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
dns-server %s
allow a.test d.test
deny d.test
allow-local no
""" % dns.server)
C = A.register(policy={"allow": ["*"]})
refused(A, C, "b.test", O, "allow: a process's \"*\" does not reach a host the configuration does not allow")
C = A.register(policy={"allow": ["*"], "deny": []})
refused(A, C, "d.test", O, "deny: a process without the deny still cannot reach a denied host")
C = A.register(policy={"allow": ["a.test", "127.0.0.1"], "allow_local": True})
t.ok(C.reply.get("allow_local") is False, "allow_local: the register reply says no",
     C.reply)
refused(A, C, "a.test", O, "allow_local: a process's true does not reach a local address")
r = curl("-x", C.http_url, "http://127.0.0.1:%d/x" % O)
t.ok(r.code == 403, "allow_local: nor a local literal the process allows", r)

# ------------------------------------------- local on, ports, limited mode
B = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
dns-server %s
allow a.test 127.0.0.1
allow-local yes
ports %d
mode limited
socks5-udp no
""" % (dns.server, O))
C = B.register(policy={"allow": ["a.test"], "ports": ["1-65535"]})
refused(B, C, "a.test", E, "ports: a process's 1-65535 does not open a port the configuration lacks")

C = B.register(policy={"allow": ["a.test"], "mode": "full"})
r = curl("-x", C.http_url, "-d", "body", "http://a.test:%d/x" % O)
t.ok(r.code == 403 and not any(q["method"] == "POST" for q in origin.requests),
     "mode: a process's full does not let a POST through limited mode", r)
# CONNECT: inspected (the CA answers) or refused, never an opaque tunnel
B2 = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
dns-server %s
allow a.test
allow-local yes
mode limited
""" % dns.server)
B3 = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
dns-server %s
allow a.test
allow-local yes
mode limited
inspect no
""" % dns.server)


def opaque(P, what, policy):
    C = P.register(policy=policy)
    s, status, head = connect_via_http(P.http, "a.test:%d" % E, C)
    echoed = b""
    if status.startswith("HTTP/1.1 200"):
        s.settimeout(2)
        s.sendall(b"opaque bytes, not TLS\r\n\r\n")
        try:
            echoed = s.recv(100)
        except OSError:
            pass
    s.close()
    t.ok(b"opaque bytes" not in echoed,
         "mode: a process's full gets no opaque CONNECT tunnel under limited mode, " + what,
         (status, echoed))
    rep = socks_connect(P, C, "a.test", E)
    t.ok(rep not in (0, -1), "mode: nor an opaque SOCKS5 tunnel, " + what, rep)


for policy in ({"allow": ["a.test"], "mode": "full"}, {"mode": "full"},
               {"allow": ["*"], "mode": "full", "allow_local": True}):
    opaque(B2, "inspection on, %s" % policy, policy)
    opaque(B3, "inspection off, %s" % policy, policy)

C = B.register(policy={"allow": ["a.test"], "socks5_udp": True})
s, rep = socks_open(B, C, UDP_ASSOC)
s.close()
t.ok(len(rep) > 1 and rep[1] != 0, "socks5_udp: a process's true gets no association", rep)
t.ok(C.reply.get("socks5_enabled") is True, "socks5: still offered when both allow it")

# enabled / socks5: a process can turn them off, not on (there is no global switch to
# widen; narrowing must hold)
C = B.register(policy={"allow": ["a.test"], "socks5": False})
t.ok(socks_connect(B, C, "a.test", O) not in (0, -1), "socks5: a process's false is kept")
C = B.register(policy={"allow": ["a.test"], "enabled": False})
r = curl("-x", C.http_url, "http://a.test:%d/x" % O)
t.ok(r.code in (403, 503) and r.header("x-proxy-error") is not None,
     "enabled: a process's false refuses everything", r)
t.done()
