"""process/* methods over the stdio transport: every method and error path."""
import hashlib
import os
import signal
import tempfile
import time

from execd_client import Execd, b64, unb64, tap, pid_alive

# a guard against a hang: the waits below end when their events come, and a
# loaded machine running the sanitizer build takes minutes over this file
t = tap(timeout=600)
SAN = bool(os.environ.get("EXECD_SANITIZERS"))
tmp = tempfile.mkdtemp(prefix="execd-proc.")
c = Execd(["--kill-grace-ms", "300"])

# start, output, exited, closed: one seq counter without gaps
r = c.start("a", ["sh", "-c", "echo out; echo err 1>&2; exit 3"])
t.eq(r.get("result"), {"processId": "a", "sandboxType": "none"}, "process/start result")
out, code, seqs = c.collect("a")
t.eq((out.get("stdout"), out.get("stderr"), code), (b"out\n", b"err\n", 3), "stdout, stderr, exit code")
t.eq(sorted(seqs), list(range(1, len(seqs) + 1)), "seq numbers run from 1 without gaps")

# process/read: afterSeq, maxBytes, nextSeq
r = c.call("process/read", {"processId": "a", "afterSeq": 0})["result"]
t.eq((len(r["chunks"]), r["nextSeq"], r["exited"], r["exitCode"], r["closed"], r["failure"]),
     (2, 5, True, 3, True, None), "process/read of a closed process")
r = c.call("process/read", {"processId": "a", "afterSeq": 0, "maxBytes": 1})["result"]
t.eq((len(r["chunks"]), r["nextSeq"]), (1, r["chunks"][0]["seq"] + 1), "maxBytes 1 returns one chunk")
r = c.call("process/read", {"processId": "a", "afterSeq": 4, "waitMs": 5000})["result"]
t.eq(r["chunks"], [], "read past the end of a closed process returns at once")
r = c.call("process/read", {"processId": "nope"})
t.eq(r.get("error"), {"code": -32600, "message": "unknown process id nope"}, "read of an unknown id")
r = c.call("process/read", {"processId": "a", "afterSeq": -1})
t.eq(r.get("error", {}).get("code"), -32602, "negative afterSeq is invalid params")
r = c.call("process/read", {})
t.eq(r.get("error"), {"code": -32602, "message": "missing field `processId`"}, "read without processId")

# long-poll: a read waits for output
c.start("slow", ["sh", "-c", "sleep 0.3; echo late"])
t0 = time.time()
r = c.call("process/read", {"processId": "slow", "afterSeq": 0, "waitMs": 5000})["result"]
t.ok(r["chunks"] and unb64(r["chunks"][0]["chunk"]) == b"late\n" and time.time() - t0 >= 0.2,
     "long-poll read returns when output arrives", r)
t0 = time.time()
c.start("quiet", ["sleep", "5"])
r = c.call("process/read", {"processId": "quiet", "afterSeq": 0, "waitMs": 300})["result"]
t.ok(r["chunks"] == [] and 0.25 <= time.time() - t0 < 3, "long-poll read times out after waitMs")
c.call("process/terminate", {"processId": "quiet"})
c.collect("slow")
c.collect("quiet")

# errors of process/start
r = c.start("a", ["true"])
t.eq(r.get("error"), {"code": -32600, "message": "process a already exists"}, "duplicate processId")
r = c.start("e1", [])
t.eq(r.get("error"), {"code": -32602, "message": "argv must not be empty"}, "empty argv")
r = c.start("e2", ["true"], cwd="/tmp")
t.eq(r.get("error"), {"code": -32602, "message": "invalid URI: relative URL without a base"}, "bare path cwd")
r = c.start("e3", ["true"], cwd="file:///nonexistent/dir")
NOT_FOUND = {"code": -32603, "message": "No such file or directory (os error 2)",
             "data": {"kind": "spawnNotFound"}}
t.eq(r.get("error"), NOT_FOUND, "missing cwd (error.data.kind spawnNotFound, as 0.171.0)")
r = c.start("e4", ["/nonexistent/prog"])
t.eq(r.get("error"), NOT_FOUND, "missing program")
r = c.start("e4a", ["/etc/passwd"])
t.eq(r.get("error"), {"code": -32603, "message": "Permission denied (os error 13)",
                      "data": {"kind": "spawnPermissionDenied"}}, "a program not executable")
r = c.start("e4b", ["true"], cwd="file:///etc/passwd")
t.eq(r.get("error"), {"code": -32603, "message": "Not a directory (os error 20)",
                      "data": {"kind": "spawnFailed"}}, "a cwd that is a file: spawnFailed")
r = c.start("e4c", ["true", "x" * 200000] * 20)
t.eq(r.get("error"), {"code": -32603, "message": "Argument list too long (os error 7)",
                      "data": {"kind": "spawnFailed"}}, "E2BIG: spawnFailed")
r = c.start("e4d", ["nonexistent-prog-xyz"], tty=True, env={"PATH": "/usr/bin:/bin"})
t.eq((r.get("error") or {}).get("data"), {"kind": "spawnFailed"},
     "a PTY program not found on PATH: spawnFailed (words, no OS error)")
r = c.start("e5", ["true", 5])
t.eq(r.get("error"), {"code": -32602, "message": "invalid type: number, expected a string"}, "non-string argv")
r = c.call("process/start", {"processId": "e6", "argv": ["true"], "cwd": "file:///tmp", "env": {}})
t.eq(r.get("error"), {"code": -32602, "message": "missing field `tty`"}, "missing tty")
r = c.start("e7", ["true"], env={"A": 5})
t.eq(r.get("error", {}).get("code"), -32602, "non-string env value")
r = c.start("e7b", ["true"], pipeStdin=None)
t.eq(r.get("error"), {"code": -32602, "message": "invalid type: null, expected a boolean"},
     "pipeStdin may be absent but not null")
r = c.start("e8", ["/bin/true"])
t.ok("result" in r, "a failed start released nothing: a new id still starts")
c.collect("e8")

# env exactly as given, cwd, arg0
c.start("env", ["/usr/bin/env"], env={"ONLY": "this"}, cwd="file://" + tmp)
out, code, _ = c.collect("env")
t.eq(out.get("stdout"), b"ONLY=this\n", "the child's environment is exactly env")
c.start("cwd", ["/bin/pwd"], cwd="file://" + tmp + "/./")
out, _, _ = c.collect("cwd")
t.eq(out.get("stdout"), (tmp + "\n").encode(), "cwd from a file:// URI")
c.start("arg0", ["/bin/sh", "-c", "echo $0"], arg0="custom-name")
out, _, _ = c.collect("arg0")
t.eq(out.get("stdout"), b"custom-name\n", "arg0 is the child's argv[0]")

# stdin: pipeStdin, writeId de-duplication, non-stdin processes
c.start("cat", ["cat"], pipeStdin=True)
r = c.call("process/write", {"processId": "cat", "chunk": b64("hello\n"), "writeId": "w1"})
t.eq(r.get("result"), {"status": "accepted"}, "write accepted")
r = c.call("process/write", {"processId": "cat", "chunk": b64("hello\n"), "writeId": "w1"})
t.eq(r.get("result"), {"status": "accepted"}, "repeated writeId accepted")
c.call("process/write", {"processId": "cat", "chunk": b64("again\n"), "writeId": "w2"})
p = c.wait_notification("process/output", lambda p: p["processId"] == "cat" and b"again" in unb64(p["chunk"]) or unb64(p["chunk"]) == b"hello\nagain\n")
r = c.call("process/read", {"processId": "cat", "afterSeq": 0})["result"]
data = b"".join(unb64(ch["chunk"]) for ch in r["chunks"])
t.eq(data, b"hello\nagain\n", "a repeated writeId is written once")
r = c.call("process/write", {"processId": "cat", "chunk": "!!!", "writeId": "w3"})
t.eq(r.get("error"), {"code": -32602, "message": "Invalid symbol 33, offset 0."}, "bad base64 chunk")
r = c.call("process/write", {"processId": "cat", "chunk": "", "writeId": ""})
t.eq(r.get("error"), {"code": -32602, "message": "writeId must not be empty"}, "empty writeId")
r = c.call("process/write", {"processId": "cat", "chunk": ""})
t.eq(r.get("error"), {"code": -32602, "message": "missing field `writeId`"}, "missing writeId")
r = c.call("process/write", {"processId": "zz", "chunk": "aGkK", "writeId": "w1"})
t.eq(r.get("result"), {"status": "unknownProcess"}, "write to an unknown process")
c.start("nostdin", ["sleep", "5"])
r = c.call("process/write", {"processId": "nostdin", "chunk": "aGkK", "writeId": "w1"})
t.eq(r.get("result"), {"status": "stdinClosed"}, "write to a process without stdin")
c.call("process/terminate", {"processId": "nostdin"})
c.call("process/terminate", {"processId": "cat"})
c.collect("cat")
c.collect("nostdin")
r = c.call("process/write", {"processId": "cat", "chunk": "aGkK", "writeId": "w9"})
t.eq(r.get("error"), {"code": -32603, "message": "failed to write to process stdin"},
     "write after terminate")
c.start("self", ["true"], pipeStdin=True)
c.collect("self")
r = c.call("process/write", {"processId": "self", "chunk": "aGkK", "writeId": "w1"})
t.eq(r.get("result"), {"status": "accepted"}, "write after the process ended by itself")

# signal and terminate
c.start("int", ["sleep", "30"])
r = c.call("process/signal", {"processId": "int", "signal": "interrupt"})
t.eq(r.get("result"), {}, "process/signal interrupt")
_, code, _ = c.collect("int")
t.eq(code, 130, "SIGINT gives exit code 130")
r = c.call("process/signal", {"processId": "int", "signal": "kill"})
t.eq(r.get("error"), {"code": -32602, "message": "unknown variant `kill`, expected `interrupt`"}, "unknown signal")
c.start("term", ["sleep", "30"])
r = c.call("process/terminate", {"processId": "term"})
t.eq(r.get("result"), {"running": True}, "terminate a running process")
_, code, _ = c.collect("term")
t.eq(code, 143, "terminate sends SIGTERM first")
r = c.call("process/terminate", {"processId": "term"})
t.eq(r.get("result"), {"running": False}, "terminate a finished process")
r = c.call("process/terminate", {"processId": "never"})
t.eq(r.get("result"), {"running": False}, "terminate an unknown process")
c.start("stubborn", ["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"])
c.wait_notification("process/output", lambda p: p["processId"] == "stubborn")
t0 = time.time()
c.call("process/terminate", {"processId": "stubborn"})
_, code, _ = c.collect("stubborn")
t.ok(code == 137 and time.time() - t0 >= 0.25, "a child ignoring SIGTERM is killed after the grace period", code)
c.start("group", ["sh", "-c", "sleep 60 & echo $!; wait"])
p = c.wait_notification("process/output", lambda p: p["processId"] == "group")
bg = int(unb64(p["chunk"]).split()[0])
c.call("process/terminate", {"processId": "group"})
c.collect("group")
time.sleep(0.2)
t.ok(not pid_alive(bg), "terminate kills the whole process group")

# PTY
c.start("tty", ["sh", "-c", "tty; stty size; read x; echo got:$x"], tty=True)
got = b""
streams = set()
deadline = time.time() + 10
while b"24 80" not in got and time.time() < deadline:
    p = c.wait_notification("process/output", lambda p: p["processId"] == "tty")
    streams.add(p["stream"])
    got += unb64(p["chunk"])
t.eq(streams, {"pty"}, "PTY output is stream pty")
t.ok(b"/dev/pts/" in got and b"24 80" in got, "a PTY of 24x80", got)
c.call("process/write", {"processId": "tty", "chunk": b64("abc\n"), "writeId": "1"})
out, code, _ = c.collect("tty")
t.ok(b"got:abc" in out.get("pty", b"") and code == 0, "PTY input reaches the child", out)

# 64 MiB burst read back byte-exact
blob = os.path.join(tmp, "blob")
with open(blob, "wb") as f:
    f.write(os.urandom(64 << 20))
want = hashlib.sha256(open(blob, "rb").read()).hexdigest()
c.start("burst", ["cat", blob])
out, code, seqs = c.collect("burst", timeout=120)
data = out.get("stdout", b"")
t.ok(len(data) == 64 << 20 and hashlib.sha256(data).hexdigest() == want,
     "a 64 MiB burst arrives byte-exact", len(data))
t.eq(sorted(seqs), list(range(1, len(seqs) + 1)), "64 MiB burst: no seq gap")
r = c.call("process/read", {"processId": "burst", "afterSeq": 0})["result"]
kept = sum(len(unb64(ch["chunk"])) for ch in r["chunks"])
t.ok(r["chunks"][0]["seq"] > 1 and kept <= 1 << 20,
     "retention is bounded and what was evicted shows as a seq gap", (r["chunks"][0]["seq"], kept))

# 200 processes started and reaped
for i in range(200):
    c.request("process/start", {"processId": "many%d" % i, "argv": ["/bin/true"],
                                "cwd": "file:///tmp", "env": {}, "tty": False})
ok = 0
for i in range(200):
    try:
        c.collect("many%d" % i, timeout=60)
        ok += 1
    except TimeoutError:
        break
t.eq(ok, 200, "200 processes started and closed")
time.sleep(0.3)
t.eq(c.children(), [], "no child left unreaped")

# back-pressure: a client that stops reading does not grow execd's memory
# 256 MiB against a 96 MiB bound; under the sanitizers, where memory is not
# measured, 64 MiB still shows nothing lost, in a quarter of the time
FLOOD_BYTES = (64 if SAN else 256) << 20
c.start("flood", ["sh", "-c", "head -c %d /dev/zero" % FLOOD_BYTES])
time.sleep(2)
with open("/proc/%d/status" % c.pid) as f:
    rss = [int(l.split()[1]) for l in f if l.startswith("VmRSS:")][0]
if SAN:
    t.skip("a slow client applies back-pressure", "RSS means nothing under ASan (%d KiB)" % rss)
else:
    t.ok(rss < 96 * 1024, "a slow client applies back-pressure (execd RSS %d KiB)" % rss)
out, code, _ = c.collect("flood", timeout=300)
t.eq(len(out.get("stdout", b"")), FLOOD_BYTES, "and nothing is lost once it reads again")

rc = c.close()
t.eq(rc, 0, "execd exits 0 on EOF")

# the client closing with processes running
c = Execd()
c.start("orphan", ["sh", "-c", "sleep 100 & echo $!; sleep 100"])
p = c.wait_notification("process/output", lambda p: p["processId"] == "orphan")
bg = int(unb64(p["chunk"]).split()[0])
c.start("daemon", ["sh", "-c", "setsid sleep 100 & echo $!"])
p = c.wait_notification("process/output", lambda p: p["processId"] == "daemon")
escaped = int(unb64(p["chunk"]).split()[0])
kids = c.children()
rc = c.close()
time.sleep(0.2)
t.eq(rc, 0, "EOF with processes running: execd exits")
t.ok(kids and not pid_alive(bg) and all(not pid_alive(k) for k in kids),
     "their process groups are killed", kids)
t.ok(not pid_alive(escaped), "a child that left its group is killed too")

# the client vanishing mid-read (a long-poll pending)
c = Execd()
c.start("s", ["sleep", "100"])
kids = c.children()
c.request("process/read", {"processId": "s", "afterSeq": 0, "waitMs": 60000})
time.sleep(0.2)
c.p.stdout.close()
c.p.stdin.close()
try:
    rc = c.p.wait(10)
except Exception:
    rc = None
    c.kill()
time.sleep(0.2)
# kids must hold the sleep: an empty list would make the check below vacuous
t.ok(rc is not None and kids and all(not pid_alive(k) for k in kids),
     "client gone mid-read: no orphan", (rc, kids))

# malformed input and oversized messages
c = Execd(["--max-message", "65536"])
c.send_raw("not json\n")
r = c.wait_response(-1)
t.eq(r["error"]["code"], -32600, "malformed JSON: -32600 with id -1")
r = c.call("nope/nope", {})
t.eq(r.get("error"), {"code": -32601, "message": "exec-server stub does not implement `nope/nope` yet"}, "unknown method")
c.send_raw('{"id":5,"method":"process/read","params":{"processId":"' + "x" * 70000 + '"}}\n')
rc = c.p.wait(10)
t.eq(rc, 0, "a message over --max-message closes the connection")

t.done()
