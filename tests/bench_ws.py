#!/usr/bin/python3
"""What a WebSocket client feels: execd beside the reference, one run.

Run with /usr/bin/python3 (make bench).  Environment as tests/bench.py:
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
    framing;
  - 300 WebSocket sessions opened back to back on one listener (as
    bench_start.py's rows): the server's CPU per session, beside a bare
    fork + exit + wait of this (Python) process measured in the same run,
    the machine's own floor for a process (execd's processes are smaller
    than the Python one: their fork costs less).

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
from bench_start import (INIT, Impl, cpu_ns_of, free_port, read_until, reap,  # noqa: E402
                         sessions, spawn, status_kb, tree, ws_answered, ws_frame, ws_upgrade)

OUT_BYTES = 64 << 20


def start_listener(im):
    """the server listening on a free port: (pid, port)"""
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
    return pid, port


def stop_listener(pid):
    os.kill(pid, 15)
    try:
        reap(pid)
    except ChildProcessError:
        pass


def tree_cpu(pids):
    return sum(cpu_ns_of(p) for p in pids)


def connect_once(port):
    """ms from connect() to the initialize answer's last byte"""
    t = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(ws_upgrade() + ws_frame(INIT))
    read_until(s.fileno(), ws_answered, time.monotonic() + 10)
    dt = (time.monotonic() - t) * 1000
    s.close()
    return dt


def connect_round(im, port, pid, reps, pause):
    """(ms per connect, server CPU ms per connect) for reps connections"""
    ms, cpu = [], 0
    connect_once(port)      # warm-up
    time.sleep(pause)
    for _ in range(reps):
        before = {p: cpu_ns_of(p) for p in tree(pid)}
        ms.append(connect_once(port))
        time.sleep(pause)
        # the instance that served it is gone: count what lived through,
        # plus the spare forked to replace the one taken (in the tree now)
        cpu += sum(cpu_ns_of(p) - before.get(p, 0) for p in tree(pid))
    return ms, cpu / 1e6 / reps


class WsConn:
    """a client of one server: frames in, text payloads out"""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.sendall(ws_upgrade())
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


def ws_output_once(im, port, pid, work, tag):
    """(MB/s, server CPU ms per MiB, the client's CPU ms per MiB) of 64 MiB of
    process output over WebSocket"""
    c = WsConn(port)
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
    state = tempfile.mkdtemp(prefix="execd-state.", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    impls = [Impl("execd", execd, env, state), Impl("reference", ref, env, state)]
    creps, rounds = (10, 1) if quick else (40, 3)
    oreps = 1 if quick else 3
    rows = []

    def row(name, unit, vals, hib=False):
        e, r = vals.get("execd"), vals.get("reference")
        ratio = "%.2f" % (e / r) if isinstance(e, float) and isinstance(r, float) and r else "n/a"
        rows.append(("%s (%s%s)" % (name, unit, ", higher is better" if hib else ""),
                     fmt(e), fmt(r), ratio))

    def wanted(name):
        return not only or any(o in name for o in only)

    lst = {}
    try:
        for im in impls:
            lst[im.name] = start_listener(im)
        name = "connect + upgrade + initialize answer, running listener, one at a time"
        if wanted(name):
            ms = {k: [] for k in lst}
            cpu = {k: [] for k in lst}
            for _ in range(rounds):
                for im in impls:
                    pid, port = lst[im.name]
                    m, c = connect_round(im, port, pid, creps // rounds, 0.05)
                    ms[im.name] += m
                    cpu[im.name].append(c)
            row(name, "ms", {k: statistics.median(v) for k, v in ms.items()})
            row("  server CPU per connection (replacement spare's fork included)", "ms",
                {k: statistics.median(v) for k, v in cpu.items()})
        name = "head -c 64MiB /dev/zero via process/output over WebSocket"
        if wanted(name):
            mbs = {k: [] for k in lst}
            cpm = {k: [] for k in lst}
            ccpu = {k: [] for k in lst}
            stdio = []
            for r in range(oreps):
                for im in impls:
                    pid, port = lst[im.name]
                    v = ws_output_once(im, port, pid, work, "o%d" % r)
                    mbs[im.name].append(v[0])
                    cpm[im.name].append(v[1])
                    ccpu[im.name].append(v[2])
                stdio.append(stdio_output_once(impls[0], work, "s%d" % r))
            row(name, "MB/s", {k: statistics.median(v) for k, v in mbs.items()}, hib=True)
            row("  server CPU per MiB of output over WebSocket", "ms",
                {k: statistics.median(v) for k, v in cpm.items()})
            # on 2 CPUs a client that needs more per MiB than the server
            # sets the pace: then MB/s compares the clients, CPU/MiB the servers
            row("  the bench client's own CPU per MiB (the same client for both)", "ms",
                {k: statistics.median(v) for k, v in ccpu.items()})
            row("  execd over stdio, the same command: MB/s", "MB/s",
                {"execd": statistics.median(x[0] for x in stdio)}, hib=True)
            row("  execd over stdio: server CPU per MiB", "ms",
                {"execd": statistics.median(x[1] for x in stdio)})
        for pid, _ in lst.values():
            stop_listener(pid)
        lst = {}
        name = "300 WebSocket sessions back to back, one listener: server CPU per session"
        if wanted(name):
            n = 30 if quick else 300
            cpu = {im.name: sessions(im, n)[3] for im in impls}
            row(name.replace("300", str(n)), "ms", cpu)
            rss = status_kb(os.getpid(), "VmRSS") / 1024.0
            row("  bare fork + exit + wait of the bench process (%.0f MiB RSS), same run" % rss,
                "ms", {"execd": fork_floor(n)})
    finally:
        for pid, _ in lst.values():
            stop_listener(pid)
        for d in (home, work, state):
            shutil.rmtree(d, ignore_errors=True)
    head = ("metric", "execd", "reference", "ratio (execd/reference)")
    w = [max(len(x[i]) for x in rows + [head]) for i in range(4)]

    def line(r):
        return " | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))
    print(line(head))
    print("-+-".join("-" * x for x in w))
    for r in rows:
        print(line(r))
    print("\nmedians; connect: %d connections each, in %d rounds; output: %d runs each%s" %
          (creps // rounds * rounds, rounds, oreps, " (quick mode)" if quick else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
