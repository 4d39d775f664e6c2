#!/usr/bin/python3
"""Floods from a client that does not read: execd applies back-pressure.

A WebSocket client sends 200,000 pings and reads nothing: execd's pong queue
stays bounded (it stops reading the socket), and once the client reads it is
answered.  A stdio client pipelines 60 fs/readFile of an 8 MiB file and reads
nothing: execd stops taking requests while its answers wait, and once the
client reads it gets all 60, complete and in order.
"""
import base64
import hashlib
import os
import select
import shutil
import tempfile
import time

from execd_client import Execd, tap
from faultlib import FaultListener, PidDir, RawWS, no_resume_args
from wsclient import frame

# a guard against a hang only: every wait below ends as soon as its event comes
t = tap(timeout=900)
SAN = bool(os.environ.get("EXECD_SANITIZERS"))
PINGS = int(os.environ.get("FLOOD_PINGS", 200000))
PING_RSS_MAX_KB = 24 * 1024
# 60 answers of 8 MiB (11 MiB of JSON each) held at once would be three times
# READ_HWM_MAX_KB; more only made the test take minutes on a loaded machine,
# where every 64 KiB of the answers waits its turn on the CPU
READS = 60
# Under the sanitizers memory is not measured, and their base64 is slow: a
# smaller file still shows every answer arriving, whole and in order
FILE_SIZE = (1 if SAN else 8) << 20
STALL = 60      # seconds without progress that fail a wait
READ_HWM_MAX_KB = 200 * 1024


def status_kb(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def memory_check(kb, bound, desc):
    if SAN:
        t.skip(desc, "RSS means nothing under the sanitizers (%d KiB)" % kb)
    else:
        t.ok(kb < bound, "%s (%d KiB)" % (desc, kb))


def settle(pid, bound, timeout):
    """VmHWM once it stops growing (or passes bound, or timeout passes)."""
    deadline = time.time() + timeout
    last, since = -1, time.time()
    while time.time() < deadline:
        hwm = status_kb(pid, "VmHWM")
        if hwm != last:
            last, since = hwm, time.time()
        elif time.time() - since > 2:
            break
        if hwm >= bound:
            break
        time.sleep(0.1)
    return status_kb(pid, "VmHWM")


def ping_flood():
    pd = PidDir()
    L = FaultListener(no_resume_args(pd.path))
    try:
        ws = RawWS(L.host, L.port, L.token)
        inst = L.new_instance([])
        ws.initialize()
        # nothing read from here on: the pongs have nowhere to go but execd's memory
        data = frame(b"p" * 125, opcode=9) * PINGS
        ws.s.setblocking(False)
        sent, deadline = 0, time.time() + 20
        while sent < len(data) and time.time() < deadline:
            _, w, _ = select.select([], [ws.s], [], 0.2)
            if w:
                try:
                    sent += ws.s.send(data[sent:sent + 65536])
                except BlockingIOError:
                    pass
        peak = settle(inst, PING_RSS_MAX_KB, 5) if inst else 0
        t.ok(inst is not None, "the instance serving the flood is found")
        memory_check(peak, PING_RSS_MAX_KB,
                     "%d pings not read: execd's memory stays bounded (%d of %d bytes taken)"
                     % (PINGS, sent, len(data)))
        # now read (and send what execd had not taken): it still answers; a
        # failure is execd taking nothing more for STALL seconds, however long
        # the whole takes on a loaded machine
        ws.s.setblocking(True)
        ws.s.settimeout(30)
        progress = time.time()
        while sent < len(data) and time.time() - progress < STALL:
            r, w, _ = select.select([ws.s], [ws.s], [], 0.5)
            if r:
                ws._pump(0)
            if w:
                ws.s.setblocking(False)
                try:
                    n = ws.s.send(data[sent:sent + 65536])
                    sent += n
                    progress = time.time() if n else progress
                except BlockingIOError:
                    pass
                ws.s.setblocking(True)
        t.eq(sent, len(data), "every ping is taken once the client reads")
        try:
            r = ws.call("environment/status", timeout=60)
        except (TimeoutError, OSError) as e:
            r = {"error": str(e)}
        t.eq(r.get("result"), {"status": "ready"}, "and execd answers a request after them")
        ws.close()
    finally:
        L.stop()
        pd.cleanup()


def read_flood():
    root = tempfile.mkdtemp(prefix="execd-flood.", dir="/tmp")
    path = os.path.join(root, "big")
    content = os.urandom(FILE_SIZE)
    with open(path, "wb") as f:
        f.write(content)
    want = hashlib.sha256(content).hexdigest()
    c = Execd()
    try:
        ids = [c.request("fs/readFile", {"path": "file://" + path}) for _ in range(READS)]
        peak = settle(c.pid, READ_HWM_MAX_KB, 60)
        memory_check(peak, READ_HWM_MAX_KB,
                     "%d fs/readFile of %d MiB pipelined, none read: execd's VmHWM stays bounded"
                     % (READS, FILE_SIZE >> 20))
        got, in_order, whole = 0, True, True
        for id in ids:
            try:
                r = c.wait_response(id, timeout=STALL)
            except TimeoutError:
                break
            # in arrival order, the answers still held must all be to later requests
            in_order = in_order and all(k > id for k in c.responses if isinstance(k, int))
            got += 1
            data = r.get("result", {}).get("dataBase64")
            if data is None or hashlib.sha256(base64.b64decode(data)).hexdigest() != want:
                whole = False
        t.eq(got, READS, "then every answer arrives")
        t.ok(in_order, "in the order of the requests")
        t.ok(whole, "each the whole file")
        t.eq(c.call("environment/status").get("result"), {"status": "ready"}, "execd serves on")
        t.eq(c.close(), 0, "execd exits 0 on EOF")
    finally:
        if c.p.poll() is None:
            c.kill()
        shutil.rmtree(root, ignore_errors=True)


ping_flood()
read_flood()
t.done()
