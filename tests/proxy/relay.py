#!/usr/bin/python3
"""execd-proxy relays: bulk data both ways, byte for byte, through CONNECT and
SOCKS5, with splice(2) and with the read/write fallback (splice no); an HTTP
Upgrade forwarded from an absolute-URI request; early client data; the
size of a tunnel's pipes (default until data queues, then 1 MiB)."""

import hashlib
import os
import socket
import struct
import threading

from proxytest import Proxy, Tap, connect_via_http, deadline, socks_open

deadline(120)
t = Tap()
SIZE = 24 << 20
blob = os.urandom(SIZE)
want = hashlib.sha256(blob).hexdigest()


class Reverser(threading.Thread):
    """Reads SIZE bytes, answers with their SHA-256 and then the bytes reversed
    in 1 MiB blocks, while still reading: both directions busy at once."""

    def __init__(self):
        super().__init__(daemon=True)
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        self.start()

    def run(self):
        while True:
            c, _ = self.ls.accept()
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    @staticmethod
    def serve(c):
        h = hashlib.sha256()
        got = 0
        while got < SIZE:
            d = c.recv(1 << 20)
            if not d:
                break
            h.update(d)
            got += len(d)
            c.sendall(d[::-1])
        c.sendall(h.hexdigest().encode())
        c.shutdown(socket.SHUT_WR)
        c.close()


rev = Reverser()


def exchange(s):
    """Send the blob while reading the echo; returns (digest line, echoed bytes ok)."""
    out = bytearray()

    def reader():
        while True:
            d = s.recv(1 << 20)
            if not d:
                return
            out.extend(d)
    th = threading.Thread(target=reader)
    th.start()
    view = memoryview(blob)
    for i in range(0, SIZE, 1 << 16):
        s.sendall(view[i:i + (1 << 16)])
    th.join(60)
    digest = bytes(out[-64:]).decode(errors="replace")
    body = bytes(out[:-64])
    return digest, len(body) == SIZE


def socks_tunnel(p, creds, port):
    return socks_open(p, creds, b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") +
                      struct.pack(">H", port), timeout=30)


for mode in ("yes", "no"):
    P = Proxy("listen http 127.0.0.1:0\nlisten socks5 127.0.0.1:0\nallow 127.0.0.1\n"
              "splice %s\n" % mode, audit=True)
    c = P.register()
    s, status, _ = connect_via_http(P.http, "127.0.0.1:%d" % rev.port, c, timeout=30)
    t.eq(status, "HTTP/1.1 200 OK", "splice %s: CONNECT" % mode)
    digest, ok = exchange(s)
    s.close()
    t.eq(digest, want, "splice %s: 24 MiB upstream through CONNECT arrive intact" % mode)
    t.ok(ok, "splice %s: 24 MiB downstream through CONNECT, both ways at once" % mode)
    s, rep = socks_tunnel(P, c, rev.port)
    t.eq(rep[:2], b"\x05\x00", "splice %s: SOCKS5 CONNECT" % mode)
    digest, ok = exchange(s)
    s.close()
    t.ok(digest == want and ok, "splice %s: 24 MiB each way through SOCKS5" % mode)
    ev = P.wait_audit(lambda e: e["event"] == "close" and e["protocol"] == "socks5")
    t.ok(ev and ev["bytes_up"] == SIZE and ev["bytes_down"] >= SIZE + 64,
         "splice %s: audit counts the bulk bytes" % mode, ev)
    t.eq(P.stop(), 0, "splice %s: proxy exits 0" % mode)


# Pipe sizes: a tunnel's pipes stay at the kernel's default until a
# direction once has a whole pipe's worth waiting (1 MiB pipes for every
# relay would use up the per-user pipe allowance after a few dozen).  The
# proxy's pipes are looked at from outside, reopened through /proc.
def pipe_sizes(pid):
    import fcntl
    sizes = []
    d = "/proc/%d/fd" % pid
    for n in os.listdir(d):
        try:
            if not os.readlink(os.path.join(d, n)).startswith("pipe:"):
                continue
            fd = os.open(os.path.join(d, n), os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            sizes.append(fcntl.fcntl(fd, 1032))     # F_GETPIPE_SZ
        finally:
            os.close(fd)
    return sizes


def echo_server():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)

    def serve():
        c, _ = ls.accept()
        while True:
            d = c.recv(1 << 20)
            if not d:
                break
            c.sendall(d)
        c.close()
    threading.Thread(target=serve, daemon=True).start()
    return ls.getsockname()[1]


def exchange_small(s, n):
    for i in range(n):
        msg = b"line %d\n" % i
        s.sendall(msg)
        got = b""
        while len(got) < len(msg):
            got += s.recv(4096)


P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nsplice yes\n")
c = P.register()
before = pipe_sizes(P.proc.pid)
s, status, _ = connect_via_http(P.http, "127.0.0.1:%d" % echo_server(), c, timeout=30)
exchange_small(s, 50)
small = pipe_sizes(P.proc.pid)
t.ok(status == "HTTP/1.1 200 OK" and len(small) >= len(before) + 4 and
     max(small) <= 64 << 10, "splice: a tunnel of small exchanges keeps default-size pipes",
     (status, before, small))
# then bulk on the same tunnel: sent without reading the echo, so that
# data queues at the proxy's sources
sent = 0
s.settimeout(2)
try:
    while sent < 8 << 20:
        sent += s.send(blob[:1 << 20])
except socket.timeout:
    pass
bulk = pipe_sizes(P.proc.pid)


def big_pipes_allowed():
    """the proxy's growth is best effort: past the user's pipe allowance it keeps its pipe"""
    import fcntl
    r, w = os.pipe()
    try:
        return fcntl.fcntl(r, 1031, 1 << 20) >= 1 << 20      # F_SETPIPE_SZ
    except OSError:
        return False
    finally:
        os.close(r)
        os.close(w)


if max(bulk) < 1 << 20 and not big_pipes_allowed():
    t.skip("splice: the same tunnel gets a 1 MiB pipe once data queues",
           "1 MiB pipes refused to this user now (fs.pipe-user-pages-soft)")
else:
    t.ok(max(bulk) >= 1 << 20, "splice: the same tunnel gets a 1 MiB pipe once data queues "
         "(%d KiB sent unread)" % (sent >> 10), bulk)
s.close()
t.eq(P.stop(), 0, "splice: proxy exits 0 (pipe sizes)")

# HTTP Upgrade (plain ws://) forwarded from an absolute-URI request
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(4)
UP = ls.getsockname()[1]
seen = {}


def upgrade_server():
    c, _ = ls.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        head += c.recv(4096)
    head, _, extra = head.partition(b"\r\n\r\n")
    seen["head"] = head
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nKeep-Alive: x\r\n\r\n" + extra.upper())
    while True:
        d = c.recv(4096)
        if not d:
            break
        c.sendall(d.upper())
    c.close()


threading.Thread(target=upgrade_server, daemon=True).start()
P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\n")
c = P.register()
import base64
tok = base64.b64encode(("%s:%s" % (c.id, c.secret)).encode()).decode()
h, pp = P.http.rsplit(":", 1)
s = socket.create_connection((h, int(pp)), timeout=10)
s.sendall(("GET http://127.0.0.1:%d/chat HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
           "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: x\r\nProxy-Authorization: Basic %s"
           "\r\n\r\nearly" % (UP, UP, tok)).encode())
resp = b""
while b"\r\n\r\n" not in resp:
    resp += s.recv(4096)
head, _, rest = resp.partition(b"\r\n\r\n")
t.ok(head.startswith(b"HTTP/1.1 101") and b"Connection: Upgrade" in head and
     b"Upgrade: websocket" in head and b"Keep-Alive" not in head,
     "101 passes with Upgrade and Connection: Upgrade, hop-by-hop stripped", head)
fwd = seen.get("head", b"")
t.ok(b"GET /chat HTTP/1.1" in fwd and b"Upgrade: websocket" in fwd and
     b"Connection: Upgrade" in fwd and b"Proxy-Authorization" not in fwd,
     "upgrade request forwarded in origin form with its Upgrade header", fwd)
s.sendall(b" frames")
data = rest
while len(data) < len(b"EARLY FRAMES"):
    data += s.recv(4096)
t.eq(data, b"EARLY FRAMES", "after 101 the connection is a relay (early bytes included)")
s.close()
t.eq(P.stop(), 0, "proxy exits 0")
t.done()
