#!/usr/bin/python3
"""execd narrows itself: the instance runs under no_new_privs and its
allow-list filter, the spawn helper and the commands do not inherit that
filter (only the floor), the helper's loss is a clean error, and nothing
of it outlives execd."""
import os
import shutil
import signal
import tempfile
import time

from execd_client import Execd, comm, pid_alive, spawn_helper_of, tap

t = tap(timeout=120)


def status(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
    except OSError:
        pass
    return out


def filters(st):
    return int(st.get("Seccomp_filters", "-1"))


me = status(os.getpid())
if "Seccomp_filters" not in me:
    t.skip("execd's own filters", "this kernel's /proc/PID/status has no Seccomp_filters")
    t.done()
base = filters(me)           # a container runtime may have put filters on us already


def child_status(c, pid):
    r = c.start(pid, ["sh", "-c", "grep -E '^(NoNewPrivs|Seccomp|Seccomp_filters):' "
                      "/proc/self/status; unshare -U true && echo userns-ok"])
    out, code, _ = c.collect(pid)
    st = {}
    for line in out.get("stdout", b"").decode().splitlines():
        k, _, v = line.partition(":")
        st[k] = v.strip()
    return r, st, out.get("stdout", b"").decode()


# ---- default: floor for everything, allow-list on the instance only
c = Execd()
helper = spawn_helper_of(c.pid)
t.ok(helper is not None and comm(helper) == "execd-spawn", "the instance has its spawn helper",
     helper)
st = status(c.pid)
t.eq((st.get("NoNewPrivs"), st.get("Seccomp"), filters(st)), ("1", "2", base + 2),
     "the instance: no_new_privs, the floor and its allow-list")
hst = status(helper) if helper else {}
t.eq((hst.get("NoNewPrivs"), filters(hst)), ("1", base + 1),
     "the helper has the floor only")
r, cst, out = child_status(c, "plain")
t.ok("result" in r and filters(cst) == base + 1, "a command has the floor, not the allow-list",
     out)
# a call outside execd's allow-list (a user namespace) works for a command
userns = os.path.exists("/proc/self/ns/user") and os.system("unshare -U true 2>/dev/null") == 0
if userns:
    t.ok("userns-ok" in out, "a command may make a user namespace, which execd may not", out)
else:
    t.skip("a command may make a user namespace", "unprivileged user namespaces unavailable")

# a large request crosses to the helper intact
big = "x" * 100000
r = c.start("big", ["sh", "-c", 'printf %s "$1" | wc -c', "sh", big],
            env={"PATH": "/usr/bin:/bin", "BIG": "y" * 100000})
out, code, _ = c.collect("big")
t.eq((out.get("stdout", b"").strip(), code), (b"100000", 0),
     "argv and environment of 100 kB each reach the command")

# the helper gone: process/start fails cleanly, the rest keeps working
if helper:
    os.kill(helper, signal.SIGKILL)
    time.sleep(0.2)
r = c.start("after", ["true"])
t.ok("error" in r and r["error"]["code"] == -32603, "without its helper, process/start is an "
     "internal error", r)
r = c.call("fs/getMetadata", {"path": "file:///tmp"})
t.ok("result" in r, "and other methods still work", r)
t.eq(c.close(), 0, "execd exits 0")
t.ok(helper is None or not pid_alive(helper), "no helper left")

# ---- EOF: the helper goes with the instance
c = Execd()
helper = spawn_helper_of(c.pid)
t.eq(c.close(), 0, "execd exits 0 on EOF")
time.sleep(0.1)
t.ok(helper is not None and not pid_alive(helper), "its helper is gone too", helper)

# ---- the instance killed: the helper dies with it (PR_SET_PDEATHSIG)
c = Execd()
helper = spawn_helper_of(c.pid)
c.kill()
for _ in range(100):
    if helper is None or not pid_alive(helper):
        break
    time.sleep(0.02)
t.ok(helper is not None and not pid_alive(helper), "an instance killed takes its helper along")

# ---- the helper's closer (its child, forked at the first removed placeholder) goes with it
def settled(pid):
    """past its start-up (which alone may see the helper gone): niced to 19"""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[16]) == 19
    except (OSError, ValueError, IndexError):
        return False


def closer_of(helper, timeout=5):
    """the helper's child named as it is (the closer), settled, or None"""
    deadline = time.time() + timeout
    while True:
        try:
            with open("/proc/%d/task/%d/children" % (helper, helper)) as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            kids = []
        found = next((k for k in kids if comm(k) == "execd-spawn" and settled(k)), None)
        if found is not None or time.time() >= deadline:
            return found
        time.sleep(0.02)


def gone(pid, timeout=5):
    deadline = time.time() + timeout
    while pid_alive(pid) and time.time() < deadline:
        time.sleep(0.02)
    return not pid_alive(pid)


tmp = tempfile.mkdtemp(prefix="execd-narrow.")
os.chmod(tmp, 0o755)
root = os.path.join(tmp, "ws")          # no .git: its placeholders are made and removed
os.makedirs(root)
sandbox = {"permissions": {"type": "managed", "network": "restricted", "file_system": {
    "type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
        {"path": {"type": "path", "path": "file://" + root}, "access": "write"}]}},
    "windowsSandboxLevel": "disabled", "cwd": "file://" + root}
# (the instance killed: no subreaper adopts the closer, it must end by itself)
for how in ("EOF", "the instance killed"):
    c = Execd(["--state-dir", os.path.join(tmp, "state")])
    helper = spawn_helper_of(c.pid)
    r = c.start("ph", ["true"], cwd="file://" + root, sandbox=sandbox)
    if "error" in r:
        t.skip("the closer goes with its helper (%s)" % how, "no sandboxed start here: %r" % r)
        c.kill()
        continue
    c.collect("ph")
    closer = closer_of(helper) if helper else None
    if how == "EOF":
        c.close()
    else:
        c.kill()
    t.ok(closer is not None and gone(closer) and gone(helper),
         "the closer goes with its helper (%s)" % how, (helper, closer))
    c.kill()
    if closer is not None and pid_alive(closer):
        os.kill(closer, signal.SIGKILL)
shutil.rmtree(tmp, ignore_errors=True)

# ---- --allow-setuid: commands are free of the floor, the instance is not
c = Execd(["--allow-setuid"])
st = status(c.pid)
t.eq((st.get("NoNewPrivs"), filters(st)), ("1", base + 1),
     "--allow-setuid: the instance still has no_new_privs and its allow-list")
r, cst, out = child_status(c, "setuid")
t.eq((cst.get("NoNewPrivs"), filters(cst)), ("0", base),
     "--allow-setuid: a command has neither")
t.eq(c.close(), 0, "execd exits 0 (--allow-setuid)")
t.done()
