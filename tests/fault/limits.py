"""Resource exhaustion: few descriptors (ulimit -n 64), an address-space limit, floods.

Out of descriptors, execd answers with an error and goes on serving; out of
memory it refuses what does not fit, or closes the connection cleanly and
kills its processes, but never crashes; a client that stops reading does
not make it grow.
"""
import contextlib
import os
import resource
import subprocess
import time

from execd_client import Execd, EXECD, b64, tap, pid_alive
from faultlib import FaultListener, PidDir, RawWS, no_resume_args, wait_dead, descendants, rss_kb
from proxytest import Origin

t = tap(timeout=180)
pd = PidDir()
EXTRA = no_resume_args(pd.path)


def limited(nofile=None, as_bytes=None):
    def pre():
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        if as_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
    return pre


@contextlib.contextmanager
def spawned_with(pre):
    """Processes the test clients start in here get limits set by pre."""
    orig = subprocess.Popen

    def popen(*a, **kw):
        kw["preexec_fn"] = pre
        return orig(*a, **kw)
    subprocess.Popen = popen
    try:
        yield
    finally:
        subprocess.Popen = orig


def LimitedExecd(args, pre):
    with spawned_with(pre):
        return Execd(args)


def nofile(pid):
    """The soft RLIMIT_NOFILE of a running process (the limit under test is really set)."""
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    return None


def sanitized():
    """An ASan build (its runtime reserves terabytes of address space)."""
    with open(EXECD, "rb") as f:
        return b"__asan_init" in f.read()


def sleeper(c, pid):
    return c.start(pid, ["sleep", "60"], env={"PATH": "/usr/bin:/bin"})


try:
    # --- ulimit -n 64: process/start fails with EMFILE, execd keeps serving
    c = LimitedExecd(EXTRA, limited(nofile=64))
    started, err = [], None
    for i in range(64):
        r = sleeper(c, "p%d" % i)
        if "error" in r:
            err = r["error"]
            break
        started.append("p%d" % i)
    t.ok(nofile(c.pid) == 64 and err is not None and "os error 24" in err["message"] and
         len(started) >= 5,
         "out of descriptors, process/start answers EMFILE (after %d processes)" % len(started),
         err)
    r = c.call("environment/status")
    t.eq(r.get("result"), {"status": "ready"}, "and execd goes on answering")
    r = c.call("process/read", {"processId": started[0], "afterSeq": 0})
    t.ok("result" in r, "a running process can still be read", r)
    # a process start needs several descriptors: fill what it left with file handles,
    # one each, so that not even a socket is left
    handles = []
    for i in range(64):
        r = c.call("fs/open", {"handleId": "h%d" % i, "path": "file:///etc/hostname"})
        if "error" in r:
            break
        handles.append("h%d" % i)
    t.ok("os error 24" in r.get("error", {}).get("message", ""),
         "the last descriptors go to file handles (%d) until EMFILE" % len(handles), r)
    # a server that answers at once: only the lack of a descriptor can make this fail
    origin = Origin()
    r = c.call("http/request", {"method": "GET", "url": "http://127.0.0.1:%d/" % origin.port,
                                "requestId": "r1", "timeoutMs": 30000}, timeout=15)
    t.ok("error" in r and not origin.requests,
         "http/request with no descriptor left fails with an error", r)
    for h in handles:
        c.call("fs/close", {"handleId": h})
    r = c.call("http/request", {"method": "GET", "url": "http://127.0.0.1:%d/" % origin.port,
                                "requestId": "r2", "timeoutMs": 30000}, timeout=15)
    t.eq(r.get("result", {}).get("status"), 200, "with the handles closed, the same request is served")
    for p in started:
        c.call("process/terminate", {"processId": p})
    for p in started:
        c.wait_notification("process/closed", lambda q, p=p: q["processId"] == p, timeout=10)
    r = sleeper(c, "again")
    t.ok("result" in r, "once they are gone, processes start again", r)
    c.call("process/terminate", {"processId": "again"})
    t.eq(c.close(), 0, "execd exits cleanly")

    # --- the listener under ulimit -n 64 serves 100 clients at once
    with spawned_with(limited(nofile=64)):
        L = FaultListener(EXTRA)
    clients, failures = [], 0
    for i in range(100):
        try:
            ws = RawWS(L.host, L.port, L.token)
            ws.initialize()
            clients.append(ws)
        except (OSError, TimeoutError, ConnectionError):
            failures += 1
    ok = 0
    for ws in clients:
        try:
            if ws.call("environment/status").get("result") == {"status": "ready"}:
                ok += 1
        except (OSError, TimeoutError):
            pass
    t.eq((nofile(L.p.pid), ok, failures), (64, 100, 0),
         "a listener with ulimit -n 64 serves 100 concurrent clients")
    for ws in clients:
        ws.close()
    time.sleep(0.2)
    t.ok(wait_dead(descendants(L.p.pid), 10), "and all its instances end with their clients")
    L.stop()

    # --- memory
    if sanitized():
        t.skip("address-space limit", "an ASan build cannot run under RLIMIT_AS")
    else:
        AS = 512 << 20
        # a message larger than memory allows (but under --max-message)
        c = LimitedExecd(["--max-message", str(2 << 30)] + EXTRA, limited(as_bytes=AS))
        before = pd.pids()
        c.start("s", pd.sh_reporting("sleep 60"))
        spid = pd.new_since(before, 1)
        t.eq(len(spid), 1, "a process runs under the limit (its pid is known)")
        big = b'{"id":99,"method":"process/write","params":{"processId":"s","chunk":"' + \
            b"A" * (1 << 20)
        sent = 0
        try:
            c.send_raw(big[:1024])
            while sent < (900 << 20):
                c.p.stdin.write(b"A" * (1 << 20))
                sent += 1 << 20
            c.p.stdin.write(b'","writeId":"w"}}\n')
            c.p.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            rc = c.p.wait(20)
        except subprocess.TimeoutExpired:
            rc = None
        t.ok(rc is not None and rc >= 0, "a 900 MB message under a 512 MB address-space limit: "
             "execd closes cleanly (exit %r after %d MB)" % (rc, sent >> 20))
        t.ok(wait_dead(spid, 5), "and kills its processes")
        c.kill()

        # large but possible messages under the limit are still served
        c = LimitedExecd(EXTRA, limited(as_bytes=AS))
        c.start("w", ["sh", "-c", "cat >/dev/null"], pipeStdin=True,
                env={"PATH": "/usr/bin:/bin"})
        r = c.call("process/write", {"processId": "w", "chunk": b64(b"x" * (24 << 20)),
                                     "writeId": "big"}, timeout=60)
        t.eq(r.get("result"), {"status": "accepted"}, "a 24 MB write under the limit is served")
        r = c.call("environment/status")
        t.eq(r.get("result"), {"status": "ready"}, "and execd is fine after it")
        c.call("process/terminate", {"processId": "w"})
        t.eq(c.close(), 0, "execd exits cleanly")

    # --- a flood the client does not read: execd's memory stays bounded
    c = Execd(["--retention", "1048576"] + EXTRA)
    c.start("flood", ["sh", "-c", "yes 0123456789abcdefghijklmnopqrstuvwxyz"],
            env={"PATH": "/usr/bin:/bin"})
    peak = 0
    deadline = time.time() + 4
    while time.time() < deadline:          # not reading: the pipe to us fills up
        peak = max(peak, rss_kb(c.pid))
        time.sleep(0.05)
    t.ok(peak < 64 * 1024, "a client not reading a flood: execd's RSS peaks at %d kB" % peak)
    r = c.call("process/read", {"processId": "flood", "afterSeq": 0, "maxBytes": 4096},
               timeout=20)
    t.ok("result" in r and r["result"]["chunks"], "the flood is still readable afterwards")
    c.notifications = []
    c.call("process/terminate", {"processId": "flood"})
    t.eq(c.close(), 0, "execd exits cleanly")
finally:
    pd.cleanup()
t.done()
