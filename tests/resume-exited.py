"""A process that ended before or while the connection was cut is there,
complete, at the first process/read after the resume (issue 37, item 1).

The repro: P exits after 1 s while a flood nobody reads congests the
connection, so P's end is still in its pipe when the connection is cut (RST
or FIN).  The detached instance drains and reaps P: that must keep P for the
resume, not expire it because no client happens to be attached at that
instant.  And a process that closes while the session waits for its client
stays readable for the whole resume TTL, even a TTL longer than the
closed-process keep time."""
import asyncio
import base64
import json
import shutil
import socket
import struct
import tempfile

import websockets

from execd_client import tap
from wsclient import Listener, run, ws_call

t = tap(timeout=150)
state = tempfile.mkdtemp(prefix="execd-resume-exited.")
L = Listener(["--state-dir", state])


async def start(ws, id, name, argv):
    r = await ws_call(ws, id, "process/start", {"processId": name, "argv": argv,
                      "cwd": "file:///tmp", "env": {}, "tty": False})
    return r.get("result") is not None


async def cut(ws, how):
    sock = ws.transport.get_extra_info("socket")
    if how == "rst":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    else:
        sock.shutdown(socket.SHUT_WR)   # FIN; execd sees its end of input
        await asyncio.sleep(0.3)
    ws.transport.abort()


async def resume_read(sid, name):
    b = await websockets.connect(L.url, ping_interval=None, max_size=None)
    r = await ws_call(b, 1, "initialize", {"clientName": "B", "resumeSessionId": sid})
    if r.get("result", {}).get("sessionId") != sid:
        b.transport.abort()
        return {"resume": r}
    await b.send(json.dumps({"method": "initialized"}))
    r = await ws_call(b, 2, "process/read", {"processId": name, "afterSeq": 0, "waitMs": 0})
    b.transport.abort()
    return r


async def congested_cut(n, how):
    ws = await websockets.connect(L.url, ping_interval=None, max_queue=1, close_timeout=0.5)
    r = await ws_call(ws, 1, "initialize", {"clientName": "A"})
    sid = r["result"]["sessionId"]
    await ws.send(json.dumps({"method": "initialized"}))
    await start(ws, 2, "P", ["sh", "-c", "sleep 1; echo done-P; exit 3"])
    await start(ws, 3, "flood", ["head", "-c", "64M", "/dev/zero"])
    await asyncio.sleep(2.5)            # nothing read: congested, P has ended
    await cut(ws, how)
    return await resume_read(sid, "P")


def judged(r):
    res = r.get("result")
    if res is None:
        return False, r
    text = b"".join(base64.b64decode(c["chunk"]) for c in res.get("chunks", []))
    return (text == b"done-P\n" and res.get("exitCode") == 3 and res.get("exited") is True and
            res.get("closed") is True), dict((k, v) for k, v in res.items() if k != "chunks")


async def congested():
    out = []
    for n, how in enumerate(("rst", "fin", "rst", "fin")):
        out.append((how, judged(await congested_cut(n, how))))
    return out
for how, (ok, what) in run(congested(), timeout=80):
    t.ok(ok, "congested connection cut (%s): P (exit 3) is read whole after the resume" % how,
         what)
L.stop()
shutil.rmtree(state, ignore_errors=True)

# a plain disconnect (close handshake, RST, FIN): P ends while the session
# waits for its client, and is there at the resume
state2 = tempfile.mkdtemp(prefix="execd-resume-exited.")
L = Listener(["--state-dir", state2, "--resume-ttl-ms", "4000"])


async def plain(how):
    ws = await websockets.connect(L.url, ping_interval=None)
    r = await ws_call(ws, 1, "initialize", {"clientName": "A"})
    sid = r["result"]["sessionId"]
    await ws.send(json.dumps({"method": "initialized"}))
    await start(ws, 2, "P", ["sh", "-c", "sleep 0.3; echo done-P; exit 3"])
    if how == "close":
        await ws.close()
    else:
        await cut(ws, how)
    await asyncio.sleep(2.5)            # P ends while nobody is attached
    return await resume_read(sid, "P")


async def plains():
    return [(how, judged(await plain(how))) for how in ("close", "rst", "fin")]
for how, (ok, what) in run(plains(), timeout=40):
    t.ok(ok, "plain disconnect (%s), P ends while detached: read whole after the resume" % how,
         what)
L.stop()
shutil.rmtree(state2, ignore_errors=True)
t.done()
