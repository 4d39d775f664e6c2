#!/usr/bin/python3
"""Benchmarks of execd-proxy beside a direct loopback copy and tinyproxy
(run on loopback with a throw-away configuration, on the same workload).

  rows(quick=False) -> [(metric, execd-proxy, baseline, ratio), ...]
      for tests/bench/bench.py or anyone else; each value a formatted string.
  python3 tests/bench/proxy.py [--quick] [--markdown] [--no-shield] [--tunnel]
      prints the table (needs top_builddir or an in-tree build); --tunnel:
      the bulk rows only.

Rows: CONNECT tunnel throughput for 1 GiB (vs direct, vs tinyproxy,
splice vs execd-proxy's own read/write path, and its loopback sockets on
reno vs on the host's congestion control) and for 8 MiB (vs direct), the
proxy's CPU time per GiB beside what the direct copy's receiver spends (and
all processes' CPU per GiB, tunnel against direct), its wakeups
(voluntary context switches) per MiB and the pipe sizes it relays through,
CONNECT set-up latency and plain-HTTP forwarding latency (vs tinyproxy), and
HTTPS through inspection (limited mode) vs the same HTTPS through an opaque
tunnel: download throughput, and the latency of set-up plus one request (the
handshake the proxy adds).
The bulk runs (tunnel, direct, read/write, tinyproxy) are interleaved round
by round in a rotating order, so that load from elsewhere falls on all alike;
medians, and the median of the ratios of runs in the same round.  Client and
sink are one small C pump (compiled here from PUMP_C; a Python client and sink
shared a GIL and paid per call), the same for every contender.  With
permission (root or CAP_SYS_NICE; --no-shield to turn it off) the client, the
sink and the proxies run under SCHED_FIFO 10, shielded from the other
processes sharing the machine, as bench_sandbox does.  Latency rows use
Python clients, identical for every contender."""

import os
import select
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from proxytest import Proxy, cleanup, free_port, tmpdir, _procs  # noqa: E402
from proxytest import start_tinyproxy as proxytest_start_tinyproxy, wait_listening  # noqa: E402
import tlstest  # noqa: E402


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


def proc_stats(pid):
    """(CPU seconds, voluntary context switches) of a process so far, summed
    over its threads: the run time in ns from schedstat, what getrusage reports
    without the clock-tick rounding of /proc/PID/stat."""
    cpu, vol = 0, 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                cpu += int(f.read().split()[0])
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                vol += next(int(line.split()[1]) for line in f
                            if line.startswith("voluntary_ctxt_switches"))
        except (OSError, StopIteration):
            pass
    return cpu / 1e9, vol


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


PUMP_C = r"""
/* bench pump: "sink" serves connections one after another, "send" pushes bytes */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)
static char buf[CHUNK];

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
usage_now(double *cpu, long *vcsw)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	    ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	*vcsw = ru.ru_nvcsw;
}

static int
readn(int fd, char *p, size_t n)
{
	ssize_t r;

	while (n > 0) {
		if ((r = recv(fd, p, n, 0)) <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int
sink(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int ls, c, one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((ls = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) == -1 || listen(ls, 64) == -1 ||
	    getsockname(ls, (struct sockaddr *)&sa, &len) == -1) {
		perror("sink");
		return 1;
	}
	printf("%d\n", ntohs(sa.sin_port));
	fflush(stdout);
	while ((c = accept(ls, NULL, NULL)) != -1) {
		unsigned char head[8];
		unsigned long long left = 0, got = 0, reads = 0;
		double cpu0, cpu1;
		long v0, v1;
		ssize_t r;
		int i;

		usage_now(&cpu0, &v0);
		if (readn(c, (char *)head, 8) == 0) {
			for (i = 0; i < 8; i++)
				left = left << 8 | head[i];
			while (left > 0) {
				r = recv(c, buf, left < CHUNK ? left : CHUNK, 0);
				if (r <= 0)
					break;
				left -= (size_t)r;
				got += (size_t)r;
				reads++;
			}
			usage_now(&cpu1, &v1);
			if (left == 0)
				(void)send(c, "done", 4, MSG_NOSIGNAL);
			printf("%llu %.6f %ld %llu\n", got, cpu1 - cpu0, v1 - v0, reads);
			fflush(stdout);
		}
		close(c);
	}
	perror("accept");
	return 1;
}

static int
sender(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	unsigned long long n = strtoull(argv[4], NULL, 10), left = n;
	unsigned char head[8];
	char reply[4096];
	size_t have = 0;
	double t0, cpu0, cpu1;
	long v0, v1;
	ssize_t r;
	int s, i, one = 1;

	sa.sin_port = htons((unsigned short)atoi(argv[3]));
	inet_pton(AF_INET, argv[2], &sa.sin_addr);
	if ((s = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(s, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		perror("connect");
		return 1;
	}
	if (argc > 5) {		/* through a proxy: CONNECT 127.0.0.1:PORT [auth] */
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		i = snprintf(reply, sizeof(reply), "CONNECT 127.0.0.1:%s HTTP/1.1\r\n"
		    "Host: 127.0.0.1:%s\r\n%s%s%s\r\n", argv[5], argv[5],
		    argc > 6 ? "Proxy-Authorization: Basic " : "", argc > 6 ? argv[6] : "",
		    argc > 6 ? "\r\n" : "");
		if (send(s, reply, (size_t)i, 0) != i)
			return 1;
		while (have < sizeof(reply) - 1 && (r = recv(s, reply + have, 1, 0)) == 1) {
			have++;
			reply[have] = '\0';
			if (have >= 4 && memcmp(reply + have - 4, "\r\n\r\n", 4) == 0)
				break;
		}
		if (strncmp(reply, "HTTP/1.1 200", 12) != 0 &&
		    strncmp(reply, "HTTP/1.0 200", 12) != 0) {
			fprintf(stderr, "CONNECT refused: %.60s\n", reply);
			return 1;
		}
	}
	usage_now(&cpu0, &v0);
	t0 = now();
	for (i = 0; i < 8; i++)
		head[i] = (unsigned char)(n >> (56 - 8 * i));
	if (send(s, head, 8, 0) != 8)
		return 1;
	while (left > 0) {
		if ((r = send(s, buf, left < CHUNK ? left : CHUNK, 0)) <= 0) {
			perror("send");
			return 1;
		}
		left -= (size_t)r;
	}
	if (readn(s, reply, 4) == -1 || memcmp(reply, "done", 4) != 0) {
		fprintf(stderr, "sink did not confirm\n");
		return 1;
	}
	usage_now(&cpu1, &v1);
	printf("%.6f %.6f %ld\n", now() - t0, cpu1 - cpu0, v1 - v0);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "sink") == 0)
		return sink();
	if (argc >= 5 && strcmp(argv[1], "send") == 0)
		return sender(argc, argv);
	fprintf(stderr, "usage: pump sink | pump send HOST PORT NBYTES [TARGETPORT [AUTH]]\n");
	return 2;
}
"""

SHIELD = ("chrt", "-f", "10")
TCP_LOCAL_CC = "reno"   # lib/tcplocal.h: execd-proxy's loopback-congestion-control default


def shield_ok():
    """Whether this process may run others under SCHED_FIFO."""
    try:
        return subprocess.run(list(SHIELD) + ["true"], stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        return False


class Pump:
    """The C client and sink: the sink serves one connection after another
    and reports each (bytes, CPU seconds, voluntary switches, recv calls)."""

    def __init__(self, prefix):
        d = tmpdir()
        src, self.bin = os.path.join(d, "pump.c"), os.path.join(d, "pump")
        with open(src, "w") as f:
            f.write(PUMP_C)
        subprocess.run(["cc", "-O2", "-o", self.bin, src], check=True)
        self.prefix = list(prefix)
        self.sink = subprocess.Popen(self.prefix + [self.bin, "sink"], stdout=subprocess.PIPE,
                                     text=True)
        _procs.append(self.sink)
        self.port = int(self.sink.stdout.readline())

    def run(self, nbytes, proxy=None, auth=None):
        """One transfer of nbytes, direct or CONNECTed through proxy (host, port):
        {"mbs", "sink_cpu", "sink_reads", "client_cpu"}."""
        args = [self.bin, "send", "127.0.0.1", str(self.port), str(nbytes)]
        if proxy is not None:
            args[2:4] = [proxy[0], str(proxy[1])]
            args += [str(self.port)] + ([auth] if auth else [])
        r = subprocess.run(self.prefix + args, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            # the sink reports a connection that sent its length: not to the next run
            if select.select([self.sink.stdout], [], [], 1.0)[0]:
                self.sink.stdout.readline()
            raise RuntimeError("pump: %s" % (r.stderr.strip() or "status %d" % r.returncode))
        secs, client_cpu = (float(x) for x in r.stdout.split()[:2])
        got, cpu, _, reads = self.sink.stdout.readline().split()
        if int(got) != nbytes:
            raise RuntimeError("sink got %s of %d bytes" % (got, nbytes))
        return {"mbs": nbytes / 1e6 / secs, "sink_cpu": float(cpu), "sink_reads": int(reads),
                "client_cpu": client_cpu}

    def stop(self):
        self.sink.kill()
        self.sink.wait()


def interleaved(pump, contenders, nbytes, rounds):
    """Each contender (name, proxy address or None, auth, proxy pid or None)
    once a round, the order rotating; per name the list of its runs, each
    with the proxy's CPU seconds and wakeups and the pipe sizes it held."""
    res = {c[0]: [] for c in contenders}
    for i in range(rounds):
        k = i % len(contenders)
        for name, addr, auth, pid in contenders[k:] + contenders[:k]:
            before = proc_stats(pid) if pid else None
            sampler = PipeSampler(pid) if pid else None
            try:
                got = pump.run(nbytes, addr, auth)
            except Exception as e:  # a broken contender must not hide the others
                print("# %s: %s" % (name, e), file=sys.stderr)
                got = None
            pipes = sampler.stop() if sampler else []
            if got is not None:
                after = proc_stats(pid) if pid else (0.0, 0)
                got.update(cpu=after[0] - before[0] if pid else 0.0,
                           wake=after[1] - before[1] if pid else 0, pipes=pipes)
                got["all_cpu"] = got["cpu"] + got["client_cpu"] + got["sink_cpu"]
            res[name].append(got)
    return res


def med(runs, key):
    vals = [r[key] for r in runs if r is not None and key in r]
    return statistics.median(vals) if vals else None


def pair_ratio(a, b, key="mbs", bkey=None):
    """Median of the ratios a[key]/b[bkey or key] of runs in the same round."""
    bkey = bkey or key
    vals = [x[key] / y[bkey] for x, y in zip(a, b)
            if x is not None and y is not None and y[bkey]]
    return statistics.median(vals) if vals else None


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


def start_execd_proxy(splice=True, prefix=(), extra=""):
    import base64
    p = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nallow-local no\n"
              "max-connections-per-client 100000\nsplice %s\n%s" % ("yes" if splice else "no", extra),
              audit="none", prefix=prefix)
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
    if wait_listening(port):
        return p, port
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


def start_tinyproxy(prefix=()):
    r = proxytest_start_tinyproxy("MaxClients 4000\n", prefix=prefix, timeout=600,
                                  loglevel="Critical")
    return (r[0], ("127.0.0.1", r[1])) if r else (None, None)


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


def tunnel_rows(quick, pump, prefix, shielded, ep, eaddr, eauth):
    """The bulk rows: execd-proxy's tunnel beside a direct copy, its own
    read/write path and tinyproxy, interleaved."""
    nbytes, rounds = ((256 << 20), 5) if quick else ((1 << 30), 9)
    size = "%d MiB" % (nbytes >> 20) if nbytes < (1 << 30) else "1 GiB"
    rp, raddr, rauth = start_execd_proxy(splice=False, prefix=prefix)
    hp, haddr, hauth = start_execd_proxy(prefix=prefix, extra="loopback-congestion-control host\n")
    tp, taddr = start_tinyproxy(prefix)
    try:
        contenders = [("tunnel", eaddr, eauth, ep.proc.pid), ("direct", None, None, None),
                      ("readwrite", raddr, rauth, rp.proc.pid),
                      ("hostcc", haddr, hauth, hp.proc.pid)]
        if tp is not None:
            contenders.append(("tinyproxy", taddr, None, tp.pid))
        res = interleaved(pump, contenders, nbytes, rounds)
    finally:
        rp.stop()
        hp.stop()
        if tp is not None:
            tp.terminate()
            tp.wait(timeout=5)
    t, d = res["tunnel"], res["direct"]
    gib, mib = nbytes / float(1 << 30), nbytes / float(1 << 20)
    runs = " ".join("%.0f/%.0f" % (x["mbs"], y["mbs"]) for x, y in zip(t, d)
                    if x is not None and y is not None)
    how = "%d interleaved rounds%s, load average %.1f" % (
        rounds, ", under chrt -f 10" if shielded else "", os.getloadavg()[0])
    pipes = sorted(set(x for r in t if r is not None for x in r["pipes"]))
    ratio = pair_ratio(t, d)
    out = [row("proxy: CONNECT tunnel %s vs direct loopback (MB/s, higher is better; "
               "medians of %s)" % (size, how), med(t, "mbs"), med(d, "mbs")),
           ("proxy: tunnel/direct, median of the per-round ratios (goal >= 0.75; "
            "runs %s MB/s)" % runs, "", "", "%.2f" % ratio if ratio else "n/a"),
           row("proxy: CONNECT tunnel %s vs tinyproxy (MB/s, higher is better)" % size,
               med(t, "mbs"), med(res["tinyproxy"], "mbs") if tp else None),
           row("proxy: CONNECT tunnel %s, splice vs read/write (MB/s, higher is better)"
               % size, med(t, "mbs"), med(res["readwrite"], "mbs"))]
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            hostcc = f.read().strip()
    except OSError:
        hostcc = "?"
    out.append(row("proxy: CONNECT tunnel %s, loopback sockets on %s vs on the host's %s "
                   "(MB/s, higher is better)" % (size, TCP_LOCAL_CC, hostcc),
                   med(t, "mbs"), med(res["hostcc"], "mbs")))
    pcpu, dsink = med(t, "cpu"), med(d, "sink_cpu")
    out.append(row("proxy: its CPU per GiB tunnelled vs the direct copy's receiver (s)",
                   pcpu / gib if pcpu is not None else None,
                   dsink / gib if dsink is not None else None))
    cr = pair_ratio(t, d, "cpu", "sink_cpu")
    out.append(("proxy: its CPU / the direct receiver's, median of the per-round ratios "
                "(goal <= 1)", "", "", "%.2f" % cr if cr else "n/a"))
    tall, dall = med(t, "all_cpu"), med(d, "all_cpu")
    out.append(row("proxy: CPU per GiB of client + proxy + sink vs client + sink direct (s)",
                   tall / gib if tall is not None else None,
                   dall / gib if dall is not None else None))
    small, srounds = 8 << 20, 21 if quick else 41
    sres = interleaved(pump, contenders[:2], small, srounds)
    st, sd = sres["tunnel"], sres["direct"]
    sratio, scpu, ssink = pair_ratio(st, sd), med(st, "cpu"), med(sd, "sink_cpu")
    out.append(row("proxy: CONNECT tunnel of 8 MiB vs direct (MB/s; medians of %d interleaved "
                   "rounds; median of per-round ratios %s)"
                   % (srounds, "%.2f" % sratio if sratio else "n/a"), med(st, "mbs"), med(sd, "mbs")))
    out.append(row("proxy: its CPU per GiB in 8 MiB tunnels vs the direct copy's receiver (s)",
                   scpu * 128 if scpu is not None else None,
                   ssink * 128 if ssink is not None else None))
    hcpu = med(res["hostcc"], "cpu")
    out.append(row("proxy: its CPU per GiB, loopback sockets on %s vs on %s (s)"
                   % (TCP_LOCAL_CC, hostcc),
                   pcpu / gib if pcpu is not None else None,
                   hcpu / gib if hcpu is not None else None))
    hall = med(res["hostcc"], "all_cpu")
    out.append(row("proxy: CPU per GiB of client + proxy + sink, %s vs %s on loopback (s)"
                   % (TCP_LOCAL_CC, hostcc),
                   tall / gib if tall is not None else None,
                   hall / gib if hall is not None else None))
    rcpu = med(res["readwrite"], "cpu")
    out.append(row("proxy: its CPU per GiB, splice vs read/write (s)",
                   pcpu / gib if pcpu is not None else None,
                   rcpu / gib if rcpu is not None else None))
    wake = med(t, "wake")
    out.append(("proxy: wakeups (voluntary switches) per MiB tunnelled",
                fmt(wake / mib if wake is not None else None), "n/a", "n/a"))
    out.append(("proxy: pipe sizes seen while tunnelling (KiB)",
                " ".join("%d" % (x >> 10) for x in pipes) or "n/a", "n/a", "n/a"))
    psink = med(t, "sink_cpu")
    out.append(row("proxy: the sink's receiving CPU per GiB, through the proxy vs direct (s)",
                   psink / gib if psink is not None else None,
                   dsink / gib if dsink is not None else None))
    pr, dr = med(t, "sink_reads"), med(d, "sink_reads")
    out.append(row("proxy: the sink's bytes per recv, through the proxy vs direct (KiB)",
                   nbytes / 1024.0 / pr if pr else None, nbytes / 1024.0 / dr if dr else None))
    return out


def rows(quick=False, shield=True, tunnel_only=False):
    lreps = 20 if quick else 200
    shielded = shield and shield_ok()
    prefix = SHIELD if shielded else ()
    origin, pump = Origin(), Pump(prefix)
    ep, eaddr, eauth = start_execd_proxy(prefix=prefix)
    out = []
    try:
        out += tunnel_rows(quick, pump, prefix, shielded, ep, eaddr, eauth)
        if tunnel_only:
            return out
        tp, taddr = start_tinyproxy()
        try:
            ours = median_or_error(setup_latency, eaddr, eauth, pump, lreps)
            tiny = median_or_error(setup_latency, taddr, None, pump, lreps) if tp else None
            out.append(row("proxy: CONNECT set-up latency vs tinyproxy (ms)", ours, tiny))
            ours = median_or_error(forward_latency, eaddr, eauth, origin, lreps)
            tiny = median_or_error(forward_latency, taddr, None, origin, lreps) if tp else None
            out.append(row("proxy: plain HTTP GET forwarded vs tinyproxy (ms)", ours, tiny))
        finally:
            if tp is not None:
                tp.terminate()
                tp.wait(timeout=5)
        out += inspected_rows(quick)
    finally:
        ep.stop()
        pump.stop()
    return out


def main(argv):
    quick = "--quick" in argv
    table = rows(quick, shield="--no-shield" not in argv, tunnel_only="--tunnel" in argv)
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
