#!/usr/bin/python3
"""execd-proxy control socket: permissions and peer check, the key, register /
unregister / status, credentials that stop working, restored credentials,
registrations bound to their control connection, malformed requests."""

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time

from proxytest import EchoServer, Origin, Proxy, Tap, connect_via_http, curl, deadline

deadline(60)
t = Tap()
origin = Origin()
echo = EchoServer()
url = "http://127.0.0.1:%d/" % origin.port

P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nmax-connections-per-client 3\n")
mode = stat.S_IMODE(os.stat(P.ctl_path).st_mode)
t.eq(mode, 0o600, "control socket mode 0600")

# another uid is refused even when the file mode would let it in
os.chmod(P.ctl_path, 0o666)
os.chmod(P.dir, 0o711)
probe = """
import os, socket, sys
os.setgid(65534); os.setuid(65534)
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
s.sendall(b'{"op":"status","id":1}\\n')
print(repr(s.recv(100)))
"""
c = subprocess.run([sys.executable, "-c", probe, P.ctl_path], capture_output=True, text=True,
                   timeout=10)
t.ok(c.stdout.strip() == "b''" or "Connection reset" in c.stderr or "Broken pipe" in c.stderr,
     "a client of another uid gets no answer (SO_PEERCRED)", c.stdout + c.stderr)
t.ok("refusing pid" in P.logtext(), "refused peer is logged")
os.chmod(P.ctl_path, 0o600)
os.chmod(P.dir, 0o700)

st = P.call("status")
t.ok(st["ok"] and st["registrations"] == 0 and st["audit"]["lost"] == 0 and
     st["pid"] == P.proc.pid, "status reply", st)

a = P.register(tags={"process_id": "a"})
t.ok(a.id.startswith("x") and len(a.id) == 16 and len(a.secret) == 32, "credential shape",
     a.reply)
b = P.register(tags={"process_id": "b"})
t.ok(a.id != b.id and a.secret != b.secret, "credentials are unique")
t.eq(curl("-x", a.http_url, url).code, 200, "registered credentials work")
t.eq(P.call("status")["registrations"], 2, "status counts registrations")

# a live tunnel ends with its registration
s, status, _ = connect_via_http(P.http, "127.0.0.1:%d" % echo.port, a)
t.eq(status, "HTTP/1.1 200 OK", "tunnel open before unregister")
r = P.call("unregister", credential=a.id)
t.ok(r["ok"], "unregister", r)
s.settimeout(5)
t.eq(s.recv(10), b"", "the process's open tunnel is closed on unregister")
s.close()
ev = P.wait_audit(lambda e: e["event"] == "close" and e.get("result") == "unregistered")
t.ok(ev is not None and ev["tags"] == {"process_id": "a"}, "audit: close result unregistered", ev)
t.eq(curl("-x", a.http_url, url).code, 407, "credentials stop working after unregister")
t.eq(curl("-x", b.http_url, url).code, 200, "other registrations are unaffected")
r = P.call("unregister", credential=a.id)
t.ok(not r["ok"] and r["error"] == "unknown credential", "unregister twice fails", r)

# restoring credentials (what execd does after a proxy restart)
r = P.call("register", credentials={"id": a.id, "secret": a.secret}, tags={"process_id": "a"})
t.ok(r["ok"] and r["credentials"] == {"id": a.id, "secret": a.secret}, "credentials restored", r)
t.eq(curl("-x", a.http_url, url).code, 200, "restored credentials work")
r = P.call("register", credentials={"id": a.id, "secret": a.secret})
t.ok(not r["ok"] and "in use" in r["error"], "restoring a live id is refused", r)
r = P.call("register", credentials={"id": "nothex", "secret": "x"})
t.ok(not r["ok"] and "malformed" in r["error"], "malformed credentials refused", r)

# per-client connection limit (3)
socks = []
for i in range(3):
    s, status, _ = connect_via_http(P.http, "127.0.0.1:%d" % echo.port, b)
    socks.append(s)
s4, status4, head4 = connect_via_http(P.http, "127.0.0.1:%d" % echo.port, b)
t.ok(status4.startswith("HTTP/1.1 429") and b"x-proxy-error: blocked-by-policy" in head4,
     "fourth connection over max-connections-per-client: 429", head4)
for s in socks + [s4]:
    s.close()
time.sleep(0.2)
t.eq(curl("-x", b.http_url, url).code, 200, "limit frees up when connections close")

# malformed requests
P.ctl_file.write(b"this is not json\n")
P.ctl_file.flush()
r = json.loads(P.ctl_file.readline())
t.ok(not r["ok"] and r["error"] == "malformed JSON", "malformed JSON answered", r)
r = P.call("frobnicate")
t.ok(not r["ok"] and r["error"] == "unknown op", "unknown op answered", r)
r = P.call("register", tags="nope")
t.ok(not r["ok"], "tags must be an object", r)
r = P.call("register", policy={"allow": ["x.test"], "colour": "red"})
t.ok(not r["ok"] and "unknown policy field" in r["error"], "unknown policy field", r)
r = P.call("register", tags={"big": "x" * 10000})
t.ok(not r["ok"] and "too large" in r["error"], "oversized tags refused", r)

# registrations end with their control connection
s2 = socket.socket(socket.AF_UNIX)
s2.connect(P.ctl_path)
f2 = s2.makefile("rwb")
f2.write(b'{"op":"auth","key":"%s"}\n' % P.key().encode())
f2.flush()
t.ok(json.loads(f2.readline())["ok"], "a second control connection authenticates")
f2.write(b'{"op":"register","id":"r1","tags":{"process_id":"c"}}\n')
f2.flush()
r = json.loads(f2.readline())
t.ok(r["ok"] and r["id"] == "r1", "register on a second control connection (id echoed)", r)
cid, sec = r["credentials"]["id"], r["credentials"]["secret"]
t.eq(curl("-x", "http://%s:%s@%s" % (cid, sec, P.http), url).code, 200, "its credentials work")
f2.close()
s2.close()
time.sleep(0.3)
t.eq(curl("-x", "http://%s:%s@%s" % (cid, sec, P.http), url).code, 407,
     "closing the control connection drops its registrations")

# the key: a peer of the right uid proves it is execd (or the operator)
key_path = P.ctl_path + ".key"
t.eq(stat.S_IMODE(os.stat(key_path).st_mode), 0o600, "key file mode 0600")
t.ok(re.fullmatch(r"[0-9a-f]{64}", P.key()) is not None, "key: 32 random bytes in hex")
victim = P.register(tags={"process_id": "victim"})
forged_id, forged_secret = "x" + "3" * 15, "4" * 32

# One control client: sends each argument line (KEY replaced by the key), prints
# each reply or "closed"; "nodump" first makes it non-dumpable, as execd is.
CLIENT = r"""
import ctypes, json, socket, sys
args = sys.argv[3:]
if args[:1] == ["nodump"]:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); args = args[1:]
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
f = s.makefile("rwb")
for a in args:
    try:
        f.write(a.replace("KEY", sys.argv[2]).encode() + b"\n"); f.flush()
        line = f.readline()
    except OSError:
        line = b""
    print(line.decode().strip() or "closed", flush=True)
"""


def client(path, key, *lines, prefix=()):
    c = subprocess.run(list(prefix) + ["/usr/bin/python3", "-c", CLIENT, path, key] + list(lines),
                       capture_output=True, text=True, timeout=20)
    return (c.stdout + c.stderr).strip().splitlines()


REG = json.dumps({"op": "register", "id": 1, "tags": {"process_id": "victim"},
                  "credentials": {"id": forged_id, "secret": forged_secret}})
UNREG = json.dumps({"op": "unregister", "id": 2, "credential": victim.id})
STATUS = json.dumps({"op": "status", "id": 3})
forged = "http://%s:%s@%s" % (forged_id, forged_secret, P.http)

out = client(P.ctl_path, P.key(), REG, UNREG)
t.ok(len(out) == 2 and '"authentication required"' in out[0] and out[1] == "closed",
     "without the key: the first request is answered with an error, then closed", out)
out = client(P.ctl_path, P.key(), UNREG, STATUS)
t.ok(len(out) == 2 and '"authentication required"' in out[0] and out[1] == "closed",
     "without the key: unregister refused too", out)
out = client(P.ctl_path, "0" * 64, '{"op":"auth","key":"KEY"}', REG, UNREG)
t.ok(len(out) == 3 and '"wrong key"' in out[0] and out[1:] == ["closed"] * 2,
     "a wrong key is refused and the connection closed", out)
out = client(P.ctl_path, "", '{"op":"auth"}', STATUS)
t.ok(len(out) == 2 and '"wrong key"' in out[0] and out[1] == "closed", "no key at all", out)
t.eq(curl("-x", victim.http_url, url).code, 200, "the victim's registration is still there")
t.eq(curl("-x", forged, url).code, 407, "and no forged one was made")
log = P.logtext()
t.ok("refused: authentication required" in log and "refused: wrong key" in log,
     "refused control clients are logged with the reason", log[-800:])
out = client(P.ctl_path, P.key(), '{"op":"auth","key":"KEY","id":9}', STATUS,
             '{"op":"auth","key":"KEY"}')
# ca_key: where the inspection CA's key is, for execd to hide from sandboxes
auth = json.loads(out[0]) if out else {}
t.ok(len(out) == 3 and {k: v for k, v in auth.items() if k != "ca_key"} == {"id": 9, "ok": True}
     and auth.get("ca_key", "/").startswith("/") and
     json.loads(out[1])["ok"] and "already authenticated" in out[2],
     "the right key: auth answered (id echoed), then requests work", out)

UNSHARE = shutil.which("unshare")
if UNSHARE is None:
    t.skip("a client in another pid namespace", "no unshare")
else:
    out = client(P.ctl_path, P.key(), '{"op":"auth","key":"KEY"}', REG, UNREG,
                 prefix=[UNSHARE, "-r", "--pid", "--fork"])
    t.ok(out[:1] == ["closed"], "a client in a child pid namespace is refused even with the key",
         out)
    t.ok("another pid namespace" in P.logtext(), "and logged", P.logtext()[-400:])
    t.eq(curl("-x", victim.http_url, url).code, 200, "the victim's registration is still there")

t.eq(P.stop(), 0, "proxy exits 0")
t.ok(not os.path.exists(key_path), "key file removed at exit")

# a restart replaces a stale key with a new one
with open(key_path, "w") as f:
    f.write("stale\n")
old_key = "stale"
P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\n", dir=P.dir)
t.ok(P.key() != old_key and stat.S_IMODE(os.stat(key_path).st_mode) == 0o600,
     "a stale key file is replaced at start")
t.eq(P.stop(), 0, "proxy exits 0")

# an unprivileged proxy cannot look at execd's namespaces (not dumpable):
# it must still take execd and refuse a sandbox's pid namespace
SETPRIV = shutil.which("setpriv")
if os.geteuid() != 0 or SETPRIV is None or UNSHARE is None:
    t.skip("an execd-proxy run as nobody", "not root, or no setpriv or unshare")
else:
    NOBODY = ["--reuid", "65534", "--regid", "65534", "--clear-groups"]
    from proxytest import tmpdir
    d = tmpdir()
    os.chown(d, 65534, 65534)
    N = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\n", dir=d, prefix=[SETPRIV] + NOBODY,
              audit=False)
    nk = N.key()
    out = client(N.ctl_path, nk, "nodump", '{"op":"auth","key":"KEY"}', STATUS,
                 prefix=[SETPRIV] + NOBODY)
    t.ok(len(out) == 2 and all(json.loads(o)["ok"] for o in out),
         "as nobody: a non-dumpable client of its uid with the key is taken", out)
    out = client(N.ctl_path, nk, '{"op":"auth","key":"KEY"}', STATUS,
                 prefix=[SETPRIV] + NOBODY + [UNSHARE, "-r", "--pid", "--fork"])
    t.ok(out[:1] == ["closed"], "as nobody: a client in a child pid namespace is refused", out)
    t.ok("another pid namespace" in N.logtext(), "as nobody: and logged", N.logtext()[-400:])
    t.eq(N.stop(), 0, "as nobody: proxy exits 0")
t.done()
