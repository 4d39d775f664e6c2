"""The client disconnecting at every step of every process/*, fs/* and http/request call.

For each method, over newline-JSON on pipes and over WebSocket, the client
goes away (1) half-way through sending the request, (2) right after sending
it, (3) while it is in flight (long-poll, a transfer that never gets an
answer) and (4) after the answer.  Each time execd (or the listener's
instance) must end within seconds, every process it started must be gone,
and an HTTP transfer in flight must be hung up; the listener must go on
serving new clients.
"""
import json
import os
import subprocess
import time

from execd_client import EXECD, b64, tap, pid_alive
from faultlib import (FaultListener, PidDir, RawWS, SilentHTTPServer, no_resume_args,
                      wait_dead, descendants)

t = tap(timeout=240)
http = SilentHTTPServer()
state = PidDir()        # also a scratch state directory for session sockets
EXTRA = no_resume_args(state.path)


def start_params(pd, pid, stdin=False):
    return {"processId": pid, "argv": pd.sh_reporting("sleep 60"), "cwd": "file:///tmp",
            "env": {"PATH": "/usr/bin:/bin"}, "tty": False, "pipeStdin": stdin}


def method_params(method):
    if method == "process/read":
        return {"processId": "p", "afterSeq": 0, "waitMs": 8000}
    if method == "process/write":
        return {"processId": "p", "chunk": b64("data\n"), "writeId": "w1"}
    if method == "process/signal":
        return {"processId": "p", "signal": "interrupt"}
    if method == "process/terminate":
        return {"processId": "p"}
    if method == "http/request":
        return {"method": "GET", "url": "http://127.0.0.1:%d/slow" % http.port,
                "requestId": "r1", "timeoutMs": 30000}
    scratch = "file://" + state.path
    fs = {
        "fs/readFile": {"path": "file:///etc/hostname"},
        "fs/writeFile": {"path": scratch + "/written", "dataBase64": b64("x" * 100000)},
        "fs/getMetadata": {"path": "file:///etc"},
        "fs/readDirectory": {"path": "file:///etc"},
        "fs/walk": {"path": "file:///usr/share", "options": {"maxDepth": 3,
                    "maxDirectories": 1000, "maxEntries": 5000,
                    "followDirectorySymlinks": False}},
        "fs/open": {"handleId": "h1", "path": "file:///etc/hostname"},
        "fs/watchMissing": {"watchId": 1, "missing": [scratch + "/not-yet"]},
    }
    if method in fs:
        return fs[method]
    raise ValueError(method)


# which steps make sense: an answer never comes for a transfer the server ignores
STEPS = {
    "process/start": ["partial", "sent", "answered"],
    "process/read": ["partial", "sent", "inflight", "answered"],
    "process/write": ["partial", "sent", "answered"],
    "process/signal": ["partial", "sent", "answered"],
    "process/terminate": ["partial", "sent", "answered"],
    "http/request": ["partial", "sent", "inflight"],
}
# filesystem calls are answered at once: no in-flight step
for m in ("fs/readFile", "fs/writeFile", "fs/getMetadata", "fs/readDirectory", "fs/walk",
          "fs/open", "fs/watchMissing"):
    STEPS[m] = ["partial", "sent", "answered"]


class StdioClient:
    def __init__(self):
        self.p = subprocess.Popen([EXECD, "--stdio"] + EXTRA, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buf = b""
        self.nid = 1

    def raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def encode(self, method, params):
        m = {"id": self.nid, "method": method}
        self.nid += 1
        if params is not None:
            m["params"] = params
        return json.dumps(m).encode() + b"\n", m["id"]

    def response(self, id, timeout=10):
        deadline = time.time() + timeout
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                m = json.loads(line)
                if m.get("id") == id and "method" not in m:
                    return m
            if time.time() > deadline:
                raise TimeoutError(id)
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                raise EOFError
            self.buf += chunk

    def call(self, method, params=None):
        data, id = self.encode(method, params)
        self.raw(data)
        return self.response(id)

    def initialize(self):
        self.call("initialize", {"clientName": "fault"})
        self.raw(b'{"method":"initialized"}\n')

    def disconnect(self):
        for f in (self.p.stdin, self.p.stdout):
            try:
                f.close()
            except OSError:
                pass

    def server_pids(self):
        return [self.p.pid]

    def gone(self, timeout=5):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return False, "still running %gs after the disconnect" % timeout
        return rc == 0, "exit status %s" % rc


class WSClient:
    def __init__(self, listener):
        self.L = listener
        known = [c for c in descendants(listener.p.pid)]
        self.ws = RawWS(listener.host, listener.port, listener.token)
        self.instance = listener.new_instance(known)
        self.nid = 1

    def raw(self, data):
        self.ws.send_raw(data)

    def encode(self, method, params):
        from wsclient import frame
        m = {"id": self.nid, "method": method}
        self.nid += 1
        if params is not None:
            m["params"] = params
        return frame(json.dumps(m)), m["id"]

    def response(self, id, timeout=10):
        return self.ws.response(id, timeout)

    def call(self, method, params=None):
        data, id = self.encode(method, params)
        self.raw(data)
        return self.response(id)

    def initialize(self):
        self.ws.initialize()

    def disconnect(self):
        self.ws.close()

    def gone(self, timeout=5):
        if self.instance is None:
            return False, "no instance found for the connection"
        ok = wait_dead([self.instance], timeout)
        return ok, "instance %d %s" % (self.instance, "ended" if ok else "still running")


def run_case(make_client, method, step):
    pd = PidDir()
    hangups0 = http.hangups
    accepted0 = http.accepted()
    c = make_client()
    c.initialize()
    # a bystander no call touches: only the disconnect can end it (process/signal
    # and process/terminate end their own target whether or not it does)
    r = c.call("process/start", start_params(pd, "b"))
    assert "result" in r, r
    known = 1
    if method != "process/start":
        r = c.call("process/start", start_params(pd, "p", stdin=True))
        assert "result" in r, r
        known = 2
    running = pd.wait_pids(known)
    data, id = c.encode(method, start_params(pd, "q") if method == "process/start"
                        else method_params(method))
    in_flight = True
    if step == "partial":
        c.raw(data[:len(data) // 2])
        time.sleep(0.05)
    elif step == "sent":
        c.raw(data)
    elif step == "inflight":
        c.raw(data)
        time.sleep(0.3)
        if method == "http/request":
            # in flight means execd has connected: wait for it (bounded)
            deadline = time.time() + 5
            while http.accepted() == accepted0 and time.time() < deadline:
                time.sleep(0.02)
            in_flight = http.accepted() > accepted0
    elif step == "answered":
        c.raw(data)
        c.response(id)
        if method == "process/start":
            # started means running: its pid file is there before the client goes
            known += 1
            pd.wait_pids(known)
    c.disconnect()
    ok_exit, why = c.gone()
    # a start cut off after sending may or may not have run: give its pid file a moment
    pids = pd.wait_pids(known + (1 if (method, step) == ("process/start", "sent") else 0),
                        1 if (method, step) == ("process/start", "sent") else 5)
    ok_pids = len(running) == (2 if method != "process/start" else 1) and len(pids) >= known
    ok_dead = wait_dead(pids, 5)
    ok_http = True
    if method == "http/request" and http.accepted() > accepted0:
        ok_http = http.wait_hangups(hangups0 + (http.accepted() - accepted0), 5)
    t.ok(ok_exit and ok_pids and ok_dead and ok_http and in_flight,
         "%s: disconnect %s %s" % (c.label, step, method),
         "%s; processes seen %s of %d, alive: %s; transfer in flight: %s, hung up: %s" % (
             why, pids, known, [p for p in pids if pid_alive(p)], in_flight, ok_http))
    pd.cleanup()


class Stdio(StdioClient):
    label = "stdio"


L = FaultListener(EXTRA)


class WS(WSClient):
    label = "websocket"

    def __init__(self):
        WSClient.__init__(self, L)


for make in (Stdio, WS):
    for method, steps in STEPS.items():
        for step in steps:
            run_case(make, method, step)

# what is left: the listener serves a new client and has no instance but that one
ws = RawWS(L.host, L.port, L.token)
ws.initialize()
r = ws.call("environment/status")
t.eq(r.get("result"), {"status": "ready"}, "the listener still serves after every disconnect")
ws.close()
time.sleep(0.3)
left = descendants(L.p.pid)
t.ok(wait_dead(left, 5), "no instance or process of the listener is left", left)
t.eq(L.stop(), 0, "the listener exits 0 on SIGTERM")
http.close()
state.cleanup()
t.done()
