#!/usr/bin/python3
"""Benchmark execd against the reference `codex exec-server` (both over stdio).

Run with /usr/bin/python3.

  EXECD       execd binary (default: $top_builddir/src/execd, top_builddir=.),
              started as `$EXECD --stdio`
  CODEX_REF   reference binary (default: glob of
              /opt/codex-ref/VERSION/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex,
              VERSION from contrib/codex-version),
              started as `codex exec-server --listen stdio` with a scratch CODEX_HOME

Options:
  --markdown      print the table as Markdown
  --quick         fewer repetitions (for smoke tests)
  --only NAME     run only benches whose name contains NAME (repeatable)

Each row is the median over repeated runs.  To add a row, write a function
`def bench_xxx(server, reps) -> float` and append a Bench(...) to BENCHES.
"""

import binascii
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from execd_client import find_ref


# --------------------------------------------------------------------------
# servers


def find_execd():
    ex = os.environ.get("EXECD") or os.path.join(os.environ.get("top_builddir", "."), "src", "execd")
    return ex if os.access(ex, os.X_OK) else None


class Server:
    """A spec for starting one implementation; .spawn() gives a Conn."""

    def __init__(self, name, argv, env, cwd):
        self.name, self.argv, self.env, self.cwd = name, argv, env, cwd

    def spawn(self):
        return Conn(self)


class Timeout(Exception):
    pass


class Conn:
    def __init__(self, server):
        self.p = subprocess.Popen(server.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=server.env, cwd=server.cwd,
                                  bufsize=0)
        self.out = self.p.stdout
        # what was read and not yet returned: the start of a line in parts
        # (each read's tail), then buf[pos:], the last read's unsearched rest
        self.parts = []
        self.buf = b""
        self.pos = 0
        self.nid = 0
        # large for the throughput rows; Python allocates (and gives back)
        # the whole size at every read, 0.03-0.05 ms at 1 MiB: small answers
        # read less
        self.read_size = 1 << 20

    def send(self, obj):
        self.p.stdin.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        self.p.stdin.flush()

    def readline(self, deadline):
        """next output line (without newline); select() enforces the deadline.
        Linear in the bytes read: each read is searched once and a long line
        joined once from its pieces (a 1.4 MB line read 64 KiB at a time was
        copied and rescanned at every read, which made the client the
        bottleneck of the long-line rows and favoured short lines)."""
        import select
        while True:
            i = self.buf.find(b"\n", self.pos)
            if i >= 0:
                line = self.buf[self.pos:i]
                self.pos = i + 1
                if self.parts:
                    self.parts.append(line)
                    line = b"".join(self.parts)
                    self.parts = []
                return line
            if self.pos < len(self.buf):
                self.parts.append(self.buf[self.pos:])
            self.buf, self.pos = b"", 0
            rem = deadline - time.monotonic()
            if rem <= 0:
                raise Timeout("timed out waiting for server output")
            r, _, _ = select.select([self.out], [], [], rem)
            if r:
                d = os.read(self.out.fileno(), self.read_size)
                if not d:
                    raise EOFError("server closed stdout")
                self.buf = d

    def request(self, method, params=None, timeout=10):
        self.nid += 1
        rid = self.nid
        msg = {"id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        deadline = time.monotonic() + timeout
        while True:
            o = json.loads(self.readline(deadline))
            if o.get("id") == rid and "method" not in o:
                if "error" in o:
                    raise RuntimeError("%s failed: %s" % (method, o["error"]))
                return o["result"]

    def initialize(self):
        r = self.request("initialize", {"clientName": "bench"})
        self.send({"method": "initialized"})
        return r

    def close(self):
        try:
            self.p.stdin.close()
        except Exception:
            pass
        try:
            self.p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def start_params(pid, argv, cwd):
    return {"processId": pid, "argv": argv, "cwd": "file://" + cwd,
            "env": {"PATH": "/usr/bin:/bin"}, "tty": False}


# --------------------------------------------------------------------------
# bench functions: (server, reps) -> list of samples

def bench_spawn_to_initialize(server, reps):
    """wall time from spawn to the initialize response (ms)"""
    out = []
    for _ in range(reps):
        t = time.monotonic()
        c = server.spawn()
        c.request("initialize", {"clientName": "bench"})
        out.append((time.monotonic() - t) * 1000)
        c.close()
    return out


def bench_true_roundtrip(server, reps):
    """process/start of /bin/true until process/closed, one connection (ms)"""
    c = server.spawn()
    c.initialize()
    out = []
    try:
        for i in range(reps + 2):
            pid = "t%d" % i
            t = time.monotonic()
            c.nid += 1
            c.send({"id": c.nid, "method": "process/start",
                    "params": start_params(pid, ["/bin/true"], server.cwd)})
            deadline = time.monotonic() + 10
            needle = b'"processId":"%s"' % pid.encode()
            while True:
                line = c.readline(deadline)
                if b'"process/closed"' in line and needle in line:
                    break
                if b'"error"' in line and b'"id":%d' % c.nid in line:
                    raise RuntimeError(line.decode())
            if i >= 2:          # first two runs are warm-up
                out.append((time.monotonic() - t) * 1000)
    finally:
        c.close()
    return out


def bench_stdout_throughput(server, reps, nbytes=268435456):
    """stdout of `head -c 256MiB /dev/zero` via process/output (MB/s)"""
    out = []
    for r in range(reps):
        c = server.spawn()
        c.initialize()
        pid = "big%d" % r
        total = 0
        t = time.monotonic()
        c.nid += 1
        c.send({"id": c.nid, "method": "process/start",
                "params": start_params(pid, ["head", "-c", str(nbytes), "/dev/zero"], server.cwd)})
        deadline = time.monotonic() + 120
        key = b'"chunk":"'
        try:
            while True:
                line = c.readline(deadline)
                if line.startswith(b'{"method":"process/output"') or b'"process/output"' in line:
                    i = line.find(key)
                    if i >= 0:
                        j = line.find(b'"', i + len(key))
                        total += len(binascii.a2b_base64(line[i + len(key):j]))
                elif b'"process/closed"' in line:
                    break
            dt = time.monotonic() - t
        finally:
            c.close()
        if total != nbytes:
            raise RuntimeError("received %d of %d bytes" % (total, nbytes))
        out.append(nbytes / 1e6 / dt)
    return out


def bench_idle_rss(server, reps):
    """peak RSS (VmHWM) of an idle instance after initialize (MiB)"""
    out = []
    for _ in range(reps):
        c = server.spawn()
        c.initialize()
        c.request("environment/status")
        time.sleep(0.2)
        with open("/proc/%d/status" % c.p.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    out.append(int(line.split()[1]) / 1024.0)
        c.close()
    return out


_http_base = None


# A canned HTTP/1.1 responder in a process of its own, for the http/request
# rows: the round trip then measures the servers under test, not
# http.server's per-request Python (~0.15 ms, the same for both, which
# pulled the ratio towards 1), and neither row shares the bench client's
# GIL (an origin thread in the client's process, waking to send more of
# the 64 MiB body, held the GIL while the client had a pipe to drain:
# the streamed row then timed the two threads' turns).  /big is 64 MiB.
SMALL_RESPONDER = r"""
import socket, sys, threading
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n"
BIG = bytes(range(256)) * (1 << 18)
BIG_RESP = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BIG) + BIG
def serve(c):
    buf = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        buf += d
        out = []
        while b"\r\n\r\n" in buf:     # GET requests have no body
            head, buf = buf.split(b"\r\n\r\n", 1)
            out.append(BIG_RESP if head.startswith(b"GET /big ") else RESP)
        if out:
            c.sendall(b"".join(out) if len(out) > 1 else out[0])
    c.close()
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
sys.stdout.write("%d\n" % s.getsockname()[1])
sys.stdout.flush()
while True:
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

_small_base = None


def small_http_base():
    """the canned responder's base URL (started once, killed at exit)"""
    global _small_base
    if _small_base is None:
        import atexit
        p = subprocess.Popen([sys.executable, "-c", SMALL_RESPONDER], stdout=subprocess.PIPE)
        atexit.register(p.kill)
        _small_base = "http://127.0.0.1:%d" % int(p.stdout.readline())
    return _small_base


def http_get_once(name, c, params):
    """one GET: ms from the request's write to the read of its answer's line"""
    c.nid += 1
    msg = json.dumps({"id": c.nid, "method": "http/request", "params": params},
                     separators=(",", ":")).encode() + b"\n"
    t = time.monotonic()
    c.p.stdin.write(msg)
    line = c.readline(time.monotonic() + 10)
    dt = (time.monotonic() - t) * 1000
    o = json.loads(line)
    if o.get("id") != c.nid or o.get("result", {}).get("bodyBase64") != "aGVsbG8K":
        raise RuntimeError("%s: unexpected answer %s" % (name, line[:200]))
    return dt


def bench_http_roundtrip(servers, reps, block=10):
    """buffered http/request GET of a 6-byte body on loopback (ms), back to
    back against the same responder; the implementations take turns, block
    requests each, so load that comes and goes falls on both.  (Turns of one
    request would time each one just after the other's: its caches, and
    whether its threads still spin or already sleep, as the other's turn
    left them.)"""
    conns = {k: s.spawn() for k, s in servers.items()}
    out = {k: [] for k in conns}
    params = {"method": "GET", "url": small_http_base() + "/small", "requestId": "r"}
    block = min(block, reps)
    try:
        for k, c in conns.items():
            c.read_size = 64 << 10
            c.initialize()
            for _ in range(5):      # warm-up: libcurl loading, the first connection
                http_get_once(k, c, params)
        while min(len(v) for v in out.values()) < reps:
            for k, c in conns.items():
                for _ in range(block):
                    out[k].append(http_get_once(k, c, params))
    finally:
        for c in conns.values():
            c.close()
    return out


def count_deltas(c, deadline, key=b'"deltaBase64":"'):
    """Read bodyDelta lines until the one with "done":true; the decoded bytes
    they carry, counted from the base64 lengths.  Reads into one buffer made
    beforehand and looks at each line where it lies: no allocation or copy
    per read or per line (on this VM a fresh 1 MiB for every read and 1.4 MB
    for every joined line cost the client more than the server spent, and
    the pipe stood full meanwhile, so long lines were timed at the
    client's pace)."""
    import select
    buf = bytearray(16 << 20)
    view = memoryview(buf)
    pending = b"".join(c.parts) + c.buf[c.pos:]
    c.parts, c.buf, c.pos = [], b"", 0
    buf[:len(pending)] = pending
    start, end, total = 0, len(pending), 0
    while True:
        i = buf.find(b"\n", start, end)
        if i < 0:
            if start > 0:       # the unfinished line to the front
                buf[:end - start] = buf[start:end]
                end -= start
                start = 0
            if end == len(buf):
                raise RuntimeError("a line over %d bytes" % len(buf))
            rem = deadline - time.monotonic()
            if rem <= 0 or not select.select([c.out], [], [], rem)[0]:
                raise Timeout("timed out waiting for server output")
            n = os.readv(c.out.fileno(), [view[end:]])
            if n == 0:
                raise EOFError("server closed stdout")
            end += n
            continue
        if buf.find(b'"http/request/bodyDelta"', start, min(i, start + 256)) >= 0:
            k = buf.find(key, start, i) + len(key)
            q = buf.find(b'"', k, i)
            total += (q - k) // 4 * 3 - (buf[q - 2:q].count(b"=") if q - k >= 4 else 0)
            if buf.find(b'"done":true', start, i) >= 0:
                return total
        start = i + 1


def http_stream_once(server, rid, nbytes=64 << 20):
    """One streamed GET of /big: MB/s from the request's write to the last
    delta's line read.  The bytes are counted from the base64 lengths, not
    decoded: the client's work stays out of the clock (the test suite checks
    the content)."""
    c = server.spawn()
    c.initialize()
    try:
        t = time.monotonic()
        c.send({"id": 99, "method": "http/request",
                "params": {"method": "GET", "url": small_http_base() + "/big",
                           "requestId": rid, "streamResponse": True}})
        total = count_deltas(c, time.monotonic() + 120)
        dt = time.monotonic() - t
    finally:
        c.close()
    if total != nbytes:
        raise RuntimeError("received %d of %d bytes" % (total, nbytes))
    return nbytes / 1e6 / dt


def bench_http_stream(servers, reps):
    """http/request streamResponse of a 64 MiB body via bodyDelta (MB/s);
    the implementations take turns, after one warm-up run each"""
    out = {k: [] for k in servers}
    for r in range(reps + 1):
        for k, s in (list(servers.items()) if r % 2 else list(servers.items())[::-1]):
            v = http_stream_once(s, "s%d" % r)
            if r > 0:
                out[k].append(v)
    return out


def login_shell_latency(server, reps, snapshot):
    """bash -lc true, process/start until process/exited (ms); with a
    snapshot, the first runs (the capture) are warm-up"""
    c = server.spawn()
    c.initialize()
    out = []
    try:
        for i in range(reps + 2):
            pid = "l%d" % i
            params = start_params(pid, ["/bin/bash", "-lc", "true"], server.cwd)
            params["env"]["HOME"] = os.environ.get("HOME", "/")
            if snapshot:
                params["shellSnapshot"] = {"scopeId": "bench",
                                           "shell": {"name": "bash", "path": "/bin/bash"}}
            t = time.monotonic()
            c.nid += 1
            c.send({"id": c.nid, "method": "process/start", "params": params})
            deadline = time.monotonic() + 20
            needle = b'"processId":"%s"' % pid.encode()
            while True:
                line = c.readline(deadline)
                if b'"process/exited"' in line and needle in line:
                    break
                if b'"error"' in line and b'"id":%d' % c.nid in line:
                    raise RuntimeError(line.decode())
            if i >= 2:
                out.append((time.monotonic() - t) * 1000)
    finally:
        c.close()
    return out


def bench_login_shell_plain(server, reps):
    return login_shell_latency(server, reps, False)


def bench_login_shell_snapshot(server, reps):
    return login_shell_latency(server, reps, True)


class Bench:
    def __init__(self, name, unit, fn, reps, quick_reps, higher_is_better=False,
                 interleaved=False):
        self.name, self.unit, self.fn = name, unit, fn
        self.reps, self.quick_reps = reps, quick_reps
        self.higher_is_better = higher_is_better
        # fn(servers, reps) -> {name: samples}: the implementations take turns
        self.interleaved = interleaved


BENCHES = [
    Bench("spawn -> initialize response", "ms", bench_spawn_to_initialize, 20, 3),
    Bench("process/start /bin/true -> process/closed", "ms", bench_true_roundtrip, 50, 5),
    Bench("stdout throughput, 256 MiB", "MB/s", bench_stdout_throughput, 3, 1, higher_is_better=True),
    Bench("idle peak RSS (VmHWM)", "MiB", bench_idle_rss, 5, 1),
    Bench("bash -lc true -> process/exited, no snapshot", "ms", bench_login_shell_plain, 30, 3),
    Bench("bash -lc true -> process/exited, shell snapshot", "ms", bench_login_shell_snapshot,
          30, 3),
    Bench("http/request GET roundtrip, loopback", "ms", bench_http_roundtrip, 1000, 20,
          interleaved=True),
    Bench("http/request streamed 64 MiB body", "MB/s", bench_http_stream, 5, 1,
          higher_is_better=True, interleaved=True),
]


# rows of the other modules (fs), same Server interface
try:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fs as bench_fs
    BENCHES += [Bench(*b) for b in bench_fs.BENCHES]
except ImportError as e:
    print("# bench_fs not loaded: %s" % e, file=sys.stderr)

# --------------------------------------------------------------------------

def fmt(v):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return "%.3g" % v if abs(v) < 100 else "%.0f" % v


def main(argv):
    markdown = "--markdown" in argv
    quick = "--quick" in argv
    only = [argv[i + 1] for i, a in enumerate(argv) if a == "--only" and i + 1 < len(argv)]
    ref, execd = find_ref(), find_execd()
    if not ref and not execd:
        print("neither execd nor the reference binary was found", file=sys.stderr)
        return 77
    work = tempfile.mkdtemp(prefix="execd-bench.")
    home = tempfile.mkdtemp(prefix="codexhome.", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    env = {k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "CODEX_HOME")}
    env["CODEX_HOME"] = home
    servers = {
        "execd": Server("execd", [execd, "--stdio"], env, work) if execd else None,
        "reference": Server("reference", [ref, "exec-server", "--listen", "stdio"], env, work) if ref else None,
    }
    rows = []
    try:
        for b in BENCHES:
            if only and not any(o in b.name for o in only):
                continue
            reps = b.quick_reps if quick else b.reps
            vals = {}
            if b.interleaved:
                present = {k: s for k, s in servers.items() if s is not None}
                try:
                    vals = {k: statistics.median(v) for k, v in b.fn(present, reps).items()}
                except Exception as e:
                    vals = {k: "error: %s" % e for k in present}
                    print("# %s: %s" % (b.name, e), file=sys.stderr)
            for k, s in servers.items():
                if k in vals:
                    continue
                if s is None:
                    vals[k] = None
                    continue
                try:
                    vals[k] = statistics.median(b.fn(s, reps))
                except Exception as e:
                    vals[k] = "error: %s" % e
                    print("# %s / %s: %s" % (b.name, k, e), file=sys.stderr)
            e, r = vals["execd"], vals["reference"]
            ratio = e / r if isinstance(e, float) and isinstance(r, float) and r else None
            rows.append(("%s (%s%s)" % (b.name, b.unit, ", higher is better" if b.higher_is_better else ""),
                         fmt(e), fmt(r), "%.2f" % ratio if ratio is not None else "n/a"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    head = ("metric", "execd", "reference", "ratio (execd/reference)")
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(["---"] + ["---:"] * 3) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        w = [max(len(x[i]) for x in rows + [head]) for i in range(4)]
        line = lambda r: " | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))
        print(line(head))
        print("-+-".join("-" * x for x in w))
        for row in rows:
            print(line(row))
    print("\nmedians; execd: %s; reference: %s%s" % (
        " ".join(servers["execd"].argv) if servers["execd"] else "not found",
        " ".join(servers["reference"].argv) if servers["reference"] else "not found",
        " (quick mode)" if quick else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
