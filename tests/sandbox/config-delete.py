#!/usr/bin/python3
"""A sandboxed command cannot remove a host project layer execd has read.

A command cannot write a project layer that counts (sandbox_record.c), but
it could remove one, or rename it away: a host layer narrowing the sandbox
for its directory (sandbox_mode = "read-only") would be gone for every later
thread start.  The .codex directories of the trusted layers
environmentConfig/read has read are kept read-only in every view, and from
sandboxed fs requests, wherever a writable root holds them; the rest of the
directory stays writable, and the host still edits its layer.  Output is TAP.
"""
import base64
import os
import shutil
import tempfile
import time

from execd_client import Execd, tap
from cfgattack import layers, sandbox, write

t = tap(timeout=120)
EXECD = os.path.join(os.environ.get("top_builddir", "."), "src", "execd")
NARROW = 'sandbox_mode = "read-only"\n'


s = tempfile.mkdtemp(prefix="sbdel.", dir="/var/tmp")
os.chmod(s, 0o755)
W = s + "/w"
write(W + "/app/.git/HEAD", "ref: refs/heads/main\n")
for d in ("rm", "mv", "up", "fs"):
    write(W + "/app/%s/.codex/config.toml" % d, NARROW)
write(s + "/home/.codex/config.toml", '[projects."%s/app"]\ntrust_level = "trusted"\n' % W)
c = Execd(argv=[EXECD, "--stdio", "--state-dir", s + "/state"],
          env=dict(os.environ, HOME=s + "/home", CODEX_HOME=s + "/home/.codex"))
for d in ("rm", "mv", "up", "fs"):
    t.ok("read-only" in layers(c, W + "/app/" + d), "control: app/%s's layer is read" % d)
# by the files' own ctime, not a sleep that is "enough": a layer changed less
# than 2 s before a root was first given counts as the command's
newest = max(os.stat(W + "/app/%s/.codex/config.toml" % d).st_ctime for d in ("rm", "mv", "up", "fs"))
while time.time() < newest + 3.5:
    time.sleep(0.2)
r = c.call("process/start", {"processId": "a", "argv": ["/bin/sh", "-c",
           'rm -rf "$1/app/rm/.codex"; mv "$1/app/mv/.codex" "$1/app/mv/old"; '
           'mv "$1/app/up" "$1/app/up2"; echo x > "$1/app/rm/main.c" && echo wrote',
           "sh", W], "cwd": "file://" + W, "env": {"PATH": "/usr/bin:/bin"}, "tty": False,
           "sandbox": sandbox(W)})
out = b""
if "result" in r:
    o, _, _ = c.collect("a", timeout=60)
    out = o.get("stdout", b"") + o.get("stderr", b"")
t.ok(b"wrote" in out, "the command writes beside the layer", (r, out))
for d, how in (("rm", "removed"), ("mv", "renamed away"), ("up", "moved with its directory")):
    t.ok("read-only" in layers(c, W + "/app/" + d),
         "a command cannot have app/%s's layer %s" % (d, how), out)
r = c.call("fs/remove", {"path": "file://" + W + "/app/fs/.codex", "recursive": True,
                         "force": True, "sandbox": sandbox(W)})
t.ok("read-only" in layers(c, W + "/app/fs"), "nor a sandboxed fs/remove", r)
r = c.call("fs/writeFile", {"path": "file://" + W + "/app/fs/.codex/config.toml",
                            "dataBase64": base64.b64encode(b'model = "x"\n').decode(),
                            "sandbox": sandbox(W)})
t.ok("error" in r, "nor a sandboxed fs/writeFile there", r)
# the host still edits its own layer
write(W + "/app/rm/.codex/config.toml", NARROW + 'model = "edited"\n')
t.ok("edited" in open(W + "/app/rm/.codex/config.toml").read(), "control: the host edits it")
c.close()
shutil.rmtree(s, ignore_errors=True)
t.done()
