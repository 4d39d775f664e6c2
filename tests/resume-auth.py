"""Who may hand a client to a detached session: the session socket's name
hides the id, a hand-over naming another session is refused, and so is a
peer in another pid or user namespace even when it knows the id."""
import array
import hashlib
import json
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import websockets

from execd_client import EXECD, tap
from wsclient import run, ws_call

t = tap(timeout=120)
MAGIC = 0x65786431
UNSHARE = shutil.which("unshare")
SETPRIV = shutil.which("setpriv")
NOBODY = 65534

# One hand-over, as a new instance sends it; prints the owner's answer byte.
HANDOVER = r'''
import array, json, socket, struct, sys
path, sid = sys.argv[1], sys.argv[2]
us = socket.socket(socket.AF_UNIX); us.settimeout(5)
us.connect(path)
mine, theirs = socket.socketpair()
msg = json.dumps({"id": 1, "method": "initialize",
                  "params": {"clientName": "forger", "resumeSessionId": sid}}).encode()
try:
    us.sendmsg([struct.pack("=II", %d, len(msg))],
               [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [theirs.fileno()]))])
    us.sendall(msg)
    print(repr(us.recv(1)))
except OSError as e:
    print("error", e.errno)
''' % MAGIC


def sock_name(sid):
    return "session-%s.sock" % hashlib.sha256(b"execd resume v1\0" + sid.encode()).hexdigest()[:32]


class Owner:
    """execd --listen with its log in a file, optionally run through prefix."""

    def __init__(self, state, prefix=()):
        self.log_path = state + ".log"
        self.log = open(self.log_path, "ab")
        self.p = subprocess.Popen(list(prefix) + [EXECD, "--listen", "ws://127.0.0.1:0",
                                  "--state-dir", state, "--resume-ttl-ms", "20000"],
                                  stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                  stderr=self.log)
        r, _, _ = select.select([self.p.stdout], [], [], 10)
        self.url = self.p.stdout.readline().decode().strip() if r else ""
        if not re.match(r"ws://[0-9.]+:\d+/", self.url):
            self.stop()
            raise RuntimeError("no URL from execd --listen: %r" % self.url)

    def logtext(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


async def detach(url):
    ws = await websockets.connect(url, ping_interval=None)
    r = await ws_call(ws, 1, "initialize", {"clientName": "victim"})
    await ws.close()
    return r["result"]["sessionId"]


async def resume(url, sid):
    ws = await websockets.connect(url, ping_interval=None)
    r = await ws_call(ws, 1, "initialize", {"clientName": "back", "resumeSessionId": sid})
    await ws.close()
    return r


def handover(path, sid, prefix=()):
    c = subprocess.run(list(prefix) + [sys.executable, "-c", HANDOVER, path, sid],
                       capture_output=True, text=True, timeout=20)
    return (c.stdout + c.stderr).strip()


def wait_log(o, text, timeout=5):
    end = time.time() + timeout
    while text not in o.logtext() and time.time() < end:
        time.sleep(0.05)
    return text in o.logtext()


def scenario(label, state, prefix=()):
    """Detach a session, try the forgeries, then resume it for real."""
    o = Owner(state, prefix)
    try:
        sid = run(detach(o.url))
        time.sleep(0.3)
        listed = sorted(os.listdir(state))
        t.eq(listed, [sock_name(sid)[:-5] + ".pid", sock_name(sid)],
             "%s: the socket (and its owner file) are named by a hash of the id" % label)
        files = [f for f in listed if f.endswith(".sock")]
        t.ok(all(sid not in f and sid.replace("-", "") not in f for f in listed),
             "%s: the socket's name does not reveal the id" % label, listed)
        path = os.path.join(state, files[0]) if files else ""

        said = handover(path, files[0][8:-5] if files else "x", prefix)
        t.eq(said, "b'N'", "%s: a hand-over naming another session is refused" % label)
        t.ok(wait_log(o, "names another session"), "%s: the refusal is logged" % label,
             o.logtext()[-600:])

        if UNSHARE is None:
            t.skip("%s: a peer in another pid namespace" % label, "no unshare")
            t.skip("%s: a peer in another user namespace" % label, "no unshare")
        else:
            said = handover(path, sid, list(prefix) + [UNSHARE, "-r", "--pid", "--fork"])
            t.ok(said in ("b''", "error 104", "error 32"),
                 "%s: a peer in a child pid namespace is refused, even with the id" % label,
                 said)
            t.ok(wait_log(o, "refused: another pid namespace"),
                 "%s: and the reason is logged" % label, o.logtext()[-600:])
            said = handover(path, sid, list(prefix) + [UNSHARE, "-r"])
            t.ok(said in ("b''", "error 104", "error 32"),
                 "%s: a peer in a child user namespace is refused, even with the id" % label,
                 said)
            t.ok(wait_log(o, "refused: another user namespace"),
                 "%s: and the reason is logged" % label, o.logtext()[-600:])

        r = run(resume(o.url, sid))
        t.ok(r.get("result", {}).get("sessionId") == sid,
             "%s: after all that, the real client resumes its session" % label, r)
    finally:
        o.stop()


top = tempfile.mkdtemp(prefix="execd-resume-auth.")
os.chmod(top, 0o755)
scenario("own uid", os.path.join(top, "state"))

# execd instances are not dumpable: as an ordinary user the owner cannot
# look at the peer's namespaces directly and must tell another way
if os.geteuid() != 0 or SETPRIV is None:
    t.skip("as nobody", "not root, or no setpriv")
else:
    state = os.path.join(top, "nobody")
    os.makedirs(state)
    os.chown(state, NOBODY, NOBODY)
    os.chown(top, NOBODY, NOBODY)
    scenario("as nobody", state, [SETPRIV, "--reuid", str(NOBODY), "--regid", str(NOBODY),
                                  "--clear-groups"])
shutil.rmtree(top, ignore_errors=True)
t.done()
