"""Test client for execd: spawn it, speak JSON-RPC, TAP helpers.

Used by the test scripts under tests/ (run with Debian's /usr/bin/python3).
"""
import base64
import fcntl
import glob
import json
import os
import select
import signal
import subprocess
import sys
import time

from tap import Tap, skip_all  # noqa: F401 (tests import them from here)

TOP_BUILDDIR = os.environ.get("top_builddir", ".")
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
EXECD = os.environ.get("EXECD", os.path.join(TOP_BUILDDIR, "src", "execd"))


def b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode()


def unb64(s):
    return base64.b64decode(s)


SPAWN_HELPER = "execd-spawn"
SPARE = "execd-spare"   # a listener's next instance, prepared before its client comes


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def spawn_helper_of(pid, timeout=5):
    """The pid of an execd instance's spawn helper, or None.

    The helper names itself right after the fork; under load it may not have
    run yet when the instance already answers, so look for a while."""
    deadline = time.time() + timeout
    while True:
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            return None
        found = next((k for k in kids if comm(k) == SPAWN_HELPER), None)
        if found is not None or time.time() >= deadline:
            return found
        time.sleep(0.02)


def child_pids(pid, helper=False):
    """Children of pid; an execd's spawn helper only when helper is true; never a
    listener's spare instance (it serves no client yet)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        return []
    return [k for k in kids if comm(k) != SPARE and (helper or comm(k) != SPAWN_HELPER)]


# The reference's version: contrib/codex-version, the one place it is pinned.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       "contrib", "codex-version")) as _f:
    REF_VERSION = _f.read().strip()
REF_GLOB = "/opt/codex-ref/%s/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex" % REF_VERSION


def find_ref():
    """The reference codex binary: $CODEX_REF (when executable), else the one
    install-deps put under /opt/codex-ref; None when there is none."""
    ref = os.environ.get("CODEX_REF")
    if ref:
        return ref if os.access(ref, os.X_OK) else None
    found = sorted(glob.glob(REF_GLOB))
    return found[0] if found else None


def tap(timeout=120):
    """The tests' Tap (tests/lib/tap.py), bailing out after timeout seconds."""
    return Tap(timeout)


class Execd:
    """One execd instance over pipes (newline-delimited JSON-RPC)."""

    def __init__(self, extra_args=None, argv=None, init=True, env=None):
        cmd = argv if argv is not None else [EXECD, "--stdio"] + list(extra_args or [])
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=None, env=env)
        # On a loaded machine each pipe-full waits a scheduling slice for its
        # reader: with 64 KiB pipes an answer (or a request) of megabytes
        # crawls.  1 MiB pipes (when allowed) move 16 times as much each turn.
        for pipe in (self.p.stdout, self.p.stdin):
            try:
                fcntl.fcntl(pipe.fileno(), F_SETPIPE_SZ, 1 << 20)
            except OSError:
                pass
        # a bytearray grown in place, searched for a newline only where not yet
        # searched: an answer of megabytes arrives in 64 KiB pipe reads, and
        # copying or rescanning the whole of it at each read is quadratic
        self.buf = bytearray()
        self.scanned = 0
        self.next_id = 1
        self.notifications = []
        self.server_requests = []
        self.responses = {}
        self.eof = False
        if init:
            r = self.call("initialize", {"clientName": "test"})
            if "result" not in r:
                raise RuntimeError("initialize failed: %r" % r)
            self.init_result = r["result"]
            self.notify("initialized")

    @property
    def pid(self):
        return self.p.pid

    def send_raw(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg) + "\n")

    def notify(self, method, params=None):
        m = {"method": method}
        if params is not None:
            m["params"] = params
        self.send(m)

    def request(self, method, params=None, id=None):
        if id is None:
            id = self.next_id
            self.next_id += 1
        m = {"id": id, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return id

    def _read_some(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [], max(0, timeout))
        if not r:
            return False
        data = os.read(self.p.stdout.fileno(), 1 << 20)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def _pump(self, timeout):
        """Parse every whole line buffered; read more for up to timeout first if none."""
        while self.buf.find(b"\n", self.scanned) < 0:
            self.scanned = len(self.buf)
            if self.eof or not self._read_some(timeout):
                return False
        lines = self.buf.split(b"\n")
        self.buf = lines.pop()
        self.scanned = 0
        for line in lines:
            msg = json.loads(line)
            if "method" in msg and "id" not in msg:
                self.notifications.append(msg)
            elif "method" in msg:
                self.server_requests.append(msg)     # network/policyRequest
            else:
                self.responses[msg.get("id")] = msg
        return True

    def wait_response(self, id, timeout=10):
        deadline = time.time() + timeout
        while id not in self.responses:
            if not self._pump(deadline - time.time()) and (self.eof or time.time() >= deadline):
                raise TimeoutError("no response to id %r" % (id,))
        return self.responses.pop(id)

    def call(self, method, params=None, timeout=10):
        return self.wait_response(self.request(method, params), timeout)

    def wait_notification(self, method, pred=None, timeout=10, consume=True):
        deadline = time.time() + timeout
        while True:
            for i, n in enumerate(self.notifications):
                if n["method"] == method and (pred is None or pred(n["params"])):
                    if consume:
                        del self.notifications[i]
                    return n["params"]
            if not self._pump(deadline - time.time()) and (self.eof or time.time() >= deadline):
                raise TimeoutError("no %s notification" % method)

    def wait_server_request(self, method, timeout=10):
        """The next request execd sent us (it waits for our answer)."""
        deadline = time.time() + timeout
        while True:
            for i, m in enumerate(self.server_requests):
                if m["method"] == method:
                    return self.server_requests.pop(i)
            if not self._pump(deadline - time.time()) and (self.eof or time.time() >= deadline):
                raise TimeoutError("no %s request" % method)

    def drain(self, timeout=0.2):
        while self._pump(timeout):
            pass

    def start(self, pid, argv, tty=False, env=None, cwd="file:///tmp", **extra):
        params = {"processId": pid, "argv": argv, "cwd": cwd,
                  "env": env if env is not None else {"PATH": "/usr/bin:/bin"}, "tty": tty}
        params.update(extra)
        return self.call("process/start", params)

    def collect(self, pid, timeout=30):
        """Output bytes by stream, exit code, until process/closed."""
        out = {}
        code = None
        seqs = []
        deadline = time.time() + timeout
        while True:
            closed = None
            # process/* only: network/policyDecision carries the processId too
            mine = [n for n in self.notifications if n["params"].get("processId") == pid and
                    n["method"].startswith("process/")]
            if mine:        # by identity: comparing the dicts is quadratic in a burst
                taken = set(map(id, mine))
                self.notifications = [n for n in self.notifications if id(n) not in taken]
            for n in mine:
                p = n["params"]
                seqs.append(p["seq"])
                if n["method"] == "process/output":
                    out.setdefault(p["stream"], []).append(unb64(p["chunk"]))
                elif n["method"] == "process/exited":
                    code = p["exitCode"]
                elif n["method"] == "process/closed":
                    closed = p
            if closed is not None:
                return {k: b"".join(v) for k, v in out.items()}, code, seqs
            if not self._pump(deadline - time.time()) and (self.eof or time.time() >= deadline):
                raise TimeoutError("process %s did not close" % pid)

    def children(self):
        """PIDs of execd's children (for leak checks), its spawn helper left out."""
        return child_pids(self.p.pid)

    def close(self, timeout=10):
        """EOF on stdin; execd must kill its processes and exit. Returns its exit code."""
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return None

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def network_proxy(domains=None, allow_local=True, timeout_ms=None, mode="full"):
    """process/start's networkProxy (the reference's RemoteNetworkProxyLaunchConfig)."""
    np = {"proxy": {"enabled": True, "enableSocks5": True, "enableSocks5Udp": False,
                    "allowUpstreamProxy": False, "dangerouslyAllowAllUnixSockets": False,
                    "mode": mode, "domains": domains, "unixSockets": None,
                    "allowLocalBinding": allow_local}}
    if timeout_ms is not None:
        np["policyDecisionTimeoutMs"] = timeout_ms
    return np


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except OSError:
        return False
