#!/usr/bin/python3
"""execd-proxy bounds on unauthenticated connections: an idle flood of 4,096
connections, from another address or from the client's own, does not keep a
legitimate client from being served promptly; the per-source cap holds."""

import base64
import resource
import socket
import time

from proxytest import EchoServer, Proxy, Tap, deadline

deadline(120)
t = Tap()
echo = EchoServer()
FLOOD = 4096
BOUND = 2.0		# seconds; the target is well under one

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = 2 * FLOOD + 512
if hard != resource.RLIM_INFINITY and hard < want:
    t.skip("idle flood", "RLIMIT_NOFILE hard limit %d < %d" % (hard, want))
    t.done()
resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def flood(proxy, source, n):
    host, port = proxy.http.rsplit(":", 1)
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((source, 0))
        s.connect((host, int(port)))
        socks.append(s)
    return socks


def served_in(proxy, creds):
    """Seconds until a CONNECT through the proxy answered 200 (None: not served)."""
    host, port = proxy.http.rsplit(":", 1)
    tok = base64.b64encode(("%s:%s" % (creds.id, creds.secret)).encode()).decode()
    start = time.time()
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Basic %s"
               "\r\n\r\n" % (echo.port, tok)).encode())
    try:
        data = s.recv(100)
    except OSError:
        data = b""
    took = time.time() - start
    s.close()
    return took if data.startswith(b"HTTP/1.1 200") else None


P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nallow-local yes\n")
c = P.register()
idle = flood(P, "127.0.0.2", FLOOD)
time.sleep(0.5)
took = served_in(P, c)
t.ok(took is not None and took < BOUND, "%d idle connections from another address: a client "
     "is still served (%s s)" % (FLOOD, "%.3f" % took if took is not None else "never"))
more = flood(P, "127.0.0.1", 200)
time.sleep(0.3)
took = served_in(P, c)
t.ok(took is not None and took < BOUND, "and with more idle ones from its own address "
     "(%s s)" % ("%.3f" % took if took is not None else "never"))
st = P.call("status")
t.ok(st["pending"] <= 4096, "unauthenticated connections stay within max-pending", st["pending"])
for s in idle + more:
    s.close()
P.stop()

Q = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nallow-local yes\n"
          "max-pending-per-source 100\n")
q = Q.register()
idle = flood(Q, "127.0.0.2", 300)
time.sleep(0.5)
st = Q.call("status")
t.ok(st["pending"] <= 100, "max-pending-per-source 100 holds (%d pending)" % st["pending"])
took = served_in(Q, q)
t.ok(took is not None and took < BOUND, "a client from another address is served")
for s in idle:
    s.close()
Q.stop()
t.done()
