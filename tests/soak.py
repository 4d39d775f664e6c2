"""Soak: many clients of one listener for a bounded time, as clients on a
flaky network would use it, while instances are SIGKILLed (issue 37, item 3).

Each client runs random operations in its session and checks every byte by
hash and every exit code: output streams (stdout and stderr of `seq`),
stdin round trips (`head -c N | sha256sum`), fs/writeFile + fs/readFile,
back-pressure (a reader that stops reading while 2 MB stream by), and the
congested cut of issue 37 item 1 (a process ends while a flood nobody reads
congests the connection; the connection is cut; it must be readable, whole,
after the resume).  Connections are cut at random (RST or FIN) and resumed;
a chaos task SIGKILLs random instances.  A session may be lost only with
its instance.  At the end: no process of the test left anywhere, the state
directory empty, the listener's RSS and descriptors as before.

SOAK_SECONDS (60), SOAK_CLIENTS (24), SOAK_KILL_EVERY (6 s, 0: none) set its
size; SOAK_CORRUPT=1 flips one byte of one received output chunk, to show
that the checks see a single corrupted byte (the run must then fail).
Skipped under the sanitizers (make check-soak runs it in full).
"""
import asyncio
import base64
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time

from execd_client import tap, skip_all, pid_alive, comm, SPARE
from wsclient import Listener

if os.environ.get("EXECD_SANITIZERS"):
    skip_all("the soak runs on the plain build (make check-soak)")
try:
    import websockets
except ImportError:
    skip_all("python3-websockets is not installed")

SECONDS = float(os.environ.get("SOAK_SECONDS", "60"))
CLIENTS = int(os.environ.get("SOAK_CLIENTS", "24"))
KILL_EVERY = float(os.environ.get("SOAK_KILL_EVERY", "6"))
CORRUPT = os.environ.get("SOAK_CORRUPT") == "1"
TTL_MS = 10000
SEED = int(os.environ.get("SOAK_SEED", str(int(time.time()))))
rng = random.Random(SEED)

t = tap(timeout=int(SECONDS) + 240)
print("# seed %d, %d clients, %.0f s, an instance killed every %.0f s" %
      (SEED, CLIENTS, SECONDS, KILL_EVERY))
TAG = "soak-%d-%d" % (os.getpid(), SEED)
state = tempfile.mkdtemp(prefix="execd-soak-state.")
scratch = tempfile.mkdtemp(prefix="execd-soak-fs.")
ENV = {"PATH": "/usr/bin:/bin", "SOAK_TAG": TAG}


class Lost(Exception):
    """the connection went (cut, or its instance was killed)"""


class SessionGone(Exception):
    """the session could not be resumed"""


stats = {"streams": 0, "stream_bytes": 0, "stdin": 0, "stdin_bytes": 0, "files": 0,
         "file_bytes": 0, "backpressure": 0, "congested_cuts": 0, "congested_lost": 0, "cuts": 0, "resumes": 0,
         "sessions": 0, "sessions_lost_to_kills": 0, "kills": 0, "exit_codes": 0}
failures = []
killed = set()                  # instances the chaos task SIGKILLed
corrupt_once = [CORRUPT]


def fail(what):
    if len(failures) < 50:
        failures.append(what)


def owner_of(sid):
    name = hashlib.sha256(b"execd resume v1\0" + sid.encode()).hexdigest()[:32]
    try:
        with open(os.path.join(state, "session-%s.pid" % name)) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class Client:
    def __init__(self, n, url):
        self.n = n
        self.url = url
        self.sid = None
        self.owner = None
        self.ws = None
        self.pending = {}
        self.next_id = 1
        self.stall_until = 0.0
        self.watch = {}         # processId -> notifications collected (back-pressure op)
        self.reader = None

    async def _reader(self, ws, pending):
        try:
            while True:
                if time.time() < self.stall_until:
                    await asyncio.sleep(0.05)
                    continue
                m = json.loads(await ws.recv())
                if "method" not in m and "id" in m:
                    fut = pending.pop(m["id"], None)
                    if fut is not None and not fut.done():
                        fut.set_result(m)
                elif m.get("method") in ("process/output", "process/exited",
                                         "process/closed") and \
                        m["params"].get("processId") in self.watch:
                    self.watch[m["params"]["processId"]].append(m)
        except Exception:
            pass
        if self.ws is ws:
            self.ws = None
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(Lost())
        pending.clear()

    async def _raw(self, ws, pending, method, params, timeout):
        i = self.next_id
        self.next_id += 1
        fut = asyncio.get_event_loop().create_future()
        pending[i] = fut
        try:
            await ws.send(json.dumps({"id": i, "method": method, "params": params}))
        except Exception:
            pending.pop(i, None)
            raise Lost()
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            pending.pop(i, None)
            raise Lost()

    def drop(self):
        if self.ws is not None:
            try:
                self.ws.transport.abort()
            except Exception:
                pass
        self.ws = None

    async def connect(self):
        """A new session, or the resume of ours; SessionGone when it is not there."""
        deadline = time.time() + 20
        while True:
            self.drop()
            try:
                ws = await websockets.connect(self.url, ping_interval=None, max_size=None,
                                              max_queue=4, close_timeout=0.5, open_timeout=10)
            except Exception as e:
                if time.time() > deadline:
                    raise RuntimeError("cannot connect: %r" % e)
                await asyncio.sleep(0.2)
                continue
            pending = {}
            self.stall_until = 0.0
            reader = asyncio.ensure_future(self._reader(ws, pending))
            params = {"clientName": "soak%d" % self.n}
            if self.sid:
                params["resumeSessionId"] = self.sid
            try:
                r = await self._raw(ws, pending, "initialize", params, 15)
            except Lost:
                ws.transport.abort()
                if time.time() > deadline:
                    raise SessionGone("no answer to initialize")
                continue
            err = r.get("error")
            if err and err.get("code") == -32010 and time.time() < deadline:
                # the owner has not seen the cut connection go yet
                ws.transport.abort()
                await asyncio.sleep(0.2)
                continue
            if err:
                ws.transport.abort()
                raise SessionGone(err)
            if self.sid and r["result"]["sessionId"] != self.sid:
                fail("client %d: resume answered another session" % self.n)
            await ws.send(json.dumps({"method": "initialized"}))
            self.ws, self.pending, self.reader = ws, pending, reader
            if self.sid:
                stats["resumes"] += 1
            else:
                self.sid = r["result"]["sessionId"]
                self.owner = owner_of(self.sid)
                stats["sessions"] += 1
            return

    async def call(self, method, params, timeout=30):
        """A call that survives cuts: reconnect, resume and ask again (all our
        calls are idempotent: writes carry a writeId, starts are judged)."""
        for _ in range(20):
            if self.ws is None:
                await self.connect()
            try:
                return await self._raw(self.ws, self.pending, method, params, timeout)
            except Lost:
                self.drop()
        raise SessionGone("20 reconnections in a row")

    async def cut(self, how=None):
        how = how or rng.choice(("rst", "fin"))
        ws = self.ws
        if ws is None:
            return
        stats["cuts"] += 1
        try:
            sock = ws.transport.get_extra_info("socket")
            if how == "rst":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                sock.shutdown(socket.SHUT_WR)
                await asyncio.sleep(0.1)
        except OSError:
            pass
        self.drop()

    async def start(self, pid, argv, **extra):
        params = {"processId": pid, "argv": argv, "cwd": "file://" + scratch, "env": ENV,
                  "tty": False}
        params.update(extra)
        r = await self.call("process/start", params)
        err = r.get("error", {})
        if "result" in r or "already exists" in err.get("message", ""):
            return True
        fail("client %d: start %s: %r" % (self.n, pid, err))
        return False

    async def read_all(self, pid, cut_at=None):
        """Every chunk by process/read from seq 0 until closed: {stream: bytes}, exit code."""
        out, after, t0 = {}, 0, time.time()
        while True:
            if cut_at is not None and time.time() - t0 > cut_at:
                cut_at = None
                await self.cut()
            r = await self.call("process/read", {"processId": pid, "afterSeq": after,
                                                 "waitMs": 1000})
            if "result" not in r:
                fail("client %d: read %s after %d: %r" % (self.n, pid, after, r.get("error")))
                return None, None
            res = r["result"]
            # (a gap in the seqs may be the exit's: the hash is what says all came)
            for c in res["chunks"]:
                data = base64.b64decode(c["chunk"])
                if corrupt_once[0] and data:
                    corrupt_once[0] = False
                    data = bytes([data[0] ^ 1]) + data[1:]
                out[c["stream"]] = out.get(c["stream"], b"") + data
                after = c["seq"]
            if res["closed"]:
                return out, res["exitCode"]
            if not res["chunks"] and res["exited"]:
                await asyncio.sleep(0.05)       # its output still on the way
            if time.time() - t0 > 60:
                fail("client %d: %s not closed after 60 s" % (self.n, pid))
                return None, None

    def check(self, what, got, want):
        if got != want:
            fail("client %d: %s: got %r, want %r" % (self.n, what, got if not isinstance(
                got, bytes) else hashlib.sha256(got).hexdigest()[:16] + "...%d" % len(got),
                want if not isinstance(want, bytes) else
                hashlib.sha256(want).hexdigest()[:16] + "...%d" % len(want)))
            return False
        return True

    # ---------------------------------------------------------------- operations
    async def op_stream(self, k):
        n, m, code = rng.randint(1, 40000), rng.randint(0, 20000), rng.randint(0, 5)
        pid = "s%d" % k
        if not await self.start(pid, ["sh", "-c", "seq 1 %d; seq 1 %d >&2; exit %d" %
                                      (n, m, code)]):
            return
        cut = rng.uniform(0, 1.0) if rng.random() < 0.3 else None
        out, rc = await self.read_all(pid, cut_at=cut)
        if out is None:
            return
        want_o = "".join("%d\n" % i for i in range(1, n + 1)).encode()
        want_e = "".join("%d\n" % i for i in range(1, m + 1)).encode()
        self.check("%s stdout" % pid, out.get("stdout", b""), want_o)
        self.check("%s stderr" % pid, out.get("stderr", b""), want_e)
        self.check("%s exit code" % pid, rc, code)
        stats["streams"] += 2
        stats["exit_codes"] += 1
        stats["stream_bytes"] += len(want_o) + len(want_e)

    async def op_stdin(self, k):
        data = os.urandom(rng.randint(1, 200000))
        pid = "i%d" % k
        if not await self.start(pid, ["sh", "-c", "head -c %d | sha256sum" % len(data)],
                                pipeStdin=True):
            return
        off, w = 0, 0
        while off < len(data):
            piece = data[off:off + rng.randint(1, 65536)]
            if rng.random() < 0.05:
                await self.cut()
            r = await self.call("process/write", {"processId": pid, "writeId": "w%d" % w,
                                                  "chunk": base64.b64encode(piece).decode()})
            if r.get("result", {}).get("status") != "accepted":
                fail("client %d: write %s: %r" % (self.n, pid, r))
                return
            off += len(piece)
            w += 1
        out, rc = await self.read_all(pid)
        if out is None:
            return
        self.check("%s stdin round trip" % pid, out.get("stdout", b""),
                   (hashlib.sha256(data).hexdigest() + "  -\n").encode())
        self.check("%s exit code" % pid, rc, 0)
        stats["stdin"] += 1
        stats["exit_codes"] += 1
        stats["stdin_bytes"] += len(data)

    async def op_fs(self, k):
        data = os.urandom(rng.randint(0, 512 * 1024))
        path = os.path.join(scratch, "c%d-%d" % (self.n, k))
        r = await self.call("fs/writeFile", {"path": "file://" + path,
                                             "dataBase64": base64.b64encode(data).decode()})
        if "result" not in r:
            fail("client %d: writeFile: %r" % (self.n, r.get("error")))
            return
        if rng.random() < 0.2:
            await self.cut()
        r = await self.call("fs/readFile", {"path": "file://" + path})
        if "result" not in r:
            fail("client %d: readFile: %r" % (self.n, r.get("error")))
            return
        self.check("file %s" % path, base64.b64decode(r["result"]["dataBase64"]), data)
        stats["files"] += 1
        stats["file_bytes"] += len(data)
        os.unlink(path)

    async def op_backpressure(self, k):
        """2 MB, more than the retention, through a reader that stops: nothing may
        be evicted, the notifications carry every byte (no cut in this one)."""
        pid = "b%d" % k
        self.watch[pid] = []
        n = 300000
        if not await self.start(pid, ["seq", "1", str(n)]):
            return
        gen = self.ws
        self.stall_until = time.time() + rng.uniform(0.5, 2.0)
        deadline = time.time() + 60
        while time.time() < deadline and self.ws is gen and not any(
                m["method"] == "process/closed" for m in self.watch[pid]):
            await asyncio.sleep(0.1)
        notes = self.watch.pop(pid)
        if self.ws is not gen:
            return              # its instance was killed meanwhile
        outs = sorted((m["params"]["seq"], base64.b64decode(m["params"]["chunk"]))
                      for m in notes if m["method"] == "process/output")
        text = b"".join(d for _, d in outs)
        want = "".join("%d\n" % i for i in range(1, n + 1)).encode()
        self.check("%s back-pressure output" % pid, text, want)
        ex = [m["params"]["exitCode"] for m in notes if m["method"] == "process/exited"]
        self.check("%s exit code" % pid, ex, [0])
        stats["backpressure"] += 1
        stats["exit_codes"] += 1
        stats["stream_bytes"] += len(want)

    async def op_congested_cut(self, k):
        pid, flood = "p%d" % k, "f%d" % k
        word, code = "done-%d-%d" % (self.n, k), rng.randint(1, 9)
        if not await self.start(pid, ["sh", "-c", "sleep 0.3; echo %s; exit %d" % (word, code)]):
            return
        if not await self.start(flood, ["head", "-c", "32M", "/dev/zero"]):
            return
        self.stall_until = time.time() + 10
        await asyncio.sleep(rng.uniform(1.0, 2.0))
        await self.cut()
        out, rc = await self.read_all(pid)
        if out is None or not self.check(
                "%s ended before a congested cut, read after the resume" % pid,
                (out.get("stdout", b""), rc), (("%s\n" % word).encode(), code)):
            stats["congested_lost"] += 1
        await self.call("process/terminate", {"processId": flood})
        stats["congested_cuts"] += 1
        stats["exit_codes"] += 1

    async def run(self, until):
        ops = [self.op_stream] * 4 + [self.op_stdin] * 2 + [self.op_fs] * 2 + \
            [self.op_backpressure, self.op_congested_cut]
        k = 0
        while time.time() < until:
            k += 1
            op = rng.choice(ops)
            try:
                if self.ws is None:
                    await self.connect()
                await op(k)
            except SessionGone as e:
                if self.owner in killed:
                    stats["sessions_lost_to_kills"] += 1
                else:
                    fail("client %d: session %s lost, its instance %s not killed: %s" %
                         (self.n, (self.sid or "")[:8], self.owner, e))
                self.drop()
                self.sid = self.owner = None
        # the end: a close handshake; the session waits out its TTL
        if self.ws is not None:
            try:
                await asyncio.wait_for(self.ws.close(), 3)
            except Exception:
                self.drop()


async def chaos(until):
    while KILL_EVERY > 0 and time.time() < until - KILL_EVERY:
        await asyncio.sleep(rng.uniform(0.5, 1.5) * KILL_EVERY)
        owners = []
        for f in os.listdir(state):
            if f.endswith(".pid"):
                try:
                    with open(os.path.join(state, f)) as fh:
                        owners.append(int(fh.read().split()[0]))
                except (OSError, ValueError, IndexError):
                    pass
        if owners:
            victim = rng.choice(owners)
            killed.add(victim)
            try:
                os.kill(victim, signal.SIGKILL)
                stats["kills"] += 1
            except OSError:
                pass


def tagged():
    """pids of processes started by this test (their environment holds TAG)"""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/environ" % d, "rb") as f:
                    if ("SOAK_TAG=" + TAG).encode() in f.read().split(b"\0"):
                        out.append(int(d))
            except OSError:
                pass
    return out


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def instances(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        return []
    return [k for k in kids if comm(k) != SPARE]


L = Listener(["--state-dir", state, "--resume-ttl-ms", str(TTL_MS), "--log", "none"])


async def warm_up():
    c = Client(-1, L.url)
    await c.connect()
    await c.op_fs(0)
    await c.ws.close()
asyncio.get_event_loop().run_until_complete(warm_up())
time.sleep(0.5)
rss0, fds0 = rss_kb(L.p.pid), nfds(L.p.pid)


async def soak():
    until = time.time() + SECONDS
    clients = [Client(i, L.url) for i in range(CLIENTS)]
    await asyncio.gather(chaos(until), *(c.run(until) for c in clients))
t0 = time.time()
asyncio.get_event_loop().run_until_complete(soak())
took = time.time() - t0
# the sessions wait out their TTL, then every instance and process ends
deadline = time.time() + TTL_MS / 1000 + 30
while time.time() < deadline and (instances(L.p.pid) or tagged() or os.listdir(state)):
    time.sleep(0.25)
left_inst, left_procs, left_files = instances(L.p.pid), tagged(), sorted(os.listdir(state))
rss1, fds1 = rss_kb(L.p.pid), nfds(L.p.pid)
alive = L.p.poll() is None
rc = L.stop()

print("# %.0f s: %s" % (took, json.dumps(stats, sort_keys=True)))
print("# listener: RSS %d -> %d KiB, %d -> %d descriptors" % (rss0, rss1, fds0, fds1))
for f in failures:
    print("# FAILURE: %s" % f)
t.ok(not failures, "%d clients for %.0f s: every byte of %d streams, %d stdin round trips, "
     "%d files, %d back-pressured streams checked by hash, %d exit codes" %
     (CLIENTS, took, stats["streams"], stats["stdin"], stats["files"], stats["backpressure"],
      stats["exit_codes"]), "%d failures" % len(failures))
t.ok(stats["congested_cuts"] > 0 and stats["congested_lost"] == 0,
     "%d congested cuts: the process that ended before each is read whole after the resume" %
     stats["congested_cuts"], "%d lost or incomplete" % stats["congested_lost"])
t.ok(not any("lost, its instance" in f for f in failures),
     "%d cuts, %d resumes: a session is lost only with its killed instance (%d of %d kills)" %
     (stats["cuts"], stats["resumes"], stats["sessions_lost_to_kills"], stats["kills"]))
t.ok(alive, "the listener kept serving")
t.eq(left_inst, [], "every instance has ended after the TTL")
t.eq(left_procs, [], "no process the test started is left (instances killed or not)")
t.eq(left_files, [], "the state directory is empty")
t.ok(fds1 == fds0, "the listener's descriptors: %d before, %d after" % (fds0, fds1))
t.ok(rss1 - rss0 < 2048, "the listener's RSS: %d KiB before, %d KiB after" % (rss0, rss1))
t.eq(rc, 0, "the listener exits 0 on SIGTERM")
for p in left_procs:
    try:
        os.kill(p, signal.SIGKILL)
    except OSError:
        pass
shutil.rmtree(state, ignore_errors=True)
shutil.rmtree(scratch, ignore_errors=True)
t.done()
