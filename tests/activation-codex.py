"""Registering execd with the real Codex app-server (the reference, when
installed), the three ways the README gives: execd started per connection
the way execd@.service starts it; the app-server told `environment/add`
with the ws:// URL (token in the path, or authBearerToken), or given it at
start-up in $CODEX_HOME/environments.toml or CODEX_EXEC_SERVER_URL; and the
app-server connecting to it."""
import glob
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from execd_client import EXECD, skip_all, tap

TOP_SRCDIR = os.environ.get("top_srcdir", ".")
ADDR = "127.0.0.66"


def find_codex():
    if os.environ.get("CODEX_REF"):
        return os.environ["CODEX_REF"]
    found = sorted(glob.glob("/opt/codex-ref/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex"))
    return found[0] if found else None


codex = find_codex()
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

    def __init__(self, name, environments_toml=None, env=None):
        self.home = tempfile.mkdtemp(prefix="ch.", dir="/var/tmp")
        if environments_toml is not None:
            with open(os.path.join(self.home, "environments.toml"), "w") as f:
                f.write(environments_toml)
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
            r, _, _ = select.select([self.p.stdout], [], [], 0.5)
            if r:
                chunk = self.p.stdout.read1(65536)
                if not chunk:
                    break
                self.buf += chunk
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
