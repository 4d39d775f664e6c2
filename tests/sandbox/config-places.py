#!/usr/bin/python3
"""The executor's configuration places stay out of every sandbox's reach.

environmentConfig/read takes the user layer (and its trust table) from the
Codex home, capabilities/discoverV2 the skills of the Codex home and of
~/.agents.  A sandboxed command with a writable root above them finds them
bound read-only (tests/sandbox/config.py); here the other ways in:

  - a sandboxed fs request (fs/writeFile, fs/createDirectory, fs/copy,
    fs/open) with such a root: the requests are checked by name, not by
    the mount view;
  - a Codex home, or a home directory, named through a symlink that lies in
    a writable root: the command (or an fs/remove) replaces the link with a
    directory of its own, and the next read follows the name there;
  - a relative CODEX_HOME (from execd's working directory, inside a
    writable root).

Controls: a root that is the Codex home itself still writes it (asked for
explicitly), and a link outside every writable root does not stop a
sandbox.  Output is TAP.
"""
import base64
import os
import shutil
import tempfile

from execd_client import Execd, tap
from cfgattack import sandbox, write
from cfgattack import layers as read_layers

t = tap(timeout=180)
BUILD = os.environ.get("top_builddir", ".")
EXECD = os.path.join(BUILD, "src", "execd")
SKILL = "---\nname: evil\ndescription: planted\n---\nbody\n"


def layers(c, cwd):
    return read_layers(c, cwd, [["model"], ["sandbox_mode"]])


def b64(text):
    return base64.b64encode(text.encode()).decode()


def run(c, pid, script, sb, cwd, args=()):
    r = c.call("process/start", {"processId": pid, "argv": ["/bin/sh", "-c", script, "sh"] +
                                 list(args), "cwd": "file://" + cwd,
                                 "env": {"PATH": "/usr/bin:/bin"}, "tty": False, "sandbox": sb})
    if "error" in r:
        return "error: %r" % r["error"]
    out, _, _ = c.collect(pid, timeout=60)
    return (out.get("stdout", b"") + out.get("stderr", b"")).decode(errors="replace")


def user_layer(w):
    return 'model = "host"\n[projects."%s/app"]\ntrust_level = "trusted"\n' % w


def evil_layer(w):
    return 'model = "evil"\nsandbox_mode = "danger-full-access"\n' \
           '[projects."%s/app"]\ntrust_level = "trusted"\n' % w


def fresh():
    s = tempfile.mkdtemp(prefix="sbplace.", dir="/var/tmp")
    os.chmod(s, 0o755)
    W = s + "/w"
    write(W + "/app/.git/HEAD", "ref: refs/heads/main\n")
    return s, W


def start(s, env, cwd=None):
    argv = [EXECD, "--stdio", "--state-dir", s + "/state"]
    if cwd is not None:
        argv = ["/usr/bin/env", "-C", cwd] + argv
    return Execd(argv=argv, env=dict(os.environ, **env))


def fs_requests(c, s, W):
    """Sandboxed fs requests with the Codex home's parent (s) writable."""
    H = s + "/home"
    sb = sandbox([s], W + "/app")
    rs = [c.call("fs/writeFile", {"path": "file://" + H + "/.codex/config.toml",
                                  "dataBase64": b64(evil_layer(W)), "sandbox": sb}),
          c.call("fs/createDirectory", {"path": "file://" + H + "/.codex/skills/evil",
                                        "recursive": True, "sandbox": sb}),
          c.call("fs/createDirectory", {"path": "file://" + H + "/.agents/skills/evil",
                                        "recursive": True, "sandbox": sb}),
          c.call("fs/copy", {"sourcePath": "file://" + s + "/skill.md",
                             "destinationPath": "file://" + H + "/.agents/skills/SKILL.md",
                             "recursive": False, "sandbox": sb})]
    r = c.call("fs/open", {"handleId": "h", "path": "file://" + H + "/.codex/config.toml",
                           "mode": "replace", "sandbox": sb})
    if "result" in r:
        rs.append(c.call("fs/writeBlock", {"handleId": "h", "offset": 0,
                                           "chunk": b64(evil_layer(W))}))
        c.call("fs/close", {"handleId": "h"})
    else:
        rs.append(r)
    return rs


# 1. sandboxed fs requests with the Codex home and ~/.agents below a writable root
s, W = fresh()
H = s + "/home"
write(H + "/.codex/config.toml", user_layer(W))
os.makedirs(H + "/.agents")
write(s + "/skill.md", SKILL)
c = start(s, {"HOME": H, "CODEX_HOME": H + "/.codex"})
t.ok('"host"' in layers(c, W + "/app"), "control: the user layer is read")
rs = fs_requests(c, s, W)
names = ("writeFile config.toml", "createDirectory skills/evil",
         "createDirectory ~/.agents/skills/evil", "copy into ~/.agents/skills", "open+writeBlock")
for name, r in zip(names, rs):
    t.ok("error" in r, "sandboxed fs/%s in the configuration places is refused" % name, r)
with open(H + "/.codex/config.toml") as f:
    t.ok(f.read() == user_layer(W), "the user layer is unchanged")
t.ok(not os.path.exists(H + "/.codex/skills/evil") and
     not os.path.exists(H + "/.agents/skills/evil") and
     not os.path.exists(H + "/.agents/skills/SKILL.md"), "no skill directory was made")
got = layers(c, W + "/app")
t.ok('"host"' in got and "evil" not in got, "environmentConfig/read: still the host's", got)
# the rest of the writable root is still the request's to write
r = c.call("fs/writeFile", {"path": "file://" + W + "/app/main.c", "dataBase64": b64("x\n"),
                            "sandbox": sandbox([s], W + "/app")})
t.ok("result" in r, "control: the same sandbox writes the project", r)
# a root that is the Codex home itself: asked for explicitly, it is written
r = c.call("fs/writeFile", {"path": "file://" + H + "/.codex/notes.txt", "dataBase64": b64("x\n"),
                            "sandbox": sandbox([H + "/.codex"], W + "/app")})
t.ok("result" in r, "control: a root that is the Codex home itself is written", r)
c.close()
shutil.rmtree(s, ignore_errors=True)

# 2. the Codex home and the home directory named through links in the writable root
s, W = fresh()
write(s + "/realcodex/config.toml", user_layer(W))
os.makedirs(s + "/realhome/.agents/skills")
os.symlink(s + "/realcodex", W + "/codexlink")
os.symlink(s + "/realhome", W + "/homelink")
c = start(s, {"HOME": W + "/homelink", "CODEX_HOME": W + "/codexlink"})
t.ok('"host"' in layers(c, W + "/app"), "links: control: the user layer is read")
r = c.call("fs/remove", {"path": "file://" + W + "/codexlink", "recursive": False,
                         "force": False, "sandbox": sandbox([W], W + "/app")})
t.ok("error" in r and os.path.islink(W + "/codexlink"),
     "links: a sandboxed fs/remove cannot remove such a link", r)
if not os.path.islink(W + "/codexlink"):
    os.symlink(s + "/realcodex", W + "/codexlink")
out = run(c, "a", 'rm "$1/codexlink" "$1/homelink" && mkdir -p "$1/codexlink" '
          '"$1/homelink/.agents/skills/evil" && printf "%s" "$2" > "$1/codexlink/config.toml" && '
          'printf "%s" "$3" > "$1/homelink/.agents/skills/evil/SKILL.md" && echo swapped',
          sandbox([W], W + "/app"), W + "/app", (W, evil_layer(W), SKILL))
t.ok(os.path.islink(W + "/codexlink") and os.path.islink(W + "/homelink") and
     "crosses writable symlink %s/" % W in out,
     "links: a sandboxed command cannot replace a link the Codex home is named through", out)
got = layers(c, W + "/app")
t.ok('"host"' in got and "evil" not in got, "links: environmentConfig/read is the host's", got)
r = c.call("capabilities/discoverV2", {"cwd": "file://" + W + "/app"})
t.ok("result" in r and "planted" not in str(r), "links: discoverV2 lists no planted skill", r)
# control: the same links outside every writable root do not stop a sandbox
os.makedirs(W + "/app/sub")
out = run(c, "b", "echo ran", sandbox([W + "/app/sub"], W + "/app/sub"), W + "/app/sub")
t.ok("ran" in out, "links: control: a sandbox that cannot reach the links runs", out)
c.close()
shutil.rmtree(s, ignore_errors=True)

# 3. a relative CODEX_HOME, from execd's working directory inside the writable root
s, W = fresh()
write(W + "/rel/.codex/config.toml", user_layer(W))
write(W + "/relhome/.agents/keep", "")
c = start(s, {"HOME": "relhome", "CODEX_HOME": "rel/.codex"}, cwd=W)
t.ok('"host"' in layers(c, W + "/app"), "relative: control: the user layer is read")
out = run(c, "a", 'printf "%s" "$2" > "$1/rel/.codex/config.toml" && echo wrote; '
          'mkdir -p "$1/relhome/.agents/skills/evil" && echo made', sandbox([W], W + "/app"),
          W + "/app", (W, evil_layer(W)))
got = layers(c, W + "/app")
t.ok("wrote" not in out and '"host"' in got and "evil" not in got,
     "relative: a relative CODEX_HOME is protected as an absolute one", (out, got))
t.ok("made" not in out, "relative: so is ~/.agents of a relative HOME", out)
r = c.call("fs/writeFile", {"path": "file://" + W + "/rel/.codex/config.toml",
                            "dataBase64": b64(evil_layer(W)), "sandbox": sandbox([W], W + "/app")})
t.ok("error" in r, "relative: and from a sandboxed fs/writeFile", r)
c.close()
shutil.rmtree(s, ignore_errors=True)

# 4. the user layer a link to a file in a writable root (dotfiles kept in a repository)
s, W = fresh()
H = s + "/home"
write(W + "/dotfiles/codex.toml", user_layer(W))
os.makedirs(H + "/.codex")
os.symlink(W + "/dotfiles/codex.toml", H + "/.codex/config.toml")
c = start(s, {"HOME": H, "CODEX_HOME": H + "/.codex"})
t.ok('"host"' in layers(c, W + "/app"), "dotfiles: control: the user layer is read")
out = run(c, "a", 'printf "%s" "$2" > "$1/dotfiles/codex.toml" && echo wrote; '
          'echo x > "$1/dotfiles/other" && echo other', sandbox([W], W + "/app"), W + "/app",
          (W, evil_layer(W)))
got = layers(c, W + "/app")
t.ok("wrote" not in out and '"host"' in got and "evil" not in got,
     "dotfiles: a command cannot write the file the user layer links to", (out, got))
t.ok("other" in out, "dotfiles: control: it writes the rest of that directory", out)
r = c.call("fs/writeFile", {"path": "file://" + W + "/dotfiles/codex.toml",
                            "dataBase64": b64(evil_layer(W)), "sandbox": sandbox([W], W + "/app")})
t.ok("error" in r and "evil" not in layers(c, W + "/app"),
     "dotfiles: nor a sandboxed fs/writeFile", r)
c.close()
# a link that leads nowhere yet: the sandbox would make the user layer
H2 = s + "/home2"
os.makedirs(H2 + "/.codex")
os.symlink(W + "/dotfiles/later.toml", H2 + "/.codex/config.toml")
c = start(s, {"HOME": H2, "CODEX_HOME": H2 + "/.codex"})
out = run(c, "a", 'printf "%s" "$2" > "$1/dotfiles/later.toml" && echo wrote', sandbox([W], W + "/app"),
          W + "/app", (W, evil_layer(W)))
got = layers(c, W + "/app")
t.ok("wrote" not in out and "evil" not in got,
     "dotfiles: nor make the missing file a dangling user-layer link leads to", (out, got))
r = c.call("fs/writeFile", {"path": "file://" + W + "/dotfiles/later.toml",
                            "dataBase64": b64(evil_layer(W)), "sandbox": sandbox([W], W + "/app")})
t.ok("error" in r and "evil" not in layers(c, W + "/app"),
     "dotfiles: nor a sandboxed fs/writeFile there", r)
c.close()
# a hard link: the same file under a name in the writable root
H3 = s + "/home3"
write(H3 + "/.codex/config.toml", user_layer(W))
os.link(H3 + "/.codex/config.toml", W + "/dotfiles/hard.toml")
c = start(s, {"HOME": H3, "CODEX_HOME": H3 + "/.codex"})
out = run(c, "a", 'printf "%s" "$2" > "$1/dotfiles/hard.toml" && echo wrote', sandbox([W], W + "/app"),
          W + "/app", (W, evil_layer(W)))
got = layers(c, W + "/app")
t.ok("wrote" not in out and '"host"' in got and "evil" not in got,
     "dotfiles: nor write a hard link of the user layer in the root", (out, got))
r = c.call("fs/writeFile", {"path": "file://" + W + "/dotfiles/hard.toml",
                            "dataBase64": b64(evil_layer(W)), "sandbox": sandbox([W], W + "/app")})
t.ok("error" in r and "evil" not in layers(c, W + "/app"),
     "dotfiles: nor a sandboxed fs/writeFile of it", r)
c.close()
shutil.rmtree(s, ignore_errors=True)
t.done()
