"""Differential cases against the reference over stdio (tests/envconfig.py,
tests/discover.py): each case writes a tree of files (a HOME with its .codex,
what /etc/codex holds), both servers are started with the same HOME,
CODEX_HOME and working directory, sent the same requests, and their answers
compared byte for byte (results and errors alike).  Output is TAP.

/etc/codex is read by both servers.  Run as root with unshare(1), a test
re-runs itself in a mount namespace of its own with an overlay on /etc, so
that the cases can write /etc/codex without touching the host's; otherwise
the cases that need /etc/codex are skipped (and so are all cases when the
host has an /etc/codex of its own).

  EXECD      execd binary (default $top_builddir/src/execd)
  CODEX_REF  reference binary (default: the installed codex)
"""
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

from execd_client import find_ref

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
NS_FLAG = "EXECD_REFDIFF_NS"
SCRATCH = "EXECD_REFDIFF_SCRATCH"
ANSWER_TIMEOUT = 60     # seconds for all the answers of one server


def enter_namespace(scratch):
    """Re-run this script in a mount namespace with /etc overlaid; False if we cannot."""
    if os.environ.get(NS_FLAG):
        return os.environ[NS_FLAG] == "1"
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    upper, work = os.path.join(scratch, "etc-upper"), os.path.join(scratch, "etc-work")
    os.makedirs(upper)
    os.makedirs(work)
    probe = subprocess.run(["unshare", "-m", "sh", "-c",
                            "mount -t overlay overlay -o lowerdir=/etc,upperdir=%s,workdir=%s /etc"
                            % (upper, work)], stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        return False
    shutil.rmtree(upper)
    shutil.rmtree(work)
    os.makedirs(upper)
    os.makedirs(work)
    env = dict(os.environ, **{NS_FLAG: "1", SCRATCH: scratch})
    cmd = ("mount -t overlay overlay -o lowerdir=/etc,upperdir=%s,workdir=%s /etc && "
           "exec \"$0\" \"$@\"" % (upper, work))
    rc = subprocess.call(["unshare", "-m", "--propagation", "private", "sh", "-c", cmd,
                          sys.executable] + sys.argv, env=env)
    remove_tree(scratch)
    sys.exit(rc)


def read_lines(fd, deadline):
    """The lines read from fd until EOF or the deadline: a server that
    stops answering leaves the rest of its answers None."""
    buf = b""
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line
        if not select.select([fd], [], [], max(0, deadline - time.time()))[0]:
            return
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        buf += chunk


def run(cmd, env, cwd, requests, method="environmentConfig/read", timeout=ANSWER_TIMEOUT):
    """The answers (result or error) to requests, in order (a request's
    "__method" overrides method), those not given within timeout seconds None."""
    lines = [{"id": 0, "method": "initialize", "params": {"clientName": "envconfig"}},
             {"method": "initialized"}]
    for i, r in enumerate(requests):
        m = {"id": i + 1, "method": method, "params": r}
        if isinstance(r, dict) and "__method" in r:
            m["method"] = r["__method"]
            m["params"] = r.get("params")
        if isinstance(r, dict) and "__raw_params" in r:
            m["params"] = r["__raw_params"]
        lines.append(m)
    data = "".join(json.dumps(m) + "\n" for m in lines).encode()
    err = tempfile.TemporaryFile()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=err, env=env, cwd=cwd, start_new_session=True)
    p.stdin.write(data)
    p.stdin.flush()
    answers = {}
    lines = read_lines(p.stdout.fileno(), time.time() + timeout)
    try:
        while len(answers) < len(requests) + 1:
            line = next(lines, None)
            if not line:
                break
            o = json.loads(line)
            if "id" in o:
                answers[o["id"]] = o.get("result", o.get("error"))
        p.stdin.close()         # a clean exit, so that a sanitizer build reports leaks
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    finally:
        p.kill()
        p.wait()
    err.seek(0)
    sanitizer = [l for l in err.read().decode(errors="replace").splitlines()
                 if "Sanitizer" in l or "runtime error" in l]
    return [answers.get(i + 1) for i in range(len(requests))], sanitizer


def remove_tree(path):
    """rmtree, after giving back the permissions the unreadable-file cases took."""
    for d, dirs, files in os.walk(path):
        for x in dirs + files:
            try:
                if not os.path.islink(os.path.join(d, x)):
                    os.chmod(os.path.join(d, x), 0o755)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


def write_tree(root, files):
    for rel, content in files.items():
        if rel == "chmod000":
            continue
        if "->" in rel:
            rel, target = rel.split("->")
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            os.symlink(os.path.join(root, target), p)
            continue
        p = os.path.join(root, rel)
        if rel.endswith("/"):
            os.makedirs(p, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.replace("@R", root).encode())
    # modes last, so that what they close was written first; one path or a list
    modes = files.get("chmod000", [])
    for rel in [modes] if isinstance(modes, str) else modes:
        os.chmod(os.path.join(root, rel), 0)


def run_cases(cases, prefix, extra=()):
    """Runs cases, each (name, files, etc, env, cwd, requests): files the tree
    written under the case's root @R, etc what /etc/codex holds (None: absent),
    env variables set for both servers (value None: unset; "@nobody": run as
    nobody), cwd their working directory, requests the params of the requests
    (see run()).  $<PREFIX>_ONLY=REGEX runs only the cases whose name matches,
    $<PREFIX>_VERBOSE=1 prints both answers of every case.  extra: checks of
    execd alone, each (name, fn(execd, scratch) -> (ok, detail)), run after
    the cases.  -> exit status"""
    ref, execd = find_ref(), os.path.join(BUILD, "src", "execd")
    if ref is None or not os.access(execd, os.X_OK):
        print("1..0 # SKIP reference codex or execd not found")
        return 0
    scratch = os.environ.get(SCRATCH) or tempfile.mkdtemp(
        prefix=prefix.lower() + ".", dir=os.path.abspath(BUILD))
    os.chmod(scratch, 0o755)    # the cases run as nobody walk through it
    etc_ok = enter_namespace(scratch)
    host_etc = os.path.exists("/etc/codex") and not etc_ok
    only = os.environ.get(prefix + "_ONLY")
    all_cases = list(cases)
    print("1..%d" % (len(all_cases) + len(extra)))
    failed = differ = total = 0
    for n, (name, files, etc, env, cwd, reqs) in enumerate(all_cases, 1):
        if only and not re.search(only, name):
            print("ok %d - %s # SKIP not selected" % (n, name))
            continue
        if host_etc or (etc is not None and not etc_ok):
            print("ok %d - %s # SKIP needs /etc/codex of our own" % (n, name))
            continue
        root = os.path.join(scratch, "c%d" % n)
        os.makedirs(os.path.join(root, "home", ".codex"))
        write_tree(root, files)
        if etc_ok:
            shutil.rmtree("/etc/codex", ignore_errors=True)
            if etc is not None:
                os.makedirs("/etc/codex")
                write_tree("/etc/codex", etc)
        as_nobody = env.get("@nobody") and os.geteuid() == 0
        if as_nobody and shutil.which("setpriv") is None:
            print("ok %d - %s # SKIP needs setpriv(1) to run as nobody" % (n, name))
            continue
        env = {k: v for k, v in env.items() if k != "@nobody"}
        pre = (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
               if as_nobody else [])
        e = {"PATH": "/usr/bin:/bin", "HOME": root + "/home", "CODEX_HOME": root + "/home/.codex"}
        e.update({k: (v.replace("@R", root) if v else v) for k, v in env.items()})
        e = {k: v for k, v in e.items() if v is not None}
        wd = cwd.replace("@R", root)
        wd = wd if os.path.isdir(wd) else root
        rq = json.loads(json.dumps(reqs).replace("@R", root))
        want, _ = run(pre + [ref, "exec-server", "--listen", "stdio"], e, wd, rq)
        # a state directory of its own: another test's sandboxes (a writable "/")
        # recorded in the shared one would make execd leave project layers out
        sd = os.path.join(root, "state")
        os.makedirs(sd, exist_ok=True)
        if as_nobody:
            os.chown(sd, 65534, 65534)
        got, sanitizer = run(pre + [execd, "--stdio", "--kill-grace-ms", "0", "--state-dir", sd],
                             e, wd, rq)
        # no answer from the reference proves nothing: that fails too
        bad = [i for i in range(len(rq)) if want[i] != got[i] or want[i] is None]
        total += len(rq)
        for line in sanitizer[:5]:
            print("# execd: %s" % line)
        if sanitizer and not bad:
            bad = [0]
        if os.environ.get(prefix + "_VERBOSE") or bad:
            for i in (bad or range(len(rq))):
                print("# request %d: %s" % (i, json.dumps(rq[i])[:300].replace(root, "@R")))
                print("#   reference: %s" % json.dumps(want[i]).replace(root, "@R"))
                print("#   execd:     %s" % json.dumps(got[i]).replace(root, "@R"))
        if bad:
            failed += 1
            differ += len(bad)
        print("%s %d - %s (%d requests)" % ("not ok" if bad else "ok", n, name, len(rq)))
    for n, (name, fn) in enumerate(extra, len(all_cases) + 1):
        if only and not re.search(only, name):
            print("ok %d - %s # SKIP not selected" % (n, name))
            continue
        ok, detail = fn(execd, scratch)
        if not ok:
            print("# %s" % detail.replace(scratch, "@R"))
            failed += 1
        print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
    if etc_ok:
        shutil.rmtree("/etc/codex", ignore_errors=True)
    if not os.environ.get(NS_FLAG):
        remove_tree(scratch)
    print("# %d requests in all: %d cases differ, %d requests differ" % (total, failed, differ))
    return 1 if failed else 0

