"""WebSocket transport: the listener, auth, routes, framing, limits, isolation."""
import json
import os
import shutil
import tempfile
import signal
import socket
import subprocess
import time

import websockets

from execd_client import EXECD, b64, tap, pid_alive
from wsclient import (Listener, http_raw, status_of, upgrade_request, frame,
                      parse_frames, run, ws_call)

t = tap(timeout=120)
state = tempfile.mkdtemp(prefix="execd-ws.")
L = Listener(["--max-message", "1048576", "--header-timeout-ms", "1000",
              "--state-dir", state, "--resume-ttl-ms", "300"])
t.ok(len(L.token) >= 32, "--listen prints ws://HOST:PORT/TOKEN with a generated token")

# routes and auth, before any upgrade
r = http_raw(L.host, L.port, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
t.eq(status_of(r), 200, "GET /readyz answers 200 without auth")
r = http_raw(L.host, L.port, upgrade_request("/"))
t.ok(status_of(r) == 401 and b"missing websocket bearer token" in r, "no token: 401", r)
r = http_raw(L.host, L.port, upgrade_request("/" + "0" * len(L.token)))
t.eq(status_of(r), 401, "a wrong token in the path: 401")
# the token spelled the ways a guesser would: one byte off at its end, a
# prefix, one byte more, cut at a NUL or a query, percent-encoded, in a
# bearer header one byte off
near = L.token[:-1] + ("a" if L.token[-1] != "a" else "b")
for what, path, hdr in [
        ("its last byte changed", "/" + near, None),
        ("a prefix of it", "/" + L.token[:-1], None),
        ("it and one byte more", "/" + L.token + "x", None),
        ("a NUL after a prefix", "/" + L.token[:-1] + "%00", None),
        ("a prefix, then a query", "/" + L.token[:-1] + "?" + L.token[-1], None),
        ("its first byte percent-encoded", "/%%%02X" % ord(L.token[0]) + L.token[1:], None),
        ("bearer, its last byte changed", "/", {"Authorization": "Bearer " + near})]:
    r = http_raw(L.host, L.port, upgrade_request(path, hdr))
    t.eq(status_of(r), 401, "a token guess, %s: 401" % what)
r = http_raw(L.host, L.port, upgrade_request("/", {"Authorization": "Bearer nope"}))
t.ok(status_of(r) == 401 and b"invalid websocket bearer token" in r, "a wrong bearer token: 401")
r = http_raw(L.host, L.port, upgrade_request("/" + L.token, {"Origin": "http://evil.example"}))
t.eq(status_of(r), 403, "an upgrade carrying Origin: 403")
r = http_raw(L.host, L.port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
t.eq(status_of(r), 400, "GET / without upgrade: 400")
r = http_raw(L.host, L.port, upgrade_request("/" + L.token, {"Sec-WebSocket-Version": "8"}))
t.eq(status_of(r), 426, "a wrong websocket version: 426")
r = http_raw(L.host, L.port, upgrade_request("/" + L.token, {"Sec-WebSocket-Key": None}))
t.eq(status_of(r), 400, "no Sec-WebSocket-Key: 400")
r = http_raw(L.host, L.port, "GET /" + L.token + " HTTP/1.1\r\n" + "X-Pad: " + "a" * 9000 + "\r\n\r\n")
t.eq(status_of(r), 400, "a 9 KiB request head is read (400: no upgrade)")
r = http_raw(L.host, L.port, "GET /" + L.token + " HTTP/1.1\r\n" + "X-Pad: " + "a" * 420000 + "\r\n\r\n")
t.eq(status_of(r), 431, "a request head over 400 KiB: 431")
r = http_raw(L.host, L.port, "GET /" + L.token + " HTTP/1.1\r\n" +
             "".join("X-H%d: v\r\n" % i for i in range(101)) + "\r\n")
t.eq(status_of(r), 431, "101 header fields: 431")
t0 = time.time()
s = socket.create_connection((L.host, L.port))
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
s.settimeout(5)
try:
    gone = s.recv(100) == b""
except socket.timeout:
    gone = False
took = time.time() - t0
# at the timeout (1 s), not before it: a close at once is something else
t.ok(gone and 0.9 <= took < 4, "a slow request head is cut off at --header-timeout-ms",
     "closed: %s after %.2f s" % (gone, took))
s.close()

# the handshake answer and a frame pipelined with the head
req = upgrade_request("/" + L.token).encode()
init = json.dumps({"id": 1, "method": "initialize", "params": {"clientName": "raw"}})
s = socket.create_connection((L.host, L.port), timeout=5)
s.sendall(req + frame(init))
r = b""
while b'"sessionId"' not in r:
    chunk = s.recv(65536)
    if not chunk:
        break
    r += chunk
s.sendall(frame(b"\x03\xe8", opcode=8))
s.close()
head, _, rest = r.partition(b"\r\n\r\n")
t.ok(status_of(r) == 101 and b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head,
     "101 with the RFC 6455 accept key", head)
frames, _ = parse_frames(rest)
t.ok(any(op == 1 and b'"sessionId"' in p for op, p in frames),
     "a frame sent with the head is answered", frames[:2])


async def session():
    async with websockets.connect(L.url, max_size=None, ping_interval=None) as ws:
        r = await ws_call(ws, 1, "initialize", {"clientName": "ws"})
        ok1 = "sessionId" in r["result"]
        await ws.send(json.dumps({"method": "initialized"}))
        await ws.send(json.dumps({"id": 2, "method": "process/start", "params": {
            "processId": "p", "argv": ["sh", "-c", "echo hi"], "cwd": "file:///tmp",
            "env": {}, "tty": False}}).encode())   # a binary frame
        got = []
        while True:
            m = json.loads(await ws.recv())
            got.append(m)
            if m.get("method") == "process/closed":
                break
        await ws.send("not json")
        err = json.loads(await ws.recv())
        return ok1, got, err

ok1, got, err = run(session())
t.ok(ok1, "initialize over WebSocket")
t.ok(any(m.get("id") == 2 and "result" in m for m in got), "a binary frame is taken as JSON")
t.ok([m["method"] for m in got if "method" in m] ==
     ["process/output", "process/exited", "process/closed"], "notifications over WebSocket",
     got)
t.ok(err["id"] == -1 and err["error"]["message"].startswith(
    "failed to parse websocket JSON-RPC message from exec-server websocket 127.0.0.1:"),
    "a parse error names the websocket peer", err)

# keepalive: the server pings (every --ws-ping-ms; the reference's 30 s by default)
L3 = Listener(["--ws-ping-ms", "200", "--state-dir", state, "--resume-ttl-ms", "0"])
s = socket.create_connection((L3.host, L3.port), timeout=5)
s.sendall(upgrade_request("/" + L3.token).encode())
got, t0 = b"", time.time()
while time.time() - t0 < 3:
    chunk = s.recv(4096)
    if not chunk:
        break
    got += chunk
    frames, _ = parse_frames(got.partition(b"\r\n\r\n")[2])
    if any(op == 9 for op, _ in frames):
        break
s.close()
L3.stop()
t.ok(any(op == 9 for op, _ in frames), "the server sends WebSocket pings")

# bearer token instead of the path
async def bearer():
    async with websockets.connect(L.base() + "/", extra_headers={"Authorization": "Bearer " + L.token},
                                  ping_interval=None) as ws:
        r = await ws_call(ws, 1, "initialize", {"clientName": "b"})
        return "result" in r
t.ok(run(bearer()), "Authorization: Bearer TOKEN is accepted")

# an oversized message gets a close, not a crash; the listener lives on
async def oversized():
    async with websockets.connect(L.url, max_size=None, ping_interval=None) as ws:
        await ws.send("x" * (2 << 20))
        try:
            await ws.recv()
        except websockets.ConnectionClosed as e:
            return e.code
    return None
code = run(oversized())
t.eq(code, 1009, "a message over --max-message is closed with 1009")

# isolation: each client its own instance; killing one does not touch the other
async def isolation():
    async with websockets.connect(L.url, ping_interval=None) as a, \
            websockets.connect(L.url, ping_interval=None) as b:
        await ws_call(a, 1, "initialize", {"clientName": "a"})
        await ws_call(b, 1, "initialize", {"clientName": "b"})
        await a.send(json.dumps({"method": "initialized"}))
        await b.send(json.dumps({"method": "initialized"}))
        marker = "%d.%d" % (50 + os.getpid() % 50, os.getpid())   # unique to this run
        r = await ws_call(a, 2, "process/start", {"processId": "x", "argv": ["sleep", marker],
                          "cwd": "file:///tmp", "env": {}, "tty": False})
        kids = subprocess.run(["pgrep", "-P", str(L.p.pid)], capture_output=True,
                              text=True).stdout.split()
        sleeper = subprocess.run(["pgrep", "-f", "^sleep %s$" % marker], capture_output=True,
                                 text=True).stdout.split()
        # kill the instance serving a (the one whose child is the sleeper)
        victim = None
        for k in kids:
            try:
                ch = open("/proc/%s/task/%s/children" % (k, k)).read().split()
            except OSError:
                continue        # an earlier client's instance, just gone
            if any(s in ch for s in sleeper):
                victim = int(k)
        if victim is not None:
            os.kill(victim, signal.SIGKILL)
        r = await ws_call(b, 2, "environment/status")
        return victim is not None and r.get("result") == {"status": "ready"}, sleeper
ok, sleeper = run(isolation())
t.ok(ok, "a crashed instance does not disturb another client")

# the client closing with processes running
async def leave():
    async with websockets.connect(L.url, ping_interval=None) as ws:
        await ws_call(ws, 1, "initialize", {"clientName": "c"})
        await ws.send(json.dumps({"method": "initialized"}))
        await ws_call(ws, 2, "process/start", {"processId": "x", "argv": ["sh", "-c", "echo $$; exec sleep 61"],
                      "cwd": "file:///tmp", "env": {}, "tty": False})
        while True:
            m = json.loads(await ws.recv())
            if m.get("method") == "process/output":
                import base64
                return int(base64.b64decode(m["params"]["chunk"]).split()[0])
pid = run(leave())
deadline = time.time() + 5
while pid_alive(pid) and time.time() < deadline:
    time.sleep(0.05)
t.ok(not pid_alive(pid), "a WebSocket client leaving takes its processes with it (after the resume TTL)")

rc = L.stop()
t.eq(rc, 0, "the listener exits 0 on SIGTERM")
shutil.rmtree(state, ignore_errors=True)

# refusing non-loopback binds, and a given token file
p = subprocess.run([EXECD, "--listen", "ws://0.0.0.0:0"], capture_output=True, text=True, timeout=10)
t.ok(p.returncode != 0 and "allow-remote" in p.stderr, "a non-loopback bind needs --allow-remote", p.stderr)
tokfile = "/tmp/execd-ws-token.%d" % os.getpid()
with open(tokfile, "w") as f:
    f.write("s3cr3t-token\n")
L2 = Listener(["--token-file", tokfile])
os.unlink(tokfile)
t.eq(L2.printed_token, "", "--token-file: the printed URL names no token")
t.eq(L2.token, "s3cr3t-token", "--token-file sets the token")
L2.stop()

# WebSocket over a pair of pipes (ssh): the same handshake on stdin/stdout
p = subprocess.Popen([EXECD, "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
p.stdin.write(upgrade_request("/").encode() + frame(init))
p.stdin.flush()
buf = b""
deadline = time.time() + 5
while b'"sessionId"' not in buf and time.time() < deadline:
    buf += os.read(p.stdout.fileno(), 65536)
p.stdin.write(frame(b"\x03\xe8", opcode=8))
p.stdin.close()
rc = p.wait(10)
t.ok(b"HTTP/1.1 101" in buf and b'"sessionId"' in buf and rc == 0,
     "WebSocket framing over pipes, no token needed", buf[:200])

t.done()
