"""Session resume over WebSocket: reattach, missed output, -32010, TTL."""
import asyncio
import base64
import hashlib
import json
import os
import shutil
import tempfile
import time

import websockets

from execd_client import tap, pid_alive
from wsclient import Listener, run, ws_call

t = tap(timeout=90)
state = tempfile.mkdtemp(prefix="execd-resume.")
L = Listener(["--state-dir", state, "--resume-ttl-ms", "1500"])


async def first():
    ws = await websockets.connect(L.url, ping_interval=None)
    r = await ws_call(ws, 1, "initialize", {"clientName": "A"})
    sid = r["result"]["sessionId"]
    await ws.send(json.dumps({"method": "initialized"}))
    await ws_call(ws, 2, "process/start", {"processId": "tick", "argv": ["sh", "-c",
                  "echo $$; i=0; while [ $i -lt 8 ]; do i=$((i+1)); echo t$i; sleep 0.2; done"],
                  "cwd": "file:///tmp", "env": {}, "tty": False})
    # what the TTL must kill: a process that would outlive the test by far
    await ws_call(ws, 3, "process/start", {"processId": "long", "argv": ["sh", "-c",
                  "echo $$; exec sleep 600"], "cwd": "file:///tmp", "env": {}, "tty": False})
    pid = None
    while pid is None:
        m = json.loads(await ws.recv())
        if m.get("method") == "process/output" and m["params"]["processId"] == "long":
            pid = int(base64.b64decode(m["params"]["chunk"]).split()[0])
    return ws, sid, pid


async def scenario():
    a, sid, pid = await first()
    files = os.listdir(state)
    await a.close()
    await __import__("asyncio").sleep(0.6)      # output goes on while detached
    b = await websockets.connect(L.url, ping_interval=None)
    r = await ws_call(b, 1, "initialize", {"clientName": "B", "resumeSessionId": sid})
    resumed = r.get("result", {}).get("sessionId")
    await b.send(json.dumps({"method": "initialized"}))
    r = await ws_call(b, 2, "process/read", {"processId": "tick", "afterSeq": 0})
    chunks = r["result"]["chunks"]
    text = b"".join(base64.b64decode(c["chunk"]) for c in chunks)
    seqs = [c["seq"] for c in chunks]
    # a second attach while b is attached
    c = await websockets.connect(L.url, ping_interval=None)
    r2 = await ws_call(c, 1, "initialize", {"clientName": "C", "resumeSessionId": sid})
    r3 = await ws_call(c, 2, "initialize", {"clientName": "C"})
    await c.close()
    live = None
    while live is None:
        m = json.loads(await b.recv())
        if m.get("method") == "process/output":
            live = m["params"]["seq"]
    await b.close()
    return sid, pid, files, resumed, text, seqs, r2, r3, live

sid, pid, files, resumed, text, seqs, r2, r3, live = run(scenario())
name = hashlib.sha256(b"execd resume v1\0" + sid.encode()).hexdigest()[:32]
t.ok(sorted(files) == ["session-%s.pid" % name, "session-%s.sock" % name],
     "the session is published in the state directory under a hash of its id (socket and "
     "owner file)", files)
t.eq(resumed, sid, "initialize with resumeSessionId reattaches the same session")
t.ok(b"t1" in text and b"t2" in text and seqs == list(range(1, len(seqs) + 1)),
     "output produced while detached is readable with afterSeq", (text, seqs))
t.eq(r2.get("error", {}).get("code"), -32010, "a second attach gets -32010")
t.eq(r2.get("error", {}).get("message"),
     "session %s is already attached to another connection" % sid, "-32010 message as the reference")
t.ok("result" in r3, "after a refused resume the connection can still initialize afresh")
t.ok(live is not None and live > seqs[-1], "notifications are live again after the resume")

async def unknown():
    ws = await websockets.connect(L.url, ping_interval=None)
    r = await ws_call(ws, 1, "initialize", {"clientName": "D",
                      "resumeSessionId": "00000000-0000-4000-8000-000000000000"})
    r4 = await ws_call(ws, 2, "initialize", {"clientName": "D", "resumeSessionId": "../../etc"})
    await ws.close()
    return r, r4
r, r4 = run(unknown())
t.eq(r.get("error"), {"code": -32600, "message":
     "unknown session id 00000000-0000-4000-8000-000000000000"}, "an unknown session id")
t.eq(r4.get("error", {}).get("code"), -32600, "a session id that is not a UUID is unknown")

# after the TTL the processes are killed and the session is gone
t.ok(pid_alive(pid), "a process of the detached session runs (sleep 600)")
deadline = time.time() + 6
while (pid_alive(pid) or os.listdir(state)) and time.time() < deadline:
    time.sleep(0.1)
t.ok(not pid_alive(pid), "after the TTL the detached session's processes are killed")
t.eq(os.listdir(state), [], "and its socket and owner file are removed")

async def late():
    ws = await websockets.connect(L.url, ping_interval=None)
    r = await ws_call(ws, 1, "initialize", {"clientName": "E", "resumeSessionId": sid})
    await ws.close()
    return r
r = run(late())
t.eq(r.get("error", {}).get("message"), "unknown session id %s" % sid, "resume after the TTL fails")
L.stop()
if pid_alive(pid):
    os.kill(pid, 9)
shutil.rmtree(state, ignore_errors=True)

# Output and exit that happen while detached are all there for the FIRST
# process/read after the resume.  The hard case: the client stopped reading, so
# output was paused for its congested connection when the connection was cut;
# the pause must not outlive the connection (the child blocked on its full pipe
# and was never reaped until a later loop turn after the reattach).
state3 = tempfile.mkdtemp(prefix="execd-resume.")
L3 = Listener(["--state-dir", state3])
pids = tempfile.mkdtemp(prefix="execd-resume-pids.")
FLOOD = ("echo $$ > %s/pid.%d; head -c 20000000 /dev/zero | tr '\\0' x; "
         "echo one; echo two >&2; echo three; exit 7")
QUIET = "echo $$ > %s/pid.%d; sleep 0.1; echo one; echo two >&2; echo three; exit 7"


async def drain_once(n, flood):
    ws = await websockets.connect(L3.url, ping_interval=None, max_queue=1, close_timeout=0.5)
    r = await ws_call(ws, 1, "initialize", {"clientName": "G"})
    sid = r["result"]["sessionId"]
    await ws.send(json.dumps({"method": "initialized"}))
    name = "drain%d" % n
    await ws_call(ws, 2, "process/start", {"processId": name, "argv": ["sh", "-c",
                  (FLOOD if flood else QUIET) % (pids, n)], "cwd": "file:///tmp", "env": {},
                  "tty": False})
    await asyncio.sleep(0.5 if flood else 0.0)     # unread output piles up: congested
    if flood or n % 2:
        ws.transport.abort()            # the connection cut, no close handshake
    else:
        await ws.close()
    # it writes and exits while detached: wait for its exit (a zombie, or
    # reaped), however long the draining takes on a loaded machine
    await asyncio.sleep(0.4)
    deadline = time.time() + 12
    while time.time() < deadline and not exited(os.path.join(pids, "pid.%d" % n)):
        await asyncio.sleep(0.1)
    b = await websockets.connect(L3.url, ping_interval=None, max_size=None)
    r = await ws_call(b, 1, "initialize", {"clientName": "G2", "resumeSessionId": sid})
    await b.send(json.dumps({"method": "initialized"}))
    r = await ws_call(b, 2, "process/read", {"processId": name, "afterSeq": 0, "waitMs": 0})
    b.transport.abort()                 # not a close: output notifications may be queued
    return r.get("result")


def exited(pidfile):
    """the child is a zombie or gone"""
    try:
        with open(pidfile) as f:
            pid = int(f.read())
    except (OSError, ValueError):
        return False            # not started, or the file half written
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def drained_all(res):
    text = b"".join(base64.b64decode(c["chunk"]) for c in (res or {}).get("chunks", []))
    return (res is not None and all(w in text for w in (b"one\n", b"two\n", b"three\n")) and
            res["exited"] is True and res["exitCode"] == 7), text


async def drain_runs(flood, runs):
    bad = []
    for n in range(runs):
        res = await drain_once(n + (100 if flood else 0), flood)
        ok, text = drained_all(res)
        if not ok:
            bad.append((n, res and {k: v for k, v in res.items() if k != "chunks"}, len(text)))
    return bad
bad = run(drain_runs(True, 2), timeout=60)
t.eq(bad, [], "output paused for a congested connection when it was cut: the detached "
     "instance drains and reaps the child, the first read after the resume has it all")
bad = run(drain_runs(False, 6), timeout=60)
t.eq(bad, [], "the first process/read after a resume has all the output written while "
     "detached, the exit and its code (6 runs)")
L3.stop()
# detached instances remove their own sockets as the listener's SIGTERM ends
# them, racing this clean-up: what is gone is gone
shutil.rmtree(state3, ignore_errors=True)
shutil.rmtree(pids, ignore_errors=True)

# the listener's SIGTERM ends a detached session at once: its instance does not
# linger (it used to wait out the closed processes' keep time, ~80 s)
state2 = tempfile.mkdtemp(prefix="execd-resume.")
L2 = Listener(["--state-dir", state2])


async def detach():
    ws = await websockets.connect(L2.url, ping_interval=None)
    await ws_call(ws, 1, "initialize", {"clientName": "F"})
    await ws.send(json.dumps({"method": "initialized"}))
    await ws_call(ws, 2, "process/start", {"processId": "long", "argv": ["sh", "-c",
                  "echo $$; exec sleep 600"], "cwd": "file:///tmp", "env": {}, "tty": False})
    pid = None
    while pid is None:
        m = json.loads(await ws.recv())
        if m.get("method") == "process/output" and m["params"]["processId"] == "long":
            pid = int(base64.b64decode(m["params"]["chunk"]).split()[0])
    await ws.close()
    return pid
pid = run(detach())
owner = [f for f in os.listdir(state2) if f.endswith(".pid")]
inst = int(open(os.path.join(state2, owner[0])).read().split()[0]) if owner else None
t.ok(inst is not None and pid_alive(inst), "the detached session's instance waits", owner)
t0 = time.time()
L2.stop()
while (pid_alive(pid) or (inst and pid_alive(inst))) and time.time() - t0 < 5:
    time.sleep(0.05)
t.ok(not pid_alive(pid), "after the listener's SIGTERM the session's processes are killed")
t.ok(inst is None or not pid_alive(inst),
     "and its instance exits within seconds (%.1f s)" % (time.time() - t0))
for x in (pid, inst):
    if x and pid_alive(x):
        os.kill(x, 9)
shutil.rmtree(state2, ignore_errors=True)
t.done()
