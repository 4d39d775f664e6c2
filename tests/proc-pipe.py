"""A child's output pipe grows once it has filled, within the instance's budget.

A read that takes a whole default pipe (64 KiB) means the child is ahead of
execd: the pipe then grows to 1 MiB (or fs.pipe-max-size if less), so the
child writes on while execd sends, and each wakeup takes more.  A small
output leaves the pipe as it was.  Grown pipes count against the user's
fs.pipe-user-pages-soft, so an instance grows them by at most an eighth of
it (4 MiB at most) at a time, and gets the room back as each pipe closes.
The children report their own pipe's size (F_GETPIPE_SZ) after writing.

A child that writes 8 KiB at a time while execd waits on another CPU wakes
it at each write: once such a burst has passed 256 KiB through a grown
pipe, a read that empties the pipe holds that stream for a millisecond, so
the next read takes what came meanwhile.  Counted with execd's read system
calls (/proc/PID/io syscr): at most one a millisecond of the trickle, plus
one per 64 KiB and a few others, where an unpaced execd makes one a write.
Everything still arrives, in order.
"""
import os
import shutil
import sys
import tempfile
import time

from execd_client import Execd, tap

t = tap(timeout=300)
tmp = tempfile.mkdtemp(prefix="execd-pipe.")
os.chmod(tmp, 0o700)
DEFAULT = 65536
CHILD = r"""
import fcntl, os, sys, time
fd, n, rep, hold = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
v = memoryview(b"x" * n)
while v:
    v = v[os.write(fd, v):]
size = fcntl.fcntl(fd, 1032)    # F_GETPIPE_SZ
with open(rep + ".t", "w") as f:
    f.write(str(size))
os.replace(rep + ".t", rep)
time.sleep(hold)
"""


def sysctl(name):
    try:
        with open("/proc/sys/fs/" + name) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


TRICKLE = r"""
import os, sys, time
os.write(1, b"a" * (256 << 10))     # fills the pipe: it grows
t = time.monotonic()
for i in range(int(sys.argv[1])):
    os.write(1, b"%07d" % i + b"b" * 8185)
    time.sleep(0.0002)
os.write(2, b"%d" % int((time.monotonic() - t) * 1000))
"""
WRITES = 1024


def syscr(pid):
    try:
        with open("/proc/%d/io" % pid) as f:
            return int(next(x for x in f if x.startswith("syscr:")).split()[1])
    except (OSError, StopIteration, ValueError):
        return None


def expected_room():
    """(grown size, budget) as execd works them out, None if it cannot"""
    soft, mx = sysctl("pipe-user-pages-soft"), sysctl("pipe-max-size")
    if soft is None or not mx:
        return None
    bulk = min(mx, 1 << 20)
    cap = 4 << 20
    page = os.sysconf("SC_PAGESIZE")
    return bulk, cap if soft == 0 or soft * page // 8 > cap else soft * page // 8


def run(c, pid, fd, nbytes, hold=0.0):
    """start a child writing nbytes on fd; the size it saw its pipe at"""
    rep = os.path.join(tmp, pid)
    c.start(pid, [sys.executable, "-c", CHILD, str(fd), str(nbytes), rep, str(hold)])
    deadline = time.monotonic() + 120
    while not os.path.exists(rep):
        c.drain(0.05)       # take the output, so the child's write completes
        if time.monotonic() > deadline:
            raise TimeoutError("%s did not report its pipe size" % pid)
    with open(rep) as f:
        return int(f.read())


c = Execd()
try:
    room = expected_room()
    t.eq(run(c, "small", 1, 100), DEFAULT, "a small output leaves the pipe at its default size")
    c.collect("small")
    if room is None or room[0] <= DEFAULT:
        t.skip("growth", "fs.pipe-user-pages-soft or pipe-max-size unreadable or too small")
        t.done()
    bulk, budget = room
    big = run(c, "out", 1, 256 << 10)
    c.collect("out")
    if big == DEFAULT and os.geteuid() != 0:
        t.skip("growth", "the kernel refused (this user's pipe allowance is used up)")
        t.done()
    t.eq(big, bulk, "stdout's pipe grew to %d once a read took a whole pipe" % bulk)
    t.eq(run(c, "err", 2, 256 << 10), bulk, "so did stderr's")
    c.collect("err")
    # a trickle of 8 KiB writes after the pipe grew
    r0 = syscr(c.pid)
    if r0 is None:
        t.skip("pacing", "/proc/PID/io unreadable")
    else:
        c.start("trickle", [sys.executable, "-c", TRICKLE, str(WRITES)])
        out, code, _ = c.collect("trickle", timeout=120)
        reads = syscr(c.pid) - r0
        want = b"a" * (256 << 10) + b"".join(b"%07d" % i + b"b" * 8185 for i in range(WRITES))
        t.ok(out.get("stdout") == want and code == 0,
             "a trickle of %d writes of 8 KiB all arrive, in order" % WRITES)
        ms = int(out.get("stderr", b"0"))
        bound = ms + len(want) // 65536 + 50
        t.ok(reads <= bound, "execd read them in %d reads in %d ms (at most %d; %d writes)" %
             (reads, ms, bound, WRITES))
    # holders keep their grown pipes open: the budget runs out
    per = bulk - DEFAULT
    n = 0
    while budget - n * per >= bulk:
        n += 1
    sizes = [run(c, "h%d" % i, 1, 256 << 10, 120) for i in range(n + 1)]
    t.eq(sizes, [bulk] * n + [DEFAULT],
         "%d pipes held grown, the next stays at the default (budget %d)" % (n, budget))
    c.call("process/terminate", {"processId": "h0"})
    c.collect("h0")
    t.eq(run(c, "again", 1, 256 << 10), bulk, "a grown pipe closed gives its room back")
    c.collect("again")
    for i in range(1, n + 1):
        c.call("process/terminate", {"processId": "h%d" % i})
        c.collect("h%d" % i)
finally:
    c.close()
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
