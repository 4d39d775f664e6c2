#!/usr/bin/python3
"""execd-proxy audit completeness: refusals before any policy (400 after
authentication, SOCKS5 BIND, invalid names with any bytes) are recorded;
one credential's flood of denials is rate-limited into summary records
without crowding out another's; "audit-overflow block" stops taking new
work while the sink is behind and loses nothing; "drop" counts."""

import json
import os
import socket
import threading
import time

from proxytest import auth_header, EchoServer, Proxy, Tap, deadline, socks_open, tmpdir

deadline(150)
t = Tap()
echo = EchoServer()
E = echo.port



def connect(proxy, creds, target, timeout=10):
    """CONNECT; returns the status code (0: no answer within timeout) and the socket."""
    h, p = proxy.http.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=timeout)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (target, target, auth_header(creds)))
              .encode())
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        return 0, s
    try:
        return int(data.split(b" ", 2)[1]), s
    except (IndexError, ValueError):
        return -1, s


def socks_request(proxy, creds, req):
    s, rep = socks_open(proxy, creds, req)
    s.close()
    return rep[1] if len(rep) > 1 else None


# ------------------------------------------------ records of every refusal
P = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
allow 127.0.0.1
allow-local no
""")
a = P.register(tags={"who": "a"})
b = P.register(tags={"who": "b"})

name = b"\xff\xfe\x00.example.test"
rep = socks_request(P, a, b"\x05\x01\x00\x03" + bytes([len(name)]) + name + b"\x00\x50")
t.eq(rep, 1, "SOCKS5 name with invalid UTF-8 and NUL: refused")
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["protocol"] == "socks5" and
                  e.get("reason") == "invalid_host")
t.ok(ev is not None and ev["host"] == "\xff\xfe\x00.example.test" and ev["credential"] == a.id,
     "audit: recorded, its bytes escaped", ev)
rep = socks_request(P, a, b"\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50")
t.eq(rep, 7, "SOCKS5 BIND: command not supported")
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["method"] == "BIND")
t.ok(ev is not None and ev["decision"] == "deny" and ev["credential"] == a.id,
     "audit: BIND recorded", ev)
h, p = P.http.rsplit(":", 1)
s = socket.create_connection((h, int(p)), timeout=10)
s.sendall(("GET https://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" % auth_header(a))
          .encode())
t.ok(s.recv(100).startswith(b"HTTP/1.1 400"), "https:// in absolute form: 400")
s.close()
ev = P.wait_audit(lambda e: e["event"] == "decision" and e.get("reason") == "bad_request" and
                  e["protocol"] == "http")
t.ok(ev is not None and ev["credential"] == a.id, "audit: a 400 after authentication", ev)

# ---------------------------------------- a denial flood, rate-limited
FLOOD = 600
start = time.time()
for i in range(FLOOD):
    st, s = connect(P, a, "10.0.0.1:80")
    s.close()
    if i % 100 == 0:
        st_b, sb = connect(P, b, "127.0.0.1:%d" % E)
        sb.close()
flood_s = time.time() - start
t.ok(st == 403, "flood: the last denied request still answered 403")
time.sleep(1.6)
evs = P.audit()
denied_a = [e for e in evs if e["event"] == "decision" and e["credential"] == a.id and
            e["host"] == "10.0.0.1"]
summ_a = [e for e in evs if e["event"] == "suppressed" and e["credential"] == a.id]
allow_b = [e for e in evs if e["event"] == "decision" and e["credential"] == b.id and
           e["decision"] == "allow"]
t.ok(len(denied_a) < FLOOD and len(denied_a) <= 100 + 50 * (flood_s + 2),
     "flood: denial records rate-limited (%d of %d in %.1f s)" % (len(denied_a), FLOOD,
                                                                 flood_s))
t.eq(len(denied_a) + sum(e["count"] for e in summ_a), FLOOD,
     "flood: every denial recorded or counted in a summary")
t.ok(all(e["message"] == "%d denials suppressed" % e["count"] for e in summ_a) and summ_a,
     "flood: summary records say how many", summ_a[:2])
t.eq(len(allow_b), FLOOD // 100, "flood: the other credential's records are all there")
st = P.call("status")
t.ok(st["audit"]["lost"] == 0 and st["audit"]["suppressed"] == FLOOD - len(denied_a),
     "status: nothing lost, suppressed counted", st["audit"])
P.stop()

# ------------------------------- audit-overflow block: nothing unrecorded
d = tmpdir()
fifo = os.path.join(d, "audit.fifo")
os.mkfifo(fifo)
rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
B = Proxy("""
listen http 127.0.0.1:0
allow 127.0.0.1
allow-local yes
""", audit="file %s" % fifo)
big = B.register(tags={"pad": "x" * 7000})
served = 0
stalled = None
for i in range(600):
    st, s = connect(B, big, "127.0.0.1:%d" % E, timeout=1.5)
    if st == 0:
        stalled = s
        break
    s.close()
    served += 1
t.ok(stalled is not None, "block: with the sink stalled, new work waits (after %d)" % served)
got = []


def drain():
    os.set_blocking(rfd, True)
    while True:
        chunk = os.read(rfd, 1 << 16)
        if not chunk:
            return
        got.append(chunk)


threading.Thread(target=drain, daemon=True).start()
if stalled is not None:
    stalled.settimeout(10)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = stalled.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    t.ok(data.startswith(b"HTTP/1.1 200"), "block: served once the sink caught up", data[:60])
    stalled.close()
time.sleep(1)
B.stop()
time.sleep(0.5)
lines = [json.loads(x) for x in b"".join(got).decode().splitlines() if x.strip()]
allows = [e for e in lines if e["event"] == "decision" and e["decision"] == "allow"]
t.ok(len(allows) >= served + 1, "block: every served request has its record (%d, %d served)" %
     (len(allows), served + 1))
t.ok("new work waits" in B.logtext() and "caught up" in B.logtext(),
     "block: stall and resume are logged", B.logtext()[-300:])
os.close(rfd)

# ---------------------------------------------- audit-overflow drop: counted
d = tmpdir()
fifo = os.path.join(d, "audit.fifo")
os.mkfifo(fifo)
rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
D = Proxy("""
listen http 127.0.0.1:0
allow 127.0.0.1
allow-local yes
audit-overflow drop
""", audit="file %s" % fifo)
big = D.register(tags={"pad": "x" * 7000})
codes = []
for i in range(250):
    st, s = connect(D, big, "127.0.0.1:%d" % E, timeout=3)
    s.close()
    codes.append(st)
t.ok(all(c == 200 for c in codes), "drop: requests go on with the sink stalled")
st = D.call("status")
t.ok(st["audit"]["lost"] > 0, "drop: lost records counted", st["audit"])
D.stop()
t.ok("events lost" in D.logtext(), "drop: lost records logged")
os.close(rfd)

t.done()
