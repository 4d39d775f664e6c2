#!/usr/bin/python3
"""Start-up and per-session cost of execd against the reference `codex exec-server`.

Run with /usr/bin/python3 (make bench).  Environment as tests/bench/bench.py:
EXECD, CODEX_REF, top_builddir.

Rows, each the median of repeated runs, execd beside the reference with the ratio:
  - start-up over stdio: spawn -> initialize answer; execd's broken down into
    the loader (`execd --version`, which returns from main at once), main to
    listening (spawned with its input at EOF: it starts, listens, reads EOF,
    ends) and the initialize answer (the rest);
  - start-up over an inherited WebSocket connection (inetd style: a socket on
    stdin/stdout, the HTTP upgrade, then initialize); the reference cannot
    take a connection, so it is started with --listen ws://127.0.0.1:PORT and
    connected to as soon as it listens;
  - idle RSS (VmHWM) and PSS after initialize;
  - N concurrent idle WebSocket sessions on one listener (execd --listen,
    the reference's --listen): connect + initialize per session (wall
    time, and the CPU time the server's processes ran, which the machine's
    load does not inflate, split between execd's listener, its instances
    and their spawn helpers), the page faults those processes took, and
    the total PSS (/proc/PID/smaps_rollup) of the server's process tree
    (instances, spawn helpers, the spare);
  - connections per second to an initialize answer through socket
    activation (systemd-socket-activate --inetd -a, as execd.socket's
    Accept=yes), each server started per connection the same way.

Options: --quick (fewer repetitions), --only NAME (repeatable), --before PATH
(an earlier execd build, measured interleaved with the others as one more
column, with its ratio to the reference: before and after from one run).
"""

import base64
import glob
import json
import os
import re
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

INIT = b'{"id":1,"method":"initialize","params":{"clientName":"bench"}}'


# --------------------------------------------------------------------------
# minimal clients

def spawn(argv, env, stdin, stdout):
    """posix_spawn (vfork): Python's fork would dominate a 1 ms start-up"""
    fa = [(os.POSIX_SPAWN_DUP2, stdin, 0), (os.POSIX_SPAWN_DUP2, stdout, 1),
          (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)]
    return os.posix_spawn(argv[0], argv, env, file_actions=fa)


def read_until(fd, pred, deadline):
    data = b""
    while not pred(data):
        rem = deadline - time.monotonic()
        if rem <= 0:
            raise TimeoutError("no answer in time (got %r)" % data[:200])
        r, _, _ = select.select([fd], [], [], rem)
        if r:
            d = os.read(fd, 65536)
            if not d:
                raise EOFError("closed (got %r)" % data[:200])
            data += d
    return data


def reap(pid, kill=False):
    if kill:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    os.waitpid(pid, 0)


def ws_frame(payload, opcode=1):
    """a masked client frame (a zero mask: the bytes go as they are)"""
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, 0x80 | n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


def ws_upgrade(path="/"):
    key = base64.b64encode(os.urandom(16)).decode()
    return ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n" % (path, key)).encode()


def ws_answered(data):
    """the 101 head and one whole server frame after it"""
    i = data.find(b"\r\n\r\n")
    if i < 0:
        return False
    if not data.startswith(b"HTTP/1.1 101"):
        raise RuntimeError("upgrade refused: %r" % data[:100])
    f = data[i + 4:]
    if len(f) < 2:
        return False
    n, off = f[1] & 0x7f, 2
    if n == 126:
        if len(f) < 4:
            return False
        n, off = int.from_bytes(f[2:4], "big"), 4
    elif n == 127:
        if len(f) < 10:
            return False
        n, off = int.from_bytes(f[2:10], "big"), 10
    return len(f) >= off + n


def ws_session(addr, path="/", timeout=10):
    """connect, upgrade and initialize; the open socket"""
    s = socket.create_connection(addr, timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(ws_upgrade(path) + ws_frame(INIT))
    read_until(s.fileno(), ws_answered, time.monotonic() + timeout)
    return s


# --------------------------------------------------------------------------
# servers

class Impl:
    def __init__(self, name, binary, env, state, label=None):
        self.name, self.binary, self.env, self.state = name, binary, env, state
        self.label = label or name

    def stdio_argv(self):
        if self.name == "execd":
            return [self.binary, "--stdio", "--state-dir", self.state]
        return [self.binary, "exec-server", "--listen", "stdio"]

    def listen_argv(self, port):
        url = "ws://127.0.0.1:%d" % port
        if self.name == "execd":
            return [self.binary, "--listen", url, "--no-auth", "--state-dir", self.state]
        return [self.binary, "exec-server", "--listen", url]

    def inetd_argv(self):
        if self.name == "execd":
            return [self.binary, "--inetd", "--no-auth", "--state-dir", self.state]
        return [self.binary, "exec-server", "--listen", "stdio"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def stdio_start(impl, eof=False):
    """ms from spawn to the initialize answer (or, with eof, to its exit)"""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    t = time.monotonic()
    if eof:
        os.close(in_w)
    else:
        os.write(in_w, INIT + b"\n")
    pid = spawn(impl.stdio_argv(), impl.env, in_r, out_w)
    os.close(in_r)
    os.close(out_w)
    try:
        if eof:
            os.waitpid(pid, 0)
            pid = None
        else:
            read_until(out_r, lambda d: b"\n" in d, time.monotonic() + 10)
        dt = (time.monotonic() - t) * 1000
    finally:
        if not eof:
            os.close(in_w)
        os.close(out_r)
        if pid:
            reap(pid)
    return dt


def version_run(impl):
    """ms to run `--version`: the loader, little else"""
    argv = [impl.binary, "--version"]
    nul = os.open("/dev/null", os.O_RDWR)
    t = time.monotonic()
    pid = spawn(argv, impl.env, nul, nul)
    os.waitpid(pid, 0)
    dt = (time.monotonic() - t) * 1000
    os.close(nul)
    return dt


def ws_inherited_start(impl):
    """ms from spawn to the initialize answer over WebSocket, handshake included"""
    if impl.name == "execd":
        a, b = socket.socketpair()
        t = time.monotonic()
        a.sendall(ws_upgrade() + ws_frame(INIT))
        pid = spawn(impl.inetd_argv(), impl.env, b.fileno(), b.fileno())
        b.close()
        try:
            read_until(a.fileno(), ws_answered, time.monotonic() + 10)
            dt = (time.monotonic() - t) * 1000
        finally:
            a.close()
            reap(pid)
        return dt
    port = free_port()
    nul = os.open("/dev/null", os.O_RDWR)
    t = time.monotonic()
    pid = spawn(impl.listen_argv(port), impl.env, nul, nul)
    os.close(nul)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                s = ws_session(("127.0.0.1", port))
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.0002)
        dt = (time.monotonic() - t) * 1000
        s.close()
    finally:
        reap(pid, kill=True)
    return dt


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def pss_kb(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def tree(pid):
    """pid and its descendants"""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rfind(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def idle_memory(impl):
    """(VmHWM MiB, PSS MiB of the process tree) of an idle session after initialize"""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, INIT + b"\n")
    pid = spawn(impl.stdio_argv(), impl.env, in_r, out_w)
    os.close(in_r)
    os.close(out_w)
    try:
        read_until(out_r, lambda d: b"\n" in d, time.monotonic() + 10)
        time.sleep(0.2)
        return (status_kb(pid, "VmHWM") / 1024.0,
                sum(pss_kb(p) for p in tree(pid)) / 1024.0)
    finally:
        os.close(in_w)
        os.close(out_r)
        reap(pid)


def cpu_ns_of(pid):
    """CPU time the process ran (ns, /proc/PID/schedstat): the load-independent cost"""
    t = 0
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0
    for k in tasks:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, k)) as f:
                t += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return t


def minflt_of(pid):
    """minor page faults of a process so far (/proc/PID/stat field 10)"""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    except (OSError, ValueError, IndexError):
        return 0


def kind_of(pid, top):
    """listener (the process started), spawn helper, or instance"""
    if pid == top:
        return "listener"
    try:
        with open("/proc/%d/comm" % pid) as f:
            return "helper" if f.read().strip() == "execd-spawn" else "instance"
    except OSError:
        return "instance"


def sessions(impl, n):
    """(connect+initialize ms per session, total PSS MiB, processes, server CPU ms per
    session, its page faults per session, and the CPU ms per session of the
    listener, the instances and the spawn helpers) with n idle sessions"""
    port = free_port()
    nul = os.open("/dev/null", os.O_RDWR)
    pid = spawn(impl.listen_argv(port), impl.env, nul, nul)
    os.close(nul)
    socks = []
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.005)
        time.sleep(0.2)
        before = {p: (cpu_ns_of(p), minflt_of(p)) for p in tree(pid)}
        t = time.monotonic()
        for _ in range(n):
            socks.append(ws_session(("127.0.0.1", port)))
        per = (time.monotonic() - t) * 1000 / n
        time.sleep(0.5 + n / 300.0)
        procs = tree(pid)
        # what processes that were there before (the listener, the spares) ran since
        by_kind = {"listener": 0, "instance": 0, "helper": 0}
        faults = 0
        for p in procs:
            c0, f0 = before.get(p, (0, 0))
            by_kind[kind_of(p, pid)] += cpu_ns_of(p) - c0
            faults += minflt_of(p) - f0
        cpu = sum(by_kind.values()) / 1e6 / n
        split = tuple(by_kind[k] / 1e6 / n for k in ("listener", "instance", "helper"))
        return (per, sum(pss_kb(p) for p in procs) / 1024.0, len(procs), cpu,
                faults / n) + split
    finally:
        # SIGTERM: execd's listener ends its instances' sessions (no resume wait)
        os.kill(pid, 15)
        for s in socks:
            s.close()
        reap(pid)


def activation_rate(impl, seconds):
    """initialize answers a second, one connection after another, through
    systemd-socket-activate --inetd -a (a new server per connection)"""
    act = shutil.which("systemd-socket-activate")
    if act is None:
        raise RuntimeError("systemd-socket-activate not installed")
    port = free_port()
    nul = os.open("/dev/null", os.O_RDWR)
    argv = [act, "-l", "127.0.0.1:%d" % port, "--inetd", "-a"]
    for k in ("CODEX_HOME",):
        if k in impl.env:
            argv += ["-E", "%s=%s" % (k, impl.env[k])]
    pid = spawn(argv + impl.inetd_argv(), impl.env, nul, nul)
    os.close(nul)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                s.close()
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        time.sleep(0.3)
        done, t = 0, time.monotonic()
        while time.monotonic() - t < seconds:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(INIT + b"\n")
            read_until(s.fileno(), lambda d: b"\n" in d, time.monotonic() + 10)
            s.close()
            done += 1
        return done / (time.monotonic() - t)
    finally:
        reap(pid, kill=True)


# --------------------------------------------------------------------------

def median_of(fn, reps):
    return statistics.median(fn() for _ in range(reps))


def fmt(v):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return "%.3g" % v if abs(v) < 100 else "%.0f" % v


def main(argv):
    quick = "--quick" in argv
    only = [argv[i + 1] for i, a in enumerate(argv) if a == "--only" and i + 1 < len(argv)]
    before = [argv[i + 1] for i, a in enumerate(argv) if a == "--before" and i + 1 < len(argv)]
    ref, execd = find_ref(), find_execd()
    if not ref or not execd:
        print("execd or the reference binary not found", file=sys.stderr)
        return 77
    home = tempfile.mkdtemp(prefix="codexhome.", dir="/var/tmp")
    env = {k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "CODEX_HOME")}
    env["CODEX_HOME"] = home
    # session sockets on tmpfs, as in /run/execd (systemd's RuntimeDirectory)
    state = tempfile.mkdtemp(prefix="execd-state.", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    impls = [Impl("execd", execd, env, state)]
    impls += [Impl("execd", b, env, state, label="execd before") for b in before[:1]]
    impls.append(Impl("reference", ref, env, state))
    reps = 5 if quick else 40
    nsessions = [1, 10] if quick else [1, 100, 300]
    sreps = 1 if quick else 3
    rows = []

    def row(name, unit, fn, hib=False, split=None):
        if only and not any(o in name for o in only):
            return
        vals = []
        for im in impls:
            try:
                vals.append(fn(im))
            except Exception as e:
                print("# %s / %s: %s" % (name, im.name, e), file=sys.stderr)
                vals.append("error")
        r = vals[-1]
        ratios = ["%.2f" % (e / r) if isinstance(e, float) and isinstance(r, float) and r
                  else "n/a" for e in vals[:-1]]
        rows.append(("%s (%s%s)" % (name, unit, ", higher is better" if hib else ""),)
                    + tuple(fmt(v) for v in vals) + tuple(ratios))
        sys.stdout.flush()

    try:
        # interleaved, so load drifts hit both alike
        def start_stdio(im):
            return median_of(lambda: stdio_start(im), reps)
        row("start-up over stdio: spawn -> initialize answer", "ms", start_stdio)
        row("  loader (--version)", "ms", lambda im: median_of(lambda: version_run(im), reps))
        row("  to listening and back (input at EOF)", "ms",
            lambda im: median_of(lambda: stdio_start(im, eof=True), reps))
        row("start-up over an inherited WebSocket, handshake included", "ms",
            lambda im: median_of(lambda: ws_inherited_start(im), reps))
        mem = {}

        def idle(im):
            mem[im.label] = idle_memory(im)
            return mem[im.label][0]
        row("idle RSS (VmHWM) after initialize", "MiB", idle)
        row("idle PSS of the process tree after initialize", "MiB",
            lambda im: mem[im.label][1] if im.label in mem else idle_memory(im)[1])
        for n in nsessions:
            got = {}
            names = "%d idle WebSocket session(s), one listener: connect + initialize each " \
                "total PSS of the process tree server CPU per connect + initialize processes " \
                "server page faults per connect + initialize " \
                "server CPU per session in the listener / instances / spawn helpers" % n
            if not only or any(o in names for o in only):
                # rounds, each server once a round: load drifts hit all alike
                runs = {}
                for _ in range(sreps):
                    for im in impls:
                        try:
                            runs.setdefault(im.label, []).append(sessions(im, n))
                        except Exception as e:
                            print("# %d sessions / %s: %s" % (n, im.label, e), file=sys.stderr)
                for k, v in runs.items():
                    got[k] = tuple(statistics.median(x[i] for x in v) for i in range(len(v[0])))

            def sess_fig(i):
                return lambda im: got[im.label][i] if im.label in got else "error"
            row("%d idle WebSocket session(s), one listener: connect + initialize each" % n,
                "ms", sess_fig(0))
            row("%d idle WebSocket session(s): total PSS of the process tree" % n, "MiB",
                sess_fig(1))
            row("%d idle WebSocket session(s): server CPU per connect + initialize" % n, "ms",
                sess_fig(3))
            row("%d idle WebSocket session(s): server page faults per connect + initialize" % n,
                "count", sess_fig(4))
            row("%d idle WebSocket session(s): server CPU per session in the listener / "
                "instances / spawn helpers" % n, "ms",
                lambda im: "error" if im.label not in got else
                "%.2f / %.2f / %.2f" % got[im.label][5:8] if im.name == "execd" else
                "%.2f (one process)" % got[im.label][3])
            row("%d idle WebSocket session(s): processes" % n, "count",
                lambda im: float(got[im.label][2]) if im.label in got else "error")
        row("socket activation (--inetd -a): initialize answers per second",
            "1/s", lambda im: activation_rate(im, 2 if quick else 5), hib=True)
    finally:
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    head = (("metric",) + tuple(im.label for im in impls) +
            tuple("ratio (%s/reference)" % im.label for im in impls[:-1]))
    w = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]

    def line(r):
        return " | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))
    print(line(head))
    print("-+-".join("-" * x for x in w))
    for r in rows:
        print(line(r))
    print("\nmedians of %d runs; sessions: medians of %d rounds; activation: one run%s" %
          (reps, sreps, " (quick mode)" if quick else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
