"""Registering execd with the real Codex app-server (the reference, when
installed), the three ways the README gives: execd started per connection
the way execd@.service starts it; the app-server told `environment/add`
with the ws:// URL (token in the path, or authBearerToken), or given it at
start-up in $CODEX_HOME/environments.toml or CODEX_EXEC_SERVER_URL; and the
app-server connecting to it.  Then a managed-network command run by the
app-server on execd (a scripted Responses API stands in for the model):
execd's own execd-proxy decides its requests and the app-server receives
network/policyDecision for them."""
import asyncio
import glob
import http.server
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from execd_client import EXECD, find_ref, skip_all, tap
from scriptedmodel import ScriptedModel

TOP_SRCDIR = os.environ.get("top_srcdir", ".")
ADDR = "127.0.0.66"


codex = find_ref()
if not codex or not os.access(codex, os.X_OK):
    skip_all("the reference Codex is not installed (contrib/install-deps.sh --with-reference)")
if not shutil.which("systemd-socket-activate"):
    skip_all("systemd-socket-activate not installed (Debian: systemd)")

t = tap(120)
tmp = tempfile.mkdtemp(prefix="execd-codex.")
token = os.urandom(16).hex()
os.mkdir(os.path.join(tmp, "cred"))
os.mkdir(os.path.join(tmp, "run"))
with open(os.path.join(tmp, "cred", "token"), "w") as f:
    f.write(token + "\n")
os.mkdir(os.path.join(tmp, "bin"))
os.symlink(os.path.abspath(EXECD), os.path.join(tmp, "bin", "execd"))

# execd@.service's ExecStart, with this build's execd and the credential directory
unit = open(os.path.join(TOP_SRCDIR, "contrib", "systemd", "execd@.service.in")).read()
execstart = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
argv = (execstart.replace("@sbindir@", os.path.join(tmp, "bin"))
        .replace("${CREDENTIALS_DIRECTORY}", os.path.join(tmp, "cred")).split()) + ["--log-level", "info"]

s = socket.socket()
s.bind((ADDR, 0))
port = s.getsockname()[1]
s.close()
log = open(os.path.join(tmp, "activate.log"), "w+")
launcher = subprocess.Popen(["systemd-socket-activate", "-l", "%s:%d" % (ADDR, port), "--inetd", "-a",
                             "-E", "RUNTIME_DIRECTORY=" + os.path.join(tmp, "run")] + argv,
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
deadline = time.time() + 10
while time.time() < deadline and "Listening on" not in open(log.name).read():
    time.sleep(0.1)

class AppServer:
    """codex app-server on stdio, with its own CODEX_HOME."""

    def __init__(self, name, environments_toml=None, env=None, config_toml=None):
        self.home = tempfile.mkdtemp(prefix="ch.", dir="/var/tmp")
        self.notes = []
        if environments_toml is not None:
            with open(os.path.join(self.home, "environments.toml"), "w") as f:
                f.write(environments_toml)
        if config_toml is not None:
            with open(os.path.join(self.home, "config.toml"), "w") as f:
                f.write(config_toml)
        self.p = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(tmp, name + ".log"), "w"),
                                  env=dict(os.environ, CODEX_HOME=self.home, **(env or {})),
                                  start_new_session=True)
        self.buf = b""
        self.ids = iter(range(1, 1000000))
        r = self.call("initialize", {"clientInfo": {"name": "execd-test", "title": "execd-test",
                                                    "version": "0"},
                                     "capabilities": {"experimentalApi": True}})
        self.ok = r is not None and "result" in r
        self.send({"method": "initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def call(self, method, params, timeout=30):
        id = next(self.ids)
        self.send({"id": id, "method": method, "params": params})
        end = time.time() + timeout
        while time.time() < end:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                m = json.loads(line)
                if m.get("id") == id and "method" not in m:
                    return m
                if "method" in m and "id" not in m:
                    self.notes.append(m)
            r, _, _ = select.select([self.p.stdout], [], [], 0.5)
            if r:
                chunk = self.p.stdout.read1(65536)
                if not chunk:
                    break
                self.buf += chunk
        return None

    def wait_note(self, method, timeout=60):
        """A notification from the app-server (its turn/completed, ...)."""
        end = time.time() + timeout
        while time.time() < end:
            for i, m in enumerate(self.notes):
                if m["method"] == method:
                    return self.notes.pop(i)
            self.call("environment/status", {"environmentId": "execd"}, timeout=1)
            time.sleep(0.2)
        return None

    def status(self, env_id, timeout=20):
        """environment/status, once it has left "pending"."""
        end = time.time() + timeout
        while True:
            r = self.call("environment/status", {"environmentId": env_id})
            if (r or {}).get("result", {}).get("status") != "pending" or time.time() > end:
                return r
            time.sleep(0.2)

    def stop(self):
        try:
            os.killpg(self.p.pid, signal.SIGTERM)
            self.p.wait(10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        shutil.rmtree(self.home, ignore_errors=True)


class Relay:
    """A WebSocket man in the middle: what execd sends the app-server, recorded."""

    def __init__(self, target):
        self.target, self.seen, self.port = target, [], None
        ready = threading.Event()

        async def handler(ws, path=None):
            import websockets
            async with websockets.connect(self.target, max_size=None, ping_interval=None) as up:
                async def down():
                    async for m in up:
                        self.seen.append(json.loads(m))
                        await ws.send(m)

                async def upward():
                    async for m in ws:
                        await up.send(m)
                tasks = [asyncio.ensure_future(down()), asyncio.ensure_future(upward())]
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for x in tasks:
                    x.cancel()

        async def main():
            import websockets
            srv = await websockets.serve(handler, "127.0.0.1", 0, max_size=None, ping_interval=None)
            self.port = srv.sockets[0].getsockname()[1]
            ready.set()
            await asyncio.Future()

        threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
        ready.wait(10)


class Origin(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


def state(r):
    return (r or {}).get("result", {}).get("status")


base = "ws://%s:%d" % (ADDR, port)
url = "%s/%s" % (base, token)
apps = []
try:
    # 1. at run time: environment/add on the app-server's connection
    app = AppServer("app-server")
    apps.append(app)
    t.ok(app.ok, "the app-server answers initialize")
    r = app.call("environment/add", {"environmentId": "execd", "execServerUrl": url})
    t.eq(r and r.get("result"), {}, "environment/add with the ws:// URL (token in the path)")
    t.eq(state(app.status("execd")), "ready", "the app-server connected to execd")
    r = app.call("environment/info", {"environmentId": "execd"})
    info = (r or {}).get("result", {})
    t.ok(info.get("shell", {}).get("path", "").startswith("/") and
         str(info.get("cwd", "")).startswith("file:///"),
         "environment/info comes from execd (shell, cwd)", r)
    app.call("environment/add", {"environmentId": "bearer", "execServerUrl": base,
                                 "authBearerToken": token})
    t.eq(state(app.status("bearer")), "ready", "environment/add with authBearerToken")
    app.call("environment/add", {"environmentId": "wrong", "connectTimeoutMs": 5000,
                                 "execServerUrl": base + "/not-the-token"})
    r = app.status("wrong")
    t.ok(state(r) == "disconnected" and "401" in r["result"].get("error", ""),
         "a wrong token: disconnected, 401", r)

    # 2. at start-up: $CODEX_HOME/environments.toml
    app = AppServer("app-server-toml", environments_toml=(
        'default = "execd"\ninclude_local = false\n[[environments]]\nid = "execd"\n'
        'url = "%s"\n' % url))
    apps.append(app)
    t.eq(state(app.status("execd")), "ready", "environments.toml in CODEX_HOME: execd is ready")

    # 3. at start-up: CODEX_EXEC_SERVER_URL (environment id "remote")
    app = AppServer("app-server-env", env={"CODEX_EXEC_SERVER_URL": url})
    apps.append(app)
    t.eq(state(app.status("remote")), "ready", "CODEX_EXEC_SERVER_URL: environment remote is ready")

    t.ok("for client \"codex-environment\"" in open(log.name).read(),
         "execd logged the app-server's sessions on stderr (the journal)",
         open(log.name).read()[-2000:])

    # 4. a sandboxed command with a managed network, on execd through the app-server
    if not shutil.which("curl"):
        t.skip("managed network through the app-server", "no curl")
    else:
        origin = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
        origin.daemon_threads = True
        threading.Thread(target=origin.serve_forever, daemon=True).start()
        cmd = ("curl -sS -m 10 -o /dev/null -w 'code=%%{http_code}' http://127.0.0.1:%d/; echo; "
               "curl -sS -m 10 -o /dev/null -w 'code=%%{http_code}' http://denied.test/; echo"
               % origin.server_address[1])
        model = ScriptedModel(cmd)
        relay = Relay(url)
        workdir = tempfile.mkdtemp(prefix="work.", dir=tmp)
        app = AppServer("app-server-net", config_toml=(
            'model = "scripted"\nmodel_provider = "scripted"\napproval_policy = "never"\n'
            'default_permissions = "net"\n[features]\nnetwork_proxy = true\n'
            '[model_providers.scripted]\nname = "scripted"\n'
            'base_url = "http://127.0.0.1:%d/v1"\nwire_api = "responses"\n'
            'request_max_retries = 0\nstream_max_retries = 0\n'
            '[permissions.net.filesystem]\n":root" = "read"\n":project_roots" = "write"\n'
            '":tmpdir" = "write"\n[permissions.net.network]\nenabled = true\nmode = "full"\n'
            'allow_local_binding = false\n[permissions.net.network.domains]\n'
            '"127.0.0.1" = "allow"\n"denied.test" = "deny"\n' % model.port))
        apps.append(app)
        app.call("environment/add", {"environmentId": "execd",
                                     "execServerUrl": "ws://127.0.0.1:%d" % relay.port})
        t.eq(state(app.status("execd")), "ready", "managed network: the app-server reaches execd")
        r = app.call("thread/start", {"environments": [{"environmentId": "execd",
                                                        "cwd": workdir}], "cwd": workdir})
        tid = ((r or {}).get("result") or {}).get("thread", {}).get("id")
        r = app.call("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "go"}]})
        done = app.wait_note("turn/completed", timeout=90)
        out = " ".join(o for o in model.outputs if isinstance(o, str))
        t.ok(done is not None and "code=200" in out and "code=403" in out,
             "the app-server's sandboxed command on execd: allowed 200, denied 403 "
             "through execd's own execd-proxy", (done, model.outputs))
        notes = [m["params"] for m in relay.seen if m.get("method") == "network/policyDecision"]
        allow = [n for n in notes if n.get("decision") == "allow" and n.get("host") == "127.0.0.1"]
        deny = [n for n in notes if n.get("decision") == "deny" and n.get("host") == "denied.test"
                and n.get("reason") == "denied"]
        t.ok(allow and deny and allow[0]["processId"] == deny[0]["processId"],
             "the app-server received network/policyDecision for both requests", notes)
        t.eq(state(app.status("execd")), "ready",
             "and kept its connection (it took the notifications)")
        origin.shutdown()
finally:
    for a in apps:
        a.stop()
    try:
        os.killpg(launcher.pid, signal.SIGTERM)
        launcher.wait(10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()


def leftovers():
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            cmd = open(d + "/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if tmp + "/" in cmd and int(d[6:]) != os.getpid():
            out.append((int(d[6:]), cmd))
    return out


# instances that keep a detached session wait for its resume; SIGTERM ends them
for pid, _ in leftovers():
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
end = time.time() + 10
while leftovers() and time.time() < end:
    time.sleep(0.1)
left = leftovers()
t.ok(not left, "everything this test started has ended", left)
for pid, _ in left:
    os.kill(pid, signal.SIGKILL)
shutil.rmtree(tmp, ignore_errors=True)
t.done()
