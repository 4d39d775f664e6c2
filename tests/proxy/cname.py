#!/usr/bin/python3
"""A name denied by policy is not reached through another name whose CNAME
chain leads to it: every name of the chain c-ares returns is checked
against the deny lists (the configuration's and the process's), over
HTTP, CONNECT, SOCKS5 and SOCKS5 UDP, and the refusal is audited."""

import socket

from proxytest import (Dnsmasq, EchoServer, Origin, Proxy, Tap, connect_via_http, curl,
                       deadline, socks_open)

deadline(60)
t = Tap()
origin = Origin()
echo = EchoServer()
O, E = origin.port, echo.port
# cname -> secret (denied); two -> mid -> secret (a longer chain); ok -> fine (allowed)
dns = Dnsmasq({"plain.example.test": "127.0.0.1"},
              ["--host-record=secret.example.test,127.0.0.1",
               "--host-record=fine.example.test,127.0.0.1",
               "--cname=cname.example.test,secret.example.test",
               "--cname=mid.example.test,secret.example.test",
               "--cname=two.example.test,mid.example.test",
               "--cname=ok.example.test,fine.example.test",
               "--cname=UPPER.example.test,Secret.Example.Test"])
P = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
dns-server %s
allow *
allow-local yes
socks5-udp yes
deny secret.example.test
""" % dns.server)
C = P.register()

r = curl("-x", C.http_url, "http://ok.example.test:%d/x" % O)
t.ok(r.code == 200, "an allowed name through an allowed CNAME connects", r)
for name in ("cname.example.test", "two.example.test", "upper.example.test"):
    n0 = len(origin.requests)
    r = curl("-x", C.http_url, "http://%s:%d/x" % (name, O))
    t.ok(r.code == 403 and len(origin.requests) == n0,
         "HTTP: %s (CNAME to the denied name) is refused" % name, r)
    ev = P.wait_audit(lambda e: e.get("host") == name and e.get("decision") == "deny")
    t.ok(ev is not None and ev.get("reason") == "denied", "HTTP: %s: audited as denied" % name,
         ev)
s, status, _ = connect_via_http(P.http, "cname.example.test:%d" % E, C)
s.close()
t.ok(status.split(" ")[1:2] == ["403"], "CONNECT: refused", status)
h = b"cname.example.test"
s, rep = socks_open(P, C, b"\x05\x01\x00\x03" + bytes([len(h)]) + h + E.to_bytes(2, "big"))
s.close()
t.ok(len(rep) > 1 and rep[1] == 2, "SOCKS5: refused (not allowed by ruleset)", rep)

# UDP: a datagram to the CNAME is dropped and recorded
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
target = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
target.bind(("127.0.0.1", 0))
target.settimeout(1)
up = u.getsockname()[1]
s, rep = socks_open(P, C, b"\x05\x03\x00\x01\x7f\x00\x00\x01" + up.to_bytes(2, "big"))
if len(rep) >= 10 and rep[1] == 0:
    relay = (socket.inet_ntoa(rep[4:8]), int.from_bytes(rep[8:10], "big"))
    u.sendto(b"\x00\x00\x00\x03" + bytes([len(h)]) + h +
             target.getsockname()[1].to_bytes(2, "big") + b"ping", relay)
    try:
        got = target.recvfrom(100)[0]
    except OSError:
        got = b""
    t.ok(got == b"", "UDP: a datagram to the CNAME is not delivered", got)
    ev = P.wait_audit(lambda e: e.get("host") == "cname.example.test" and
                      e.get("protocol", "").startswith("socks5-udp") or
                      (e.get("host") == "cname.example.test" and e.get("method") == "UDP"))
    t.ok(ev is not None and ev.get("decision") == "deny", "UDP: the refusal is audited", ev)
else:
    t.ok(False, "UDP association granted", rep)
s.close()

# the process's own deny list is checked against the chain too
C2 = P.register(policy={"allow": ["*"], "deny": ["fine.example.test"], "allow_local": True})
r = curl("-x", C2.http_url, "http://ok.example.test:%d/x" % O)
t.ok(r.code == 403, "a process's deny holds for a CNAME to it", r)
r = curl("-x", C.http_url, "http://plain.example.test:%d/x" % O)
t.ok(r.code == 200, "a name without a CNAME is unaffected", r)
t.eq(P.stop(), 0, "execd-proxy exits 0 (and clean under the sanitizers)")
t.done()
