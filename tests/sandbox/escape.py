"""Sandbox escapes (issue 14: a sandboxed command can never act outside its sandbox).

Every attack runs from inside a sandboxed child (a sandboxed `sh -c` or a small
python3 script); the test then looks from outside at what changed.  Checks that
fail against today's execd are listed in EXPECTED_TO_FAIL and reported as TAP
TODO, so the suite stays green; the harness reports an unexpected pass (XPASS)
as a failure, so a fix must remove its key from the list.

Every process started here carries ESCAPE_TAG in its environment (execd,
execd-proxy, the listener's instances, the sandboxed children and their
daemons): cleanup() ends them all by pid.
"""
import asyncio
import atexit
import base64
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

from execd_client import EXECD, Execd, Tap, b64, comm

# ---------------------------------------------------------------- expected failures

# The checks that fail today, by key.  To fix one: make execd refuse the
# attack, then delete its line here; the check turns into a plain one.
EXPECTED_TO_FAIL = {
}

# ---------------------------------------------------------------- TAP, bounded, cleaned up

TAG = "escape-%d-%d" % (os.getpid(), int(time.time()))
os.environ["ESCAPE_TAG"] = TAG      # inherited by everything started below
SHM = "/dev/shm/execd-escape-" + TAG
tmp = None
_popens = []
t = Tap()               # bounded by bail() below, which also cleans up
skip = t.skip
_xpass = []


def tap(key, cond, desc, diag=None):
    """t.ok, a TODO while key is in EXPECTED_TO_FAIL"""
    todo = EXPECTED_TO_FAIL.get(key) if key else None
    if todo and cond:
        _xpass.append(key)
    return t.ok(cond, desc, diag, todo=todo and "sandbox issue 14: " + todo)


def tagged_pids():
    out = []
    needle = ("ESCAPE_TAG=" + TAG).encode()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if needle in f.read().split(b"\0"):
                    out.append(int(d))
        except OSError:
            pass
    return out


def cleanup():
    for p in _popens:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
    for _ in range(3):
        pids = tagged_pids()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
    for p in (SHM, SHM + "-nobody"):
        try:
            os.unlink(p)
        except OSError:
            pass
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


def bail(*a):
    print("Bail out! test timed out")
    sys.stdout.flush()
    cleanup()
    os._exit(1)


atexit.register(cleanup)     # a test that dies half-way still cleans up
signal.signal(signal.SIGALRM, bail)
signal.alarm(170)


def has_seccomp():
    with open("/proc/self/status") as f:
        return any(l.startswith("Seccomp:") for l in f)


if not has_seccomp():
    print("1..0 # SKIP this kernel has no seccomp")
    raise SystemExit(0)

tmp = tempfile.mkdtemp(prefix="execd-escape.")
os.chmod(tmp, 0o755)
STATE = os.path.join(tmp, "state")
W = os.path.join(tmp, "ws")
O = os.path.join(tmp, "outside")
for d in (W, O, os.path.join(W, ".git"), STATE):
    os.makedirs(d, exist_ok=True)
OFILE = os.path.join(O, "file")
with open(OFILE, "w") as f:
    f.write("outside\n")
ENV = {"PATH": "/usr/bin:/bin", "ESCAPE_TAG": TAG}
PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "python3"

root_read = {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}


def entry(p, access):
    return {"path": {"type": "path", "path": "file://" + p}, "access": access}


def sandbox(writable, network="restricted", cwd=None):
    return {"permissions": {"type": "managed", "network": network,
                            "file_system": {"type": "restricted",
                                            "entries": [root_read] + [entry(w, "write")
                                                                      for w in writable]}},
            "windowsSandboxLevel": "disabled", "cwd": "file://" + (cwd or writable[0])}


counter = [0]


def start(c, argv, sb, cwd=None):
    counter[0] += 1
    pid = "x%d" % counter[0]
    r = c.call("process/start", {"processId": pid, "argv": argv, "env": ENV, "tty": False,
                                 "cwd": "file://" + (cwd or W), "sandbox": sb})
    return pid, r


def run(c, argv, sb, cwd=None, timeout=20):
    """(start response, output text, exit code); output None if refused."""
    pid, r = start(c, argv, sb, cwd)
    if "error" in r:
        return r, None, None
    out, code, _ = c.collect(pid, timeout)
    return r, (out.get("stdout", b"") + out.get("stderr", b"")).decode(errors="replace"), code


def py(c, script, sb, *args, **kw):
    return run(c, [PY, "-c", script] + [str(a) for a in args], sb, **kw)


def fsize_limit(pid):
    """RLIMIT_FSIZE of another process, read from /proc (prlimit needs it dumpable)."""
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max file size"):
                return line.split()[3:5]
    return None


def wait_for(pred, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def execd(extra=None, env=None, stderr_path=None, state=None, prefix=()):
    """An execd on pipes; its log goes to stderr_path (a new file in tmp by default)."""
    args = list(prefix) + [EXECD, "--stdio", "--state-dir", state or STATE] + list(extra or [])
    if stderr_path is None:
        stderr_path = os.path.join(tmp, "execd-%d.log" % len(_popens))
    args = ["sh", "-c", 'exec "$@" 2>>"$0"', stderr_path] + args
    c = Execd(argv=args, env=env)
    _popens.append(c.p)
    return c


SB = sandbox([W])

# ---------------------------------------------------------------- controls

c = execd()
r, out, code = run(c, ["sh", "-c", "echo hello-from-inside"], SB)
tap(None, out is not None and "hello-from-inside" in out and code == 0,
    "control: a sandboxed echo runs", (r, out))
r, out, code = run(c, ["sh", "-c", "echo x > %s/inside && echo x > %s/.git/config; echo rc=$?"
                       % (W, W)], SB)
tap(None, os.path.exists(os.path.join(W, "inside")), "control: a write inside a writable root works",
    (r, out))
tap(None, out is not None and "rc=0" not in out and
    not os.path.exists(os.path.join(W, ".git", "config")),
    "control: the writable root's .git stays read-only", out)
r, out, code = run(c, ["sh", "-c", "echo x > %s/new; echo rc=$?" % O], SB)
tap(None, out is not None and "rc=0" not in out and not os.path.exists(os.path.join(O, "new")),
    "control: a write outside the writable roots fails", out)

# ---------------------------------------------------------------- network off: AF_UNIX, fds, pids

UNIX_PROBE = r'''
import os, socket, sys
try:
    a, b = socket.socketpair(); a.send(b"x"); print("socketpair", b.recv(1) == b"x")
except OSError as e:
    print("socketpair", e.errno)
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("connect OK")
except OSError as e:
    print("connect", e.errno)
'''
upath = os.path.join(tmp, "listen.sock")
lsock = socket.socket(socket.AF_UNIX)
lsock.bind(upath)
lsock.listen(4)
lsock.setblocking(False)
r, out, code = py(c, UNIX_PROBE, SB, upath)
accepted = False
try:
    lsock.accept()[0].close()
    accepted = True
except OSError:
    pass
lsock.close()
tap(None, out is not None and "socketpair True" in out, "network off: socketpair() works", out)
tap("unix-connect", out is not None and "connect OK" not in out and not accepted,
    "network off: connect() to an AF_UNIX socket outside fails", out)

# the host's sockets: with the network off the command is in a network
# namespace of its own (as under the reference's bwrap --unshare-net), so
# /proc/net lists none of the host's, and its abstract sockets are out of reach
NET_PROBE = r'''
import socket, sys
print("tcp", sys.argv[1] in open("/proc/net/tcp").read().upper())
print("unix", sys.argv[2] in open("/proc/net/unix").read())
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0" + sys.argv[3]); print("abstract OK")
except OSError as e:
    print("abstract", e.errno)
print("ifaces", sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]))
'''
tsock = socket.socket()
tsock.bind(("127.0.0.1", 0))
tsock.listen(1)
tport = "%04X" % tsock.getsockname()[1]
npath = os.path.join(tmp, "netleak-%d.sock" % os.getpid())
nsock = socket.socket(socket.AF_UNIX)
nsock.bind(npath)
nsock.listen(1)
aname = "execd-test-abstract-%d" % os.getpid()
asock = socket.socket(socket.AF_UNIX)
asock.bind("\0" + aname)
asock.listen(1)
r, out, code = py(c, NET_PROBE, SB, ":" + tport, npath, aname)
for sk in (tsock, nsock, asock):
    sk.close()
tap("proc-net", out is not None and "tcp False" in out and "unix False" in out and
    "abstract OK" not in out and "ifaces ['lo']" in out,
    "network off: /proc/net shows none of the host's sockets, only loopback exists", out)

FD_PROBE = r'''
import os
# the listing's own descriptor is closed by the time it is looked at
for fd in sorted(map(int, os.listdir("/proc/self/fd"))):
    try:
        if fd > 2:
            print("extra", fd, os.readlink("/proc/self/fd/%d" % fd))
    except FileNotFoundError:
        pass
print("end")
'''
r, out, code = py(c, FD_PROBE, SB)
tap(None, out is not None and "end" in out and "extra" not in out,
    "no descriptor of execd's but stdio is visible in /proc/self/fd", out)
r, out, code = run(c, ["sh", "-c", "kill -0 %d 2>/dev/null; echo kill=$?" % c.pid], SB)
tap(None, out is not None and "kill=0" not in out and "kill=" in out,
    "kill -0 execd's pid from inside fails", out)
r, out, code = run(c, ["sh", "-c", "test -e /proc/%d && echo visible || echo hidden" % c.pid], SB)
tap("proc-pid", out is not None and "hidden" in out, "/proc inside does not list execd's pid", out)

# ---------------------------------------------------------------- the sandbox's own namespaces

r, out, code = run(c, ["sh", "-c", "echo pid=$$; ls /proc | grep -c '^[0-9]'; "
                       "cat /proc/self/uid_map"], SB)
lines = (out or "").split("\n")
tap(None, out is not None and "pid=2" in lines and lines[1:2] and int(lines[1]) <= 4,
    "the command is pid 2 and /proc lists only the sandbox's processes", out)
tap(None, out is not None and len(lines) > 2 and lines[2].split() == [str(os.geteuid())] * 2 + ["1"],
    "the command runs in a user namespace mapping only execd's uid", out)
r, out, code = run(c, ["sh", "-c", "stat -c mode=%%a %s; ls -a %s; echo rc=$?" % (STATE, STATE)], SB)
tap(None, out is not None and "mode=0" in out and "rc=0" not in out,
    "execd's state directory is an empty, unreadable directory inside", out)
DAEMON_MARK = "31%d" % (os.getpid() % 1000)
r, out, code = run(c, ["sh", "-c", "setsid sleep %s </dev/null >/dev/null 2>&1 & echo started"
                       % DAEMON_MARK], SB)


def daemon_alive():
    for pid in tagged_pids():
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", DAEMON_MARK.encode()]:
                    return True
        except OSError:
            pass
    return False


tap(None, out is not None and "started" in out and not daemon_alive(),
    "a setsid daemon of the command is gone by process/closed", out)
PTMX = """
import os, pty
m, s = pty.openpty(); os.write(s, b"ok\\n"); print("pty", os.read(m, 10).strip().decode(), os.ttyname(s))
"""
r, out, code = py(c, PTMX, SB)
tap(None, out is not None and "pty ok /dev/pts/0" in out,
    "a new pty can be made inside, on the sandbox's own devpts", out)
counter[0] += 1
r = c.call("process/start", {"processId": "tty%d" % counter[0], "argv": ["sh", "-c", "tty; ls /dev/pts"],
                             "env": ENV, "tty": True, "cwd": "file://" + W, "sandbox": SB})
out = c.collect("tty%d" % counter[0], 20)[0].get("pty", b"").decode() if "result" in r else None
tap(None, out is not None and out.split()[:2] == ["/dev/console", "ptmx"],
    "on a PTY: the terminal is /dev/console (as the reference), no host pty in /dev/pts", out)
r, out, code = run(c, ["sh", "-c", "kill -TERM $$"], SB)
r2, out2, code2 = run(c, ["sh", "-c", "kill -TERM $$"], None)
tap(None, code is not None and code == code2,
    "a command killed by a signal ends as it would unsandboxed (%s, %s)" % (code, code2))
dsock = os.path.join(tmp, "dgram.sock")
dlisten = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
dlisten.bind(dsock)
dlisten.setblocking(False)
DGRAM = """
import socket, sys
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", sys.argv[1]); print("sendto OK")
except OSError as e:
    print("sendto", e.errno)
"""
r, out, code = py(c, DGRAM, SB, dsock)
try:
    got = dlisten.recv(10)
except OSError:
    got = None
dlisten.close()
tap(None, out is not None and "OK" not in out and got is None,
    "network off: a datagram to a host AF_UNIX socket by path is refused", out)

# sendmsg(2)'s address is out of seccomp's sight: a datagram socket made
# another way than socket(AF_UNIX, SOCK_DGRAM), a socketpair's end or a
# SOCK_RAW one (the kernel makes that a datagram socket), could still name
# a host daemon's socket (syslog's /dev/log, systemd's notify socket)
DGRAM_SENDMSG = """
import socket, sys
def pair(t):
    return socket.socketpair(socket.AF_UNIX, t)[0]
for name, make in (("pair-dgram", lambda: pair(socket.SOCK_DGRAM)),
                   ("pair-raw", lambda: pair(socket.SOCK_RAW)),
                   ("raw", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_RAW))):
    try:
        make().sendmsg([name.encode()], [], 0, sys.argv[1]); print(name, "OK")
    except OSError as e:
        print(name, e.errno)
"""


def dgram_sendmsg(c, extra=None):
    """What a sandboxed DGRAM_SENDMSG said, and what a host datagram socket got."""
    dl = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = os.path.join(tmp, "dgram2.sock")
    if os.path.exists(path):
        os.unlink(path)
    dl.bind(path)
    os.chmod(path, 0o777)
    dl.setblocking(False)
    counter[0] += 1
    pid = "d%d" % counter[0]
    r = c.call("process/start", dict({"processId": pid, "argv": [PY, "-c", DGRAM_SENDMSG, path],
                                      "env": ENV, "tty": False, "cwd": "file://" + W,
                                      "sandbox": SB}, **(extra or {})))
    out, _, _ = c.collect(pid, 20) if "result" in r else ({}, None, None)
    said = (out.get("stdout", b"") + out.get("stderr", b"")).decode(errors="replace")
    got = []
    while True:
        try:
            got.append(dl.recv(64))
        except OSError:
            break
    dl.close()
    return said, got


said, got = dgram_sendmsg(c)
tap("unix-dgram-sendmsg", "pair-dgram" in said and " OK" not in said and not got,
    "network off: no datagram reaches a host AF_UNIX socket by sendmsg from a socketpair's "
    "end or a SOCK_RAW socket", (said, got))

# a device node planted in a writable root (by someone outside) does not count inside
if os.geteuid() == 0:
    NODE = os.path.join(W, "planted-null")
    os.mknod(NODE, 0o666 | __import__("stat").S_IFCHR, os.makedev(1, 3))
    r, out, code = run(c, ["sh", "-c", "echo x > %s; echo rc=$?" % NODE], SB)
    os.unlink(NODE)
    tap(None, out is not None and "rc=0" not in out,
        "a device node in a writable root cannot be opened inside (nodev)", out)
else:
    skip("a device node in a writable root", "not root")

# the mount layer alone (Landlock's filesystem rules off): the host's sysctls stay
# read-only in the sandbox's /proc (the same hostname is written back: harmless)
cm = execd(env=dict(os.environ, EXECD_SANDBOX_DISABLE="landlock-fs"))
r, out, code = run(cm, ["sh", "-c", "h=$(cat /proc/sys/kernel/hostname); "
                        "echo \"$h\" > /proc/sys/kernel/hostname; echo rc=$?"], SB)
tap(None, out is not None and "rc=0" not in out and "Read-only" in out,
    "without Landlock: the host's sysctls in /proc/sys cannot be written", out)
cm.kill()

# ---------------------------------------------------------------- 4. metadata outside the roots

def meta(p):
    st = os.stat(p)
    try:
        xa = sorted(os.listxattr(p))
    except OSError:
        xa = None
    return st.st_mode, st.st_uid, st.st_gid, st.st_atime_ns, st.st_mtime_ns, xa

META_PROBE = r'''
import os, sys
p = sys.argv[1]
for name, f in (("chmod", lambda: os.chmod(p, 0o777)), ("chown", lambda: os.chown(p, 0, 0)),
                ("utime", lambda: os.utime(p, (1, 1))),
                ("setxattr", lambda: os.setxattr(p, "user.x", b"1"))):
    try:
        f(); print(name, "OK")
    except OSError as e:
        print(name, e.errno)
'''
os.chmod(OFILE, 0o644)
os.utime(OFILE, (1000000, 1000000))
before = meta(OFILE)
r, out, code = py(c, META_PROBE, SB, OFILE)
after = meta(OFILE)
res = dict(l.split() for l in (out or "").splitlines() if len(l.split()) == 2)
tap("meta-chmod", res.get("chmod") not in (None, "OK") and after[0] == before[0],
    "chmod outside the roots fails and the mode is unchanged", (res, before, after))
tap("meta-chown", res.get("chown") not in (None, "OK") and after[1:3] == before[1:3],
    "chown outside the roots fails and the owner is unchanged", (res, before, after))
tap("meta-utime", res.get("utime") not in (None, "OK") and after[3:5] == before[3:5],
    "utime outside the roots fails and the times are unchanged", (res, before, after))
if before[5] is None:
    skip("setxattr outside the roots", "no xattrs on this file system")
else:
    tap("meta-xattr", res.get("setxattr") not in (None, "OK") and after[5] == before[5],
        "setxattr user.x outside the roots fails and the xattrs are unchanged",
        (res, before, after))
os.chmod(OFILE, 0o644)

# A set-user-ID file made inside a writable root is one on the host: anyone
# who can reach the root (/tmp is one often) would run it as execd's user.
SETID_PROBE = r'''
import ctypes, os, stat, sys
d = sys.argv[1]
os.makedirs(d)
libc = ctypes.CDLL(None, use_errno=True)
def tryit(name, f):
    try:
        f(); print(name, "OK")
    except OSError as e:
        print(name, e.errno)
def creat(name, mode):
    os.close(os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT, mode))
tryit("plain", lambda: creat("plain", 0o755))
tryit("open-suid", lambda: creat("osuid", 0o4755))
tryit("open-sgid", lambda: creat("osgid", 0o2755))
creat("c1", 0o755); creat("c2", 0o755); creat("c3", 0o755)
tryit("chmod-suid", lambda: os.chmod(os.path.join(d, "c1"), 0o4755))
tryit("chmod-sgid", lambda: os.chmod(os.path.join(d, "c2"), 0o2755))
def fch():
    fd = os.open(os.path.join(d, "c3"), os.O_RDONLY)
    try:
        os.fchmod(fd, 0o4755)
    finally:
        os.close(fd)
tryit("fchmod-suid", fch)
tryit("mknod-suid", lambda: os.mknod(os.path.join(d, "n"), stat.S_IFREG | 0o4755))
def tmpfile():
    fd = os.open(d, os.O_WRONLY | getattr(os, "O_TMPFILE", 0x410000), 0o4755)
    try:
        os.link("/proc/self/fd/%d" % fd, os.path.join(d, "t"))
    finally:
        os.close(fd)
tryit("tmpfile-suid", tmpfile)
tryit("chmod-plain", lambda: os.chmod(os.path.join(d, "plain"), 0o700))
'''
SETID = os.path.join(W, "setid")
r, out, code = py(c, SETID_PROBE, SB, SETID)
setid = sorted(n for n in os.listdir(SETID) if os.lstat(os.path.join(SETID, n)).st_mode &
               (stat.S_ISUID | stat.S_ISGID)) if os.path.isdir(SETID) else None
tap("setid-file", out is not None and "chmod-plain OK" in out and setid == [],
    "no set-user-ID or set-group-ID file can be made inside a writable root (a plain chmod "
    "works)", (out, setid))

# ---------------------------------------------------------------- 5. /dev/shm, /dev/pts

r, out, code = run(c, ["sh", "-c", "echo x > %s; echo rc=$?" % SHM], SB)
tap("dev-shm", not os.path.exists(SHM), "a file made in /dev/shm inside does not appear on the host",
    out)
master, slave = os.openpty()
ptyname = os.ttyname(slave)
PTY_PROBE = r'''
import os, sys
try:
    os.close(os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)); print("open OK")
except OSError as e:
    print("open", e.errno)
'''
r, out, code = py(c, PTY_PROBE, SB, ptyname)
os.close(master)
os.close(slave)
tap("dev-pts", out is not None and "open OK" not in out and "open" in out,
    "another session's %s cannot be opened from inside" % ptyname, out)

# ---------------------------------------------------------------- 8. the writable root renamed away

W8 = os.path.join(tmp, "ws8")
os.makedirs(W8)
with open(os.path.join(W8, "keep"), "w") as f:
    f.write("k")
r, out, code = run(c, ["sh", "-c", "cd /; mv %s %s.old; echo mv=$?; mkdir %s; echo mkdir=$?"
                       % (W8, W8, W8)], sandbox([W8]), cwd=W8)
tap(None, os.path.exists(os.path.join(W8, "keep")) and not os.path.exists(W8 + ".old"),
    "the writable root cannot be renamed away and replaced from inside", out)

# ---------------------------------------------------------------- 9. .git / .codex symlinks leading out

# The link leads out of the root: to a directory the policy does not make
# writable (Landlock stops that), and to another writable root, where the
# metadata would land writable (the reference refuses: "cannot enforce sandbox
# read-only path P because it crosses writable symlink S").
for name in (".git", ".codex"):
    for where, key in (("read-only", None), ("writable", "protected-symlink")):
        W9 = os.path.join(tmp, "ws9%s-%s" % (name, where))
        T9 = os.path.join(tmp, "target9%s-%s" % (name, where))
        os.makedirs(W9)
        os.makedirs(T9)
        os.symlink(T9, os.path.join(W9, name))
        roots = [W9, T9] if where == "writable" else [W9]
        r, out, code = run(c, ["sh", "-c", "echo x > %s/%s/planted; mkdir %s/%s/hooks; echo done"
                               % (W9, name, W9, name)], sandbox(roots), cwd=W9)
        tap(key, out is None or not os.listdir(T9),
            "a %s symlink to a %s directory outside the root: start refused, or the link is "
            "not followed for writing" % (name, where), (r, out, os.listdir(T9)))

# ---------------------------------------------------------------- 11. a NUL in a root path

# The root is never cut at the NUL (which granted its prefix W): the URL
# parser percent-encodes it, and the reference refuses the path "W%00x"
# with -32602.  (A NUL segment that ".." removes, as in "W\0/../x", is
# simply gone in the reference too: that grant is exactly "x".)
NULRAN = os.path.join(W, "nul-ran")
bad = sandbox([W])
bad["permissions"]["file_system"]["entries"][1] = entry(W + "\u0000x", "write")
pid, r = start(c, ["sh", "-c", "touch %s" % NULRAN], bad)
time.sleep(0.3)
tap("nul-root", r.get("error", {}).get("code") == -32602 and "%00x' is invalid on 'linux'"
    in r.get("error", {}).get("message", "") and not os.path.exists(NULRAN),
    "a NUL in a root path is refused with -32602 (not cut) and nothing runs", r)
if "result" in r:
    c.collect(pid, 10)

# ---------------------------------------------------------------- 7. git init below a parent repository

GIT = shutil.which("git", path="/usr/bin:/bin")
if GIT is None:
    skip("git init below a parent repository", "git is not installed")
else:
    repo = os.path.join(tmp, "repo")
    sub = os.path.join(repo, "sub")
    os.makedirs(sub)
    subprocess.run([GIT, "init", "-q", repo], check=True, timeout=20,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fsmon = os.path.join(O, "fsmonitor-ran")
    r, out, code = run(c, ["sh", "-c", "git init -q . ; git config core.fsmonitor 'touch %s'; "
                           "echo done" % fsmon], sandbox([sub]), cwd=sub)
    made = os.path.exists(os.path.join(sub, ".git", "config"))
    cfg = ""
    if made:
        with open(os.path.join(sub, ".git", "config")) as f:
            cfg = f.read()
    tap("git-below-repo", "fsmonitor" not in cfg,
        "git init + core.fsmonitor below a parent repository leaves no .git config behind",
        (out, cfg))

# ---------------------------------------------------------------- 6. a daemon outlives the placeholders

W6 = os.path.join(tmp, "ws6")
os.makedirs(W6)
DAEMON = r'''
import os, sys, time
w = sys.argv[1]
if os.fork():
    os._exit(0)
os.setsid()
fd = os.open("/dev/null", os.O_RDWR)
for i in (0, 1, 2):
    os.dup2(fd, i)
deadline = time.time() + 6
while time.time() < deadline:
    try:
        os.makedirs(os.path.join(w, ".git", "hooks"))
        with open(os.path.join(w, ".git", "hooks", "pre-commit"), "w") as f:
            f.write("#!/bin/sh\ntrue\n")
        break
    except OSError:
        time.sleep(0.02)
'''
had_placeholder = []
r, out, code = run(c, ["sh", "-c", "test -d %s/.git && echo placeholder; %s -c '%s' %s"
                       % (W6, PY, DAEMON.replace("'", "'\\''"), W6)], sandbox([W6]), cwd=W6)
hooks = os.path.join(W6, ".git", "hooks")
escaped = wait_for(lambda: os.path.exists(hooks), 3)
tap("placeholder-daemon", not escaped,
    "a setsid daemon of the command cannot create .git/hooks after process/closed", out)

# ---------------------------------------------------------------- 6b. nothing outlives process/closed

# The sandbox's pid 1 kills and reaps what the command left before it
# reports; without that, what is left dies only with the namespace, a moment
# after process/closed.  To see that moment, the daemon's exit is made slow:
# it frees a large memory first, and its descriptors (a lock held on a file)
# only after.  So the lock is free when process/closed comes only if the
# daemon was gone before.
W6B = os.path.join(tmp, "ws6b")
os.makedirs(W6B)
HOLDER = r'''
import fcntl, os, sys, time
lock = sys.argv[1]
r, w = os.pipe()
if os.fork():
    os.close(w)
    os.read(r, 1)       # the daemon holds the lock and its memory: the command ends
    os._exit(0)
os.close(r)
os.setsid()
fd = os.open("/dev/null", os.O_RDWR)
for i in (0, 1, 2):
    os.dup2(fd, i)
f = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(f, fcntl.LOCK_EX)
ballast = bytearray(b"\1") * (384 << 20)
os.write(w, b"x")
time.sleep(60)
'''
LOCK6B = os.path.join(W6B, "held")
marker = "execd-holder-%s" % TAG
try:
    r, out, code = run(c, [PY, "-c", HOLDER, LOCK6B, marker], sandbox([W6B]), cwd=W6B,
                       timeout=15)
except TimeoutError as e:
    r, out, code = None, str(e), None
free = False
if out is not None and os.path.exists(LOCK6B):
    import fcntl
    lf = os.open(LOCK6B, os.O_RDWR)
    try:
        fcntl.flock(lf, fcntl.LOCK_EX | fcntl.LOCK_NB)
        free = True
    except OSError:
        pass
    os.close(lf)


def holders():
    found = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(d))
        except (OSError, ValueError):
            pass
    return found


tap("pid1-reaps", code == 0 and free,
    "a setsid daemon left by a sandboxed command is gone (its lock free) when "
    "process/closed comes", (r, out, code, free))
gone = wait_for(lambda: not holders(), 2)
tap("pid1-reaps-gone", gone, "and no process of it is left", holders())

# ---------------------------------------------------------------- 3. fs/* raced by RENAME_EXCHANGE

SWAPPER = r'''
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 316, "aarch64": 276}[os.uname().machine]
a, b = (p.encode() for p in sys.argv[1:3])
end = time.time() + float(sys.argv[3])
n = 0
print("swapping", flush=True)
while time.time() < end:
    if libc.syscall(nr, -100, a, -100, b, 2) == 0:
        n += 1
print("swaps", n, flush=True)
'''
RACE = os.path.join(W, "race")
RD, RL = os.path.join(RACE, "d"), os.path.join(RACE, "l")
ORACE = os.path.join(O, "race")
os.makedirs(RD)
os.makedirs(ORACE)
os.symlink(ORACE, RL)
with open(os.path.join(ORACE, "victim"), "w") as f:
    f.write("v")
if os.uname().machine not in ("x86_64", "aarch64"):
    skip("fs/* raced by RENAME_EXCHANGE", "no renameat2 number for %s" % os.uname().machine)
else:
    pid, r = start(c, [PY, "-c", SWAPPER, RD, RL, "5"], SB)
    c.wait_notification("process/output", lambda p: p.get("processId") == pid, timeout=10,
                        consume=False)
    deadline = time.time() + 4.5
    i = 0
    while time.time() < deadline and i < 2000:
        i += 1
        k = i % 3
        if k == 0:
            c.call("fs/writeFile", {"path": "file://%s/pwn-%d" % (RD, i), "dataBase64": b64("x"),
                                    "sandbox": SB})
        elif k == 1:
            c.call("fs/createDirectory", {"path": "file://%s/dir-%d" % (RD, i), "recursive": False,
                                          "sandbox": SB})
        else:
            c.call("fs/remove", {"path": "file://%s/victim" % RD, "recursive": False,
                                 "force": True, "sandbox": SB})
    c.call("process/terminate", {"processId": pid})
    out, code, _ = c.collect(pid, 10)
    left = sorted(os.listdir(ORACE))
    print("# %d fs requests raced; swapper: %s" % (i, out.get("stdout", b"").decode().split()))
    pwn = [n for n in left if "pwn-" in n]
    dirs = [n for n in left if n.startswith("dir-")]
    tap("fs-race-write", not pwn, "raced fs/writeFile creates no file outside the roots",
        "%d outside, e.g. %s" % (len(pwn), pwn[:3]))
    tap("fs-race-mkdir", not dirs, "raced fs/createDirectory creates no directory outside the "
        "roots", "%d outside, e.g. %s" % (len(dirs), dirs[:3]))
    tap("fs-race-remove", "victim" in left, "raced fs/remove deletes no file outside the roots",
        "victim gone")

# ------------------------------------------------- a deny or read entry's parent renamed away

# Masks and read-only binds sit on names: a sandboxed command that renames a
# directory above one (inside its writable root) takes the mask along in its
# own view, but the host's tree then has the denied files under a new name
# that the policy, made of names, does not deny.
RN = os.path.join(W, "rn")
os.makedirs(os.path.join(RN, "a", "sec"))
os.makedirs(os.path.join(RN, "a", "ro"))
os.makedirs(os.path.join(RN, "d", "e"))
with open(os.path.join(RN, "a", "sec", "key"), "w") as f:
    f.write("SECRET\n")
with open(os.path.join(RN, "a", "ro", "file"), "w") as f:
    f.write("ro\n")
with open(os.path.join(RN, "d", "e", "key"), "w") as f:
    f.write("SECRET\n")
SBRN = sandbox([W])
SBRN["permissions"]["file_system"]["entries"] += [
    entry(os.path.join(RN, "a", "sec"), "deny"), entry(os.path.join(RN, "a", "ro"), "read"),
    entry(os.path.join(RN, "d", "e", "key"), "deny")]
r, out, code = run(c, ["sh", "-c", "mv a b; echo mv1=$?; mkdir x; mv d x/; echo mv2=$?; "
                       "cat b/sec/key x/d/e/key"], SBRN, cwd=RN)
reads = [c.call("fs/readFile", {"path": "file://" + p, "sandbox": SBRN})
         for p in (RN + "/b/sec/key", RN + "/x/d/e/key")]
rw = c.call("fs/writeFile", {"path": "file://%s/b/ro/file" % RN, "dataBase64": b64("pwned\n"),
                             "sandbox": SBRN})
r2, out2, code2 = run(c, ["sh", "-c", "cat b/sec/key x/d/e/key; echo pwned > b/ro/file"], SBRN,
                      cwd=RN)
ro = [os.path.join(RN, d, "ro", "file") for d in ("a", "b")]
ro_text = [open(p).read() for p in ro if os.path.exists(p)]
# the directories above a mask inside a read-only place stay read-only
os.makedirs(os.path.join(W, ".git", "hooks", "keep"), exist_ok=True)
SBGH = sandbox([W])
SBGH["permissions"]["file_system"]["entries"] += [
    entry(os.path.join(W, ".git", "hooks", "keep"), "deny")]
rg, outg, codeg = run(c, ["sh", "-c", "echo x > .git/hooks/pre-commit; echo rc=$?"], SBGH)
tap("mask-in-protected", outg is not None and "rc=0" not in outg and
    not os.path.exists(os.path.join(W, ".git", "hooks", "pre-commit")),
    "a denied path inside the root's .git leaves the rest of .git read-only", (rg, outg))
tap("rename-parent-of-mask", all("error" in x for x in reads) and "error" in rw and
    "SECRET" not in (out or "") + (out2 or "") and ro_text == ["ro\n"],
    "a directory above a denied or read-only path inside the writable root, renamed from "
    "inside, leaves that path denied (read-only) to fs/* and to the next command",
    (out, reads, rw, out2, ro_text))

# ------------------------------------- the host's /dev/shm and terminals through fs/*

# A sandboxed command has a /dev of its own (private shm, own devpts); fs/*
# in its sandbox must not read or plant shared memory files of the host's
# programs nor write into their terminals.
HSHM = "/dev/shm/execd-escape-host-" + TAG
with open(HSHM, "w") as f:
    f.write("host-shm-secret\n")
hmaster, hslave = os.openpty()
hpty = os.ttyname(hslave)
rs = c.call("fs/readFile", {"path": "file://" + HSHM, "sandbox": SB})
rp = c.call("fs/writeFile", {"path": "file://" + HSHM + "-planted", "dataBase64": b64("x"),
                             "sandbox": SB})
rl = c.call("fs/readDirectory", {"path": "file:///dev/shm", "sandbox": SB})
rt = c.call("fs/writeFile", {"path": "file://" + hpty, "dataBase64": b64("INJECTED\n"),
                             "sandbox": SB})
os.set_blocking(hmaster, False)
try:
    typed = os.read(hmaster, 100)
except BlockingIOError:
    typed = b""
planted = os.path.exists(HSHM + "-planted")
for p_ in (HSHM, HSHM + "-planted"):
    if os.path.exists(p_):
        os.unlink(p_)
os.close(hmaster)
os.close(hslave)
tap("fs-host-dev", "error" in rs and not planted and
    os.path.basename(HSHM) not in [e["fileName"] for e in rl.get("result", {}).get("entries", [])]
    and "error" in rt and b"INJECTED" not in typed,
    "sandboxed fs/* neither read nor plant the host's /dev/shm nor write into a terminal",
    (rs, rp, rl, rt, typed))

# ----------------------------- a policy entry's name made a symlink by the sandboxed command

# Entries are resolved as the policy is made, each request (and each
# command) anew: a command that puts a symlink where an entry names a path
# inside its writable root must not have the entry grant the link's target.
LK = os.path.join(W, "lk")
os.makedirs(LK)
LKO = os.path.join(O, "lk")
os.makedirs(LKO)
with open(os.path.join(LKO, "secret"), "w") as f:
    f.write("LINKED-SECRET\n")
os.makedirs(os.path.join(LKO, "x"))
os.symlink(os.path.join(LK, "chain", "x"), os.path.join(O, "lk-via"))  # the host's own link
SBLK = {"permissions": {"type": "managed", "network": "restricted", "file_system": {
    "type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "minimal"}}, "access": "read"},
        entry(W, "write"), entry(os.path.join(LK, "build"), "write"),
        entry(os.path.join(LK, "docs"), "read"), entry(os.path.join(O, "lk-via"), "write")]}},
    "windowsSandboxLevel": "disabled", "cwd": "file://" + LK}
r, out, code = run(c, ["sh", "-c", "ln -s %s build && ln -s %s docs && ln -s %s chain; "
                       "echo made=$?" % (LKO, LKO, LKO)], SBLK, cwd=LK)
got = [c.call("fs/readFile", {"path": "file://" + p, "sandbox": SBLK}) for p in
       (os.path.join(LKO, "secret"), os.path.join(LK, "build", "secret"),
        os.path.join(LK, "docs", "secret"))]
got.append(c.call("fs/writeFile", {"path": "file://" + os.path.join(LKO, "pwned"),
                                   "dataBase64": b64("x"), "sandbox": SBLK}))
got.append(c.call("fs/writeFile", {"path": "file://" + os.path.join(LKO, "x", "pwned"),
                                   "dataBase64": b64("x"), "sandbox": SBLK}))
r2, out2, code2 = run(c, ["sh", "-c", "cat %s/secret; echo x > %s/pwned2" % (LKO, LKO)], SBLK,
                      cwd=LK)
tap("entry-through-link", out is not None and "made=0" in out and
    all("error" in x for x in got) and "LINKED-SECRET" not in (out2 or "") and
    not os.path.exists(os.path.join(LKO, "pwned")) and
    not os.path.exists(os.path.join(LKO, "x", "pwned")) and
    not os.path.exists(os.path.join(LKO, "pwned2")),
    "entries named by symlinks a command made in its writable root grant nothing outside it, "
    "to fs/* or to the next command", (out, got, out2))

# a deny entry reached through a link in the writable root: repointed, it would deny elsewhere
os.makedirs(os.path.join(LK, "real"))
os.makedirs(os.path.join(LK, "other"))
with open(os.path.join(LK, "real", "secret"), "w") as f:
    f.write("CHAINED-SECRET\n")
os.symlink(os.path.join(LK, "real"), os.path.join(LK, "dchain"))  # the user's own link
SBDL = sandbox([W])
SBDL["permissions"]["file_system"]["entries"] += [
    entry(os.path.join(LK, "dchain", "secret"), "deny")]
r, out, code = run(c, ["sh", "-c", "cat dchain/secret; ln -sfn %s/other dchain; echo rc=$?" % LK],
                   SBDL, cwd=LK)
rd = c.call("fs/readFile", {"path": "file://" + os.path.join(LK, "real", "secret"), "sandbox": SBDL})
r2, out2, code2 = run(c, ["sh", "-c", "cat %s/real/secret" % LK], SBDL, cwd=LK)
tap("deny-through-link", "CHAINED-SECRET" not in (out or "") + (out2 or "") and "error" in rd,
    "a deny entry through a link in the writable root still holds once the command repoints it",
    (out, rd, out2))

# ------------------------------------------------- /proc through fs/*: no process of the host

# A sandboxed command's /proc shows its own processes only; fs/* requests in
# the same sandbox must not read other processes' environment or arguments
# (or execd's own) through the host's /proc, which every profile can read.
holder = subprocess.Popen(["sleep", "60"], env={"ESCAPE_TAG": TAG, "HELD": "proc-secret-" + TAG})
_popens.append(holder)
SBW = {"permissions": {"type": "managed", "network": "restricted", "file_system": {
    "type": "restricted", "entries": [entry(W, "write")]}}, "windowsSandboxLevel": "disabled"}
procs = {}
for sb_name, sb_ in (("root read", SB), ("workspace only", SBW)):
    for pth in ("/proc/%d/environ" % holder.pid, "/proc/%d/cmdline" % holder.pid,
                "/proc/%d/environ" % c.pid, "/proc/self/environ", "/proc/thread-self/environ"):
        r = c.call("fs/readFile", {"path": "file://" + pth, "sandbox": sb_})
        procs["%s %s" % (sb_name, pth)] = r.get("error", {}).get("message") or \
            base64.b64decode(r["result"]["dataBase64"])[:60]
    r = c.call("fs/readDirectory", {"path": "file:///proc", "sandbox": sb_})
    procs["%s listing" % sb_name] = sorted(e["fileName"] for e in r.get("result", {}).get(
        "entries", []) if e["fileName"].isdigit() or e["fileName"] in ("self", "thread-self"))
holder.kill()
holder.wait()
tap("fs-proc-others", all(isinstance(v, str) or v == [] for v in procs.values()),
    "sandboxed fs/* read no process's environ or cmdline through /proc, nor list one", procs)

# -------------------------------------- a denied file's existence, probed through symlinks

# The command cannot look into a denied directory, but it can plant
# symlinks into it; fs/* requests in its sandbox then must not answer
# differently for a file there that exists and one that does not (the
# reference's helper cannot tell either: the mask is an empty mode 000
# directory).
PR = os.path.join(W, "probe")
os.makedirs(os.path.join(PR, "sec", "sub"))
with open(os.path.join(PR, "sec", "key"), "w") as f:
    f.write("SECRET\n")
SBPR = sandbox([W])
SBPR["permissions"]["file_system"]["entries"] += [entry(os.path.join(PR, "sec"), "deny")]
run(c, ["sh", "-c", "mkdir l && for n in key nokey sub nosub; do ln -s %s/sec/$n l/$n; done"
        % PR], SBPR, cwd=PR)
answers = {}
for n in ("key", "nokey", "sub", "nosub"):
    u = "file://%s/l/%s" % (PR, n)
    got = []
    for m, extra in (("fs/getMetadata", {}), ("fs/readFile", {}), ("fs/canonicalize", {}),
                     ("fs/readDirectory", {}), ("fs/open", {"handleId": "p" + n}),
                     ("fs/readFile", {"path": u + "/x"}), ("fs/getMetadata", {"path": u + "/x"}),
                     ("fs/remove", {"path": u + "/x", "force": True}),
                     ("fs/copy", {"sourcePath": u + "/x", "destinationPath": "file://%s/c" % PR,
                                  "recursive": False})):
        r = c.call(m, dict({"path": u, "sandbox": SBPR}, **extra))
        got.append(r.get("error", {}).get("message", "ok"))
    answers[n] = got
listing = c.call("fs/readDirectory", {"path": "file://%s/l" % PR, "sandbox": SBPR})
shown = sorted(e["fileName"] for e in listing.get("result", {}).get("entries", []))
walk = c.call("fs/walk", {"path": "file://%s/l" % PR, "options": {"maxDepth": 2,
              "maxDirectories": 100, "maxEntries": 100, "followDirectorySymlinks": True},
              "sandbox": SBPR}).get("result", {})
walked = sorted(x["path"].rsplit("/", 1)[1] for x in walk.get("entries", []) + walk.get("errors", []))
tap("denied-exists-oracle", answers["key"] == answers["nokey"] and answers["sub"] ==
    answers["nosub"] and shown == [] and walked == [],
    "symlinks into a denied directory: fs/* answer alike whether the file there exists or not",
    (answers, shown, walked))

# ---------------------------------------------------------------- 10. prlimit, /dev/stderr, the lock

c.close()
c = execd()
PRLIMIT = r'''
import resource, sys
try:
    resource.prlimit(int(sys.argv[1]), resource.RLIMIT_FSIZE, (0, 0)); print("prlimit OK")
except OSError as e:
    print("prlimit", e.errno)
'''
limits_before = fsize_limit(c.pid)
r, out, code = py(c, PRLIMIT, SB, c.pid)
limits_after = fsize_limit(c.pid)
tap("prlimit-execd", out is not None and "prlimit OK" not in out and limits_after == limits_before,
    "prlimit on execd's pid from inside fails and its limits are unchanged",
    (out, limits_before, limits_after))
c.kill()     # its limits may be gone: a fresh one

# A file system left unrestricted with the network off needs no namespaces:
# the command then sees execd and its spawn helper, whose limits every later
# command inherits.  Landlock keeps ptrace and signals in, not prlimit(2).
from execd_client import spawn_helper_of
c = execd()
helper = spawn_helper_of(c.pid)
SB_NET_OFF = {"permissions": {"type": "managed", "network": "restricted",
                              "file_system": {"type": "unrestricted"}},
              "windowsSandboxLevel": "disabled", "cwd": "file://" + W}
PRLIMIT_NOFILE = r"""
import resource, sys
for pid in sys.argv[1:]:
    try:
        resource.prlimit(int(pid), resource.RLIMIT_NOFILE, (3, 3)); print(pid, "prlimit OK")
    except OSError as e:
        print(pid, "prlimit", e.errno)
"""
r, out, code = py(c, PRLIMIT_NOFILE, SB_NET_OFF, c.pid, helper)
r2, out2, code2 = run(c, ["sh", "-c", "echo next"], None)
tap("prlimit-helper", out is not None and "prlimit OK" not in out and out2 is not None and
    "next" in out2, "network off, file system unrestricted: prlimit on execd and its spawn "
    "helper fails, and the next command still starts", (out, r2, out2))
c.kill()
# and a Landlock before ABI 6 scopes no signals: the command could kill
# execd, its helper, and every process of the user (kill -9 -1)
c = execd(env=dict(os.environ, EXECD_SANDBOX_DISABLE="landlock-scope"))
r, out, code = run(c, ["sh", "-c", "kill -0 %d; echo kill=$?" % c.pid], SB_NET_OFF)
tap("signal-no-scope", out is not None and "kill=" in out and "kill=0" not in out,
    "network off, file system unrestricted, Landlock without signal scoping: kill -0 "
    "execd's pid fails", (r, out))
c.kill()
log = os.path.join(tmp, "execd-stderr.log")
c = execd(stderr_path=log)
with open(log, "a") as f:
    f.write("log-before\n")
r = c.call("fs/writeFile", {"path": "file:///dev/stderr", "dataBase64": b64("INJECTED\n"),
                            "sandbox": SB})
with open(log) as f:
    text = f.read()
tap("fs-dev-stderr", "error" in r and "INJECTED" not in text and "log-before" in text,
    "sandboxed fs/writeFile to /dev/stderr is refused and execd's log is intact", (r, text[-200:]))
r, out, code = run(c, ["sh", "-c", "cat %s; echo rc=$?" % log], SB)
tap(None, out is not None and "log-before" not in out,
    "execd's log (its stderr, a file) cannot be read from inside", out)
# the policy's /dev/stderr must not be execd's own stderr, resolved: its log by name
rw = c.call("fs/writeFile", {"path": "file://" + log, "dataBase64": b64("INJECTED\n"),
                             "sandbox": SB})
rr = c.call("fs/readFile", {"path": "file://" + log, "sandbox": SB})
with open(log) as f:
    text = f.read()
tap("fs-log-by-name", "error" in rw and "error" in rr and "INJECTED" not in text and
    "log-before" in text, "execd's log named by its path: sandboxed fs/writeFile and fs/readFile "
    "are refused", (rw, rr, text[-200:]))

# a placeholder's lock file exists once one has been made
W10 = os.path.join(tmp, "ws10")
os.makedirs(W10)
run(c, ["true"], sandbox([W10]), cwd=W10)
PROT = os.path.join(STATE, "placeholders")
LOCK = os.path.join(PROT, sorted(os.listdir(PROT))[0]) if os.path.isdir(PROT) and \
    os.listdir(PROT) else os.path.join(PROT, "none")
LOCKER = r'''
import fcntl, os, sys, time
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
except OSError as e:
    print("lock", e.errno, flush=True)
time.sleep(20)
'''
if not os.path.exists(LOCK):
    skip("flock on the state directory's lock", "%s was not made" % LOCK)
else:
    lpid, r = start(c, [PY, "-c", LOCKER, LOCK], SB)
    n = c.wait_notification("process/output", lambda p: p.get("processId") == lpid, timeout=10)
    said = base64.b64decode(n["chunk"]).decode()
    c2 = execd()
    W11 = os.path.join(tmp, "ws11")
    os.makedirs(W11)
    t0 = time.time()
    try:
        r2 = c2.wait_response(c2.request("process/start", {
            "processId": "other", "argv": ["true"], "env": ENV, "tty": False,
            "cwd": "file://" + W11, "sandbox": sandbox([W11])}), timeout=5)
        answered = "result" in r2 or "error" in r2
    except TimeoutError:
        answered = False
    took = time.time() - t0
    tap("state-lock", answered and took < 5,
        "a lock taken from inside does not stall another session's process/start (%.1f s)" % took,
        said)
    c.call("process/terminate", {"processId": lpid})
    c2.kill()
c.kill()

# ---------------------------------------------------------------- 10b. execd's own stdio in the plan

# The platform's /dev/stdin, /dev/stdout and /dev/stderr are writable rules,
# resolved through execd's own /proc/self/fd.  A pipe's name there is
# "pipe:[N]", no path: taken as one, it would be relative to execd's cwd.
HOME10 = os.path.join(tmp, "execd-cwd")
os.makedirs(HOME10)
c = execd(prefix=("env", "-C", HOME10))
twins = [os.path.join(HOME10, "pipe:[%d]" % os.fstat(f.fileno()).st_ino)
         for f in (c.p.stdin, c.p.stdout)]
for d in twins:
    os.mkdir(d)
r, out, code = run(c, ["sh", "-c", 'for d in "$@"; do echo x > "$d/f"; echo rc=$?; done', "sh"] + twins,
                   SB)
tap(None, out is not None and "rc=0" not in out and
    not any(os.path.exists(os.path.join(d, "f")) for d in twins),
    "a directory named as execd's stdin pipe in execd's cwd: the start runs, nothing written there",
    (r, out))
c.kill()
# A deleted file's name there ends in " (deleted)": resolved as a path, it
# leads to whatever now has that name: a file of that name, or a symlink
# of that name to a file outside.
twin_texts = []
for kind in ("file", "symlink"):
    log = os.path.join(tmp, "execd-deleted-%s.log" % kind)
    c = execd(stderr_path=log)
    os.unlink(log)
    target = log + " (deleted)" if kind == "file" else os.path.join(O, "twin-target")
    with open(target, "w") as f:
        f.write("before\n")
    if kind == "symlink":
        os.symlink(target, log + " (deleted)")
    r, out, code = run(c, ["sh", "-c", 'echo x >> "$1"; echo rc=$?', "sh", target], SB)
    with open(target) as f:
        twin_texts.append((kind, out, f.read()))
    c.kill()
tap("stdio-deleted-twin", all(o is not None and x == "before\n" for _, o, x in twin_texts),
    "execd's stderr a deleted file: a file, or a symlink's target, named as its /proc name "
    "('<it> (deleted)') cannot be written", twin_texts)

# ---------------------------------------------------------------- 2. execd-proxy's control socket

PROXY_BIN = os.path.join(os.environ.get("top_builddir", "."), "proxy", "execd-proxy")
CURL = shutil.which("curl")
if not os.access(PROXY_BIN, os.X_OK) or not CURL:
    skip("execd-proxy's control socket", "execd-proxy not built or no curl")
else:
    from proxytest import Origin, Proxy, curl
    P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\n")
    _popens.append(P.proc)
    origin = Origin()
    url = "http://127.0.0.1:%d/" % origin.port
    legit = P.register(tags={"process_id": "legit"})
    forged_id, forged_secret = "x" + "1" * 15, "2" * 32
    CTL = r'''
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect", e.errno, flush=True)
    sys.exit(0)
f = s.makefile("rwb")
for req in ({"op": "register", "id": 1, "tags": {"process_id": "legit", "session": "forged"},
             "credentials": {"id": sys.argv[3], "secret": sys.argv[4]}},
            {"op": "unregister", "id": 2, "credential": sys.argv[2]}):
    f.write((json.dumps(req) + "\n").encode()); f.flush()
    print("reply", f.readline().decode().strip(), flush=True)
print("attack-done", flush=True)
time.sleep(8)
'''
    c = execd(["--proxy-control", P.ctl_path])
    pid, r = start(c, [PY, "-c", CTL, P.ctl_path, legit.id, forged_id, forged_secret], SB)
    said = b""
    try:
        while b"attack-done" not in said and b"connect" not in said:
            n = c.wait_notification("process/output", lambda p: p.get("processId") == pid,
                                    timeout=10)
            said += base64.b64decode(n["chunk"])
    except TimeoutError:
        pass
    legit_code = curl("-x", "http://%s:%s@%s" % (legit.id, legit.secret, P.http), url).code
    forged_code = curl("-x", "http://%s:%s@%s" % (forged_id, forged_secret, P.http), url).code
    tap("proxy-control-unregister", legit_code == 200,
        "a sandboxed child cannot unregister another process's execd-proxy entry",
        said.decode(errors="replace"))
    tap("proxy-control-register", forged_code != 200,
        "a sandboxed child cannot register execd-proxy credentials of its own (HTTP %d)"
        % forged_code, said.decode(errors="replace"))
    c.call("process/terminate", {"processId": pid})
    c.kill()
    P.stop()

# ---------------------------------------------------------------- 2b. the instance's own execd-proxy

# Without a sidecar, execd starts an execd-proxy of its own for a managed
# network; its control connection is a socketpair: no path to find, and the
# proxy is outside the sandbox's pid and network namespaces.
if not os.access(PROXY_BIN, os.X_OK) or not CURL:
    skip("the instance's own execd-proxy", "execd-proxy not built or no curl")
else:
    from execd_client import child_pids, comm, network_proxy
    from proxytest import Origin
    origin2 = Origin()
    c = execd()
    LOOK = r'''
import os, subprocess, sys
comms = set()
for d in os.listdir("/proc"):
    if d.isdigit():
        try:
            comms.add(open("/proc/%s/comm" % d).read().strip())
        except OSError:
            pass
unix = [l.split()[-1] for l in open("/proc/net/unix").read().splitlines()[1:]
        if len(l.split()) >= 8]
code = subprocess.run(["curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                       sys.argv[1]], capture_output=True, text=True).stdout
print("comms", sorted(comms), "unix", unix, "code", code, flush=True)
'''
    counter[0] += 1
    pid = "x%d" % counter[0]
    r = c.call("process/start", {"processId": pid, "argv": [PY, "-c", LOOK,
               "http://127.0.0.1:%d/" % origin2.port], "env": ENV, "tty": False,
               "cwd": "file://" + W, "sandbox": SB,
               "networkProxy": network_proxy({"127.0.0.1": "allow"}, allow_local=False)})
    out, _, _ = c.collect(pid, 30) if "result" in r else ({}, None, None)
    said = (out.get("stdout", b"") + out.get("stderr", b"")).decode(errors="replace")
    outside = [p for p in child_pids(c.p.pid)
               if comm(p) == "execd-proxy"]   # None once gone
    tap("own-proxy-hidden", "code 200" in said and outside and "execd-proxy" not in said and
        "'execd'" not in said and "unix []" in said,
        "a sandboxed command reaches the instance's own execd-proxy only as a proxy: "
        "the proxy and its control connection are out of its sight", (said, outside, r))
    said, got = dgram_sendmsg(c, {"networkProxy": network_proxy({"127.0.0.1": "allow"})})
    tap("unix-dgram-sendmsg", "pair-dgram" in said and " OK" not in said and not got,
        "managed network: no datagram reaches a host AF_UNIX socket by sendmsg from a "
        "socketpair's end or a SOCK_RAW socket", (said, got))
    c.kill()

# ---------------------------------------------------------------- 2c. HTTPS inspected, end to end

# limited mode through execd: curl and Python in a sandbox reach a loopback
# TLS origin with only the environment execd gives them (proxy and CA
# variables), a POST is refused inside the tunnel; the bundle they are told
# to use is readable, the CA's private key is not.
INSPECT = r"""
import os, subprocess, sys, urllib.request
url = sys.argv[1]
def curl(*a):
    return subprocess.run(["curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}"]
                          + list(a) + [url], capture_output=True, text=True).stdout or "err"
try:
    py = urllib.request.urlopen(url, timeout=10).status
except Exception as e:
    py = "err:%s" % e
try:
    open(sys.argv[2]).read()
    key = "read"
except OSError as e:
    key = "errno%d" % e.errno
try:
    bundle = "BEGIN CERTIFICATE" in open(os.environ["SSL_CERT_FILE"]).read()
except (OSError, KeyError) as e:
    bundle = "err:%s" % e
try:
    with open(os.path.join(os.path.dirname(os.environ["SSL_CERT_FILE"]), "planted.pem"),
              "w") as f:
        f.write("x")
    planted = "wrote"
except (OSError, KeyError) as e:
    planted = "errno%d" % getattr(e, "errno", 0)
print("get", curl(), "post", curl("-X", "POST", "-d", "x"), "py", py, "key", key,
      "bundle", bundle, "planted", planted, "ca", os.environ.get("CURL_CA_BUNDLE"), flush=True)
"""


def inspected(c, ws, sb, origin_port, key_path, label):
    """Runs INSPECT sandboxed under a limited-mode networkProxy; its verdict."""
    from execd_client import network_proxy
    counter[0] += 1
    pid = "i%d" % counter[0]
    r = c.call("process/start", {"processId": pid, "argv": [PY, "-c", INSPECT,
               "https://127.0.0.1:%d/" % origin_port, key_path], "env": ENV, "tty": False,
               "cwd": "file://" + ws, "sandbox": sb,
               "networkProxy": network_proxy({"127.0.0.1": "allow"}, allow_local=False,
                                             mode="limited")})
    out, _, _ = c.collect(pid, 40) if "result" in r else ({}, None, None)
    said = (out.get("stdout", b"") + out.get("stderr", b"")).decode(errors="replace")
    tap(None, "get 200 " in said and " py 200 " in said,
        "%s: limited mode, HTTPS GET inspected: curl and Python trust the injected bundle" % label,
        (said, r))
    tap(None, "post 403 " in said, "%s: limited mode, HTTPS POST refused inside the tunnel" % label,
        said)
    tap(None, " key errno" in said, "%s: the inspection CA's key is out of a sandbox's sight"
        % label, said)
    tap(None, " bundle True " in said, "%s: the CA bundle named by SSL_CERT_FILE is readable "
        "inside the sandbox" % label, said)
    tap(None, " planted errno" in said, "%s: nothing can be written beside the CA bundle, "
        "even with its parent writable" % label, said)
    return said


if not os.access(PROXY_BIN, os.X_OK) or not CURL:
    skip("HTTPS inspection end to end", "execd-proxy not built or no curl")
else:
    from tlstest import TestCA, TLSOrigin
    from proxytest import Proxy
    TCA = TestCA()
    TLS = TLSOrigin(*TCA.server_cert("tls.test", ["DNS:tls.test", "IP:127.0.0.1"]))
    os.chmod(TCA.dir, 0o755)     # execd-proxy run as nobody reads the test CA
    os.chmod(TCA.cert, 0o644)
    PENV = dict(os.environ, EXECD_PROXY_UPSTREAM_CA=TCA.cert)
    c = execd(env=PENV)
    # the whole of tmp writable: STATE-proxy (the bundle) sits in it
    inspected(c, W, sandbox([tmp]), TLS.port, os.path.join(STATE, "proxy", "ca.key"),
              "own execd-proxy")
    key = os.path.join(STATE, "proxy", "ca.key")
    tap(None, os.path.exists(key) and stat.S_IMODE(os.stat(key).st_mode) == 0o600 and
        stat.S_IMODE(os.stat(os.path.dirname(key)).st_mode) == 0o700,
        "own execd-proxy: its CA key is kept 0600 in STATE/proxy, 0700")
    # what a sandboxed process cannot see, a request in the same sandbox cannot either
    with open(key, "rb") as f:
        kbytes = f.read()
    rk = c.call("fs/readFile", {"path": "file://" + key, "sandbox": sandbox([tmp])})
    rd = c.call("fs/readDirectory", {"path": "file://" + STATE, "sandbox": sandbox([tmp])})
    rw = c.call("fs/writeFile", {"path": "file://" + key, "dataBase64": b64("x"),
                                 "sandbox": sandbox([tmp])})
    rp = c.call("fs/writeFile", {"path": "file://" + os.path.join(STATE, "planted"),
                                 "dataBase64": b64("x"), "sandbox": sandbox([tmp])})
    with open(key, "rb") as f:
        kafter = f.read()
    tap("fs-own-paths", all("error" in x for x in (rk, rd, rw, rp)) and kafter == kbytes and
        not os.path.exists(os.path.join(STATE, "planted")),
        "own execd-proxy: sandboxed fs/* requests neither read nor write execd's state "
        "directory (its CA key), even inside a writable root", (rk, rd, rw, rp))
    c.kill()
    P = Proxy("listen http 127.0.0.1:0\nlisten socks5 127.0.0.1:0\nupstream-ca %s\n"
              "allow 127.0.0.1\nallow-local yes\n" % TCA.cert)
    _popens.append(P.proc)
    c = execd(extra=["--proxy-control", P.ctl_path])
    inspected(c, W, SB, TLS.port, os.path.join(P.dir, "ca.key"), "sidecar execd-proxy")
    c.kill()
    P.stop()

# ---------------------------------------------------------------- 1. resume through the session socket

try:
    import websockets
except ImportError:
    websockets = None
RESUMER = r'''
import array, base64, json, os, socket, struct, sys, time
state, target = sys.argv[1], sys.argv[2]

def frame(obj):
    p = json.dumps(obj).encode(); key = os.urandom(4)
    hdr = struct.pack("!BB", 0x81, 0x80 | 126) + struct.pack("!H", len(p)) if len(p) >= 126 \
        else struct.pack("!BB", 0x81, 0x80 | len(p))
    return hdr + key + bytes(b ^ key[i % 4] for i, b in enumerate(p))

def handoff(path, sid):
    us = socket.socket(socket.AF_UNIX); us.settimeout(3)
    us.connect(path)
    mine, theirs = socket.socketpair()
    msg = json.dumps({"id": 1, "method": "initialize",
                      "params": {"clientName": "x", "resumeSessionId": sid}}).encode()
    us.sendmsg([struct.pack("=II", 0x65786431, len(msg))],
               [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [theirs.fileno()]))])
    us.sendall(msg)
    reply = us.recv(1)
    theirs.close(); us.close()
    return reply, mine

end = time.time() + 15
said = None
while time.time() < end:
    socks = [n for n in os.listdir(state) if n.startswith("session-")]
    for n in socks:
        try:
            reply, conn = handoff(os.path.join(state, n), n[8:-5])
        except OSError as e:
            if said != e.errno:
                print("handoff", e.errno, flush=True); said = e.errno
            continue
        if reply != b"K":
            conn.close(); continue
        print("resumed", flush=True)
        conn.sendall(frame({"method": "initialized"}))
        conn.sendall(frame({"id": 2, "method": "process/start", "params": {
            "processId": "escaped", "argv": ["touch", target], "cwd": "file:///",
            "env": {"PATH": "/usr/bin:/bin"}, "tty": False}}))
        time.sleep(2)
        sys.exit(0)
    time.sleep(0.1)
'''
if websockets is None:
    skip("resume through the session socket", "no python websockets module")
else:
    from wsclient import Listener
    STATE1 = os.path.join(tmp, "state1")
    os.makedirs(STATE1)
    L = Listener(["--state-dir", STATE1, "--resume-ttl-ms", "8000"])
    _popens.append(L.p)
    ESCAPED = os.path.join(O, "resumed-unsandboxed")

    async def attack():
        ws = await websockets.connect(L.url, ping_interval=None)
        await ws.send(json.dumps({"id": 1, "method": "initialize",
                                  "params": {"clientName": "victim"}}))
        await ws.recv()
        await ws.send(json.dumps({"method": "initialized"}))
        await ws.send(json.dumps({"id": 2, "method": "process/start", "params": {
            "processId": "attacker", "argv": [PY, "-c", RESUMER, STATE1, ESCAPED],
            "cwd": "file://" + W, "env": ENV, "tty": False, "sandbox": SB}}))
        r = None
        while r is None:
            m = json.loads(await ws.recv())
            if m.get("id") == 2:
                r = m
        await asyncio.sleep(0.5)
        await ws.close()
        return r

    r = asyncio.get_event_loop().run_until_complete(asyncio.wait_for(attack(), 20))
    escaped = wait_for(lambda: os.path.exists(ESCAPED), 6)
    tap("resume-socket", "result" in r and not escaped,
        "a sandboxed child that outlives its WebSocket cannot resume the session and run "
        "unsandboxed", r)
    L.stop()

# ---------------------------------------------------------------- as an unprivileged user

# A few of the attacks again with execd running as nobody, its sandbox's
# namespaces made inside a user namespace: the same keys, fixed together.
SETPRIV = shutil.which("setpriv")
if os.geteuid() != 0 or SETPRIV is None:
    skip("attacks against an execd run as nobody", "not root, or no setpriv")
else:
    NOBODY = 65534
    UN = os.path.join(tmp, "nobody")
    WU, OU, SU = (os.path.join(UN, n) for n in ("ws", "outside", "state"))
    for d in (UN, WU, OU, SU):
        os.makedirs(d, exist_ok=True)
        os.chown(d, NOBODY, NOBODY)
    OUF = os.path.join(OU, "file")
    with open(OUF, "w") as f:
        f.write("outside\n")
    os.chown(OUF, NOBODY, NOBODY)
    os.chmod(OUF, 0o644)
    SBU = sandbox([WU])
    c = execd(state=SU, prefix=[SETPRIV, "--reuid", str(NOBODY), "--regid", str(NOBODY),
                                "--clear-groups"])
    r, out, code = run(c, ["sh", "-c", "echo x > %s/inside; id -u" % WU], SBU, cwd=WU)
    ok = out is not None and out.split()[:1] == [str(NOBODY)] and \
        os.path.exists(os.path.join(WU, "inside"))
    tap(None, ok, "as nobody: control: a sandboxed write inside a writable root works", (r, out))
    if ok:
        before = meta(OUF)
        r, out, code = py(c, META_PROBE, SBU, OUF, cwd=WU)
        after = meta(OUF)
        tap("meta-chmod", after[0] == before[0] and after[3:5] == before[3:5],
            "as nobody: chmod and utime of an own file outside the roots change nothing",
            (out, before, after))
        shm = SHM + "-nobody"
        run(c, ["sh", "-c", "echo x > %s" % shm], SBU, cwd=WU)
        tap("dev-shm", not os.path.exists(shm), "as nobody: /dev/shm is not the host's")
        try:
            os.unlink(shm)
        except OSError:
            pass
        lim = fsize_limit(c.pid)
        r, out, code = py(c, PRLIMIT, SBU, c.pid, cwd=WU)
        tap("prlimit-execd", fsize_limit(c.pid) == lim,
            "as nobody: prlimit on execd's pid from inside changes nothing", out)
        # every process of execd's is non-dumpable, the sandbox's A and B (pid
        # 1) too: they are copies of execd's memory (A writes its user
        # namespace's maps, which a non-dumpable process cannot, and forgot to
        # be non-dumpable again); another process of the user reads none of it
        READ_ENVIRON = r"""
import sys
for pid in sys.argv[1:]:
    try:
        open("/proc/%s/environ" % pid, "rb").read(1); print(pid, "read")
    except OSError as e:
        print(pid, e.errno)
"""

        def descendants(pid):
            try:
                with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                return []
            return kids + [d for k in kids for d in descendants(k)]

        sid, r = start(c, ["sleep", "30"], SBU, cwd=WU)
        wait_for(lambda: any(comm(p) == "sleep" for p in descendants(c.pid)), 5)
        mine = [p for p in descendants(c.pid) if comm(p) != "sleep"]
        said = subprocess.run([SETPRIV, "--reuid", str(NOBODY), "--regid", str(NOBODY),
                               "--clear-groups", PY, "-c", READ_ENVIRON] +
                              [str(p) for p in mine], capture_output=True, text=True,
                              timeout=20).stdout
        c.call("process/terminate", {"processId": sid})
        tap("nondumpable", len(mine) >= 3 and "read" not in said,
            "as nobody: no process of execd's, the sandbox's pid 1 and its parent "
            "included, is readable by another process of the same user",
            [(p, comm(p)) for p in mine] + [said])
    c.kill()
    if os.access(PROXY_BIN, os.X_OK) and CURL:
        c = execd(state=SU, env=PENV, prefix=[SETPRIV, "--reuid", str(NOBODY), "--regid",
                                              str(NOBODY), "--clear-groups"])
        inspected(c, WU, SBU, TLS.port, os.path.join(SU, "proxy", "ca.key"),
                  "as nobody, own execd-proxy")
        c.kill()

    # A kernel without Landlock, and without Yama: a command whose network
    # is off but whose file system is unrestricted needs no mount view, and
    # ran with seccomp alone in the host's pid namespace, where /proc/PID/mem
    # of every process of the same user (here an unsandboxed command of the
    # same execd, which has the network) is open to it, as to a debugger.
    MEM = r"""
import os, sys
try:
    os.close(os.open("/proc/%s/mem" % sys.argv[1], os.O_RDWR)); print("mem OK")
except OSError as e:
    print("mem", e.errno)
"""
    from execd_client import child_pids, comm
    c = execd(state=SU, env=dict(os.environ, EXECD_SANDBOX_DISABLE="landlock"),
              prefix=[SETPRIV, "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups"])
    vid, r = start(c, ["sleep", "60"], None, cwd=WU)
    victim = wait_for(lambda: [p for p in child_pids(c.pid) if comm(p) == "sleep"], 5) and \
        [p for p in child_pids(c.pid) if comm(p) == "sleep"][0]
    r, ctl, code = py(c, MEM, None, victim, cwd=WU)
    SBN = {"permissions": {"type": "managed", "network": "restricted",
                           "file_system": {"type": "unrestricted"}},
           "windowsSandboxLevel": "disabled", "cwd": "file://" + WU}
    r, out, code = py(c, MEM, SBN, victim, cwd=WU)
    if ctl is None or "mem OK" not in ctl:
        skip("without Landlock: /proc/PID/mem of an unsandboxed command", "it is not open to "
             "an unsandboxed one either: %s" % ctl)
    else:
        tap("no-landlock-mem", ("error" in r or out is not None) and "mem OK" not in (out or ""),
            "as nobody, without Landlock: a network-off command with an unrestricted file "
            "system cannot open /proc/PID/mem of an unsandboxed command", (r, out))
    c.call("process/terminate", {"processId": vid})
    c.kill()

# ---------------------------------------------------------------- the end

cleanup()
if _xpass:
    print("# now passing, remove from EXPECTED_TO_FAIL: %s" % ", ".join(sorted(set(_xpass))))
t.done()
