#!/usr/bin/python3
"""Benchmarks of the fs methods, execd beside the reference.

  BENCHES: (name, unit, fn, reps, quick_reps, higher_is_better) tuples with
      fn(server, reps) -> [samples], for tests/bench/bench.py's table
      (BENCHES += [Bench(*b) for b in bench_fs.BENCHES]).
  python3 tests/bench/fs.py [--quick] [--markdown]
      runs just these rows through tests/bench/bench.py's runner.

Rows: fs/readFile and fs/writeFile throughput, fs/readDirectory of 10,000
entries, and the peak RSS (VmHWM) of a server that answered one fs/readFile
of 256 MiB.  The clock runs from the request's first byte written to the
answer's last byte read: serialising and parsing JSON in the client is
outside it.  fs/writeFile carries 47 MiB, about the most that fits in the
reference's 64 MiB message limit once base64-encoded and framed.
"""

import base64
import json
import os
import select
import sys
import time

MiB = 1 << 20


def _fixture(server, name, size):
    """A file of `size` random-ish bytes in the server's scratch directory, made once."""
    path = os.path.join(server.cwd, name)
    if not os.path.exists(path) or os.path.getsize(path) != size:
        block = os.urandom(MiB)
        with open(path, "wb") as f:
            for _ in range(size // MiB):
                f.write(block)
    return path


def _exchange(conn, line, rid, timeout=300):
    """Send one framed request (bytes, made before the clock starts) and read its
    answer without quadratic copying.  Returns (seconds from the first byte sent
    to the last byte of the answer read, the answer's raw line): the client's
    JSON work is outside the time."""
    fd = conn.p.stdout.fileno()
    buf = bytearray(b"".join(conn.parts) + conn.buf[conn.pos:])
    conn.buf, conn.pos, conn.parts = b"", 0, []
    t = time.monotonic()
    conn.p.stdin.write(line)
    conn.p.stdin.flush()
    deadline = t + timeout
    start = 0
    while True:
        i = buf.find(b"\n", start)
        if i >= 0:
            dt = time.monotonic() - t
            head = bytes(buf[:64])
            if b'"id":%d' % rid in head or head.startswith(b'{"error"'):
                conn.buf = bytes(buf[i + 1:])
                del buf[i:]
                return dt, buf
            del buf[:i + 1]
            start = 0
            continue
        start = len(buf)
        rem = deadline - time.monotonic()
        if rem <= 0:
            raise RuntimeError("timed out")
        r, _, _ = select.select([fd], [], [], rem)
        if r:
            d = os.read(fd, 16 * MiB)
            if not d:
                raise EOFError("server closed stdout")
            buf += d


def _frame(conn, method, params_json):
    """The request line for params already serialised (bytes), and its id."""
    conn.nid += 1
    return (b'{"id":%d,"method":"%s","params":%s}\n' % (conn.nid, method.encode(), params_json),
            conn.nid)


def _call_big(conn, method, params, timeout=300):
    """One request whose answer may be hundreds of MiB, its answer parsed."""
    line, rid = _frame(conn, method, json.dumps(params).encode())
    return json.loads(_exchange(conn, line, rid, timeout)[1])


def bench_read_file(server, reps, size=64 * MiB):
    """fs/readFile of a 64 MiB file, request sent to the answer's last byte read (MB/s)"""
    path = _fixture(server, "read64.bin", size)
    out = []
    for _ in range(reps):
        c = server.spawn()
        c.initialize()
        try:
            line, rid = _frame(c, "fs/readFile", json.dumps({"path": "file://" + path}).encode())
            dt, ans = _exchange(c, line, rid)
            r = json.loads(ans)
            if "result" not in r or len(base64.b64decode(r["result"]["dataBase64"])) != size:
                raise RuntimeError("bad answer: %.200r" % r)
            out.append(size / 1e6 / dt)
        finally:
            c.close()
    return out


def bench_write_file(server, reps, size=47 * MiB):
    """fs/writeFile of 47 MiB, request's first byte sent to the answer read (MB/s)"""
    path = os.path.join(server.cwd, "write48.bin")
    params = json.dumps({"path": "file://" + path,
                         "dataBase64": base64.b64encode(os.urandom(MiB) * (size // MiB)).decode()},
                        separators=(",", ":")).encode()
    out = []
    for _ in range(reps):
        c = server.spawn()
        c.initialize()
        try:
            line, rid = _frame(c, "fs/writeFile", params)
            dt, ans = _exchange(c, line, rid, timeout=120)
            if b'"result"' not in ans:
                raise RuntimeError("bad answer: %.200r" % bytes(ans))
            out.append(size / 1e6 / dt)
            if os.path.getsize(path) != size:
                raise RuntimeError("wrote %d bytes" % os.path.getsize(path))
        finally:
            c.close()
    os.unlink(path)
    return out


def bench_read_directory(server, reps, n=10000):
    """fs/readDirectory of a directory of 10,000 files (ms)"""
    d = os.path.join(server.cwd, "dir10k")
    if not os.path.isdir(d):
        os.mkdir(d)
        for i in range(n):
            open(os.path.join(d, "file-%05d" % i), "w").close()
    c = server.spawn()
    c.initialize()
    out = []
    try:
        for i in range(reps + 1):
            t = time.monotonic()
            r = c.request("fs/readDirectory", {"path": "file://" + d}, timeout=60)
            if i > 0:               # the first one warms the dentry cache
                out.append((time.monotonic() - t) * 1000)
            if len(r["entries"]) != n:
                raise RuntimeError("%d entries" % len(r["entries"]))
    finally:
        c.close()
    return out


def _vmhwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmHWM")


def bench_read_rss(server, reps, size=256 * MiB):
    """peak RSS (VmHWM) after one fs/readFile of 256 MiB (MiB)"""
    path = _fixture(server, "read256.bin", size)
    out = []
    for _ in range(reps):
        c = server.spawn()
        c.initialize()
        try:
            r = _call_big(c, "fs/readFile", {"path": "file://" + path})
            if "result" not in r:
                raise RuntimeError("bad answer: %.200r" % r)
            del r
            c.request("environment/status")
            out.append(_vmhwm(c.p.pid))
        finally:
            c.close()
    return out


BENCHES = [
    ("fs/readFile 64 MiB", "MB/s", bench_read_file, 5, 1, True),
    ("fs/writeFile 47 MiB", "MB/s", bench_write_file, 5, 1, True),
    ("fs/readDirectory 10,000 entries", "ms", bench_read_directory, 20, 3, False),
    ("peak RSS after fs/readFile 256 MiB (VmHWM)", "MiB", bench_read_rss, 3, 1, False),
]


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench
    bench.BENCHES = [bench.Bench(*b) for b in BENCHES]
    sys.exit(bench.main(sys.argv[1:]))
