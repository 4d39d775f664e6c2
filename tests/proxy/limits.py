#!/usr/bin/python3
"""execd-proxy limits and chaining: header and idle timeouts, connect timeout,
the global connection limits, and an upstream HTTP proxy (tinyproxy) for
CONNECT, SOCKS5 and forwarded requests."""

import socket
import time

from proxytest import (EchoServer, Origin, Proxy, Tap, connect_via_http, curl, deadline,
                       start_tinyproxy)

deadline(90)
t = Tap()
origin = Origin()
echo = EchoServer()

P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nheader-timeout 300ms\n"
          "idle-timeout 600ms\nmax-pending 2\nmax-connections 5\n")
c = P.register(tags={"process_id": "lim"})
host, port = P.http.rsplit(":", 1)

s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(b"GET http://127.0.0.1/ HTTP/1.1\r\n")
t0 = time.time()
t.eq(s.recv(100), b"", "an incomplete request head is dropped after header-timeout")
t.ok(time.time() - t0 < 2, "... promptly")
s.close()

tun, status, _ = connect_via_http(P.http, "127.0.0.1:%d" % echo.port, c)
t.eq(status, "HTTP/1.1 200 OK", "tunnel open")
tun.sendall(b"x")
t.eq(tun.recv(10), b"x", "tunnel works")
tun.settimeout(5)
t0 = time.time()
t.eq(tun.recv(10), b"", "an idle tunnel is closed after idle-timeout")
t.ok(0.4 < time.time() - t0 < 3, "... after about 600 ms", time.time() - t0)
tun.close()
ev = P.wait_audit(lambda e: e["event"] == "close" and e.get("result") == "idle_timeout")
t.ok(ev is not None and ev["bytes_up"] == 1, "audit: close result idle_timeout", ev)

# max-pending 2: a third unauthenticated connection makes room by closing the oldest
idle = [socket.create_connection((host, int(port)), timeout=5) for _ in range(2)]
time.sleep(0.1)
third = socket.create_connection((host, int(port)), timeout=5)
t.eq(idle[0].recv(10), b"", "over max-pending: the oldest unauthenticated one is closed")
third.settimeout(0.2)
try:
    t.ok(third.recv(10) is None, "the newest stays")
except socket.timeout:
    t.ok(True, "the newest stays")
t.ok("connection limit reached" in P.logtext(), "limit logged")
for s in idle + [third]:
    s.close()
time.sleep(0.4)
t.eq(curl("-x", c.http_url, "http://127.0.0.1:%d/" % origin.port).code, 200,
     "requests work again once the idle connections are gone")
t.eq(P.stop(), 0, "proxy exits 0")

# connect timeout: a listener whose backlog is full never completes the handshake
P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nconnect-timeout 500ms\n")
c = P.register()
blackhole = socket.socket()
blackhole.bind(("127.0.0.1", 0))
blackhole.listen(0)
bport = blackhole.getsockname()[1]
fillers = []
for _ in range(4):
    f = socket.socket()
    f.setblocking(False)
    f.connect_ex(("127.0.0.1", bport))
    fillers.append(f)
time.sleep(0.1)
# does the kernel still complete handshakes on this listener?  A probe of our own says so
# before the proxy is asked: only then is a skip honest, never for the proxy's answer
probe = socket.socket()
probe.settimeout(0.3)
try:
    probe.connect(("127.0.0.1", bport))
    full = False
except (socket.timeout, OSError):
    full = True
probe.close()
if not full:
    t.skip("connect-timeout: 504 Gateway Timeout", "the kernel completes handshakes on a "
           "listener with a full backlog here")
else:
    t0 = time.time()
    r = curl("-x", c.http_url, "http://127.0.0.1:%d/" % bport, timeout=10)
    dt = time.time() - t0
    t.ok(r.code == 504 and dt < 5, "connect-timeout: 504 Gateway Timeout (%.2fs)" % dt, r)
for f in fillers:
    f.close()
blackhole.close()
t.eq(P.stop(), 0, "proxy exits 0")

# an upstream proxy: tinyproxy on loopback
tiny = start_tinyproxy("BasicAuth up secret\n")
if tiny is None:
    t.skip("upstream via tinyproxy", "tinyproxy not installed or not listening")
    t.done()
tp, tport, tlog = tiny

P = Proxy("listen http 127.0.0.1:0\nlisten socks5 127.0.0.1:0\nallow 127.0.0.1 localhost\n"
          "allow-local yes\nupstream http://up:secret@127.0.0.1:%d\n" % tport)
c = P.register()
r = curl("-x", c.http_url, "http://127.0.0.1:%d/chained" % origin.port)
t.ok(r.code == 200 and "GET /chained" in r.body, "forwarded request through the upstream proxy", r)
tun, status, _ = connect_via_http(P.http, "127.0.0.1:%d" % echo.port, c)
t.eq(status, "HTTP/1.1 200 OK", "CONNECT through the upstream proxy")
tun.sendall(b"via upstream")
t.eq(tun.recv(100), b"via upstream", "tunnel through the upstream proxy relays data")
tun.close()
r = curl("-x", c.socks_url, "http://localhost:%d/socks-chained" % origin.port)
t.ok(r.code == 200, "SOCKS5 through the upstream proxy", r)
time.sleep(0.3)
log = open(tlog).read()
t.ok("CONNECT" in log and "chained" in log, "tinyproxy saw the requests", log[-600:])
r = curl("-x", c.http_url, "http://evil.test/")
t.eq(r.code, 403, "policy still applies before the upstream proxy")
t.eq(P.stop(), 0, "proxy exits 0")

P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nupstream http://up:wrong@127.0.0.1:%d\n"
          % tport)
c = P.register()
r = curl("-p", "-x", c.http_url, "http://127.0.0.1:%d/" % origin.port)
t.eq(r.connect_code, 502, "upstream proxy refusing CONNECT: 502")
t.eq(P.stop(), 0, "proxy exits 0")
t.done()
