#!/usr/bin/python3
"""process/start.shellSnapshot: execd against the reference, and tampering.

Both servers get the same HOME (a ~/.profile and ~/.bashrc defining a
variable, a function, an alias, shell options and credentials) and the same
requests; what the commands print, and the errors for bad params, must be
the same.  Then, execd alone: a snapshot is kept where no command can
change it.  Output is TAP.

  EXECD      execd binary (default $top_builddir/src/execd)
  CODEX_REF  reference binary (default: the installed codex); absent: the
             differential points are skipped
"""
import base64
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from execd_client import find_ref, tap

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
PROFILE = "export PROFILE_VAR=from_profile\nexport PROFILE_API_KEY=pk\n"
MARK = "mark-%d-%d" % (os.getpid(), int(time.time() * 1000))
BASHRC = ("snapfn() { : %s; echo \"snapfn called $1\"; }\nalias snapal='echo alias-ran'\n" % MARK +
          "export RC_VAR=from_rc\nexport RC_TOKEN=secret_from_rc\nshopt -s extglob\n"
          "set -o noclobber\n"
          # what the capture may write: a sandbox confines it as it does the command
          "if [ -n \"${SNAP_PROBE-}\" ]; then echo x 2>/dev/null > \"$SNAP_PROBE\"; fi\n"
          # a missing .git stays read-only for the capture too
          "if [ -n \"${SNAP_GIT-}\" ]; then mkdir -p \"$SNAP_GIT/hooks\" 2>/dev/null; fi\n")


class Server:
    def __init__(self, cmd, env, cwd):
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=env, cwd=cwd,
                                  start_new_session=True)
        self.q = queue.Queue()
        threading.Thread(target=self.reader, daemon=True).start()
        self.id = 0
        self.held = []
        self.call("initialize", {"clientName": "snapshot-test"})
        self.send({"method": "initialized"})

    def reader(self):
        for line in self.p.stdout:
            self.q.put(json.loads(line))
        self.q.put(None)

    def send(self, o):
        self.p.stdin.write((json.dumps(o) + "\n").encode())
        self.p.stdin.flush()

    def next(self, timeout):
        try:
            return self.q.get(timeout=max(timeout, 0.01))
        except queue.Empty:
            return None

    def call(self, method, params, timeout=20):
        self.id += 1
        i = self.id
        self.send({"id": i, "method": method, "params": params})
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            o = self.next(end - time.monotonic())
            if o is None:
                break
            if o.get("id") == i:
                return o
            self.held.append(o)
        return None

    def run(self, pid, argv, cwd, env, snap=None, policy=None, timeout=20, sandbox=None):
        """(response, (exit code, stdout, stderr) or None)"""
        p = {"processId": pid, "argv": argv, "cwd": "file://" + cwd, "env": env, "tty": False}
        if sandbox is not None:
            p["sandbox"] = sandbox
        if snap is not None:
            p["shellSnapshot"] = snap
        if policy is not None:
            p["envPolicy"] = policy
        r = self.call("process/start", p, timeout)
        if r is None or "error" in r:
            return (r or {}).get("error", "no answer"), None
        out, err, code = b"", b"", None
        end = time.monotonic() + timeout
        pending, self.held = self.held, []
        while time.monotonic() < end:
            o = pending.pop(0) if pending else self.next(end - time.monotonic())
            if o is None:
                break
            prm = o.get("params", {})
            if prm.get("processId") != pid:
                continue
            if o.get("method") == "process/output":
                data = base64.b64decode(prm["chunk"])
                if prm["stream"] == "stderr":
                    err += data
                else:
                    out += data
            elif o.get("method") == "process/exited":
                code = prm["exitCode"]
                end = min(end, time.monotonic() + 0.3)
        return r["result"], (code, out.decode(errors="replace"), err.decode(errors="replace"))

    def close(self):
        """A clean exit, so that a sanitizer build reports leaks; its reports."""
        try:
            self.p.stdin.close()
            self.p.wait(timeout=5)
        except Exception:
            pass
        # its group only while it lives: a reaped leader's number can be anyone's now
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, 9)
            except OSError:
                pass
        self.p.wait()
        self.err.seek(0)
        return [l for l in self.err.read().decode(errors="replace").splitlines()
                if "Sanitizer" in l or "runtime error" in l]


def snap(scope="s1", name="bash", path="/bin/bash"):
    return {"scopeId": scope, "shell": {"name": name, "path": path}}


MASK = {"inherit": "all", "ignoreDefaultExcludes": False, "exclude": [], "set": {},
        "includeOnly": []}


def cases(home):
    env = {"PATH": "/usr/bin:/bin", "HOME": home}
    show = ("snapfn x; alias; echo P=$PROFILE_VAR R=$RC_VAR T=$RC_TOKEN K=$PROFILE_API_KEY; "
            "shopt extglob; set -o | grep noclobber; echo \"$0 $1\"")
    return [
        ("a function, an alias, options and variables of the login shell reach a later "
         "command", [["/bin/bash", "-lc", show, "zero", "one"], env, snap(), None] * 1, 2),
        ("envPolicy masks the snapshot's *TOKEN* and *KEY* variables",
         [["/bin/bash", "-lc", show], env, snap("s2"), MASK], 2),
        ("includeOnly and set apply to the snapshot's environment",
         [["/bin/bash", "-lc", "echo P=$PROFILE_VAR R=$RC_VAR X=$X"], env, snap("s3"),
          dict(MASK, includeOnly=["P*", "X"], set={"X": "fromset"})], 2),
        ("the request's env wins over the snapshot's",
         [["/bin/bash", "-lc", "echo P=$PROFILE_VAR"], dict(env, PROFILE_VAR="req"),
          snap("s4"), None], 1),
        ("argv other than <shell.path> -lc ignores the snapshot",
         [["/bin/bash", "-c", "type snapfn; echo R=$RC_VAR"], env, snap(), None], 1),
        ("-l -c is not -lc", [["/bin/bash", "-l", "-c", "type snapfn"], env, snap(), None], 1),
        ("argv[0] other than shell.path", [["bash", "-lc", "type snapfn"], env, snap(), None], 1),
        ("an unknown shell with a matching argv",
         [["/bin/bash", "-lc", "echo hi"], env, snap(name="fish"), None], 1),
        ("an unknown shell with another argv",
         [["/bin/bash", "-c", "echo hi"], env, snap(name="fish"), None], 1),
        ("powershell", [["/bin/bash", "-lc", "echo hi"], env, snap(name="powershell"), None], 1),
        ("an empty scope", [["/bin/true"], env, snap(""), None], 1),
        ("a 256-byte scope", [["/bin/true"], env, snap("a" * 256), None], 1),
        ("a 257-byte scope", [["/bin/true"], env, snap("a" * 257), None], 1),
        ("scopeId a number", [["/bin/true"], env, {"scopeId": 5, "shell": snap()["shell"]},
                              None], 1),
        ("scopeId a boolean", [["/bin/true"], env, {"scopeId": True, "shell": snap()["shell"]},
                               None], 1),
        ("no shell", [["/bin/true"], env, {"scopeId": "a"}, None], 1),
        ("no scopeId", [["/bin/true"], env, {"shell": snap()["shell"]}, None], 1),
        ("shell without path", [["/bin/true"], env, {"scopeId": "a", "shell": {"name": "bash"}},
                                None], 1),
        ("shell a string", [["/bin/true"], env, {"scopeId": "a", "shell": "bash"}, None], 1),
        ("shellSnapshot a string", [["/bin/true"], env, "x", None], 1),
        ("shellSnapshot null", [["/bin/true"], env, None, None], 1),
        ("an unknown field", [["/bin/true"], env, dict(snap(), extra=1), None], 1),
        ("the sequence form", [["/bin/bash", "-lc", "type snapfn | head -1"], env,
                               ["s7", ["bash", "/bin/bash"]], None], 1),
        ("an empty sequence", [["/bin/true"], env, [], None], 1),
        ("a short sequence", [["/bin/true"], env, ["s"], None], 1),
        ("a long sequence", [["/bin/true"], env, ["s", snap()["shell"], 3], None], 1),
        ("shell an empty sequence", [["/bin/true"], env, ["s", []], None], 1),
        ("a shell that does not exist",
         [["/nonexistent/bash", "-lc", "echo hi"], env, snap("s5", path="/nonexistent/bash"),
          None], 1),
        ("sh", [["/bin/sh", "-lc", "echo P=$PROFILE_VAR; type snapfn"], env,
                snap("s6", "sh", "/bin/sh"), None], 1),
    ]


def run_case(server, cwd, n, case):
    argv, env, sn, policy = case
    results = []
    for _ in range(n):
        server.k = getattr(server, "k", 0) + 1
        r, outcome = server.run("p%d" % server.k, argv, cwd, env, sn, policy)
        if isinstance(r, dict) and "processId" in r:
            r = dict(r, processId="p")
        results.append([r, outcome])
    return results


def main():
    execd = os.environ.get("EXECD") or os.path.join(BUILD, "src", "execd")
    ref = find_ref()
    scratch = tempfile.mkdtemp(prefix="snapshot-test.", dir=BUILD)
    home = os.path.join(scratch, "home")
    chome = os.path.join(scratch, "codex-home")
    os.makedirs(home)
    os.makedirs(chome)
    with open(os.path.join(home, ".profile"), "w") as f:
        f.write(PROFILE)
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write(BASHRC)
    senv = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "CODEX_HOME": chome,
            "LANG": "C.UTF-8", "SERVER_TOKEN": "server-secret"}
    cs = cases(home)
    ex = Server([execd, "--stdio", "--kill-grace-ms", "0"], senv, scratch)
    rf = Server([ref, "exec-server", "--listen", "stdio"], senv, scratch) if ref else None
    try:
        for i, (desc, case, n) in enumerate(cs, 1):
            if rf is None:
                t.skip(desc, "no reference")
                continue
            a, b = run_case(ex, scratch, n, case), run_case(rf, scratch, n, case)
            t.ok(a == b, desc, "execd:     %s\nreference: %s" % (json.dumps(a), json.dumps(b)))
        tamper(ex, scratch, home, chome, len(cs) + 1)
        san = ex.close()
        check(len(cs) + 11, "execd exits cleanly, no sanitizer report", not san,
              "\n".join(san[:20]))
    finally:
        ex.close()
        if rf:
            rf.close()
        shutil.rmtree(scratch, ignore_errors=True)
    t.done()


def check(n, desc, ok, detail=""):
    """t.ok as the n-th result (the cases are numbered where they are written)"""
    assert n == t.n + 1, "result %d written as %d" % (t.n + 1, n)
    return 0 if t.ok(ok, desc, detail or None) else 1


def tamper(ex, cwd, home, chome, n):
    """A command cannot change what a later command's start sources."""
    env = {"PATH": "/usr/bin:/bin", "HOME": home}
    sn = snap("tamper")
    fails = 0
    _, first = ex.run("t1", ["/bin/bash", "-lc", "snapfn a"], cwd, env, sn)
    fails += check(n, "the snapshot is taken", first and first[1] == "snapfn called a\n",
                   repr(first))
    # the command's descriptor 15 is closed before its own code runs
    _, fd = ex.run("t2", ["/bin/bash", "-lc", "[ -e /proc/$$/fd/15 ] && echo open || echo closed"],
                   cwd, env, sn)
    fails += check(n + 1, "descriptor 15 is closed when the command runs",
                   fd and fd[1] == "closed\n", repr(fd))
    # a command rewrites the profile and looks for the snapshot anywhere it could write
    evil = ("printf 'snapfn() { echo pwned; }\\n' >> ~/.bashrc; "
            "grep -rl '%s' %s %s /tmp /dev/shm /var/tmp 2>/dev/null | "
            "grep -v '/.bashrc$' ; true" % (MARK, home, chome))
    _, found = ex.run("t3", ["/bin/bash", "-lc", evil], cwd, env, sn)
    fails += check(n + 2, "no file a command can reach holds the snapshot",
                   found and found[1] == "", repr(found))
    _, later = ex.run("t4", ["/bin/bash", "-lc", "snapfn b"], cwd, env, sn)
    fails += check(n + 3, "a later command still starts from the snapshot taken",
                   later and later[1] == "snapfn called b\n", repr(later))
    # restore ~/.bashrc for anything after
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write(BASHRC)
    # sh keeps descriptor 15 open (it redirects only 0-9): it is sealed
    shs = snap("tamper-sh", "sh", "/bin/sh")
    write = ("if printf 'alias ls=evil\\n' >> /proc/$$/fd/15 2>/dev/null; then echo written; "
             "else echo refused; fi")
    _, w = ex.run("t6", ["/bin/sh", "-lc", write], cwd, env, shs)
    fails += check(n + 4, "the snapshot a command gets cannot be written to",
                   w and w[1] == "refused\n", repr(w))
    _, a = ex.run("t7", ["/bin/sh", "-lc", "alias ls || echo none"], cwd, env, shs)
    fails += check(n + 5, "a later command's snapshot is as taken",
                   a and a[1] == "none\n", repr(a))
    # the capture runs in the command's sandbox
    ro = os.path.join(cwd, "ro")
    os.makedirs(ro, exist_ok=True)
    sbx = {"permissions": {"type": "managed", "network": "restricted",
                           "file_system": {"type": "restricted", "entries": [
                               {"path": {"type": "special", "value": {"kind": "root"}},
                                "access": "read"}]}},
           "windowsSandboxLevel": "disabled", "cwd": "file://" + cwd}
    probe = os.path.join(ro, "probe")
    p = {"processId": "t8", "argv": ["/bin/bash", "-lc", "snapfn s"], "cwd": "file://" + cwd,
         "env": dict(env, SNAP_PROBE=probe), "tty": False, "sandbox": sbx,
         "shellSnapshot": snap("sandboxed")}
    r = ex.call("process/start", p)
    time.sleep(1)
    fails += check(n + 6, "a sandboxed command's capture cannot write where the command cannot",
                   r is not None and "result" in r and not os.path.exists(probe),
                   repr(r) + " " + str(os.path.exists(probe)))
    _, free = ex.run("t9", ["/bin/bash", "-lc", "true"], cwd, dict(env, SNAP_PROBE=probe),
                     snap("unsandboxed"))
    fails += check(n + 7, "an unsandboxed capture can", os.path.exists(probe), repr(free))
    # another scope is another snapshot, captured on its own
    _, seal = ex.run("t5", ["/bin/bash", "-lc", "true"], cwd, env, snap("seal"))
    fails += check(n + 8, "a second scope captures on its own", seal and seal[0] == 0,
                   repr(seal))
    # a writable root without .git: the capture, like the command, finds it read-only
    ws = os.path.join(cwd, "ws")
    os.makedirs(ws, exist_ok=True)
    wsbx = dict(sbx, cwd="file://" + ws)
    wsbx["permissions"] = {"type": "managed", "network": "restricted", "file_system": {
        "type": "restricted", "entries": [
            {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
            {"path": {"type": "path", "path": "file://" + ws}, "access": "write"}]}}
    r, out = ex.run("t10", ["/bin/bash", "-lc", "snapfn w"], ws,
                    dict(env, SNAP_GIT=os.path.join(ws, ".git")), snap("sandboxed-ws"),
                    sandbox=wsbx)
    fails += check(n + 9, "a sandboxed capture cannot create a missing .git in a writable root",
                   out is not None and out[0] == 0 and out[1] == "snapfn called w\n" and
                   not os.path.exists(os.path.join(ws, ".git")), repr((r, out)) + " " +
                   repr(os.listdir(ws)))
    return fails


if __name__ == "__main__":
    t = tap(timeout=900)
    main()
