"""A sandbox's view is made of what execd checked, and execd's secrets stay out of it.

1. A sandboxed command flips a directory of its writable root with a symlink
   to a directory outside every root (renameat2 RENAME_EXCHANGE, in a loop)
   while the client starts commands whose writable roots are the root and
   that directory.  Whenever the flip lands between execd's planning and the
   child's mounts, a mount made by name follows the link: the outside
   directory is bound writable, and execd itself makes the protected names'
   placeholders (.git, .codex, ...) there, on the host.  Each start must
   either run with the directory it was given or be refused, and nothing
   may appear outside.
2. The files that hold the WebSocket credentials (--token-file,
   --ws-token-file, --ws-shared-secret-file) and execd's stdout when it is
   a file (a listener prints its URL, token included, there) cannot be read
   by a sandboxed command, even one that may read the whole root: with the
   network on, a command holding the token could log in to execd's own
   listener and start commands outside any sandbox.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from execd_client import EXECD, Execd, Tap
from faultlib import RawWS

procs = []
tmp = tempfile.mkdtemp(prefix="execd-swap.")
t = Tap()               # bounded by bail() below, which also cleans up
tap = t.ok


def cleanup():
    for c in procs:
        c.kill()
        c.wait() if hasattr(c, "wait") else None
    shutil.rmtree(tmp, ignore_errors=True)


def bail(*a):
    print("Bail out! test timed out")
    sys.stdout.flush()
    cleanup()
    os._exit(1)


signal.signal(signal.SIGALRM, bail)
signal.alarm(150)

with open("/proc/self/status") as f:
    if not any(line.startswith("Seccomp:") for line in f):
        print("1..0 # SKIP this kernel has no seccomp")
        raise SystemExit(0)

os.chmod(tmp, 0o755)
ENV = {"PATH": "/usr/bin:/bin"}
ROOT_READ = {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}


def sandbox(writable, network="restricted"):
    return {"permissions": {"type": "managed", "network": network, "file_system": {
        "type": "restricted", "entries": [ROOT_READ] + [
            {"path": {"type": "path", "path": "file://" + w}, "access": "write"}
            for w in writable]}},
        "windowsSandboxLevel": "disabled", "cwd": "file://" + writable[0]}


def run(c, pid, argv, sb, cwd):
    r = c.call("process/start", {"processId": pid, "argv": argv, "env": ENV, "tty": False,
                                 "cwd": "file://" + cwd, "sandbox": sb})
    if "error" in r:
        return r, None
    out, _, _ = c.collect(pid, 20)
    return r, (out.get("stdout", b"") + out.get("stderr", b"")).decode(errors="replace")


# ---------------------------------------------------------------- 1. the swap race

W, OUT = os.path.join(tmp, "ws"), os.path.join(tmp, "outside")
os.makedirs(os.path.join(W, "sub"))
os.makedirs(OUT)
c = Execd(extra_args=["--state-dir", os.path.join(tmp, "state")])
procs.append(c)
FLIP = """
import ctypes, os, sys
w, out = sys.argv[1], sys.argv[2]
os.symlink(out, w + "/lnk")
libc = ctypes.CDLL(None, use_errno=True)
a, b = (w + "/lnk").encode(), (w + "/sub").encode()
print("flipping", flush=True)
while True:
    libc.renameat2(-100, a, -100, b, 2)
"""
r = c.call("process/start", {"processId": "flip", "argv": ["/usr/bin/python3", "-c", FLIP, W, OUT],
                             "env": ENV, "tty": False, "cwd": "file://" + W,
                             "sandbox": sandbox([W])})
ok = "result" in r and c.wait_notification(
    "process/output", lambda p: p["processId"] == "flip", timeout=20) is not None
tap(ok, "control: a sandboxed command flips ws/sub with a symlink to outside", r)

ran = refused = 0
weird = []
deadline = time.time() + 40
i = 0
while i < 150 and time.time() < deadline:
    i += 1
    r, out = run(c, "b%d" % i, ["/bin/sh", "-c", "touch %s/sub/in%d %s/out%d 2>/dev/null; true"
                                % (W, i, OUT, i)], sandbox([W, W + "/sub"]), W)
    if out is None:
        refused += 1
        msg = r.get("error", {}).get("message", "")
        if not msg:
            weird.append(r)
    else:
        ran += 1
c.call("process/terminate", {"processId": "flip"})
c.collect("flip", 10)
left = sorted(os.listdir(OUT))
tap(ran + refused == i and not weird and ran > 0,
    "%d starts raced the flip: each ran (%d) or was refused with an error (%d)"
    % (i, ran, refused), weird[:3])
tap(left == [], "nothing appeared outside the roots: no write, no placeholder", left)
c.close()

# ---------------------------------------------------------------- 2. credential files

TOKEN_TEXT = "t0ken-%d-abcdefghijklmnopqrstuvwxyz" % os.getpid()
KEY_TEXT = "k3y-%d-abcdefghijklmnopqrstuvwxyz0123456789" % os.getpid()
TOKEN, KEY = os.path.join(tmp, "token"), os.path.join(tmp, "jwt.key")
for path, text in ((TOKEN, TOKEN_TEXT + "\n"), (KEY, KEY_TEXT)):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
SW = os.path.join(tmp, "ws2")
os.makedirs(SW)


def jwt(key):
    def b64u(b):
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    si = b64u(b'{"alg":"HS256","typ":"JWT"}') + "." + b64u(
        json.dumps({"exp": int(time.time()) + 600}).encode())
    return si + "." + b64u(hmac.new(key.encode(), si.encode(), hashlib.sha256).digest())


def listener(label, extra):
    """execd --listen with its stdout a file: (Popen, port, the URL it printed)"""
    out = os.path.join(tmp, "listener-%d.out" % t.n)
    with open(out, "w") as f:
        lp = subprocess.Popen([EXECD, "--listen", "ws://127.0.0.1:0", "--state-dir",
                               os.path.join(tmp, "state-%d" % t.n)] + extra,
                              stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.DEVNULL)
    procs.append(lp)
    for _ in range(400):
        with open(out) as f:
            url = f.read().strip()
        if url:
            break
        time.sleep(0.025)
    m = re.match(r"ws://127\.0\.0\.1:(\d+)/(\S*)$", url)
    return lp, int(m.group(1)) if m else 0, url, out


def unreadable(ws, path, secret, label):
    """a sandboxed command (root readable, network on) prints path: it must fail"""
    r = ws.call("process/start", {"processId": "cat", "argv": ["/bin/sh", "-c",
                "cat %s; echo rc=$?" % path], "env": ENV, "tty": False,
                "cwd": "file://" + SW, "sandbox": sandbox([SW], network="enabled")})
    out = b""
    try:
        while True:
            msg = ws.wait(lambda x: x.get("method") in ("process/output", "process/closed"), 20)
            if msg["method"] == "process/closed":
                break
            out += base64.b64decode(msg["params"]["chunk"])
    except TimeoutError:
        pass
    out = out.decode(errors="replace")
    tap("result" in r and "rc=" in out and "rc=0" not in out and secret not in out,
        "a sandboxed command with root read and network on cannot read %s" % label, (r, out))


for label, extra, path, secret, cred in [
        ("--token-file", ["--token-file", TOKEN], TOKEN, TOKEN_TEXT, (TOKEN_TEXT, None)),
        ("--ws-token-file", ["--ws-auth", "capability-token", "--ws-token-file", TOKEN],
         TOKEN, TOKEN_TEXT, (TOKEN_TEXT, None)),
        ("--ws-shared-secret-file", ["--ws-auth", "signed-bearer-token",
                                     "--ws-shared-secret-file", KEY], KEY, KEY_TEXT,
         ("", jwt(KEY_TEXT))),
        ("its stdout, a file with the URL and generated token", [], None, None, None)]:
    lp, port, url, out = listener(label, extra)
    if path is None:    # the generated token, printed
        secret = url.rsplit("/", 1)[-1]
        path, cred = out, (secret, None)
        tap(len(secret) >= 32, "control: the listener printed its URL with a token to its "
            "stdout file", url)
    try:
        ws = RawWS("127.0.0.1", port, cred[0], headers=cred[1] and {
            "Authorization": "Bearer " + cred[1]})
        ws.initialize()
        unreadable(ws, path, secret, label)
        ws.close()
    except (OSError, TimeoutError) as e:
        tap(False, "a session on the listener with %s" % label, repr(e))
    lp.terminate()
    lp.wait(10)

cleanup()
t.done()
