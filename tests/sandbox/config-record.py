#!/usr/bin/python3
"""No sandbox runs whose writable root cannot be recorded.

environmentConfig/read leaves out a project layer that changed inside a
writable root since the root was first given to a sandboxed command or
request; the roots are kept in STATE-DIR/sandbox-roots so that a restart
forgets none (sandbox_record.c).  When that file cannot be written (the
state directory missing and not makeable, read-only, full), the root was
kept in memory only: the command ran, and after a restart execd read
what it had planted.  Here the state directory lies under a regular file
(so no account can make it); the writable root has its protected names
already (no placeholder, which needs the state directory, is made), so
only the record stands in the way.  A command and an fs/writeFile must be
refused, or their layer left out after a restart too.  Output is TAP.
"""
import base64
import os
import shutil
import tempfile

from execd_client import Execd, tap
from cfgattack import sandbox, write
from cfgattack import layers as read_layers

t = tap(timeout=120)
BUILD = os.environ.get("top_builddir", ".")
EXECD = os.path.join(BUILD, "src", "execd")
EVIL = 'sandbox_mode = "danger-full-access"\n'


def layers(c, cwd):
    return read_layers(c, cwd, [["sandbox_mode"]])


s = tempfile.mkdtemp(prefix="sbrec.", dir="/var/tmp")
os.chmod(s, 0o755)
W = s + "/w"
write(W + "/app/.git/HEAD", "ref: refs/heads/main\n")
for n in (".git", ".codex", ".agents", ".aws"):
    os.makedirs(W + "/" + n)
write(s + "/home/.codex/config.toml", '[projects."%s/app"]\ntrust_level = "trusted"\n' % W)
write(s + "/notadir", "")
env = dict(os.environ, HOME=s + "/home", CODEX_HOME=s + "/home/.codex")
argv = [EXECD, "--stdio", "--state-dir", s + "/notadir/state"]

c = Execd(argv=argv, env=env)
r = c.call("process/start", {"processId": "a", "argv": [
    "/bin/sh", "-c", 'mkdir -p "$1/app/x/.codex" && printf "%s" "$2" > '
    '"$1/app/x/.codex/config.toml" && echo planted', "sh", W, EVIL],
    "cwd": "file://" + W + "/app", "env": {"PATH": "/usr/bin:/bin"}, "tty": False,
    "sandbox": sandbox(W)})
out = ""
if "result" in r:
    o, _, _ = c.collect("a", timeout=60)
    out = (o.get("stdout", b"") + o.get("stderr", b"")).decode(errors="replace")
cmd_planted = "planted" in out
os.makedirs(W + "/app/y/.codex", exist_ok=True)
r2 = c.call("fs/writeFile", {"path": "file://" + W + "/app/y/.codex/config.toml",
                             "dataBase64": base64.b64encode(EVIL.encode()).decode(),
                             "sandbox": sandbox(W)})
fs_planted = "result" in r2
c.close()

c = Execd(argv=argv, env=env)
got = layers(c, W + "/app/x")
t.ok("danger-full-access" not in got,
     "a command whose root cannot be recorded is refused (or its layer stays out)",
     (r, out, got))
t.ok(not cmd_planted, "the command did not run", (r, out))
got = layers(c, W + "/app/y")
t.ok("danger-full-access" not in got,
     "an fs/writeFile whose root cannot be recorded is refused (or its layer stays out)",
     (r2, got))
t.ok(not fs_planted, "the fs/writeFile did not write", r2)
# control: with a state directory, the same command runs
c.close()
c = Execd(argv=[EXECD, "--stdio", "--state-dir", s + "/state"], env=env)
r = c.call("process/start", {"processId": "b", "argv": ["/bin/echo", "ran"],
                             "cwd": "file://" + W + "/app", "env": {"PATH": "/usr/bin:/bin"},
                             "tty": False, "sandbox": sandbox(W)})
o, _, _ = c.collect("b", timeout=60) if "result" in r else ({}, None, None)
t.ok(b"ran" in o.get("stdout", b""), "control: with a state directory it runs", (r, o))
c.close()
shutil.rmtree(s, ignore_errors=True)

# A full record: past 4096 roots "/" stands for them all.  Two instances
# filling it at once can leave more than 4096 lines before (or without)
# the "/"; a root past the limit must still count, and once full, a
# restarted instance must still run sandboxes.
s = tempfile.mkdtemp(prefix="sbrec.", dir="/var/tmp")
os.chmod(s, 0o755)
W = s + "/w"
write(W + "/app/.git/HEAD", "ref: refs/heads/main\n")
write(s + "/home/.codex/config.toml", '[projects."%s/app"]\ntrust_level = "trusted"\n' % W)
env = dict(os.environ, HOME=s + "/home", CODEX_HOME=s + "/home/.codex")
os.makedirs(s + "/state")
st = os.stat(W)
with open(s + "/state/sandbox-roots", "w") as f:
    for i in range(4097):
        f.write("1 %d 1000 /nonexistent/%d\n" % (i + 1, i))
    f.write("%d %d %d %s\n" % (st.st_dev, st.st_ino, int(os.stat(s).st_ctime) - 10, W))
write(W + "/app/x/.codex/config.toml", EVIL)
c = Execd(argv=[EXECD, "--stdio", "--state-dir", s + "/state"], env=env)
got = layers(c, W + "/app/x")
t.ok("danger-full-access" not in got,
     "a root recorded past the limit still counts (everything does)", got)
r = c.call("process/start", {"processId": "c", "argv": ["/bin/echo", "ran"],
                             "cwd": "file://" + W + "/app", "env": {"PATH": "/usr/bin:/bin"},
                             "tty": False, "sandbox": sandbox(s + "/home")})
o, _, _ = c.collect("c", timeout=60) if "result" in r else ({}, None, None)
t.ok(b"ran" in o.get("stdout", b""), "with the record full, a sandbox with a new root runs",
     (r, o))
c.close()
c = Execd(argv=[EXECD, "--stdio", "--state-dir", s + "/state"], env=env)
r = c.call("process/start", {"processId": "d", "argv": ["/bin/echo", "ran"],
                             "cwd": "file://" + W + "/app", "env": {"PATH": "/usr/bin:/bin"},
                             "tty": False, "sandbox": sandbox(W + "/app")})
o, _, _ = c.collect("d", timeout=60) if "result" in r else ({}, None, None)
t.ok(b"ran" in o.get("stdout", b""), "and after a restart too", (r, o))
c.close()
shutil.rmtree(s, ignore_errors=True)

# The operator removes the record (execd(8): the way back); a root a
# running instance still knew in memory must be recorded afresh when it
# is next given, command or fs request, or what is planted then is read
# (after a restart at the latest).
for how in ("command", "fs/writeFile"):
    s = tempfile.mkdtemp(prefix="sbrec.", dir="/var/tmp")
    os.chmod(s, 0o755)
    W = s + "/w"
    write(W + "/app/.git/HEAD", "ref: refs/heads/main\n")
    write(s + "/home/.codex/config.toml", '[projects."%s/app"]\ntrust_level = "trusted"\n' % W)
    env = dict(os.environ, HOME=s + "/home", CODEX_HOME=s + "/home/.codex")
    argv = [EXECD, "--stdio", "--state-dir", s + "/state"]
    c = Execd(argv=argv, env=env)
    target = W + "/app/x/.codex/config.toml"
    os.makedirs(os.path.dirname(target))

    def start(pid, script):
        r = c.call("process/start", {"processId": pid, "argv": [
            "/bin/sh", "-c", script, "sh", target, EVIL], "cwd": "file://" + W + "/app",
            "env": {"PATH": "/usr/bin:/bin"}, "tty": False, "sandbox": sandbox(W)})
        if "result" in r:
            c.collect(pid, timeout=60)
        return r
    r = start("e", "true") if how == "command" else \
        c.call("fs/getMetadata", {"path": "file://" + W, "sandbox": sandbox(W)})
    t.ok(os.path.exists(s + "/state/sandbox-roots"), "%s: (the root is recorded)" % how, r)
    os.unlink(s + "/state/sandbox-roots")
    # no read in between: the instance has not looked at the file since
    r = start("f", 'printf "%s" "$2" > "$1"') if how == "command" else \
        c.call("fs/writeFile", {"path": "file://" + target, "sandbox": sandbox(W),
                                "dataBase64": base64.b64encode(EVIL.encode()).decode()})
    got = layers(c, W + "/app/x")
    c.close()
    c = Execd(argv=argv, env=env)
    got += layers(c, W + "/app/x")
    c.close()
    t.ok(os.path.exists(target) and "danger-full-access" not in got,
         "%s: after the record was removed, a root given again is recorded again" % how,
         (r, got))
    shutil.rmtree(s, ignore_errors=True)
t.done()
