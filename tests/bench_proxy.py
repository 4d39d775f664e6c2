#!/usr/bin/python3
"""Benchmarks of execd-proxy beside a direct loopback copy and tinyproxy
(run on loopback with a throw-away configuration, on the same workload).

  rows(quick=False) -> [(metric, execd-proxy, baseline, ratio), ...]
      for tests/bench.py or anyone else; each value a formatted string.
  python3 tests/bench_proxy.py [--quick] [--markdown]
      prints the table (needs top_builddir or an in-tree build).

Rows: CONNECT tunnel throughput for 1 GiB (vs direct, vs tinyproxy, and
splice vs execd-proxy's own read/write path), the proxy's CPU time per GiB
beside what the direct copy's receiving thread spends, its wakeups
(voluntary context switches) per MiB and the pipe sizes it relays through,
CONNECT set-up latency and plain-HTTP forwarding latency (vs tinyproxy), and
HTTPS through inspection (limited mode) vs the same HTTPS through an opaque
tunnel: download throughput, and the latency of set-up plus one request (the
handshake the proxy adds).
Medians over repeated runs; client and sink are Python threads, identical
for every contender, so the ratios are the point."""

import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from proxytest import Proxy, cleanup, free_port, tmpdir, _procs  # noqa: E402
import tlstest  # noqa: E402

CHUNK = 1 << 20


class Sink:
    """Reads an 8-byte length, then that many bytes; answers b"done".  No half-close:
    tinyproxy ends a tunnel when either side shuts down its sending half."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(512)
        self.port = self.ls.getsockname()[1]
        self.cpu = []       # CPU seconds of each connection's receiving thread
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        buf = bytearray(CHUNK)
        cpu0 = thread_cpu()
        try:
            head = b""
            while len(head) < 8:
                d = c.recv(8 - len(head))
                if not d:
                    raise OSError("short header")
                head += d
            left = int.from_bytes(head, "big")
            while left > 0:
                n = c.recv_into(buf, min(left, CHUNK))
                if n == 0:
                    raise OSError("short body")
                left -= n
            self.cpu.append(thread_cpu() - cpu0)
            c.sendall(b"done")
        except OSError:
            pass
        c.close()


class Origin(threading.Thread):
    """A minimal HTTP/1.1 responder: one fixed response per connection."""

    def __init__(self):
        super().__init__(daemon=True)
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(512)
        self.port = self.ls.getsockname()[1]
        self.start()

    def run(self):
        body = b"hello\n"
        resp = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\n" + body
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    d = c.recv(4096)
                    if not d:
                        break
                    data += d
                c.sendall(resp)
            except OSError:
                pass
            c.close()


def thread_cpu():
    """CPU seconds (user + system) of the calling thread."""
    return time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID)


def proc_stats(pid):
    """(CPU seconds, voluntary context switches) of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    cpu = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
    with open("/proc/%d/status" % pid) as f:
        vol = next(int(line.split()[1]) for line in f
                   if line.startswith("voluntary_ctxt_switches"))
    return cpu, vol


class PipeSampler(threading.Thread):
    """The sizes of the pipes a process holds, looked at every 20 ms until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.sizes, self.halt = pid, set(), threading.Event()
        self.start()

    def run(self):
        import fcntl
        d = "/proc/%d/fd" % self.pid
        while not self.halt.wait(0.02):
            try:
                names = os.listdir(d)
            except OSError:
                return
            for n in names:
                try:
                    if not os.readlink(os.path.join(d, n)).startswith("pipe:"):
                        continue
                    fd = os.open(os.path.join(d, n), os.O_RDONLY | os.O_NONBLOCK)
                except OSError:
                    continue
                try:
                    self.sizes.add(fcntl.fcntl(fd, 1032))     # F_GETPIPE_SZ
                except OSError:
                    pass
                finally:
                    os.close(fd)

    def stop(self):
        self.halt.set()
        self.join()
        return sorted(self.sizes)


def measured(fn, pid, sink, nbytes, reps, *args):
    """fn's median, with the CPU per GiB and wakeups per MiB of process pid
    (None: of nobody) and of the sink's receiving threads over the run."""
    before, nsink = proc_stats(pid) if pid else (0, 0), len(sink.cpu)
    sampler = PipeSampler(pid) if pid else None
    v = median_or_error(fn, *args)
    after = proc_stats(pid) if pid else (0, 0)
    pipes = sampler.stop() if sampler else []
    gib, mib = reps * nbytes / float(1 << 30), reps * nbytes / float(1 << 20)
    sink_cpu = sum(sink.cpu[nsink:]) / gib if len(sink.cpu) > nsink else None
    return v, (after[0] - before[0]) / gib, (after[1] - before[1]) / mib, sink_cpu, pipes


def open_tunnel(proxy, port, auth):
    """CONNECT through proxy (host, port) or, with proxy None, connect directly."""
    if proxy is None:
        return socket.create_connection(("127.0.0.1", port))
    s = socket.create_connection(proxy)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n" % (
        port, port, "Proxy-Authorization: Basic %s\r\n" % auth if auth else "")
    s.sendall(req.encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(4096)
        if not d:
            raise RuntimeError("proxy closed during CONNECT")
        head += d
    if not head.startswith(b"HTTP/1.") or head.split(b" ", 2)[1] != b"200":
        raise RuntimeError("CONNECT refused: %r" % head[:80])
    return s


def throughput(proxy, auth, sink, nbytes, reps):
    data = memoryview(bytes(CHUNK))
    out = []
    for _ in range(reps):
        s = open_tunnel(proxy, sink.port, auth)
        t0 = time.perf_counter()
        s.sendall(nbytes.to_bytes(8, "big"))
        left = nbytes
        while left > 0:
            n = min(left, CHUNK)
            s.sendall(data[:n])
            left -= n
        ack = s.recv(16)
        dt = time.perf_counter() - t0
        s.close()
        if ack != b"done":
            raise RuntimeError("sink did not confirm")
        out.append(nbytes / 1e6 / dt)
    return out


def setup_latency(proxy, auth, sink, reps):
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        s = open_tunnel(proxy, sink.port, auth)
        out.append((time.perf_counter() - t0) * 1000)
        s.close()
    return out


def forward_latency(proxy, auth, origin, reps):
    req = ("GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n" % (
        origin.port, origin.port,
        "Proxy-Authorization: Basic %s\r\n" % auth if auth else "")).encode()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        s = socket.create_connection(proxy)
        s.sendall(req)
        data = b""
        while True:
            d = s.recv(4096)
            if not d:
                break
            data += d
        s.close()
        if not data.startswith(b"HTTP/1.1 200") and not data.startswith(b"HTTP/1.0 200"):
            raise RuntimeError("forward failed: %r" % data[:80])
        out.append((time.perf_counter() - t0) * 1000)
    return out


def start_execd_proxy(splice=True):
    import base64
    p = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nallow-local no\n"
              "max-connections-per-client 100000\nsplice %s\n" % ("yes" if splice else "no"),
              audit="none")
    c = p.register(tags={"process_id": "bench"})
    host, port = p.http.rsplit(":", 1)
    auth = base64.b64encode(("%s:%s" % (c.id, c.secret)).encode()).decode()
    return p, (host, int(port)), auth


def cpu_seconds(pid):
    """User and system CPU time a process has used so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_tls_origin(ca, nbytes):
    """openssl s_server -WWW serving /big (nbytes) and /small from a directory:
    C on both ends of the TLS, so neither the origin nor the client is what
    is measured (a Python origin capped the figure and made it swing)."""
    d = tmpdir()
    with open(os.path.join(d, "big"), "wb") as f:
        f.truncate(nbytes)
    with open(os.path.join(d, "small"), "wb") as f:
        f.write(b"x" * 20)
    cert, key = ca.server_cert("127.0.0.1", ["IP:127.0.0.1"])
    port = free_port()
    p = subprocess.Popen(["openssl", "s_server", "-quiet", "-WWW", "-accept", str(port),
                          "-cert", cert, "-key", key], cwd=d, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _procs.append(p)
    end = time.time() + 10
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("openssl s_server did not start")


def curl_get(proxy, cafile, url):
    """(MB/s, ms from the proxy's CONNECT reply to the end of the TLS handshake,
    ms in all) for one GET by curl to /dev/null."""
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "--http1.1", "-x", proxy,
                        "--cacert", cafile, "-w",
                        "%{http_code} %{speed_download} %{time_connect} %{time_appconnect} "
                        "%{time_total}", url], capture_output=True, text=True, timeout=300)
    f = r.stdout.split()
    if r.returncode != 0 or len(f) != 5 or f[0] != "200":
        raise RuntimeError("curl: %s %s" % (r.stdout, r.stderr.strip()))
    return float(f[1]) / 1e6, (float(f[3]) - float(f[2])) * 1000, float(f[4]) * 1000


def inspected_rows(quick):
    """HTTPS via an inspecting proxy (limited mode) vs an opaque tunnel (full
    mode), interleaved (limited, full, limited, ...) so that load from
    elsewhere falls on both alike; medians, and the median of the ratios of
    neighbouring runs."""
    ca = tlstest.TestCA()
    nbytes, treps, lreps = ((64 << 20), 5, 20) if quick else ((256 << 20), 9, 60)
    srv, port = start_tls_origin(ca, nbytes)
    out, procs, where = [], [], {}
    try:
        for mode in ("limited", "full"):
            p = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nallow-local yes\n"
                      "mode %s\nupstream-ca %s\nmax-connections-per-client 100000\n"
                      % (mode, ca.cert), audit="none")
            procs.append(p)
            c = p.register(tags={"process_id": "bench"})
            proxy = "http://%s:%s@%s" % (c.id, c.secret, p.http)
            # one CA for curl to load on both sides: the bundle's hundred-odd
            # system CAs are parsed at every handshake and swamp its cost
            where[mode] = (proxy, os.path.join(os.path.dirname(c.reply["ca_bundle"]), "ca.pem")
                           if mode == "limited" else ca.cert, p)
        res = {m: {"mbs": [], "hs": [], "ms": [], "cpu": []} for m in where}
        pairs = []
        for i in range(treps):
            got = {}
            for mode in (("limited", "full") if i % 2 == 0 else ("full", "limited")):
                proxy, cafile, p = where[mode]
                c0 = cpu_seconds(p.proc.pid)
                got[mode] = curl_get(proxy, cafile, "https://127.0.0.1:%d/big" % port)[0]
                res[mode]["cpu"].append((cpu_seconds(p.proc.pid) - c0) * (1 << 30) / nbytes)
                res[mode]["mbs"].append(got[mode])
            pairs.append(got["limited"] / got["full"])
        for i in range(lreps):
            for mode in (("limited", "full") if i % 2 == 0 else ("full", "limited")):
                proxy, cafile, p = where[mode]
                _, hs, ms = curl_get(proxy, cafile, "https://127.0.0.1:%d/small" % port)
                res[mode]["hs"].append(hs)
                res[mode]["ms"].append(ms)
        med = {m: {k: statistics.median(v) for k, v in r.items()} for m, r in res.items()}
        spread = "runs %s / %s" % (
            ",".join("%.0f" % x for x in res["limited"]["mbs"]),
            ",".join("%.0f" % x for x in res["full"]["mbs"]))
        out.append(row("proxy: HTTPS GET %d MiB by curl, inspected vs opaque tunnel (MB/s, "
                       "higher is better; median of %d interleaved runs each)"
                       % (nbytes >> 20, treps), med["limited"]["mbs"], med["full"]["mbs"]))
        out.append(("proxy: HTTPS inspected/opaque, median of the %d neighbouring-run ratios "
                    "(goal >= 0.5; %s MB/s)" % (treps, spread), "", "",
                    "%.2f" % statistics.median(pairs)))
        out.append(row("proxy: its own CPU per GiB of HTTPS, inspected vs opaque tunnel (s)",
                       med["limited"]["cpu"], med["full"]["cpu"]))
        out.append(row("proxy: TLS handshake after CONNECT, inspected vs opaque (ms); "
                       "inspection adds %.2f ms" % (med["limited"]["hs"] - med["full"]["hs"]),
                       med["limited"]["hs"], med["full"]["hs"]))
        out.append(row("proxy: HTTPS set-up + one GET by curl, inspected vs opaque (ms)",
                       med["limited"]["ms"], med["full"]["ms"]))
    except Exception as e:  # a broken contender must not hide the others
        print("# inspected_rows: %s" % e, file=sys.stderr)
        out.append(("proxy: HTTPS inspected vs opaque tunnel", "error: %s" % e, "", "n/a"))
    finally:
        for p in procs:
            p.stop()
        srv.terminate()
        srv.wait(timeout=5)
    return out


def start_tinyproxy():
    if shutil.which("tinyproxy") is None:
        return None, None
    d = tmpdir()
    port = free_port()
    conf = os.path.join(d, "tinyproxy.conf")
    with open(conf, "w") as f:
        f.write("Port %d\nListen 127.0.0.1\nTimeout 600\nMaxClients 4000\nAllow 127.0.0.1\n"
                "LogLevel Critical\nDisableViaHeader Yes\n" % port)
    p = subprocess.Popen(["tinyproxy", "-d", "-c", conf], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _procs.append(p)
    end = time.time() + 10
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, ("127.0.0.1", port)
        except OSError:
            time.sleep(0.05)
    p.kill()
    return None, None


def fmt(v):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return "%.3g" % v if abs(v) < 100 else "%.0f" % v


def median_or_error(fn, *args):
    try:
        return statistics.median(fn(*args))
    except Exception as e:  # a broken contender must not hide the others
        print("# %s: %s" % (fn.__name__, e), file=sys.stderr)
        return "error: %s" % e


def row(name, ours, base):
    ratio = ours / base if isinstance(ours, float) and isinstance(base, float) and base else None
    return (name, fmt(ours), fmt(base), "%.2f" % ratio if ratio is not None else "n/a")


def rows(quick=False):
    nbytes = (64 << 20) if quick else (1 << 30)
    treps, lreps = (1, 20) if quick else (3, 200)
    size = "%d MiB" % (nbytes >> 20) if nbytes < (1 << 30) else "1 GiB"
    sink, origin = Sink(), Origin()
    ep, eaddr, eauth = start_execd_proxy()
    tp, taddr = start_tinyproxy()
    out = []
    try:
        ours, pcpu, pwake, psink, pipes = measured(throughput, ep.proc.pid, sink, nbytes, treps,
                                                   eaddr, eauth, sink, nbytes, treps)
        direct, _, _, dsink, _ = measured(throughput, None, sink, nbytes, treps,
                                          None, None, sink, nbytes, treps)
        tiny = median_or_error(throughput, taddr, None, sink, nbytes, treps) if tp else None
        out.append(row("proxy: CONNECT tunnel %s vs direct loopback (MB/s, higher is better)"
                       % size, ours, direct))
        out.append(row("proxy: CONNECT tunnel %s vs tinyproxy (MB/s, higher is better)" % size,
                       ours, tiny))
        out.append(row("proxy: CPU per GiB tunnelled vs the direct copy's receiver (s)",
                       pcpu, dsink))
        out.append(("proxy: wakeups (voluntary switches) per MiB tunnelled", fmt(pwake),
                    "n/a", "n/a"))
        out.append(("proxy: pipe sizes seen while tunnelling (KiB)",
                    " ".join("%d" % (x >> 10) for x in pipes) or "n/a", "n/a", "n/a"))
        out.append(("proxy: the sink's receiving CPU per GiB, through the proxy (s)",
                    fmt(psink), fmt(dsink), "%.2f" % (psink / dsink) if psink and dsink else "n/a"))
        rp, raddr, rauth = start_execd_proxy(splice=False)
        try:
            copy = median_or_error(throughput, raddr, rauth, sink, nbytes, treps)
        finally:
            rp.stop()
        out.append(row("proxy: CONNECT tunnel %s, splice vs read/write (MB/s, higher is better)"
                       % size, ours, copy))
        ours = median_or_error(setup_latency, eaddr, eauth, sink, lreps)
        tiny = median_or_error(setup_latency, taddr, None, sink, lreps) if tp else None
        out.append(row("proxy: CONNECT set-up latency vs tinyproxy (ms)", ours, tiny))
        ours = median_or_error(forward_latency, eaddr, eauth, origin, lreps)
        tiny = median_or_error(forward_latency, taddr, None, origin, lreps) if tp else None
        out.append(row("proxy: plain HTTP GET forwarded vs tinyproxy (ms)", ours, tiny))
        out += inspected_rows(quick)
    finally:
        ep.stop()
        if tp is not None:
            tp.terminate()
            tp.wait(timeout=5)
    return out


def main(argv):
    quick = "--quick" in argv
    table = rows(quick)
    head = ("metric", "execd-proxy", "baseline", "ratio (execd-proxy/baseline)")
    if "--markdown" in argv:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(["---"] + ["---:"] * 3) + "|")
        for r in table:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(x[i]) for x in table + [head]) for i in range(4)]
        for r in [head, None] + table:
            if r is None:
                print("-+-".join("-" * x for x in w))
                continue
            print(" | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)))
    print("\nmedians%s; tinyproxy %s" % (" (quick mode)" if quick else "",
                                         shutil.which("tinyproxy") or "not found"))
    cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
