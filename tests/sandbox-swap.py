"""execd's secrets stay out of a sandbox's view.

The files that hold the WebSocket credentials (--token-file,
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
import socket
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from execd_client import EXECD, Execd
from faultlib import RawWS
from wsclient import upgrade_request

n = [0]
bad = [0]
procs = []
tmp = tempfile.mkdtemp(prefix="execd-swap.")


def tap(cond, desc, diag=None):
    n[0] += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n[0], desc))
    if not cond:
        bad[0] += 1
        for line in str(diag).splitlines()[:20]:
            print("# " + line)
    sys.stdout.flush()


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


class WS(RawWS):
    """RawWS with the credential in the path or in an Authorization header."""

    def __init__(self, port, path="/", bearer=None):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        hdr = {"Authorization": "Bearer " + bearer} if bearer else None
        self.s.sendall(upgrade_request(path, hdr).encode())
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed during the upgrade")
            self.buf += chunk
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError("upgrade refused: %r" % head[:80])
        self.msgs, self.closed, self.next_id = [], False, 1


def jwt(key):
    def b64u(b):
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    si = b64u(b'{"alg":"HS256","typ":"JWT"}') + "." + b64u(
        json.dumps({"exp": int(time.time()) + 600}).encode())
    return si + "." + b64u(hmac.new(key.encode(), si.encode(), hashlib.sha256).digest())


def listener(label, extra):
    """execd --listen with its stdout a file: (Popen, port, the URL it printed)"""
    out = os.path.join(tmp, "listener-%d.out" % n[0])
    with open(out, "w") as f:
        lp = subprocess.Popen([EXECD, "--listen", "ws://127.0.0.1:0", "--state-dir",
                               os.path.join(tmp, "state-%d" % n[0])] + extra,
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
        ("--token-file", ["--token-file", TOKEN], TOKEN, TOKEN_TEXT, ("/" + TOKEN_TEXT, None)),
        ("--ws-token-file", ["--ws-auth", "capability-token", "--ws-token-file", TOKEN],
         TOKEN, TOKEN_TEXT, ("/" + TOKEN_TEXT, None)),
        ("--ws-shared-secret-file", ["--ws-auth", "signed-bearer-token",
                                     "--ws-shared-secret-file", KEY], KEY, KEY_TEXT,
         ("/", jwt(KEY_TEXT))),
        ("its stdout, a file with the URL and generated token", [], None, None, None)]:
    lp, port, url, out = listener(label, extra)
    if path is None:    # the generated token, printed
        secret = url.rsplit("/", 1)[-1]
        path, cred = out, ("/" + secret, None)
        tap(len(secret) >= 32, "control: the listener printed its URL with a token to its "
            "stdout file", url)
    try:
        ws = WS(port, cred[0], cred[1])
        ws.initialize()
        unreadable(ws, path, secret, label)
        ws.close()
    except (OSError, TimeoutError) as e:
        tap(False, "a session on the listener with %s" % label, repr(e))
    lp.terminate()
    lp.wait(10)

cleanup()
print("1..%d" % n[0])
sys.exit(1 if bad[0] else 0)
