"""Helpers of the fault and load tests (tests/fault/*.py, tests/load.py).

A raw WebSocket client with exact control over what is sent and when, the
instances a listener forks, processes that report their pid, and a local
HTTP server that never answers.
"""
import json
import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from execd_client import EXECD, child_pids, pid_alive
from wsclient import Listener, frame, parse_frames, upgrade_request


def execd_has_option(opt):
    """Does this execd know a command-line option (features land at different times)?"""
    p = subprocess.run([EXECD, "--help"], capture_output=True, text=True, timeout=10)
    return opt in p.stderr + p.stdout


def no_resume_args(state_dir=None):
    """Arguments that make a disconnect final (no session resume), where resume exists."""
    if not execd_has_option("--resume-ttl-ms"):
        return []
    return ["--resume-ttl-ms", "0"] + (["--state-dir", state_dir] if state_dir else [])


def children(pid):
    """Children of pid, an execd's spawn helper left out."""
    return child_pids(pid)


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        for c in children(todo.pop()):
            out.append(c)
            todo.append(c)
    return out


def wait_dead(pids, timeout=5.0):
    """True when every pid is gone (or a zombie) within timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not any(pid_alive(p) for p in pids):
            return True
        time.sleep(0.02)
    return not any(pid_alive(p) for p in pids)


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kb(pid):
    """Proportional set size: shared pages split among their users (sums add up)."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class PidDir:
    """A scratch directory; sh_reporting() runs a command that leaves its pid there first."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="execd-fault.")
        self.n = 0

    def sh_reporting(self, cmd):
        """argv of `sh -c` that writes its pid to a new file, then execs cmd (same pid)."""
        self.n += 1
        f = os.path.join(self.path, "pid%d" % self.n)
        return ["sh", "-c", "echo $$ > %s.tmp && mv %s.tmp %s && exec %s" % (f, f, f, cmd)]

    def pids(self):
        out = []
        for name in os.listdir(self.path):
            if name.startswith("pid") and not name.endswith(".tmp"):
                try:
                    with open(os.path.join(self.path, name)) as fh:
                        out.append(int(fh.read().split()[0]))
                except (OSError, ValueError, IndexError):
                    pass
        return out

    def wait_pids(self, n, timeout=5.0):
        deadline = time.time() + timeout
        while len(self.pids()) < n and time.time() < deadline:
            time.sleep(0.02)
        return self.pids()

    def new_since(self, before, n, timeout=5.0):
        """Wait for n pids not in the list before; returns those seen."""
        deadline = time.time() + timeout
        while True:
            fresh = [p for p in self.pids() if p not in before]
            if len(fresh) >= n or time.time() >= deadline:
                return fresh
            time.sleep(0.02)

    def cleanup(self):
        for p in self.pids():
            try:
                os.kill(p, 9)
            except OSError:
                pass
        shutil.rmtree(self.path, ignore_errors=True)


class RawWS:
    """A WebSocket client on a plain socket: frames exactly as asked, nothing else."""

    def __init__(self, host, port, token, timeout=10, headers=None):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.s.sendall(upgrade_request("/" + token, headers).encode())
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed during the upgrade")
            self.buf += chunk
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError("upgrade refused: %r" % head[:80])
        self.msgs = []
        self.closed = False
        self.next_id = 1

    def send_raw(self, data):
        self.s.sendall(data)

    def send(self, obj):
        self.s.sendall(frame(json.dumps(obj)))

    def request(self, method, params=None):
        id = self.next_id
        self.next_id += 1
        m = {"id": id, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return id

    def _pump(self, timeout):
        r, _, _ = select.select([self.s], [], [], max(0, timeout))
        if not r:
            return False
        try:
            chunk = self.s.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return False
        self.buf += chunk
        frames, self.buf = parse_frames(self.buf)
        for op, payload in frames:
            if op in (1, 2):
                self.msgs.append(json.loads(payload))
            elif op == 8:
                self.closed = True
        return True

    def wait(self, pred, timeout=10):
        deadline = time.time() + timeout
        while True:
            for i, m in enumerate(self.msgs):
                if pred(m):
                    return self.msgs.pop(i)
            if self.closed or time.time() >= deadline:
                raise TimeoutError("no such message")
            self._pump(deadline - time.time())

    def response(self, id, timeout=10):
        return self.wait(lambda m: m.get("id") == id and "method" not in m, timeout)

    def call(self, method, params=None, timeout=10):
        return self.response(self.request(method, params), timeout)

    def initialize(self):
        r = self.call("initialize", {"clientName": "fault"})
        self.send({"method": "initialized"})
        return r

    def close(self):
        """Drop the TCP connection, no close frame (as a crashed client would)."""
        try:
            self.s.close()
        except OSError:
            pass


class FaultListener(Listener):
    """A listener whose instances (one per connection) can be told apart."""

    def new_instance(self, known, timeout=5):
        deadline = time.time() + timeout
        while time.time() < deadline:
            fresh = [c for c in children(self.p.pid) if c not in known]
            if fresh:
                return fresh[0]
            time.sleep(0.01)
        return None


class SilentHTTPServer:
    """Accepts HTTP connections on 127.0.0.1 and never answers; tells when a client hangs up."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.conns = []
        self.hangups = 0
        self.lock = threading.Lock()
        self.stop = False
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def _run(self):
        socks = [self.ls]
        while not self.stop:
            r, _, _ = select.select(socks, [], [], 0.1)
            for s in r:
                if s is self.ls:
                    c, _ = self.ls.accept()
                    socks.append(c)
                    with self.lock:
                        self.conns.append(c)
                    continue
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    socks.remove(s)
                    s.close()
                    with self.lock:
                        self.hangups += 1

    def accepted(self):
        with self.lock:
            return len(self.conns)

    def wait_hangups(self, n, timeout=5):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if self.hangups >= n:
                    return True
            time.sleep(0.02)
        return False

    def close(self):
        self.stop = True
        self.th.join(2)
        self.ls.close()
