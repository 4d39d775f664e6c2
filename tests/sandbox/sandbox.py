"""Process sandboxing: each limit proven from inside a sandboxed child.

The seccomp part needs nothing but seccomp filters and runs anywhere
(unprivileged CI included); the filesystem part needs Landlock (or, with
EXECD_SANDBOX_DISABLE=landlock-fs, mount namespaces), denied paths inside
granted ones and the managed network need mount/network namespaces.  What
the kernel lacks is skipped, naming the feature.
"""
import ctypes
import errno
import http.server
import json
import os
import platform
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
import time

from execd_client import Execd, b64, tap

t = tap(timeout=180)
tmp = tempfile.mkdtemp(prefix="execd-sbx.")
os.chmod(tmp, 0o755)
W, W2, R, D, O = (os.path.join(tmp, n) for n in ("w", "w2", "r", "d", "o"))
for d in (W, W2, R, D, O, os.path.join(W, ".git")):
    os.makedirs(d)
for f, data in ((os.path.join(R, "file"), "readable\n"), (os.path.join(D, "secret"), "secret\n"),
                (os.path.join(O, "file"), "outside\n")):
    with open(f, "w") as fp:
        fp.write(data)

# ---------------------------------------------------------------- features

def has_seccomp():
    with open("/proc/self/status") as f:
        return any(l.startswith("Seccomp:") for l in f)


def landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    nr = {"x86_64": 444, "aarch64": 444}.get(platform.machine())
    if nr is None:
        return 0
    libc.syscall.restype = ctypes.c_long
    return max(0, libc.syscall(nr, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))


def has_namespaces():
    cmd = ["unshare", "--mount", "--net", "true"]
    if os.geteuid() != 0:
        cmd[1:1] = ["--user", "--map-root-user"]
    try:
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


SECCOMP = has_seccomp()
LANDLOCK = landlock_abi()
NS = has_namespaces()
CURL = shutil.which("curl")
print("# seccomp %s, Landlock ABI %d, namespaces %s, curl %s" % (SECCOMP, LANDLOCK, NS, CURL))
if not SECCOMP:
    print("1..0 # SKIP this kernel has no seccomp (CONFIG_SECCOMP)")
    raise SystemExit(0)

# ---------------------------------------------------------------- helpers

# Run inside the child: one line per "op:arg", OK or the errno's name.
PROBE = r'''
import ctypes, errno, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"x86_64": {"keyctl": 250, "add_key": 248, "bpf": 321, "perf_event_open": 298,
                 "init_module": 175, "kexec_load": 246, "process_vm_readv": 310,
                 "mount": 165, "io_uring_setup": 425, "userfaultfd": 323},
      "aarch64": {"keyctl": 219, "add_key": 217, "bpf": 280, "perf_event_open": 241,
                  "init_module": 105, "kexec_load": 104, "process_vm_readv": 270,
                  "mount": 40, "io_uring_setup": 425, "userfaultfd": 282}}
nr = NR.get(os.uname().machine, {})
FAM = {"inet": socket.AF_INET, "inet6": socket.AF_INET6, "unix": socket.AF_UNIX,
       "netlink": socket.AF_NETLINK}
for spec in sys.argv[1:]:
    op, _, arg = spec.partition(":")
    try:
        if op == "write":
            with open(arg, "w") as f:
                f.write("x")
        elif op == "read":
            open(arg).read()
        elif op == "list":
            os.listdir(arg)
        elif op == "mkdir":
            os.mkdir(arg)
        elif op == "rmdir":
            os.rmdir(arg)
        elif op == "rename":
            src, _, dst = arg.partition(">")
            os.rename(src, dst)
        elif op == "socket":
            socket.socket(FAM[arg], socket.SOCK_DGRAM if arg == "netlink" else socket.SOCK_STREAM).close()
        elif op == "ptrace":
            if libc.ptrace(0, 0, 0, 0) == -1:
                raise OSError(ctypes.get_errno(), "ptrace")
        elif op == "syscall":
            if arg not in nr:
                print("NOSYS-TABLE")
                continue
            if libc.syscall(nr[arg], 0, 0, 0, 0, 0, 0) == -1:
                raise OSError(ctypes.get_errno(), arg)
        elif op == "status":
            with open("/proc/self/status") as f:
                st = dict(l.split()[:2] for l in f if len(l.split()) >= 2)
            print(st["NoNewPrivs:"], st["Seccomp:"], st["CapEff:"])
            continue
        print("OK")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
'''

root_read = {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}
minimal = {"path": {"type": "special", "value": {"kind": "minimal"}}, "access": "read"}


def path_entry(p, access):
    return {"path": {"type": "path", "path": "file://" + p}, "access": access}


def restricted(entries, network="restricted"):
    return {"permissions": {"type": "managed", "network": network,
                            "file_system": {"type": "restricted", "entries": entries}},
            "windowsSandboxLevel": "disabled", "cwd": "file://" + W}


def external(network):
    return {"permissions": {"type": "external", "network": network},
            "windowsSandboxLevel": "disabled", "cwd": "file://" + W}


counter = [0]


def run(c, argv, sandbox, env=None, **extra):
    """(start response, stdout+stderr text, exited params) or (response, None, None)."""
    counter[0] += 1
    pid = "p%d" % counter[0]
    params = {"processId": pid, "argv": argv, "cwd": "file://" + W,
              "env": env if env is not None else {"PATH": "/usr/bin:/bin"}, "tty": False}
    if sandbox is not None:
        params["sandbox"] = sandbox
    params.update(extra)
    r = c.call("process/start", params)
    if "error" in r:
        return r, None, None
    out, exited = b"", None
    deadline = time.time() + 30
    while True:
        closed = False
        for n in [n for n in c.notifications if n["params"].get("processId") == pid]:
            c.notifications.remove(n)
            if n["method"] == "process/output":
                out += __import__("base64").b64decode(n["params"]["chunk"])
            elif n["method"] == "process/exited":
                exited = n["params"]
            elif n["method"] == "process/closed":
                closed = True
        if closed:
            return r, out.decode(errors="replace"), exited
        if not c._pump(deadline - time.time()) and time.time() >= deadline:
            raise TimeoutError(pid)


def probe(c, sandbox, *ops, **extra):
    r, out, _ = run(c, ["python3", "-c", PROBE] + list(ops), sandbox, **extra)
    if out is None:
        return r, None
    return r, out.split()


REFUSAL = {"code": -32600, "message": "sandbox intent cannot be enforced on this executor"}
DENIED = ("EACCES", "EPERM", "EROFS")


class Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from loopback")

    def log_message(self, *a):
        pass


class ForwardProxy(socketserver.BaseRequestHandler):
    """Just enough of an HTTP forward proxy for `curl -x`: absolute-form GET."""

    def handle(self):
        data = b""
        while b"\r\n\r\n" not in data:
            d = self.request.recv(4096)
            if not d:
                return
            data += d
        method, url, _ = data.split(b"\r\n", 1)[0].split(b" ")
        hostport, _, path = url.split(b"//", 1)[1].partition(b"/")
        host, _, port = hostport.partition(b":")
        up = socket.create_connection((host.decode(), int(port or 80)))
        up.sendall(data.replace(url, b"/" + path, 1))
        while True:
            d = up.recv(4096)
            if not d:
                break
            self.request.sendall(d)
        up.close()


class ThreadingTCP(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True


def serve(handler):
    s = ThreadingTCP(("127.0.0.1", 0), handler)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s

web = serve(Quiet)
proxy = serve(ForwardProxy)
WEB = "http://127.0.0.1:%d/" % web.server_address[1]
PROXY = "http://127.0.0.1:%d" % proxy.server_address[1]

# ---------------------------------------------------------------- types and errors

c = Execd()
r, plain = probe(c, None, "status:")
t.eq(r.get("result", {}).get("sandboxType"), "none", "no sandbox: sandboxType none")
r, out = probe(c, {"permissions": {"type": "disabled"}, "windowsSandboxLevel": "disabled"},
               "status:")
t.eq((r.get("result", {}).get("sandboxType"), out), ("linuxSeccomp", plain),
     "a disabled profile is reported linuxSeccomp (as the reference) and applies nothing")

# execd narrows itself after start-up (inherited by every child, so only what nobody needs)
with open("/proc/%d/status" % c.pid) as f:
    st = dict(l.split(":", 1) for l in f)
narrowed = st["NoNewPrivs"].strip() == "1" and st["Seccomp"].strip() == "2"
t.ok(narrowed, "execd runs with no_new_privs and its own seccomp filter")
r = c.start("bad1", ["true"], sandbox={"permissions": {"type": "managed"}})
t.eq(r.get("error"), {"code": -32602, "message": "missing field `file_system`"},
     "malformed sandbox: the reference's decode error")
r = c.start("bad2", ["true"], managedNetwork={"loopbackPorts": ["x"]})
t.eq(r.get("error"), {"code": -32602, "message": 'invalid type: string "x", expected u16'},
     "malformed managedNetwork ports")
r = c.start("bad3", ["true"], sandbox=restricted([
    {"path": {"type": "path", "path": "file://host/x"}, "access": "read"}]))
t.eq(r.get("error"), {"code": -32602, "message": "failed to prepare process sandbox: invalid "
     "sandbox permission path: 'file://host/x' is invalid on 'linux'"},
     "an entry naming no local path: the reference's prepare error")

# ---------------------------------------------------------------- seccomp (runs on CI)

NET_OFF = external("restricted")
r, out = probe(c, NET_OFF, "status:", "socket:inet", "socket:inet6", "socket:netlink",
               "socket:unix", "ptrace:", "syscall:process_vm_readv", "syscall:keyctl",
               "syscall:add_key", "syscall:bpf", "syscall:perf_event_open",
               "syscall:init_module", "syscall:kexec_load", "syscall:mount",
               "syscall:io_uring_setup", "syscall:userfaultfd")
t.eq(r.get("result", {}).get("sandboxType"), "linuxSeccomp", "network off: sandboxType linuxSeccomp")
if out is None:
    t.ok(False, "sandboxed probe ran", r)
else:
    nnp, filt, capeff = out[0:3]
    t.eq((nnp, filt, capeff), ("1", "2", "0000000000000000"),
         "no_new_privs, a seccomp filter and no capabilities in the child")
    t.eq(out[3:6], ["EPERM"] * 3, "network off: socket() refused for AF_INET, AF_INET6, AF_NETLINK")
    t.eq(out[6], "OK", "network off: AF_UNIX sockets still work")
    t.eq(out[7], "EPERM", "ptrace fails with EPERM")
    names = ["process_vm_readv", "keyctl", "add_key", "bpf", "perf_event_open", "init_module",
             "kexec_load", "mount", "io_uring_setup", "userfaultfd"]
    if out[8] == "NOSYS-TABLE":
        t.skip("always-denied system calls", "no syscall table for %s" % platform.machine())
    else:
        t.eq(dict(zip(names, out[8:])), {n: "EPERM" for n in names},
             "process_vm_*, keyring, bpf, perf_event_open, modules, kexec, mount, io_uring, "
             "userfaultfd refused")
if CURL:
    r, out, ex = run(c, ["curl", "-sS", "-m", "5", "--noproxy", "*", WEB], NET_OFF)
    t.ok(ex is not None and ex["exitCode"] != 0 and "hello" not in out,
         "network off: curl to a loopback server fails", out)
    r, out, ex = run(c, ["curl", "-sS", "-m", "5", "--noproxy", "*", WEB], external("enabled"))
    t.ok(ex is not None and ex["exitCode"] == 0 and "hello from loopback" in out,
         "network enabled: the same curl works", out)
else:
    t.skip("curl with network off", "no curl on PATH")
r, out = probe(c, external("enabled"), "socket:inet", "ptrace:")
t.eq(out, ["OK", "EPERM"], "network enabled: sockets work, ptrace is still refused")
if LANDLOCK:
    r, out = probe(c, external("enabled"), "read:/proc/%d/environ" % c.pid,
                   "read:/proc/%d/mem" % c.pid)
    t.eq(out, ["EACCES", "EACCES"], "Landlock keeps the child out of execd's /proc/PID/environ and mem")
else:
    t.skip("ptrace containment through /proc", "no Landlock in this kernel")

# execd itself is not restricted by what its children got
r, out = probe(c, None, "status:", "socket:inet", "write:" + os.path.join(O, "by-unsandboxed"))
t.ok(out is not None and out[3:] == ["OK", "OK"] and
     (os.geteuid() != 0 or out[2] != "0000000000000000"),
     "an unsandboxed process after sandboxed ones keeps sockets, writes and capabilities", out)

# sandboxDenied: the reference's heuristic
for argv, sandbox, want, what in (
        (["sh", "-c", "echo 'cat: x: Permission denied' >&2; exit 1"], NET_OFF, True,
         "denial wording and a failure"),
        (["sh", "-c", "echo 'Read-only file system'; exit 0"], NET_OFF, False, "success"),
        (["sh", "-c", "exit 1"], NET_OFF, False, "a failure without denial wording"),
        (["sh", "-c", "echo 'Operation not permitted'; exit 127"], NET_OFF, True,
         "wording beats the quick-reject exit codes"),
        (["sh", "-c", "kill -SYS $$"], NET_OFF, True, "death by SIGSYS"),
        (["sh", "-c", "echo 'permission denied'; exit 1"], None, False, "no sandbox")):
    r, out, ex = run(c, argv, sandbox)
    t.eq(ex and ex["sandboxDenied"], want, "sandboxDenied: %s" % what)

# ---------------------------------------------------------------- filesystem

def fs_checks(c, label, want_outside):
    """Run the same filesystem probes; label says which mechanism."""
    # W2 has no .git: placeholders are made for it (and for .codex, .agents, .aws)
    sb = restricted([root_read, path_entry(W2, "write")])
    r, out = probe(c, sb, "write:" + os.path.join(W2, "new"), "write:" + os.path.join(O, "new"),
                   "mkdir:" + os.path.join(O, "dir"), "read:" + os.path.join(O, "file"))
    if out is None:
        t.ok(False, "%s: sandboxed start" % label, r)
        return
    t.eq(out[0], "OK", "%s: writing inside the writable root works" % label)
    t.ok(out[1] in want_outside and out[2] in want_outside,
         "%s: writing outside the writable roots fails (%s)" % (label, "/".join(out[1:3])))
    t.ok(not os.path.exists(os.path.join(O, "new")) and not os.path.exists(os.path.join(O, "dir")),
         "%s: and nothing was created outside" % label)
    t.eq(out[3], "OK", "%s: reading outside still works with root readable" % label)
    os.unlink(os.path.join(W2, "new"))
    if not NS:
        t.skip("%s: denied root, protected .git" % label, "no mount namespaces on this kernel")
        return
    # a writable root's missing .git, .codex and .agents cannot be created
    sb = restricted([root_read, path_entry(W2, "write")])
    g, x, a = (os.path.join(W2, n) for n in (".git", ".codex", ".agents"))
    r, out = probe(c, sb, "mkdir:" + g, "write:" + os.path.join(g, "HEAD"), "rmdir:" + g,
                   "mkdir:" + os.path.join(W2, "made"),
                   "rename:%s>%s" % (os.path.join(W2, "made"), x), "write:" + a,
                   "write:" + os.path.join(W2, "sibling"))
    t.ok(out is not None and out[:3] == ["EEXIST", "EROFS", "EBUSY"] and out[3] == "OK" and
         out[4] in ("EBUSY", "EEXIST", "ENOTEMPTY") and out[5] in ("EISDIR", "EROFS") and
         out[6] == "OK", "%s: a missing .git, .codex or .agents cannot be made, renamed onto "
         "or removed; a sibling can" % label, out)
    t.ok(not any(os.path.exists(p) for p in (g, x, a)),
         "%s: and once the process is closed, no placeholder is left on the host" % label)
    for n in ("made", "sibling"):
        p = os.path.join(W2, n)
        if os.path.isdir(p):
            os.rmdir(p)
        elif os.path.exists(p):
            os.unlink(p)
    # placeholders shared by two instances: the last owner removes them; a killed owner's
    # are dropped on the next use
    sb = restricted([root_read, path_entry(W2, "write")])
    c2 = Execd()
    for cc, pid in ((c, "share1"), (c2, "share2")):
        cc.call("process/start", {"processId": pid, "argv": ["sleep", "30"], "cwd": "file://" + W2,
                                  "env": {"PATH": "/usr/bin:/bin"}, "tty": False, "sandbox": sb})
    c.call("process/terminate", {"processId": "share1"})
    c.collect("share1")
    kept = os.path.isdir(g)
    c2.call("process/terminate", {"processId": "share2"})
    c2.collect("share2")
    t.ok(kept and not os.path.exists(g), "%s: a placeholder two instances use stays until the "
         "last one's process is closed" % label)
    marker = "%d.%d" % (30 + os.getpid() % 50, os.getpid())
    c2.call("process/start", {"processId": "orphan", "argv": ["sleep", marker],
                              "cwd": "file://" + W2, "env": {"PATH": "/usr/bin:/bin"},
                              "tty": False, "sandbox": sb})
    c2.kill()
    subprocess.run(["pkill", "-KILL", "-f", "^sleep %s$" % marker])
    left = os.path.isdir(g)
    run(c, ["true"], sb)
    t.ok(left and not os.path.exists(g), "%s: a killed instance's placeholders go at the next "
         "use of the path" % label)
    # under a repository .git is protected too, as the reference does: a `git init`
    # there could plant core.fsmonitor for a later git run outside the sandbox
    repo = os.path.join(tmp, "repo")
    sub = os.path.join(repo, "sub")
    os.makedirs(os.path.join(repo, ".git"), exist_ok=True)
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(repo, ".git", "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    sb = restricted([root_read, path_entry(sub, "write")])
    r, out = probe(c, sb, "mkdir:" + os.path.join(sub, ".git"),
                   "mkdir:" + os.path.join(sub, ".codex"))
    t.eq(out, ["EEXIST", "EEXIST"], "%s: below a repository, neither .git nor .codex may be made"
         % label)
    shutil.rmtree(os.path.join(sub, ".git"), ignore_errors=True)
    sb = restricted([root_read, path_entry(W, "write"), path_entry(D, "deny")])
    r, out = probe(c, sb, "read:" + os.path.join(D, "secret"), "list:" + D,
                   "write:" + os.path.join(W, ".git", "config"), "write:" + os.path.join(W, "ok"))
    t.eq(out and out[:2], ["EACCES", "EACCES"], "%s: reading a denied root fails with EACCES" % label)
    t.eq(out and out[2:], ["EROFS", "OK"], "%s: the writable root's .git stays read-only" % label)
    t.ok(not os.path.exists(os.path.join(W, ".git", "config")), "%s: .git untouched" % label)
    with open(os.path.join(W, "key.secret"), "w") as f:
        f.write("k")
    sb = restricted([root_read, path_entry(W, "write"),
                     {"path": {"type": "glob_pattern", "pattern": W + "/*.secret"}, "access": "deny"}])
    r, out = probe(c, sb, "read:" + os.path.join(W, "key.secret"), "read:" + os.path.join(W, "fs-none"),
                   "write:" + os.path.join(W, "plain"))
    t.eq(out, ["EACCES", "ENOENT", "OK"], "%s: a deny glob masks what it matches at start" % label)
    os.unlink(os.path.join(W, "key.secret"))
    os.unlink(os.path.join(W, "plain"))


if LANDLOCK:
    # the read-only mount view comes first, Landlock second: EROFS as the reference
    fs_checks(c, "landlock", ("EROFS",))
    sb = restricted([path_entry(R, "read"), minimal])
    r, out = probe(c, sb, "read:" + os.path.join(R, "file"), "read:" + os.path.join(O, "file"),
                   "list:" + O, "write:" + os.path.join(R, "new"), "read:/proc/self/status")
    t.eq(out, ["OK", "EACCES", "EACCES", "EROFS", "OK"],
         "landlock: restricted reads: only the listed root (and the platform's, the sandbox's "
         "/proc included) is readable")
    sb = restricted([path_entry(R, "read")])
    r = c.start("noplat", ["/bin/true"], sandbox=sb)
    t.eq(r.get("error", {}).get("code"), -32603,
         "landlock: without `minimal` not even /bin can be run (as the reference's helper)")
else:
    t.skip("landlock filesystem sandbox", "no Landlock in this kernel")

# fs requests with the same profile: refused, nothing written
sb = restricted([root_read, path_entry(W, "write")])
r = c.call("fs/writeFile", {"path": "file://" + os.path.join(O, "fs-new"), "dataBase64": b64("x"),
                            "sandbox": sb})
t.ok("error" in r and not os.path.exists(os.path.join(O, "fs-new")),
     "sandboxed fs/writeFile outside the roots is refused and writes nothing", r)
r = c.call("fs/writeFile", {"path": "file://" + os.path.join(W, "fs-new"), "dataBase64": b64("x"),
                            "sandbox": sb})
t.ok("result" in r and os.path.exists(os.path.join(W, "fs-new")),
     "sandboxed fs/writeFile inside a writable root works", r)
# the same root written with a "." and a ".." segment: it names W, and W is what it
# grants (its spelling is not a real path: it is resolved, not taken as written)
for spelling in (os.path.join(W, ".", "..", os.path.basename(W)), W + "/"):
    sb = restricted([root_read, path_entry(spelling, "write")])
    f = os.path.join(W, "fs-spelled")
    r = c.call("fs/writeFile", {"path": "file://" + f, "dataBase64": b64("x"), "sandbox": sb})
    r2, out, _ = run(c, ["sh", "-c", "echo y > %s/sh-spelled && echo wrote" % W], sb)
    t.ok("result" in r and os.path.exists(f) and out is not None and "wrote" in out,
         "a writable root spelled %r grants W to fs/writeFile and to a process" %
         spelling.replace(W, "W"), (r, out))
    for n in (f, os.path.join(W, "sh-spelled")):
        if os.path.exists(n):
            os.unlink(n)
# a root execd takes from its own environment (TMPDIR, for the `tmpdir` entry) is not
# normalised on the way in: spelled with a "." segment it must still grant W itself
ct = Execd(env=dict(os.environ, TMPDIR=W + "/."))
sb = restricted([root_read, {"path": {"type": "special", "value": {"kind": "tmpdir"}},
                             "access": "write"}])
f = os.path.join(W, "fs-tmpdir")
r = ct.call("fs/writeFile", {"path": "file://" + f, "dataBase64": b64("x"), "sandbox": sb})
t.ok("result" in r and os.path.exists(f),
     "TMPDIR spelled W/. grants W to a sandboxed fs/writeFile (resolved, not taken as written)", r)
if os.path.exists(f):
    os.unlink(f)
ct.kill()

# ---------------------------------------------------------------- managed network

if not NS:
    t.skip("managed network", "no network namespaces on this kernel")
elif not CURL:
    t.skip("managed network", "no curl on PATH")
else:
    sb = restricted([root_read, path_entry(W, "write")])
    script = ("curl -sS -m 5 --noproxy '*' %s; echo direct=$?; curl -sS -m 5 -x %s %s; "
              "echo proxied=$?" % (WEB, PROXY, WEB))
    port = proxy.server_address[1]
    r, out, ex = run(c, ["sh", "-c", script], sb, enforceManagedNetwork=True,
                     managedNetwork={"loopbackPorts": [port], "allowLocalBinding": False})
    t.ok(out is not None and "direct=0" not in out and "hello from loopback" in out and
         "proxied=0" in out,
         "managed network: loopback is unreachable, except through the proxy", out)
    r, out, ex = run(c, ["sh", "-c", script], sb, env={"PATH": "/usr/bin:/bin", "HTTP_PROXY": PROXY},
                     enforceManagedNetwork=True)
    t.ok(out is not None and "direct=0" not in out and "proxied=0" in out,
         "managed network: the proxy named by HTTP_PROXY is routed", out)
    from execd_client import network_proxy
    r, out, ex = run(c, ["sh", "-c", script], sb, enforceManagedNetwork=True,
                     networkProxy=network_proxy({"127.0.0.1": "allow"}, allow_local=False))
    t.ok(out is not None and "direct=0" not in out and "proxied=0" not in out,
         "managed network without a proxy: no network at all", out)
    r, out = probe(c, sb, "socket:unix", "socket:inet", enforceManagedNetwork=True)
    t.eq(out, ["EPERM", "OK"], "managed network: AF_UNIX socket() refused, AF_INET allowed")
    # The spawn helper makes each managed start's namespaces ahead (a spare);
    # a spare is used once: three commands alive at once, three networks.
    ids = []
    for i in range(3):
        counter[0] += 1
        pid = "ns%d" % counter[0]
        r = c.call("process/start", {
            "processId": pid, "argv": ["sh", "-c", "readlink /proc/self/ns/net /proc/self/ns/user;"
                                       " exec sleep 30"], "cwd": "file://" + W,
            "env": {"PATH": "/usr/bin:/bin"}, "tty": False, "sandbox": sb,
            "enforceManagedNetwork": True})
        said = b""
        try:
            while "result" in r and said.count(b"\n") < 2:
                said += __import__("base64").b64decode(c.wait_notification(
                    "process/output", lambda p: p.get("processId") == pid)["chunk"])
        except TimeoutError:
            pass
        ids.append((pid, tuple(said.decode().split())))
    for pid, _ in ids:
        c.call("process/terminate", {"processId": pid})
        c.collect(pid)
    nets = [i[1][0] if i[1] else None for i in ids]
    users = [i[1][1] if len(i[1]) > 1 else None for i in ids]
    t.ok(None not in nets + users and len(set(nets)) == 3 and len(set(users)) == 3,
         "managed network: three commands alive at once have three network and user "
         "namespaces (a spare is used once)", ids)
    # execd's bridge to the proxy is loopback to loopback: it does not pace
    # (lib/tcplocal.h), whatever the host's algorithm
    if shutil.which("ss") is None or shutil.which("python3") is None:
        t.skip("managed network: the bridge's socket to the proxy sends with reno",
               "no ss(8) or no python3")
    else:
        counter[0] += 1
        pid = "cc%d" % counter[0]
        r = c.call("process/start", {
            "processId": pid, "argv": ["python3", "-c",
                                       "import socket, time\n"
                                       "s = socket.create_connection(('127.0.0.1', %d))\n"
                                       "print('up', flush=True)\ntime.sleep(20)" % port],
            "cwd": "file://" + W, "env": {"PATH": "/usr/bin:/bin"}, "tty": False,
            "sandbox": sb, "enforceManagedNetwork": True,
            "managedNetwork": {"loopbackPorts": [port], "allowLocalBinding": False}})
        said, algs = b"", []
        try:
            while "result" in r and b"up" not in said:
                said += __import__("base64").b64decode(c.wait_notification(
                    "process/output", lambda p: p.get("processId") == pid)["chunk"])
            ss = subprocess.run(["ss", "-Htin", "state", "established", "dport", "=",
                                 ":%d" % port], capture_output=True, text=True, timeout=10)
            algs = [x.split()[0] for x in ss.stdout.splitlines()
                    if x.startswith(("\t", " ")) and x.split()]
        except TimeoutError:
            pass
        c.call("process/terminate", {"processId": pid})
        c.collect(pid)
        t.eq(algs, ["reno"], "managed network: the bridge's socket to the proxy sends with reno")
t.eq(c.close(), 0, "execd exits cleanly")

# ---------------------------------------------------------------- with the execd-proxy sidecar

PROXY_BIN = os.path.join(os.environ.get("top_builddir", "."), "proxy", "execd-proxy")
if not NS or not CURL:
    t.skip("managed network through execd-proxy", "no network namespaces or no curl")
elif not os.access(PROXY_BIN, os.X_OK):
    t.skip("managed network through execd-proxy", "execd-proxy not built")
else:
    from proxytest import Proxy, free_port
    P = Proxy("listen http 127.0.0.1:%d\nallow 127.0.0.1\n" % free_port())
    c = Execd(["--proxy-control", P.ctl_path])
    sb = restricted([root_read, path_entry(W, "write")])
    # curl takes the lower-case http_proxy execd-proxy's registration put in the environment
    script = "curl -sS -m 5 --noproxy '*' %s; echo direct=$?; curl -sS -m 5 %s; echo proxied=$?" % (
        WEB, WEB)
    from execd_client import network_proxy
    r, out, ex = run(c, ["sh", "-c", script], sb, enforceManagedNetwork=True,
                     networkProxy=network_proxy({"127.0.0.1": "allow"}, allow_local=False))
    t.ok(out is not None and "direct=0" not in out and "hello from loopback" in out and
         "proxied=0" in out, "managed network: only execd-proxy's listener is reachable", out)
    t.eq(c.close(), 0, "execd exits cleanly (sidecar)")
    P.stop()

# ---------------------------------------------------------------- fallback: mounts only

if not NS:
    t.skip("mount-namespace fallback", "no mount namespaces on this kernel")
else:
    c = Execd(env=dict(os.environ, EXECD_SANDBOX_DISABLE="landlock-fs"))
    fs_checks(c, "mounts", ("EROFS",))
    r = c.start("rr", ["true"], sandbox=restricted([path_entry(R, "read"), minimal]))
    t.eq(r.get("error"), REFUSAL, "mounts: restricted reads cannot be enforced: refused")
    t.eq(c.close(), 0, "execd exits cleanly (mounts)")

# ---------------------------------------------------------------- placeholder lock files

# One lock file per protected path in use; an instance sweeps away, at its
# first placeholder, those nobody holds: they do not pile up across instances.
if not NS:
    t.skip("placeholder lock files are swept", "no namespaces on this kernel")
else:
    from execd_client import EXECD
    SD = os.path.join(tmp, "sweep-state")
    counts = []
    for inst in range(2):
        c = Execd(argv=[EXECD, "--stdio", "--state-dir", SD])
        for i in range(3):
            Wi = os.path.join(tmp, "sweep-%d-%d" % (inst, i))
            os.makedirs(Wi)
            run(c, ["true"], restricted([root_read, path_entry(Wi, "write")]))
        counts.append(len(os.listdir(os.path.join(SD, "placeholders"))))
        c.close()
    t.eq(counts, [12, 12], "placeholder lock files: 4 per root in use, the unused swept by the "
         "next instance")
    # An instance keeps a used path's lock file open (unlocked) for its next
    # start; another instance's sweep may unlink it meanwhile.  Back at the
    # path, the first must lock the file now at that name, not its old one:
    # else the two lock different files and the other, done first, removes
    # the placeholder from under the first's running command.
    SD2 = os.path.join(tmp, "rejoin-state")
    WR = os.path.join(tmp, "rejoin")
    os.makedirs(WR)
    gr = os.path.join(WR, ".git")
    sbr = restricted([root_read, path_entry(WR, "write")])
    ca = Execd(argv=[EXECD, "--stdio", "--state-dir", SD2])
    run(ca, ["true"], sbr)                  # ca keeps the lock files, idle
    cb = Execd(argv=[EXECD, "--stdio", "--state-dir", SD2])
    def sleep_two(pairs):
        """`sleep 30` for each (client, processId) in turn, then ended in that
        order: (all started, .git kept after the first end, .git after the last)."""
        started = []
        for cc, pid in pairs:
            r = cc.call("process/start", {"processId": pid, "argv": ["sleep", "30"],
                                          "cwd": "file://" + WR,
                                          "env": {"PATH": "/usr/bin:/bin"},
                                          "tty": False, "sandbox": sbr})
            started.append("result" in r)
        kept = []
        for cc, pid in pairs:
            cc.call("process/terminate", {"processId": pid})
            cc.collect(pid)
            kept.append(os.path.isdir(gr))
        return started, kept[0], os.path.exists(gr)

    sleeps, kept, left = sleep_two(((cb, "rejoin-b"), (ca, "rejoin-a")))   # cb sweeps first
    t.ok(all(sleeps) and kept and not left,
         "a lock file swept while its instance kept it idle: that instance joins the new one, "
         "and the placeholder stays until the last process is closed", (sleeps, kept, left))
    # two commands of one instance share it too: the instance counts them
    sleeps, kept, left = sleep_two(((ca, "same-1"), (ca, "same-2")))
    t.ok(all(sleeps) and kept and not left,
         "a placeholder two commands of one instance use stays until the second is closed",
         (sleeps, kept, left))
    ca.close()
    cb.close()

# ---------------------------------------------------------------- root without user namespaces

# Where user namespaces are refused, root makes the namespaces directly:
# the same view, pid namespace and /dev, with the host's uid map.
if not NS or os.geteuid() != 0:
    t.skip("namespaces made directly by root", "no namespaces, or not root")
else:
    c = Execd(env=dict(os.environ, EXECD_SANDBOX_DISABLE="userns"))
    fs_checks(c, "direct", ("EROFS",))
    r, out, _ = run(c, ["sh", "-c", "echo pid=$$; cat /proc/self/uid_map; ls /dev/pts"],
                    restricted([root_read, path_entry(W2, "write")]))
    words = (out or "").split()
    t.ok("pid=2" in words and words[1:4] == ["0", "0", "4294967295"] and "ptmx" in words,
         "direct: pid 2, the host's uid map, a devpts of its own", out)
    t.eq(c.close(), 0, "execd exits cleanly (direct)")

# ---------------------------------------------------------------- refusals

c = Execd(env=dict(os.environ, EXECD_SANDBOX_DISABLE="landlock,namespaces"))
before = set(os.listdir(O))
r = c.start("nofs", ["sh", "-c", "echo x > %s/refused" % O],
            sandbox=restricted([root_read, path_entry(W, "write")]))
t.eq(r.get("error"), REFUSAL, "no Landlock, no namespaces: a restricted filesystem is refused")
time.sleep(0.2)
t.ok(set(os.listdir(O)) == before and c.children() == [], "and nothing ran")
r = c.start("nonet", ["true"], sandbox=NET_OFF, enforceManagedNetwork=True)
t.eq(r.get("error"), REFUSAL, "no namespaces: a managed network is refused")
# seccomp alone refuses ptrace, not /proc/PID/mem or /proc/PID/fd: without
# Landlock or a pid namespace every process of the user would be open to it
r = c.start("nonet2", ["true"], sandbox=NET_OFF)
t.eq(r.get("error"), REFUSAL, "no Landlock, no namespaces: network off is refused too")
t.eq(c.close(), 0, "execd exits cleanly (refusals)")
# a Landlock domain that scopes signals (ABI 6) is enough without namespaces
if LANDLOCK >= 6:
    c = Execd(env=dict(os.environ, EXECD_SANDBOX_DISABLE="namespaces"))
    r, out = probe(c, NET_OFF, "socket:inet")
    t.eq(out, ["EPERM"], "no namespaces: seccomp and Landlock still enforce network off")
    t.eq(c.close(), 0, "execd exits cleanly (no namespaces)")
else:
    t.skip("no namespaces: seccomp and Landlock still enforce network off",
           "Landlock ABI %d scopes no signals" % LANDLOCK)

shutil.rmtree(tmp, ignore_errors=True)
t.done()
