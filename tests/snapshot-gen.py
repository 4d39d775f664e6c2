#!/usr/bin/python3
"""Generated differential test of process/start.shellSnapshot.

Each case is a random home directory (login profiles and rc files of bash,
zsh or sh holding functions, aliases, exports, options, output on stdout
and stderr, and now and then a failing capture) and a command that shows
what it sees (its functions, aliases, options, variables, environment,
whether it is a login shell).  execd and the reference run every case, each
with its own scope; the exit code, stdout and stderr must be the same.
The cases of REGRESSIONS (differences an earlier run found) always run.

Seeded and repeatable:
  GEN_CASES  generated cases (default 150; 20 in a sanitizer build)
  GEN_SEED   the seed (default 34); a case is named by seed and number, and
             GEN_ONLY=n runs case n alone
  EXECD      execd binary (default $top_builddir/src/execd)
  CODEX_REF  reference binary (default: the installed one); absent: SKIP
Output is TAP: one point per regression case, one for the generated run
(the first differences are printed), one for a clean exit of execd.
"""
import base64
import difflib
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from execd_client import find_ref

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
SAN = bool(os.environ.get("EXECD_SANITIZERS", "").strip())
NCASES = int(os.environ.get("GEN_CASES") or (20 if SAN else 150))
SEED = int(os.environ.get("GEN_SEED") or 34)
ONLY = os.environ.get("GEN_ONLY")
WINDOW = 6              # cases in flight per server
CASE_TIMEOUT = 60
ZSH = shutil.which("zsh")
SHELLS = {"bash": "/bin/bash", "zsh": ZSH, "sh": "/bin/sh"}

# --- the generator ---------------------------------------------------------

VALUES = ["plain", "two words", "it's", 'say "hi"', "back\\slash", "$HOME", "a*b?",
          "multi\nline", "", "x=y", "tab\there", "ünï", "-n", "%s%d", "`id`", "$(echo no)",
          "semi;colon", "trailing ", "a'b\"c"]
BASH_OPTS = ["shopt -s extglob", "shopt -s nullglob", "shopt -u expand_aliases",
             "set -o noclobber", "set -o pipefail", "shopt -s dotglob", "set -o noglob",
             "set -o allexport"]
ZSH_OPTS = ["setopt extendedglob", "setopt nullglob", "unsetopt nomatch", "setopt noclobber",
            "setopt pipefail", "setopt shwordsplit", "unsetopt aliases", "setopt globdots",
            "setopt allexport"]
SH_OPTS = ["set -o noclobber", "set -o noglob", "set -f", "set -o allexport"]
FAILS = ["exit 3", "trap 'exit 4' EXIT", "printf 'x\\0y'", "echo '# Snapshot file'",
         "echo '# Snapshot file'; echo 'export INJECTED=1'", "return 1 2>/dev/null; true",
         "false", "kill -9 $$", "echo '# Snapshot file'; echo \"x it's\"",
         "echo '# Snapshot file'; echo 'cat <<E >&2'"]


def q(v):
    """v single-quoted for any of the three shells."""
    return "'" + v.replace("'", "'\\''") + "'"


def name(rng, kind):
    pre = {"fn": ["gf", "_gf", "my_fn", "run"], "al": ["ga", "ll", "g_al"],
           "var": ["GV", "G_API_KEY", "MY_TOKEN", "gv_lower", "PATHX", "SECRET_G"]}[kind]
    return "%s%d" % (rng.choice(pre), rng.randrange(5))


def item(rng, shell, st):
    """One random line of an rc file; st collects the names it defines."""
    r = rng.random()
    if r < 0.18:
        n = name(rng, "fn")
        st["fns"].add(n)
        body = rng.choice(["echo %s-ran \"$@\"" % n, "printf '%%s\\n' %s" % q(rng.choice(VALUES)),
                           "return %d" % rng.randrange(3), "local x=1; echo $x"])
        if shell == "sh" and "local" in body:
            body = "echo sh-fn"
        return "%s() { %s; }" % (n, body)
    if r < 0.33:
        n = name(rng, "al")
        st["als"].add(n)
        return "alias %s=%s" % (n, q("echo alias-" + n + " " + rng.choice(VALUES[:6])))
    if r < 0.55:
        n = name(rng, "var")
        st["vars"].add(n)
        return "export %s=%s" % (n, q(rng.choice(VALUES)))
    if r < 0.62:
        n = name(rng, "var")
        st["vars"].add(n)
        return "%s=%s" % (n, q(rng.choice(VALUES)))
    if r < 0.70:
        return "echo %s%s" % (q("out " + rng.choice(VALUES[:4])), rng.choice(["", " >&2"]))
    if r < 0.78:
        return rng.choice({"bash": BASH_OPTS, "zsh": ZSH_OPTS, "sh": SH_OPTS}[shell])
    if r < 0.82:
        return "unset %s" % name(rng, "var")
    if r < 0.85:
        return "export SHLVL=%d" % rng.randrange(0, 9)
    if r < 0.87:
        return rng.choice(["cd /", "cd /tmp", "export OLDPWD=/x"])
    if r < 0.89:
        return rng.choice(["export ENV=$HOME/.envrc", "unalias -a", "export BASH_ENV=/dev/null"])
    if r < 0.93:
        return rng.choice(FAILS)
    return "# comment %d" % rng.randrange(100)


FILES = {"bash": [".profile", ".bash_profile", ".bashrc"],
         "zsh": [".zshenv", ".zprofile", ".zshrc", ".zlogin", ".profile"],
         "sh": [".profile", ".envrc"]}


def show(shell, st):
    """The command: what a later command sees."""
    calls = "; ".join("%s a 2>&1" % f for f in sorted(st["fns"] | st["als"]))
    names = " ".join(sorted(st["vars"]))
    pv = "; ".join("echo %s=${%s-unset}" % (v, v) for v in sorted(st["vars"]))
    env = "env | LC_ALL=C sort | grep -v '^_='"
    if shell == "bash":
        fns = "declare -F; alias; shopt | grep -w on | tr -s ' \\t' ' '; echo $-; set -o | grep -w on | tr -s ' \\t' ' '"
    elif shell == "zsh":
        fns = "print -l ${(ko)functions}; alias | LC_ALL=C sort; setopt; [[ -o login ]] && echo login"
    else:
        fns = "alias; echo $-; set -o | grep -w on"
    parts = [fns, pv, calls, env, "echo \"0=$0 1=${1-} 2=${2-}\""]
    return "; ".join(p for p in parts if p) + ("; : %s" % names if names else "")


def gen_case(seed, n):
    rng = random.Random("%d/%d" % (seed, n))
    shells = [s for s in ("bash", "zsh", "sh") if SHELLS[s]]
    shell = rng.choice(shells)
    st = {"fns": set(), "als": set(), "vars": set()}
    files = {}
    for f in FILES[shell]:
        if rng.random() < 0.7:
            files[f] = "\n".join(item(rng, shell, st) for _ in range(rng.randrange(1, 7))) + "\n"
    env = {}
    if rng.random() < 0.3:
        for _ in range(rng.randrange(1, 3)):
            v = name(rng, "var")
            st["vars"].add(v)
            env[v] = rng.choice(VALUES)
    if shell == "sh" and rng.random() < 0.4:
        env["ENV"] = rng.choice(["$HOME/.envrc", ".envrc", "/nonexistent", "$HOME"])
    if rng.random() < 0.1:
        env["SHLVL"] = str(rng.randrange(5))
    policy = None
    if rng.random() < 0.2:
        policy = {"inherit": "all", "ignoreDefaultExcludes": rng.random() < 0.5,
                  "exclude": rng.choice([[], ["GV*"], ["*lower*"]]),
                  "set": rng.choice([{}, {"GSET": "s"}]),
                  "includeOnly": rng.choice([[], [], ["G*", "PATH", "HOME"]])}
    args = rng.choice([[], ["one"], ["one", "two words"]])
    runs = 2 if rng.random() < 0.15 else 1
    return {"shell": shell, "files": files, "env": env, "policy": policy,
            "cmd": show(shell, st), "args": args, "runs": runs}


# Differences earlier runs found, fixed since: each stays a case of its own.
REGRESSIONS = [
    ("zsh: functions and aliases of .zshrc reach a later command (the restore failed)",
     {"shell": "zsh", "files": {".zshrc": "zf() { echo zf; }\nalias za='echo za'\nexport ZV=1\n",
                                ".zprofile": "echo zp-out; echo zp-err >&2\n"},
      "cmd": "zf; za; echo ZV=$ZV; [[ -o login ]] && echo login"}),
    ("sh: aliases are not restored, as in the reference",
     {"shell": "sh", "files": {".profile": "alias pa='echo pa'\n"},
      "cmd": "alias; pa 2>&1; echo pa=${pa-unset}"}),
    ("sh: the capture reads the file $ENV names",
     {"shell": "sh", "files": {".profile": "export ENV=$HOME/.envrc\n",
                               ".envrc": "export EV=from-env\nalias ea=eb\n"},
      "cmd": "echo EV=${EV-unset}; alias"}),
    ("a NUL in what ~/.bashrc prints fails the capture: the login shell runs the command",
     {"shell": "bash", "files": {".bashrc": "printf 'a\\0b'\nbf() { :; }\n",
                                 ".profile": "echo prof-err >&2\n"},
      "cmd": "declare -F; shopt login_shell; echo $SHLVL"}),
    ("a capture whose shell exits non-zero fails: the login shell runs the command",
     {"shell": "bash", "files": {".bashrc": "trap 'exit 7' EXIT\nbf() { :; }\n",
                                 ".profile": "echo prof-err >&2\n"},
      "cmd": "declare -F; shopt login_shell"}),
    ("what the profile prints after its own '# Snapshot file' is restored too",
     {"shell": "bash", "files": {".bashrc": "echo '# Snapshot file'; echo 'export INJ=1'\n"},
      "cmd": "echo INJ=${INJ-unset}"}),
    ("zsh: the snapshot's SHLVL is not counted again",
     {"shell": "zsh", "files": {".zshrc": "export SHLVL=7\n"}, "cmd": "echo $SHLVL"}),
    ("sh: the command's line numbers are the reference's",
     {"shell": "sh", "files": {".profile": "export A=1\n"}, "cmd": "nosuchcmd; echo $A"}),
    ("what the login profile prints (a NUL, a mark) counts for nothing",
     {"shell": "bash", "files": {".bash_profile": "printf 'x\\0y'\necho '# Snapshot file'\n"
                                                  "echo 'export INJ=1'\nbf() { :; }\n"},
      "cmd": "declare -F; echo INJ=${INJ-unset}; shopt login_shell"}),
    ("bash with allexport: the capture's helpers as the reference names them",
     {"shell": "bash", "files": {".bashrc": "set -o allexport\nalias a=b\n"},
      "cmd": "env | LC_ALL=C sort | grep -v '^_='; declare -F"}),
    ("zsh with allexport: the capture's helpers as the reference names them",
     {"shell": "zsh", "files": {".zshrc": "setopt allexport\nalias a=b\n"},
      "cmd": "env | LC_ALL=C sort | grep -v '^_='"}),
    ("sh with allexport: the capture's helpers as the reference names them",
     {"shell": "sh", "files": {".profile": "set -o allexport\nalias a=b\n"},
      "cmd": "env | LC_ALL=C sort | grep -v '^_='"}),
] + [
    # a here-document an rc file opens after its own mark prints the state
    # the restored shell runs: it must be the reference's, line for line
    ("%s: the restored state is the reference's, line for line" % sh,
     {"shell": sh, "files": dict(more, **{
         rc: "f1() { echo f; }\nalias a1='echo a'\n%s\nexport V1=1\n"
             "printf '# Snapshot file\\ncat <<\"EOF\" >&2\\n'\n" % opt}),
      "cmd": "true"})
    for sh, rc, opt, more in (("bash", ".bashrc", "shopt -s extglob", {}),
                              ("zsh", ".zshrc", "setopt extendedglob", {}),
                              ("sh", ".envrc", "set -o noglob",
                               {".profile": "export ENV=$HOME/.envrc\n"}))
] + [
    ("a NUL an rc file prints after its own mark fails the capture too",
     {"shell": "bash", "files": {".bashrc": "echo '# Snapshot file'; echo 'export INJ=1'\n"
                                            "printf 'x\\0y'\n", ".profile": "echo p-err >&2\n"},
      "cmd": "echo INJ=${INJ-unset}; shopt login_shell"}),
    ("sh: the state is evaluated from variables, as the reference's (its errors say eval)",
     {"shell": "sh", "files": {".profile": "export ENV=$HOME/.envrc\n",
                               ".envrc": "echo '# Snapshot file'; echo \"x it's\"\n"},
      "cmd": "echo ${__CODEX_SHELL_SNAPSHOT_STATE_0-unset}"}),
    ("zsh: an unclosed quote an rc file prints pairs as in the reference",
     {"shell": "zsh", "files": {".zshrc": "echo '# Snapshot file'\nf() { :; }\necho \"out it's\"\n"},
      "cmd": "true"}),
]


def full(c):
    d = {"env": {}, "policy": None, "args": [], "runs": 1}
    d.update(c)
    return d


# --- running cases ----------------------------------------------------------

class Server:
    """A server on stdio, many processes in flight, answers kept by id and processId."""

    def __init__(self, cmd, env, cwd):
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=env, cwd=cwd, start_new_session=True)
        self.lock = threading.Condition()
        self.resp, self.procs = {}, {}
        self.id = 0
        threading.Thread(target=self.reader, daemon=True).start()
        self.wait(self.send("initialize", {"clientName": "snapshot-gen"}), 30)
        self.p.stdin.write(b'{"method":"initialized"}\n')
        self.p.stdin.flush()

    def reader(self):
        for line in self.p.stdout:
            o = json.loads(line)
            with self.lock:
                if "id" in o:
                    self.resp[o["id"]] = o
                else:
                    prm = o.get("params", {})
                    self.procs.setdefault(prm.get("processId"), []).append(o)
                self.lock.notify_all()
        with self.lock:
            self.dead = True
            self.lock.notify_all()

    def send(self, method, params):
        with self.lock:
            self.id += 1
            i = self.id
        self.p.stdin.write((json.dumps({"id": i, "method": method, "params": params}) +
                            "\n").encode())
        self.p.stdin.flush()
        return i

    def wait(self, i, timeout):
        end = time.monotonic() + timeout
        with self.lock:
            while i not in self.resp and not getattr(self, "dead", False):
                if not self.lock.wait(end - time.monotonic()) and time.monotonic() > end:
                    return None
            return self.resp.pop(i, None)

    def outcome(self, pid, timeout):
        """(exit code, stdout, stderr) once process/closed and exited came, or None."""
        end = time.monotonic() + timeout
        seen = lambda m: any(o.get("method") == m for o in self.procs.get(pid, []))
        with self.lock:
            while not seen("process/closed"):
                if getattr(self, "dead", False) or time.monotonic() > end:
                    return None
                self.lock.wait(max(0.01, end - time.monotonic()))
            # the reference now and then says exited after closed: wait for it a little
            late = time.monotonic() + 2
            while not seen("process/exited") and time.monotonic() < late:
                self.lock.wait(0.05)
            msgs = self.procs.pop(pid)
        out, err, code = b"", b"", None
        for o in msgs:
            prm = o["params"]
            if o["method"] == "process/output":
                if prm["stream"] == "stderr":
                    err += base64.b64decode(prm["chunk"])
                else:
                    out += base64.b64decode(prm["chunk"])
            elif o["method"] == "process/exited":
                code = prm["exitCode"]
        return [code, out.decode(errors="replace"), err.decode(errors="replace")]

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except Exception:
            pass
        # its group only while it lives: a reaped leader's number can be anyone's now
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except OSError:
                pass
        self.p.wait()
        self.err.seek(0)
        return [l for l in self.err.read().decode(errors="replace").splitlines()
                if "Sanitizer" in l or "runtime error" in l]


def prepare(scratch, tag, c):
    home = os.path.join(scratch, "h-" + tag)
    os.makedirs(home)
    for f, text in c["files"].items():
        with open(os.path.join(home, f), "w") as fh:
            fh.write(text)
    return home


def start(sv, tag, k, c, home):
    path = SHELLS[c["shell"]]
    env = {"PATH": "/usr/bin:/bin", "HOME": home}
    env.update({k2: v.replace("$HOME", home) for k2, v in c["env"].items()})
    p = {"processId": "%s-%d" % (tag, k), "argv": [path, "-lc", c["cmd"]] + c["args"],
         "cwd": "file://" + home, "env": env, "tty": False,
         "shellSnapshot": {"scopeId": tag, "shell": {"name": c["shell"], "path": path}}}
    if c["policy"] is not None:
        p["envPolicy"] = c["policy"]
    return sv.send("process/start", p)


def run_all(sv, scratch, cases, prefix):
    """{tag: [answer per run]}; WINDOW cases in flight at once."""
    results, pending = {}, list(cases)
    inflight = []
    while pending or inflight:
        while pending and len(inflight) < WINDOW:
            tag, c = pending.pop(0)
            home = os.path.join(scratch, "h-" + tag)
            inflight.append((tag, c, home, 0, start(sv, tag, 0, c, home)))
        tag, c, home, k, rid = inflight.pop(0)
        r = sv.wait(rid, CASE_TIMEOUT)
        ans = results.setdefault(tag, [])
        if r is None or "error" in r:
            ans.append({"error": (r or {}).get("error", "no answer")})
        else:
            ans.append(sv.outcome("%s-%d" % (tag, k), CASE_TIMEOUT))
        if k + 1 < c["runs"]:
            inflight.insert(0, (tag, c, home, k + 1, start(sv, tag, k + 1, c, home)))
    return results


def show_diff(a, b):
    """The answers' difference, line by line (- execd, + reference)."""
    la = json.dumps(a, indent=0).replace("\\n", "\n").splitlines()
    lb = json.dumps(b, indent=0).replace("\\n", "\n").splitlines()
    for line in list(difflib.unified_diff(la, lb, "execd", "reference", lineterm="", n=1))[:40]:
        print("#   " + line)


def compare(cases, res, scratch):
    diffs = []
    for tag, c in cases:
        home = os.path.join(scratch, "h-" + tag)
        a = normalise(res["execd"][tag], home)
        b = normalise(res["ref"][tag], home)
        if a != b:
            diffs.append((tag, c, a, b))
    return diffs


def normalise(ans, home):
    return json.loads(json.dumps(ans).replace(home, "$HOME"))


def main():
    signal.alarm(int(os.environ.get("GEN_ALARM") or max(240, NCASES * 3)))
    execd = os.environ.get("EXECD") or os.path.join(BUILD, "src", "execd")
    ref = find_ref()
    regs = [(d, full(c)) for d, c in REGRESSIONS if SHELLS[c["shell"]]]
    skipped = len(REGRESSIONS) - len(regs)
    print("1..%d" % (len(REGRESSIONS) + 2))
    if ref is None:
        for i, (d, _) in enumerate(REGRESSIONS, 1):
            print("ok %d - %s # SKIP no reference" % (i, d))
        print("ok %d - generated cases # SKIP no reference" % (len(REGRESSIONS) + 1))
        print("ok %d - execd exits cleanly # SKIP no reference" % (len(REGRESSIONS) + 2))
        return 0
    scratch = tempfile.mkdtemp(prefix="snapshot-gen.", dir="/var/tmp")
    chome = os.path.join(scratch, "codex-home")
    os.makedirs(chome)
    senv = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "CODEX_HOME": chome,
            "LANG": "C.UTF-8"}
    nums = [int(ONLY)] if ONLY else range(NCASES)
    cases = [("r%d" % i, c) for i, (_, c) in enumerate(regs)]
    cases += [("g%d" % n, gen_case(SEED, n)) for n in nums]
    for tag, c in cases:
        prepare(scratch, tag, c)
    ex = Server([execd, "--stdio", "--kill-grace-ms", "0"], senv, scratch)
    rf = Server([ref, "exec-server", "--listen", "stdio"], senv, scratch)
    res = {}
    failed = 0
    try:
        t = threading.Thread(target=lambda: res.update(ref=run_all(rf, scratch, cases, "r")))
        t.start()
        res["execd"] = run_all(ex, scratch, cases, "e")
        t.join()
        diffs = compare(cases, res, scratch)
        # a difference that does not come again (a process killed from outside, as
        # another test's late killpg of a reused group) is reported, not counted
        flaky = []
        if diffs:
            again = [("%s.again" % t, c) for t, c, _, _ in diffs]
            for tag, c in again:
                prepare(scratch, tag, c)
            res = {}
            t = threading.Thread(target=lambda: res.update(ref=run_all(rf, scratch, again, "r")))
            t.start()
            res["execd"] = run_all(ex, scratch, again, "e")
            t.join()
            still = {d[0][:-len(".again")] for d in compare(again, res, scratch)}
            flaky = [d for d in diffs if d[0] not in still]
            diffs = [d for d in diffs if d[0] in still]
            for tag, c, a, b in flaky:
                print("# case %s differed once, not again: not counted" % tag)
                show_diff(a, b)
        bad = {d[0] for d in diffs}
        for i, (d, _) in enumerate(regs, 1):
            ok = "r%d" % (i - 1) not in bad
            failed += not ok
            print("%s %d - %s" % ("ok" if ok else "not ok", i, d))
        for i in range(len(regs) + 1, len(REGRESSIONS) + 1):
            print("ok %d - %s # SKIP no zsh" % (i, REGRESSIONS[i - 1][0]))
        gd = [d for d in diffs if d[0].startswith("g")]
        print("%s %d - %d generated cases (seed %d), %d differ" % (
            "not ok" if gd else "ok", len(REGRESSIONS) + 1, len(nums), SEED, len(gd)))
        failed += bool(gd)
        for tag, c, a, b in diffs[:int(os.environ.get("GEN_SHOW") or 5)]:
            print("# case %s (GEN_SEED=%d GEN_ONLY=%s): %s" % (tag, SEED, tag[1:], json.dumps(c)))
            show_diff(a, b)
        san = ex.close()
        print("%s %d - execd exits cleanly, no sanitizer report%s" % (
            "not ok" if san else "ok", len(REGRESSIONS) + 2, "" if not san else
            "\n# " + "\n# ".join(san[:20])))
        failed += bool(san)
        sys.stderr.write("snapshot-gen: %d cases, %d regression, %d differ, %d differed once, "
                         "%d zsh skipped\n" % (len(cases), len(regs), len(diffs), len(flaky),
                                               skipped))
    finally:
        ex.close()
        rf.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
