#!/usr/bin/python3
"""Load: 5,000 CONNECT tunnels open at once through execd-proxy.

One registration's credentials, an echo server on loopback, and LOAD_TUNNELS
(5000) tunnels that are all established before any carries data; then each
sends its own payload and must get exactly that back, once; then all close.
Every CONNECT must be answered exactly once (200), the proxy must count
them all and none afterwards.  Set-up and round-trip latency percentiles,
throughput and the proxy's peak RSS are printed as TAP diagnostics.
Part of `make bench`.
"""
import asyncio
import base64
import os
import resource
import sys
import time

from proxytest import Proxy, free_port
from execd_client import tap
from faultlib import rss_kb

N = int(os.environ.get("LOAD_TUNNELS", "5000"))
PAYLOAD = int(os.environ.get("LOAD_PAYLOAD", "16384"))
t = tap(timeout=300)

# execd-proxy raises its soft limit to the hard one and spends 6 descriptors a
# tunnel with splice (two sockets, a pipe each way), 2 without; this process
# needs 2 a tunnel too
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard < 6 * N + 1024:
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (6 * N + 1024, 6 * N + 1024))
        hard = 6 * N + 1024
    except (ValueError, OSError):
        pass                            # no CAP_SYS_RESOURCE
SPLICE = hard >= 6 * N + 1024
if hard < 2 * N + 1024:
    print("1..0 # SKIP RLIMIT_NOFILE hard limit %d is too low for %d tunnels" % (hard, N))
    sys.exit(0)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

hport = free_port()
P = Proxy("listen http 127.0.0.1:%d\nallow 127.0.0.1\nallow-local yes\n"
          "max-connections %d\nmax-connections-per-client %d\nmax-pending %d\n"
          "splice %s\naudit none\n" % (hport, 2 * N, 2 * N, 2 * N, "yes" if SPLICE else "no"),
          audit=False)
print("# descriptor hard limit %d: splice %s" % (hard, "on" if SPLICE else
                                                 "off (6 descriptors a tunnel would not fit)"))
creds = P.register(tags={"load": "1"})
auth = base64.b64encode(("%s:%s" % (creds.id, creds.secret)).encode()).decode()


class Result:
    connect = []
    rtt = []
    errors = []
    answers = 0
    bytes = 0


async def echo(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    writer.close()


async def tunnel(i, port, gate, established, go):
    async with gate:
        t0 = time.perf_counter()
        reader, writer = await asyncio.open_connection("127.0.0.1", hport)
        writer.write(("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                      "Proxy-Authorization: Basic %s\r\n\r\n" % (port, port, auth)).encode())
        head = await reader.readuntil(b"\r\n\r\n")
        Result.answers += 1
        if not head.startswith(b"HTTP/1.1 200"):
            Result.errors.append("tunnel %d: %r" % (i, head[:60]))
            writer.close()
            established.append(None)
            return
        Result.connect.append(time.perf_counter() - t0)
    established.append(i)
    await go.wait()
    payload = (b"%08d" % i) * (PAYLOAD // 8)
    t1 = time.perf_counter()
    writer.write(payload)
    await writer.drain()
    got = await reader.readexactly(len(payload))
    Result.rtt.append(time.perf_counter() - t1)
    if got != payload:
        Result.errors.append("tunnel %d: got other bytes back" % i)
    Result.bytes += 2 * len(payload)
    writer.write_eof()
    extra = await reader.read()
    if extra:
        Result.errors.append("tunnel %d: %d bytes too many" % (i, len(extra)))
    writer.close()


async def main():
    server = await asyncio.start_server(echo, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    gate = asyncio.Semaphore(512)      # handshakes in flight, within the listen backlogs
    go = asyncio.Event()
    established = []
    peak = {"rss": 0, "conns": 0}

    async def sample():
        while True:
            peak["rss"] = max(peak["rss"], rss_kb(P.proc.pid))
            await asyncio.sleep(0.2)
    sampler = asyncio.ensure_future(sample())
    t0 = time.time()
    tasks = [asyncio.ensure_future(tunnel(i, port, gate, established, go)) for i in range(N)]
    while len(established) < N and not all(x.done() for x in tasks):
        await asyncio.sleep(0.05)
    t_open = time.time() - t0
    st = P.call("status")
    peak["conns"] = st.get("connections", 0)
    t1 = time.time()
    go.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    t_data = time.time() - t1
    for i, r in enumerate(results):
        if isinstance(r, BaseException):
            Result.errors.append("tunnel %d: %r" % (i, r))
    sampler.cancel()
    server.close()
    return t_open, t_data, peak


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))] if xs else 0.0


try:
    t_open, t_data, peak = asyncio.get_event_loop().run_until_complete(main())
    t.ok(not Result.errors, "%d tunnels: no errors" % N, "\n".join(Result.errors[:10]))
    t.eq(Result.answers, N, "every CONNECT answered exactly once")
    t.eq(peak["conns"], N, "all %d tunnels open at the same time" % N)
    t.eq(len(Result.rtt), N, "every tunnel carried its payload both ways")
    deadline = time.time() + 10
    while P.call("status").get("connections") and time.time() < deadline:
        time.sleep(0.1)
    t.eq(P.call("status").get("connections"), 0, "and the proxy holds none once they close")
    print("# %d tunnels opened in %.2f s (%.0f/s); CONNECT p50 %.1f ms, p99 %.1f ms" % (
        N, t_open, N / t_open, pct(Result.connect, 50) * 1e3, pct(Result.connect, 99) * 1e3))
    print("# %d x %d bytes echoed in %.2f s: %.1f MB/s; round trip p50 %.1f ms, p99 %.1f ms" % (
        N, PAYLOAD, t_data, Result.bytes / t_data / 1e6, pct(Result.rtt, 50) * 1e3,
        pct(Result.rtt, 99) * 1e3))
    print("# execd-proxy peak RSS %d kB (%.1f kB per tunnel)" % (peak["rss"], peak["rss"] / N))
finally:
    P.stop()
t.done()
