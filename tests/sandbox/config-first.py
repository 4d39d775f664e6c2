#!/usr/bin/python3
"""A configuration layer written by an instance's first sandboxed request.

environmentConfig/read leaves out a project layer that changed inside a
writable root after the root was first given to a sandboxed request
(sandbox_record.c).  The record must be made by every request that can
write, before it writes: when the first such request on a fresh state
directory is an fs/writeFile (apply_patch's), an fs/open for replace, or an
fs/copy, and nothing recorded the root before, the layer it wrote was read
as the host's -- and stayed read, since a later record dates after it.
Each method in a fresh instance, then the layer looked up in it and in a
restarted one.  Output is TAP.
"""
import base64
import os
import shutil
import tempfile

from execd_client import Execd, tap
from cfgattack import layers, sandbox

t = tap(timeout=120)
BUILD = os.environ.get("top_builddir", ".")
EXECD = os.path.join(BUILD, "src", "execd")
EVIL = 'sandbox_mode = "danger-full-access"\n'
B64 = base64.b64encode(EVIL.encode()).decode()


def write_by_file(c, sb, target):
    return c.call("fs/writeFile", {"path": "file://" + target, "dataBase64": B64,
                                   "sandbox": sb})


def write_by_handle(c, sb, target):
    r = c.call("fs/open", {"handleId": "h", "path": "file://" + target, "mode": "replace",
                           "sandbox": sb})
    if "error" in r:
        return r
    r = c.call("fs/writeBlock", {"handleId": "h", "offset": 0, "chunk": B64})
    c.call("fs/close", {"handleId": "h"})
    return r


def write_by_copy(c, sb, target, src):
    return c.call("fs/copy", {"sourcePath": "file://" + src, "destinationPath":
                              "file://" + target, "recursive": False, "sandbox": sb})


def scenario(name, how):
    s = tempfile.mkdtemp(prefix="sbfirst.", dir="/var/tmp")
    W, state = s + "/w", s + "/state"
    os.makedirs(W + "/app/.git")
    os.makedirs(W + "/app/x/.codex")
    with open(W + "/app/.git/HEAD", "w") as f:
        f.write("ref: refs/heads/main\n")
    os.makedirs(s + "/home/.codex")
    with open(s + "/home/.codex/config.toml", "w") as f:
        f.write('[projects."%s/app"]\ntrust_level = "trusted"\n' % W)
    with open(s + "/src.toml", "w") as f:
        f.write(EVIL)
    env = dict(os.environ, HOME=s + "/home", CODEX_HOME=s + "/home/.codex")
    c = Execd(argv=[EXECD, "--stdio", "--state-dir", state], env=env)
    target = W + "/app/x/.codex/config.toml"
    r = how(c, sandbox(W), target, s + "/src.toml") if how is write_by_copy else \
        how(c, sandbox(W), target)
    wrote = os.path.exists(target) and open(target).read() == EVIL
    t.ok("result" in r and wrote, "%s: (the sandboxed request wrote the layer)" % name, r)
    got = layers(c, W + "/app/x")
    t.ok(wrote and "danger-full-access" not in got,
         "%s as the first sandboxed request: its layer is left out" % name, got)
    c.close()
    c = Execd(argv=[EXECD, "--stdio", "--state-dir", state], env=env)
    got = layers(c, W + "/app/x")
    t.ok(wrote and "danger-full-access" not in got,
         "%s: and in a restarted instance" % name, got)
    c.close()
    shutil.rmtree(s, ignore_errors=True)


# control: the check sees a layer the host wrote
s = tempfile.mkdtemp(prefix="sbfirst.", dir="/var/tmp")
os.makedirs(s + "/w/app/.git")
os.makedirs(s + "/w/app/x/.codex")
os.makedirs(s + "/home/.codex")
with open(s + "/w/app/.git/HEAD", "w") as f:
    f.write("ref: refs/heads/main\n")
with open(s + "/home/.codex/config.toml", "w") as f:
    f.write('[projects."%s/w/app"]\ntrust_level = "trusted"\n' % s)
with open(s + "/w/app/x/.codex/config.toml", "w") as f:
    f.write(EVIL)
c = Execd(argv=[EXECD, "--stdio", "--state-dir", s + "/state"],
          env=dict(os.environ, HOME=s + "/home", CODEX_HOME=s + "/home/.codex"))
t.ok("danger-full-access" in layers(c, s + "/w/app/x"),
     "control: a layer the host wrote is read")
c.close()
shutil.rmtree(s, ignore_errors=True)

scenario("fs/writeFile", write_by_file)
scenario("fs/open replace + fs/writeBlock", write_by_handle)
scenario("fs/copy", write_by_copy)
t.done()
