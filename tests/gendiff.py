#!/usr/bin/python3
"""Generated differential test of environmentConfig/read,
capabilities/discoverV2 and capabilityRoots/discoverV1: execd against the
reference, on random cases (tests/lib/gendiff_gen.py: TOML documents and
config trees with trust entries, markers, symlinks, modes and sizes; skill
and plugin caches with versions, manifests, links and unreadable files).

Each case writes its tree, sends the same requests to both servers and
compares their answers (results and errors alike), the case's root and the
batch's directory written @R and @B in both.  Cases that can share servers
do, many to a pair of processes: the servers' CODEX_HOME is a symlink the
run points at each case's @R/home/.codex in turn (both resolve it again
for every environmentConfig/read), and discoverV1 names its roots.  A
discoverV2 case, or one with an environment of its own, starts its own pair
(the reference resolves CODEX_HOME once and caches its discovery).  Cases
with modes run as nobody (root reads anything).  /etc/codex cases run in a
private mount namespace as tests/envconfig.py's do (root and unshare(1)).

Seeded and repeatable: case N of seed S is always the same case.  Output is
TAP, one line per case; a difference prints both answers and the case's
tree, to keep as a fixed case in tests/envconfig.py or tests/discover.py.

  GENDIFF_SEED=S      seed (default 34)
  GENDIFF_CASES=N     cases (default 300; 60 in the sanitizer pass)
  GENDIFF_FIRST=N     number of the first case (default 0)
  GENDIFF_ONLY=N[,M]  run only these cases
  GENDIFF_VERBOSE=1   print every case's answers
  EXECD, CODEX_REF    as tests/envconfig.py
"""
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from execd_client import find_ref
from gendiff_gen import case as make_case
from refdiff import BUILD, NS_FLAG, SCRATCH, enter_namespace, remove_tree

ANSWER_TIMEOUT = 30
BATCH = 200         # cases to one pair of servers


class Server:
    """One server over stdio, asked one request at a time."""

    def __init__(self, cmd, env, cwd):
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=env, cwd=cwd, start_new_session=True)
        self.buf, self.id, self.tail = b"", 0, []
        self.ask("initialize", {"clientName": "gendiff"})
        self.send({"method": "initialized"})

    def send(self, m):
        try:
            self.p.stdin.write((json.dumps(m) + "\n").encode())
            self.p.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def ask(self, method, params):
        """The result or error, or None if none came in time."""
        self.id += 1
        if not self.send({"id": self.id, "method": method, "params": params}):
            return None
        deadline = time.time() + ANSWER_TIMEOUT
        fd = self.p.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                o = json.loads(line)
                if o.get("id") == self.id:
                    return o.get("result", o.get("error"))
            if not select.select([fd], [], [], max(0, deadline - time.time()))[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk

    def close(self):
        """Sanitizer reports, after a clean exit."""
        try:
            self.p.stdin.close()
            self.p.wait(timeout=5)
        except (subprocess.TimeoutExpired, OSError):
            pass
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        self.err.seek(0)
        text = self.err.read().decode(errors="replace").splitlines()
        self.err.close()
        self.tail = text[-5:]
        return [l for l in text if "Sanitizer" in l or "runtime error" in l]


def write_tree(root, files):
    chmods = []
    for rel, content in files.items():
        if rel == "chmod000":
            chmods = content if isinstance(content, list) else [content]
            continue
        if "->" in rel:
            rel, target = rel.split("->")
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            if not os.path.lexists(p):
                os.symlink(os.path.join(root, target), p)
            continue
        p = os.path.join(root, rel)
        try:
            if rel.endswith("/"):
                os.makedirs(p, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(p), exist_ok=True)
            if os.path.isdir(p):
                continue
            with open(p, "wb") as f:
                f.write(content if isinstance(content, bytes) else content.replace("@R", root).encode())
        except (NotADirectoryError, FileExistsError, IsADirectoryError):
            pass     # a path the tree made a file and a directory: the first wins
    for c in chmods:
        p = os.path.join(root, c)
        if os.path.lexists(p) and not os.path.islink(p):
            os.chmod(p, 0)


def subst(v, root):
    return json.loads(json.dumps(v).replace("@R", root))


def norm(v, root, batch):
    return json.loads(json.dumps(v).replace(root, "@R").replace(batch, "@B")) if v is not None else None


class Run:
    def __init__(self, ref, execd, scratch, etc_ok):
        self.ref, self.execd, self.scratch, self.etc_ok = ref, execd, scratch, etc_ok
        self.pairs = {}       # nobody -> (batch dir, ref server, execd server, cases served)
        self.failed = self.requests = self.differ = 0
        self.sanitizer = []
        self.verbose = bool(os.environ.get("GENDIFF_VERBOSE"))

    def servers(self, env, cwd, nobody):
        pre = (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
               if nobody and os.geteuid() == 0 else [])
        # a state directory of its own: the shared one records other tests'
        # sandboxes' writable roots, whose later layers execd leaves out
        sd = os.path.join(self.scratch, "state-nobody" if nobody else "state-root")
        if not os.path.isdir(sd):
            os.mkdir(sd, 0o700)
            if pre:
                os.chown(sd, 65534, 65534)
        return (Server(pre + [self.ref, "exec-server", "--listen", "stdio"], env, cwd),
                Server(pre + [self.execd, "--stdio", "--kill-grace-ms", "0", "--state-dir", sd],
                       env, cwd))

    def close(self, pair):
        pair[1].close()
        self.sanitizer += pair[2].close()

    def shared(self, nobody):
        """The batch servers for nobody or root, started again every BATCH cases."""
        pair = self.pairs.get(nobody)
        if pair is not None and pair[3] >= BATCH:
            self.close(pair)
            pair = None
        if pair is None:
            batch = tempfile.mkdtemp(prefix="b", dir=self.scratch)
            os.chmod(batch, 0o755)
            os.makedirs(os.path.join(batch, "home"))
            os.symlink(os.path.join(batch, "nowhere"), os.path.join(batch, "ch"))
            env = {"PATH": "/usr/bin:/bin", "HOME": batch + "/home", "CODEX_HOME": batch + "/ch"}
            pair = [batch, *self.servers(env, batch, nobody), 0]
        pair[3] += 1
        self.pairs[nobody] = pair
        return pair

    def drop(self, nobody):
        pair = self.pairs.pop(nobody, None)
        if pair is not None:
            self.close(pair)

    def set_etc(self, etc):
        if not self.etc_ok:
            return
        shutil.rmtree("/etc/codex", ignore_errors=True)
        if etc is not None:
            os.makedirs("/etc/codex")
            write_tree("/etc/codex", etc)

    def one(self, n, c):
        root = os.path.join(self.scratch, "c%d" % n)
        os.makedirs(os.path.join(root, "home", ".codex"))
        write_tree(root, c["files"])
        self.set_etc(c["etc"] if self.etc_ok else None)
        nobody = c["nobody"] and os.geteuid() == 0 and shutil.which("setpriv") is not None
        solo = c["env"] is not None or c["kind"] == "v2"
        if solo:
            batch = root
            env = {"PATH": "/usr/bin:/bin", "HOME": root + "/home", "CODEX_HOME": root + "/home/.codex"}
            env.update({k: (v.replace("@R", root) if v else v) for k, v in (c["env"] or {}).items()})
            env = {k: v for k, v in env.items() if v is not None}
            pair = [root, *self.servers(env, root, nobody), 1]
        else:
            pair = self.shared(nobody)
            batch = pair[0]
            link = os.path.join(batch, "ch")
            os.unlink(link)
            os.symlink(os.path.join(root, "home", ".codex"), link)
        bad, shown = [], []
        for method, params in c["requests"]:
            p = subst(params, root)
            want = norm(pair[1].ask(method, p), root, batch)
            got = norm(pair[2].ask(method, p), root, batch)
            self.requests += 1
            shown.append((method, params, want, got))
            if want is None or want != got:
                bad.append(len(shown) - 1)
                if want is None or got is None:
                    break       # a server that stopped answering: start again
        silent = [x for x in (pair[1], pair[2]) if any(
            (w if x is pair[1] else g) is None for _, _, w, g in shown)]
        status = [(x.p.poll(), "reference" if x is pair[1] else "execd") for x in silent]
        if solo:
            self.close(pair)
        elif bad:
            self.drop(nobody)
        for (rc, who), x in zip(status, silent):
            # a server that did not answer: how it ended, its last words
            print("# %s gave no answer (exit status %s): %s" % (who, rc, " | ".join(x.tail)[:600]))
        remove_tree(root)
        if bad or self.verbose:
            for i in (bad or range(len(shown))):
                method, params, want, got = shown[i]
                print("# %s %s" % (method, json.dumps(params)[:400]))
                print("#   reference: %s" % json.dumps(want)[:3000])
                print("#   execd:     %s" % json.dumps(got)[:3000])
        if bad:
            print("# tree: %s" % json.dumps({k: (v if isinstance(v, (str, list)) else repr(v))[:300]
                                              for k, v in c["files"].items()})[:4000])
            print("# nobody: %s, env: %s, etc: %s" % (c["nobody"], c["env"], json.dumps(c["etc"])[:1000]))
            self.failed += 1
            self.differ += len(bad)
        return not bad

    def finish(self):
        for nobody in list(self.pairs):
            self.drop(nobody)


def main():
    seed = int(os.environ.get("GENDIFF_SEED", "34"))
    san = bool(os.environ.get("EXECD_SANITIZERS"))
    count = int(os.environ.get("GENDIFF_CASES", "60" if san else "300"))
    first = int(os.environ.get("GENDIFF_FIRST", "0"))
    only = os.environ.get("GENDIFF_ONLY")
    numbers = [int(x) for x in only.split(",")] if only else list(range(first, first + count))
    ref, execd = find_ref(), os.environ.get("EXECD") or os.path.join(BUILD, "src", "execd")
    if ref is None or not os.access(execd, os.X_OK):
        print("1..0 # SKIP reference codex or execd not found")
        return 0
    scratch = os.environ.get(SCRATCH) or tempfile.mkdtemp(prefix="gendiff.", dir=os.path.abspath(BUILD))
    os.chmod(scratch, 0o755)    # the cases run as nobody walk through it
    etc_ok = enter_namespace(scratch)
    if os.path.exists("/etc/codex") and not etc_ok:
        print("1..0 # SKIP the host has an /etc/codex of its own")
        return 0
    signal.alarm(max(600, len(numbers) * 2))
    print("1..%d" % len(numbers))
    print("# seed %d, cases %d..%d" % (seed, numbers[0], numbers[-1]))
    run = Run(ref, execd, scratch, etc_ok)
    kinds = {}
    start = time.time()
    try:
        for t, n in enumerate(numbers, 1):
            c = make_case(random.Random("%d:%d" % (seed, n)), etc_ok)
            kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
            ok = run.one(n, c)
            print("%s %d - case %d: %s, %d requests%s" % ("ok" if ok else "not ok", t, n, c["kind"],
                                                         len(c["requests"]), ", nobody" if c["nobody"] else ""))
            sys.stdout.flush()
    finally:
        run.finish()
        if etc_ok:
            shutil.rmtree("/etc/codex", ignore_errors=True)
        if not os.environ.get(NS_FLAG):
            remove_tree(scratch)
    for line in run.sanitizer[:10]:
        print("# execd: %s" % line)
    print("# seed %d: %d cases (%s), %d requests in %.0f s: %d cases differ, %d requests differ" % (
        seed, len(numbers), ", ".join("%s %d" % kv for kv in sorted(kinds.items())), run.requests,
        time.time() - start, run.failed, run.differ))
    return 1 if run.failed or run.sanitizer else 0


if __name__ == "__main__":
    sys.exit(main())
