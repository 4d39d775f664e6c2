"""A child's output pipe grows once it has filled, within the instance's budget.

A read that takes a whole default pipe (64 KiB) means the child is ahead of
execd: the pipe then grows to 1 MiB (or fs.pipe-max-size if less), so the
child writes on while execd sends, and each wakeup takes more.  A small
output leaves the pipe as it was.  Grown pipes count against the user's
fs.pipe-user-pages-soft, so an instance grows them by at most an eighth of
it (4 MiB at most) at a time, and gets the room back as each pipe closes.
The children report their own pipe's size (F_GETPIPE_SZ) after writing.
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
