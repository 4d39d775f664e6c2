#!/usr/bin/python3
"""Benchmark execd against the reference `codex exec-server` (both over stdio).

Run with /usr/bin/python3.

  EXECD       execd binary (default: $top_builddir/src/execd, top_builddir=.),
              started as `$EXECD --stdio`
  CODEX_REF   reference binary (default: glob of
              /opt/codex-ref/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex),
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
        """next output line (without newline); select() enforces the deadline"""
        import select
        while True:
            i = self.buf.find(b"\n", self.pos)
            if i >= 0:
                line = self.buf[self.pos:i]
                self.pos = i + 1
                return line
            rem = deadline - time.monotonic()
            if rem <= 0:
                raise Timeout("timed out waiting for server output")
            r, _, _ = select.select([self.out], [], [], rem)
            if r:
                d = os.read(self.out.fileno(), self.read_size)
                if not d:
                    raise EOFError("server closed stdout")
                self.buf = self.buf[self.pos:] + d
                self.pos = 0

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


def http_base():
    """a loopback HTTP server for the http/request rows (started once)"""
    global _http_base
    if _http_base is None:
        import http.server
        import socketserver
        import threading
        blob = bytes(range(256)) * (1 << 18)        # 64 MiB

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                body = blob if self.path == "/big" else b"hello\n"
                # one write: a separate body segment would wait for a delayed ACK
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        srv = S(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        _http_base = "http://127.0.0.1:%d" % srv.server_address[1]
    return _http_base


# A canned HTTP/1.1 responder in a process of its own, for the small GET row:
# the round trip then measures the servers under test, not http.server's
# per-request Python (~0.15 ms, the same for both, which pulled the ratio
# towards 1) nor the bench client's GIL, which that thread shared.
SMALL_RESPONDER = r"""
import socket, sys, threading
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n"
def serve(c):
    buf = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        buf += d
        n = buf.count(b"\r\n\r\n")      # GET requests have no body
        if n:
            buf = buf[buf.rfind(b"\r\n\r\n") + 4:]
            c.sendall(RESP * n)
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


def bench_http_stream(server, reps, nbytes=64 << 20):
    """http/request streamResponse of a 64 MiB body via bodyDelta (MB/s)"""
    out = []
    for r in range(reps):
        c = server.spawn()
        c.initialize()
        total = 0
        key = b'"deltaBase64":"'
        t = time.monotonic()
        try:
            c.request("http/request", {"method": "GET", "url": http_base() + "/big",
                                       "requestId": "s%d" % r, "streamResponse": True})
            deadline = time.monotonic() + 120
            while True:
                line = c.readline(deadline)
                if b'"http/request/bodyDelta"' not in line:
                    continue
                i = line.find(key)
                j = line.find(b'"', i + len(key))
                total += len(binascii.a2b_base64(line[i + len(key):j]))
                if b'"done":true' in line:
                    break
            dt = time.monotonic() - t
        finally:
            c.close()
        if total != nbytes:
            raise RuntimeError("received %d of %d bytes" % (total, nbytes))
        out.append(nbytes / 1e6 / dt)
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
    Bench("http/request streamed 64 MiB body", "MB/s", bench_http_stream, 3, 1, higher_is_better=True),
]


# rows of the other modules (fs), same Server interface
try:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_fs
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
