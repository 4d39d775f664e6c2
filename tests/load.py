#!/usr/bin/python3
"""Load: 100 concurrent WebSocket clients of one `execd --listen`, for a bounded time.

Each client initializes, then until the time is up runs processes (start,
collect output and exit, read back), file system calls when execd has them
(write, read back, metadata) and status calls.  Every request must be
answered exactly once, every process must report exited and closed exactly
once with all of its output, and when the clients leave no instance and no
process may be left.  Throughput, latency percentiles and peak memory
(PSS of the listener and its instances) are printed as TAP diagnostics.

  LOAD_CLIENTS   concurrent clients (default 100)
  LOAD_SECONDS   how long each client keeps going (default 10)

Part of `make bench` (it takes LOAD_SECONDS plus set-up); run alone with
  top_builddir=. PYTHONPATH=tests/lib /usr/bin/python3 tests/load.py
"""
import asyncio
import base64
import json
import os
import sys
import tempfile
import time

import websockets

from execd_client import tap, pid_alive
from faultlib import FaultListener, descendants, no_resume_args, pss_kb, rss_kb, wait_dead

CLIENTS = int(os.environ.get("LOAD_CLIENTS", "100"))
SECONDS = float(os.environ.get("LOAD_SECONDS", "10"))

t = tap(timeout=int(SECONDS) + 180)
state = tempfile.mkdtemp(prefix="execd-load.")
L = FaultListener(["--concurrent-requests", "4"] + no_resume_args(state))
scratch = tempfile.mkdtemp(prefix="execd-load-fs.")


class Stats:
    def __init__(self):
        self.latency = {}          # method -> [seconds]
        self.errors = []           # what went wrong, for the diagnostics
        self.requests = 0
        self.answered = 0
        self.duplicates = 0
        self.lost = 0
        self.processes = 0
        self.fs_ops = 0
        self.pids = []


S = Stats()


class Client:
    def __init__(self, n):
        self.n = n
        self.nid = 0
        self.pending = {}          # id -> (future, method, t0)
        self.answered_ids = set()
        self.procs = {}            # processId -> {"out": bytes, "exited": n, "closed": n, "ev"}
        self.fs = True

    async def reader(self, ws):
        try:
            async for raw in ws:
                m = json.loads(raw)
                if "method" in m and "id" not in m:
                    self.note(m)
                    continue
                id = m.get("id")
                if id in self.answered_ids:
                    S.duplicates += 1
                    S.errors.append("client %d: id %r answered twice" % (self.n, id))
                    continue
                ent = self.pending.pop(id, None)
                if ent is None:
                    S.errors.append("client %d: answer to unknown id %r" % (self.n, id))
                    continue
                fut, method, t0 = ent
                self.answered_ids.add(id)
                S.answered += 1
                S.latency.setdefault(method, []).append(time.perf_counter() - t0)
                fut.set_result(m)
        except websockets.ConnectionClosed:
            pass

    def note(self, m):
        p = m["params"]
        pr = self.procs.get(p.get("processId"))
        if pr is None:
            return
        if m["method"] == "process/output":
            pr["out"] += base64.b64decode(p["chunk"])
        elif m["method"] == "process/exited":
            pr["exited"] += 1
            pr["code"] = p["exitCode"]
        elif m["method"] == "process/closed":
            pr["closed"] += 1
            pr["ev"].set()

    async def call(self, ws, method, params=None):
        self.nid += 1
        id = self.nid
        fut = asyncio.get_event_loop().create_future()
        self.pending[id] = (fut, method, time.perf_counter())
        msg = {"id": id, "method": method}
        if params is not None:
            msg["params"] = params
        S.requests += 1
        await ws.send(json.dumps(msg))
        return await asyncio.wait_for(fut, 30)

    async def one_process(self, ws, k):
        pid = "c%d-%d" % (self.n, k)
        want = ("%s " % pid) * (1 + k % 50)
        self.procs[pid] = {"out": b"", "exited": 0, "closed": 0, "ev": asyncio.Event()}
        r = await self.call(ws, "process/start", {
            "processId": pid, "argv": ["sh", "-c", "echo $$; printf '%s'" % want],
            "cwd": "file:///tmp", "env": {"PATH": "/usr/bin:/bin"}, "tty": False})
        if "result" not in r:
            S.errors.append("%s: start: %r" % (pid, r))
            return
        await asyncio.wait_for(self.procs[pid]["ev"].wait(), 30)
        pr = self.procs[pid]
        first, _, rest = pr["out"].partition(b"\n")
        try:
            S.pids.append(int(first))
        except ValueError:
            pass
        if rest != want.encode() or pr["exited"] != 1 or pr["closed"] != 1 or pr["code"] != 0:
            S.errors.append("%s: output %d/%d bytes, exited %d, closed %d, code %r" % (
                pid, len(rest), len(want), pr["exited"], pr["closed"], pr.get("code")))
        r = await self.call(ws, "process/read", {"processId": pid, "afterSeq": 0})
        if "result" not in r or not r["result"]["closed"]:
            S.errors.append("%s: read after close: %r" % (pid, r))
        S.processes += 1
        del self.procs[pid]

    async def one_fs(self, ws, k):
        path = "file://%s/c%d-%d" % (scratch, self.n, k % 4)
        data = base64.b64encode(os.urandom(64 + k % 512)).decode()
        r = await self.call(ws, "fs/writeFile", {"path": path, "dataBase64": data})
        if r.get("error", {}).get("code") == -32601:
            self.fs = False
            return
        r2 = await self.call(ws, "fs/readFile", {"path": path})
        r3 = await self.call(ws, "fs/getMetadata", {"path": path})
        if "result" not in r or r2.get("result", {}).get("dataBase64") != data or \
                "result" not in r3:
            S.errors.append("fs %s: %r %r %r" % (path, r, r2, r3))
        S.fs_ops += 3

    async def run(self, deadline):
        async with websockets.connect(L.url, max_size=None, ping_interval=None,
                                      close_timeout=5) as ws:
            rd = asyncio.ensure_future(self.reader(ws))
            r = await self.call(ws, "initialize", {"clientName": "load-%d" % self.n})
            if "result" not in r:
                S.errors.append("client %d: initialize %r" % (self.n, r))
                return
            await ws.send(json.dumps({"method": "initialized"}))
            k = 0
            while time.time() < deadline:
                await self.one_process(ws, k)
                if self.fs:
                    await self.one_fs(ws, k)
                await self.call(ws, "environment/status")
                k += 1
            if self.pending:
                S.lost += len(self.pending)
                S.errors.append("client %d: %d requests never answered" % (
                    self.n, len(self.pending)))
            await ws.close()
            rd.cancel()


async def sample_memory(stop, peak):
    while not stop.is_set():
        pids = [L.p.pid] + descendants(L.p.pid)
        peak["pss"] = max(peak["pss"], sum(pss_kb(p) for p in pids))
        peak["rss_max"] = max([peak["rss_max"]] + [rss_kb(p) for p in pids])
        peak["procs"] = max(peak["procs"], len(pids))
        try:
            await asyncio.wait_for(stop.wait(), 0.25)
        except asyncio.TimeoutError:
            pass


async def main():
    stop = asyncio.Event()
    peak = {"pss": 0, "rss_max": 0, "procs": 0}
    sampler = asyncio.ensure_future(sample_memory(stop, peak))
    t0 = time.time()
    deadline = t0 + SECONDS
    results = await asyncio.gather(*[Client(n).run(deadline) for n in range(CLIENTS)],
                                   return_exceptions=True)
    elapsed = time.time() - t0
    stop.set()
    await sampler
    for r in results:
        if isinstance(r, BaseException):
            S.errors.append("a client failed: %r" % (r,))
    return elapsed, peak


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))] if xs else 0.0


try:
    elapsed, peak = asyncio.get_event_loop().run_until_complete(main())
    t.ok(not S.errors, "%d clients for %.0f s: no errors" % (CLIENTS, SECONDS),
         "\n".join(S.errors[:20]))
    t.ok(S.requests > 0 and S.answered == S.requests and S.duplicates == 0 and S.lost == 0,
         "every request answered exactly once (%d sent, %d answered, %d twice, %d lost)" % (
             S.requests, S.answered, S.duplicates, S.lost))
    time.sleep(0.3)
    left = descendants(L.p.pid)
    t.ok(wait_dead(left, 10), "no instance is left once the clients are gone", left)
    t.ok(S.pids and wait_dead(S.pids, 5), "none of the %d processes is left" % len(S.pids))
    all_lat = [x for v in S.latency.values() for x in v]
    print("# %d clients, %.1f s: %d requests (%.0f/s), %d processes (%.0f/s), %d fs calls" % (
        CLIENTS, elapsed, S.requests, S.requests / elapsed, S.processes,
        S.processes / elapsed, S.fs_ops))
    print("# latency all requests: p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (
        pct(all_lat, 50) * 1e3, pct(all_lat, 99) * 1e3, max(all_lat or [0]) * 1e3))
    for m in sorted(S.latency):
        v = S.latency[m]
        print("#   %-20s n=%-6d p50 %6.1f ms  p99 %6.1f ms" % (m, len(v), pct(v, 50) * 1e3,
                                                           pct(v, 99) * 1e3))
    print("# peak memory: PSS of listener + instances %d kB (%d processes at most), "
          "largest RSS %d kB" % (peak["pss"], peak["procs"], peak["rss_max"]))
finally:
    L.stop()
    import shutil
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(state, ignore_errors=True)
t.done()
