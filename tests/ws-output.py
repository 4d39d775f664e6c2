#!/usr/bin/python3
"""Process output over WebSocket: whole, in order, in well-formed frames.

execd writes its text frames itself into one output queue (wslay's pongs and
close join the same queue): a small output reaches the client at once; a
client that stops reading while megabytes are produced gets every byte, in
order, once it reads again, with its pings answered in between; every frame
is final, unmasked and its length in the shortest form (RFC 6455 5.2).
The 101 waits to leave with the answers to frames sent along with the
request; a resuming initialize among them still sees the 101 go before
the connection is handed to the session's instance.
"""
import base64
import json
import os
import select
import shutil
import socket
import struct
import tempfile
import time

from execd_client import tap
from wsclient import Listener, frame, parse_frames, upgrade_request

t = tap(timeout=300)
SAN = bool(os.environ.get("EXECD_SANITIZERS"))
# seq 1 N: 6.9 MB at 10**6, well past the 4 MiB the server queues
N = 300000 if SAN else 1000000


class Client:
    def __init__(self, lst):
        self.s = socket.create_connection((lst.host, lst.port), timeout=30)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.sendall(upgrade_request("/" + lst.token).encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("closed during the upgrade")
            self.buf += d
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError("upgrade refused: %r" % head[:80])
        self.bad = []       # frames that break RFC 6455 5.2
        self.pos = 0
        self.nid = 0

    def send(self, obj):
        import json
        self.s.sendall(frame(json.dumps(obj)))

    def request(self, method, params):
        self.nid += 1
        self.send({"id": self.nid, "method": method, "params": params})
        return self.nid

    def frames(self, timeout):
        """(opcode, payload) of each frame, until timeout passes without one"""
        while True:
            b = self.buf
            while len(b) - self.pos >= 2:
                p = self.pos
                b0, b1 = b[p], b[p + 1]
                n, off = b1 & 0x7f, 2
                if n == 126:
                    if len(b) - p < 4:
                        break
                    n, off = struct.unpack("!H", b[p + 2:p + 4])[0], 4
                    if n < 126:
                        self.bad.append("16-bit length %d" % n)
                elif n == 127:
                    if len(b) - p < 10:
                        break
                    n, off = struct.unpack("!Q", b[p + 2:p + 10])[0], 10
                    if n < 65536:
                        self.bad.append("64-bit length %d" % n)
                if len(b) - p < off + n:
                    break
                if not b0 & 0x80 or b0 & 0x70 or b1 & 0x80:
                    self.bad.append("head %02x %02x" % (b0, b1))
                self.pos = p + off + n
                yield b0 & 0x0f, b[p + off:p + off + n]
            self.buf, self.pos = self.buf[self.pos:], 0
            r, _, _ = select.select([self.s], [], [], timeout)
            if not r:
                return
            d = self.s.recv(1 << 20)
            if not d:
                return
            self.buf += d


def start(c, pid, argv):
    return c.request("process/start", {
        "processId": pid, "argv": argv, "cwd": "file:///tmp",
        "env": {"PATH": "/usr/bin:/bin"}, "tty": False})


def one_shot(lst, init):
    """upgrade and an initialize in one segment: (bytes of the first read, the
    frames' messages until the initialize answer)"""
    s = socket.create_connection((lst.host, lst.port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(upgrade_request("/" + lst.token).encode() + frame(json.dumps(init)))
    first = s.recv(65536)
    data, msgs = first, []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            msgs = [json.loads(pl) for op, pl in parse_frames(rest)[0] if op == 1]
            if any(m.get("id") == init["id"] for m in msgs):
                break
        if not select.select([s], [], [], 1)[0]:
            continue
        d = s.recv(65536)
        if not d:
            break
        data += d
    return s, first, msgs


state = tempfile.mkdtemp(prefix="execd-ws-output.")
lst = Listener(["--state-dir", state, "--resume-ttl-ms", "5000"])
try:
    # the 101 and the answer to a frame sent along with the request: one send
    s1, first, msgs = one_shot(lst, {"id": 1, "method": "initialize",
                                     "params": {"clientName": "one-shot"}})
    sid = next((m["result"]["sessionId"] for m in msgs if m.get("id") == 1 and "result" in m),
               None)
    t.ok(first.startswith(b"HTTP/1.1 101") and b'"sessionId"' in first,
         "the 101 and the initialize answer come in one segment (%d bytes)" % len(first))
    s1.close()
    time.sleep(0.5)
    # a resuming initialize sent with the request: handed over, the 101 first
    s2, first, msgs = one_shot(lst, {"id": 7, "method": "initialize",
                                     "params": {"clientName": "again",
                                                "resumeSessionId": sid or "x"}})
    got = [m for m in msgs if m.get("id") == 7]
    t.ok(first.startswith(b"HTTP/1.1 101") and got and
         got[0].get("result", {}).get("sessionId") == sid,
         "a resume sent along with the request: the 101, then the owner's answer (%r)" %
         (got[:1],))
    s2.close()

    import json
    c = Client(lst)
    c.request("initialize", {"clientName": "ws-output"})
    c.send({"method": "initialized"})

    # a small output: no batching delay
    t0 = time.monotonic()
    start(c, "small", ["echo", "hi"])
    got, took = None, None
    for op, pl in c.frames(10):
        m = json.loads(pl)
        if m.get("method") == "process/output":
            got, took = m["params"]["chunk"], time.monotonic() - t0
            break
    t.ok(got == base64.b64encode(b"hi\n").decode() and took < 2,
         "a small output arrives at once (%.1f ms)" % ((took or 0) * 1000))
    for op, pl in c.frames(10):
        if b'"process/closed"' in pl:
            break

    # megabytes while the client does not read, pings among them
    start(c, "big", ["seq", "1", str(N)])
    time.sleep(2)
    for i in range(50):
        c.s.sendall(frame(b"p%d" % i, opcode=9))
    want = "".join("%d\n" % i for i in range(1, N + 1)).encode()
    out, seqs, sizes, pongs, closed = [], [], [], 0, False
    for op, pl in c.frames(30):
        if op == 10:
            pongs += 1
            continue
        if op != 1:
            continue
        m = json.loads(pl)
        if m.get("method") == "process/output" and m["params"]["processId"] == "big":
            d = base64.b64decode(m["params"]["chunk"])
            out.append(d)
            sizes.append(len(d))
            seqs.append(m["params"]["seq"])
        elif m.get("method") == "process/closed" and m["params"]["processId"] == "big":
            seqs.append(m["params"]["seq"])
            closed = True
            if pongs == 50:
                break
    data = b"".join(out)
    t.ok(closed and data == want,
         "%d bytes written while the client did not read: all arrive, in order (%d of %d)" %
         (len(want), len(data), len(want)))
    t.ok(seqs == sorted(seqs) and len(set(seqs)) == len(seqs),
         "their seqs increase (%d chunks)" % len(sizes))
    t.ok(sizes and max(sizes) <= 8192, "no chunk over 8192 bytes (largest %d)" % max(sizes or [0]))
    t.ok(pongs == 50, "the pings sent meanwhile are answered (%d of 50)" % pongs)
    t.ok(not c.bad, "every frame final, unmasked, its length shortest (%s)" % c.bad[:3])

    # what is still to come after the queue drained goes out as well
    start(c, "after", ["echo", "after"])
    got = None
    for op, pl in c.frames(10):
        m = json.loads(pl) if op == 1 else {}
        if m.get("method") == "process/output" and m["params"]["processId"] == "after":
            got = base64.b64decode(m["params"]["chunk"])
            break
    t.ok(got == b"after\n", "output after the drain arrives")
    c.s.close()
finally:
    lst.stop()
    shutil.rmtree(state, ignore_errors=True)
t.done()
