#!/usr/bin/python3
"""Sandboxed fs/* requests against a hostile sandboxed process: what the
policy checks must be what execd then uses.

An attacker (a process of this test) swaps a directory inside the writable
root with a symlink leading out of it, with renameat2(RENAME_EXCHANGE) in a
tight loop, while sandboxed fs/writeFile, fs/createDirectory and fs/remove
requests name paths under the swapped directory.  Nothing outside the root
may be created, changed or deleted.  Magic links (/dev/stderr,
/proc/self/fd/N) never lead a sandboxed write to execd's own descriptors."""

import ctypes
import json
import os
import platform
import signal
import subprocess
import tempfile
import time
import urllib.parse

from execd_client import EXECD, Execd, b64, tap

t = tap(timeout=300)
ROOT = tempfile.mkdtemp(prefix="execd-fsrace.", dir="/tmp")
WS = os.path.join(ROOT, "ws")
OUT = os.path.join(ROOT, "outside")
RENAME_EXCHANGE = 2
SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}.get(platform.machine())
ROUNDS = 1500		# requests per method, at most
SECONDS = 5.0		# ... and for at most this long
BATCH = 50		# requests in flight at once


def U(path):
    return "file://" + urllib.parse.quote(path.encode(), safe=b"/")


def sb(entries):
    return {"permissions": {"type": "managed", "network": "restricted",
                            "file_system": {"type": "restricted", "entries": entries}},
            "windowsSandboxLevel": "disabled"}


POL = sb([{"path": {"type": "path", "path": U(WS)}, "access": "write"}])


def start_attacker(a, b, seconds):
    """A child process exchanging a and b until killed (or seconds have passed)."""
    pid = os.fork()
    if pid != 0:
        return pid
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ba, bb = a.encode(), b.encode()
        deadline = time.time() + seconds
        while time.time() < deadline:
            for _ in range(1000):
                libc.syscall(SYS_RENAMEAT2, -100, ba, -100, bb, RENAME_EXCHANGE)
    finally:
        os._exit(0)


def stop(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def hammer(c, method, params_of):
    """Up to ROUNDS requests (for at most SECONDS); the answers by kind."""
    got = {"ok": 0}
    deadline = time.time() + SECONDS
    i = 0
    while i < ROUNDS and time.time() < deadline:
        ids = []
        for _ in range(min(BATCH, ROUNDS - i)):
            ids.append(c.request(method, params_of(i)))
            i += 1
        for rid in ids:
            r = c.wait_response(rid, timeout=60)
            if "result" in r:
                got["ok"] += 1
            else:
                m = r["error"]["message"]
                got[m] = got.get(m, 0) + 1
    got["sent"] = i
    return got


def setup():
    os.makedirs(os.path.join(WS, "sw"))
    os.makedirs(OUT)
    for i in range(ROUNDS):
        with open(os.path.join(OUT, "keep%d" % i), "w") as f:
            f.write("sentinel")
    os.symlink(OUT, os.path.join(WS, "lnk"))


def outside_state():
    st = {}
    for n in os.listdir(OUT):
        p = os.path.join(OUT, n)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p) as f:
                st[n] = f.read()
        else:
            st[n] = "dir" if os.path.isdir(p) else "other"
    return st


def test_race(c):
    sw, lnk = os.path.join(WS, "sw"), os.path.join(WS, "lnk")
    before = outside_state()
    attacker = start_attacker(sw, lnk, 60)
    try:
        w = hammer(c, "fs/writeFile", lambda i: {"path": U(sw + "/f%d" % i),
                   "dataBase64": b64("x"), "sandbox": POL})
        d = hammer(c, "fs/createDirectory", lambda i: {"path": U(sw + "/d%d" % i),
                   "recursive": i % 2 == 0, "sandbox": POL})
        p = hammer(c, "fs/createDirectory", lambda i: {"path": U(sw + "/p%d/q" % i),
                   "recursive": True, "sandbox": POL})
        r = hammer(c, "fs/remove", lambda i: {"path": U(sw + "/keep%d" % i),
                   "recursive": True, "force": True, "sandbox": POL})
        k = hammer(c, "fs/writeFile", lambda i: {"path": U(sw + "/keep%d" % i),
                   "dataBase64": b64("x"), "sandbox": POL})
    finally:
        stop(attacker)
    print("# writeFile new files: %r" % w)
    print("# createDirectory: %r" % d)
    print("# createDirectory -p: %r" % p)
    print("# remove: %r" % r)
    print("# writeFile over existing files: %r" % k)
    after = outside_state()
    created = sorted(set(after) - set(before))
    deleted = sorted(set(before) - set(after))
    changed = sorted(n for n in before if n in after and before[n] != after[n])
    print("# outside: %d created, %d deleted, %d changed" % (len(created), len(deleted),
          len(changed)))
    t.ok(w["ok"] > 0 and d["ok"] > 0, "the requests did work inside the root", (w, d))
    t.eq(created[:10], [], "race: nothing created outside the root (%d)" % len(created))
    t.eq(deleted[:10], [], "race: nothing deleted outside the root (%d)" % len(deleted))
    t.eq(changed[:10], [], "race: nothing changed outside the root (%d)" % len(changed))
    t.ok(not os.path.islink(sw) or os.readlink(sw) == OUT, "the attacker stopped")


def test_discover_race(c):
    """A skill's SKILL.md and agents/openai.yaml exchanged with symlinks to files
    the sandbox does not show, while capabilityRoots/discoverV1 reads them."""
    sk = os.path.join(WS, "sk", "s")
    os.makedirs(os.path.join(sk, "agents"))
    with open(os.path.join(sk, "SKILL.md"), "w") as f:
        f.write("---\nname: s\ndescription: inside\n---\n")
    with open(os.path.join(sk, "agents", "openai.yaml"), "w") as f:
        f.write("policy:\n  allow_implicit_invocation: true\n")
    with open(os.path.join(OUT, "skill.md"), "w") as f:
        f.write("---\nname: s\ndescription: SECRET-SKILL\n---\n")
    with open(os.path.join(OUT, "meta.yaml"), "w") as f:
        f.write("policy: {} # SECRET-META\n")
    os.symlink(os.path.join(OUT, "skill.md"), os.path.join(sk, "lnk"))
    os.symlink(os.path.join(OUT, "meta.yaml"), os.path.join(sk, "agents", "lnk"))
    attackers = [start_attacker(os.path.join(sk, "SKILL.md"), os.path.join(sk, "lnk"), 60),
                 start_attacker(os.path.join(sk, "agents", "openai.yaml"),
                                os.path.join(sk, "agents", "lnk"), 60)]
    got = {"ok": 0, "leaks": 0, "skills": 0}
    try:
        deadline = time.time() + SECONDS
        while time.time() < deadline and got["ok"] < ROUNDS:
            ids = [c.request("capabilityRoots/discoverV1", {"roots": [
                {"id": "r", "path": U(os.path.dirname(sk)), "sandbox": POL}]})
                for _ in range(BATCH)]
            for rid in ids:
                r = c.wait_response(rid, timeout=60)
                got["ok"] += "result" in r
                got["skills"] += len(r.get("result", {}).get("roots", [{}])[0].get("skills", []))
                got["leaks"] += "SECRET" in json.dumps(r)
    finally:
        for a in attackers:
            stop(a)
    print("# discoverV1 raced: %r" % got)
    t.ok(got["skills"] > 0, "raced discoverV1 did find the skill", got)
    t.eq(got["leaks"], 0, "raced discoverV1 never reads a file the sandbox does not show")


def test_discover_dir_race(c):
    """A directory below a discoverV1 root exchanged with a symlink to a
    denied directory: its entries' names must not come back in warnings."""
    dsec = os.path.join(WS, "dsec")
    for i in range(20):
        os.makedirs(os.path.join(dsec, "hidden-name-%d" % i))
    root = os.path.join(WS, "sk3")
    os.makedirs(os.path.join(root, "s", "sub"))
    os.symlink(dsec, os.path.join(root, "l"))
    pol = sb([{"path": {"type": "path", "path": U(WS)}, "access": "write"},
              {"path": {"type": "path", "path": U(dsec)}, "access": "deny"}])
    attacker = start_attacker(os.path.join(root, "s"), os.path.join(root, "l"), 60)
    got = {"ok": 0, "leaks": 0}
    try:
        deadline = time.time() + SECONDS
        while time.time() < deadline and got["ok"] < ROUNDS:
            ids = [c.request("capabilityRoots/discoverV1", {"roots": [
                {"id": "r", "path": U(root), "sandbox": pol}]}) for _ in range(BATCH)]
            for rid in ids:
                r = c.wait_response(rid, timeout=60)
                got["ok"] += "result" in r
                got["leaks"] += "hidden-name" in json.dumps(r)
    finally:
        stop(attacker)
    print("# discoverV1 directories raced: %r" % got)
    t.eq(got["leaks"], 0, "raced discoverV1 lists no directory the sandbox denies")


def test_copy_race(c):
    """fs/copy checks a tree, then copies it: a .git/ moved into the source in
    between must not be copied over the destination's read-only .git."""
    src = os.path.join(WS, "csrc")
    os.makedirs(os.path.join(WS, ".git", "hooks"))
    os.makedirs(os.path.join(src, "big"))
    for i in range(300):
        with open(os.path.join(src, "big", "f%d" % i), "w") as f:
            f.write("x")
    held = os.path.join(WS, "held")
    os.makedirs(os.path.join(held, ".git", "hooks"))
    with open(os.path.join(held, ".git", "hooks", "pre-commit"), "w") as f:
        f.write("#!/bin/sh\necho pwned\n")
    pid = os.fork()
    if pid == 0:
        try:
            a, b = os.path.join(held, ".git"), os.path.join(src, ".git")
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    os.rename(a, b)
                    os.rename(b, a)
                except OSError:
                    pass
        finally:
            os._exit(0)
    hook = os.path.join(WS, ".git", "hooks", "pre-commit")
    got = {"ok": 0}
    try:
        deadline = time.time() + SECONDS
        while time.time() < deadline and not os.path.exists(hook):
            ids = [c.request("fs/copy", {"sourcePath": U(src), "destinationPath": U(WS),
                                         "recursive": True, "sandbox": POL}) for _ in range(10)]
            for rid in ids:
                r = c.wait_response(rid, timeout=60)
                k = "ok" if "result" in r else r["error"]["message"]
                got[k] = got.get(k, 0) + 1
    finally:
        stop(pid)
    print("# fs/copy raced: %r" % got)
    t.ok(got["ok"] > 0, "raced fs/copy did copy the tree", got)
    t.ok(not os.path.exists(hook), "raced fs/copy writes nothing into the root's read-only .git")


def test_magic_links():
    log = os.path.join(WS, "execd.log")
    with open(log, "w") as f:
        f.write("log start\n")
    # execd's stderr is a file inside the writable root, as a redirected log may be
    m = Execd(argv=["/bin/sh", "-c", 'exec "$0" --stdio 2>>"$1"', EXECD, log], init=False)
    try:
        r = m.call("initialize", {"clientName": "test"})
        m.notify("initialized")
        t.ok("result" in r, "execd with its stderr in the root started", r)
        ino = os.stat(log).st_ino
        for path in ("/dev/stderr", "/proc/self/fd/2", "/dev/fd/2", "/proc/%d/fd/2" % m.pid):
            r = m.call("fs/writeFile", {"path": "file://" + path, "dataBase64": b64("pwned\n"),
                                        "sandbox": POL})
            t.eq(r.get("error"), {"code": -32600, "message": "Permission denied (os error 13)"},
                 "magic link %s refused" % path)
        t.eq(os.stat(log).st_ino, ino, "execd's stderr file not replaced")
        with open(log) as f:
            text = f.read()
        t.ok("pwned" not in text and text.startswith("log start"), "execd's stderr intact",
             text[:200])
        r = m.call("fs/writeFile", {"path": "file:///dev/null", "dataBase64": b64("x"),
                                    "sandbox": POL})
        t.ok("result" in r, "a platform device (/dev/null) is still writable", r)
        r = m.call("fs/readFile", {"path": "file:///proc/self/fd/0", "sandbox": POL})
        t.ok("error" in r, "reading through a magic link refused", r)
    finally:
        m.kill()


if SYS_RENAMEAT2 is None:
    t.skip("rename race", "no renameat2 number for %s" % platform.machine())
setup()
c = Execd()
try:
    if SYS_RENAMEAT2 is not None:
        test_race(c)
        test_discover_race(c)
        test_discover_dir_race(c)
        test_copy_race(c)
    test_magic_links()
    t.eq(c.close(), 0, "execd exits 0 on EOF")
finally:
    c.kill()
    subprocess.run(["rm", "-rf", ROOT])
t.done()
