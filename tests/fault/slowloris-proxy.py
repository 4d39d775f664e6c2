#!/usr/bin/python3
"""Slowloris on execd-proxy's listeners: a client trickling its HTTP request head or
its SOCKS5 handshake is cut off at header-timeout, while a normal client is served."""
import socket
import time

from proxytest import Origin, Proxy, Tap, curl, deadline, free_port

deadline(60)
t = Tap()
origin = Origin()
hport, sport = free_port(), free_port()
P = Proxy("listen http 127.0.0.1:%d\nlisten socks5 127.0.0.1:%d\nallow 127.0.0.1\n"
          "header-timeout 1s\n" % (hport, sport))
cred = P.register(tags={"process_id": "slowloris"})


def trickle(port, head, n=30, limit=6.0):
    """n clients sending one byte every 0.2 s; returns when each was closed."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        socks.append([s, 0, None])
    t0 = time.time()    # after the connects: each close is measured a little short
    while time.time() - t0 < limit and any(c[2] is None for c in socks):
        for c in socks:
            if c[2] is not None:
                continue
            try:
                if c[1] < len(head):
                    c[0].send(head[c[1]:c[1] + 1])
                    c[1] += 1
                if c[0].recv(4096) == b"":
                    c[2] = time.time() - t0
            except BlockingIOError:
                pass
            except OSError:
                c[2] = time.time() - t0
        time.sleep(0.2)
    for c in socks:
        c[0].close()
    return [c[2] for c in socks]


url = "http://127.0.0.1:%d/" % origin.port
closed = trickle(hport, ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: %s\r\n\r\n"
                         % (url, "a" * 200)).encode())
# cut off at header-timeout (1 s), not before: a close at once (a refusal, a parse error,
# a crash) is not a timeout
t.ok(all(c is not None and 0.9 <= c < 3.0 for c in closed),
     "HTTP listener: 30 trickling clients cut off at header-timeout", closed)
r = curl("-x", cred.http_url, url)
t.eq(r.code, 200, "a normal client is served meanwhile")
# a well-formed greeting and user/password sub-negotiation, too slow to finish
closed = trickle(sport, b"\x05\x01\x02\x01\x20" + b"u" * 32 + b"\x20" + b"p" * 32)
t.ok(all(c is not None and 0.9 <= c < 3.0 for c in closed),
     "SOCKS5 listener: 30 trickling handshakes cut off at header-timeout", closed)
P.stop()
t.done()
