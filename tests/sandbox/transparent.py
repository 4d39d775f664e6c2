#!/usr/bin/python3
"""Transparent TCP (networkProxy.proxy.transparentTcp, 0.171.0's mode) in a
managed sandbox: a program that knows nothing of proxies (no proxy variable
read, plain connect(2)) reaches exactly what the policy allows, by name
(getaddrinfo through the sandbox's DNS answerer on 127.0.0.53, IPv4 and
IPv6 made-up addresses) and by literal address; the sandbox's own loopback
is not proxied; UDP other than DNS goes nowhere; TCP DNS is answered; an
attacker inside reaches neither the host's loopback services nor a made-up
address never given out; every flow is a network/policyDecision with the
process's id and protocol socks5_tcp.  Through the execd-proxy sidecar
(names from a dnsmasq of the test's own) and through execd's embedded one.

Skips when execd says networkProxyTransparentTcp false (no seccomp user
notification with ADDFD, or no namespaces)."""
import json
import os
import shutil
import socket
import sys

from proxytest import Dnsmasq, EchoServer, Proxy, Tap, deadline, free_port, host_address
from execd_client import Execd, network_proxy

deadline(120)
t = Tap()
W = os.environ.get("TMPDIR", "/tmp")
# run the checks even when execd says the mode is unsupported (to see them fail)
FORCE = os.environ.get("EXECD_TEST_FORCE_TRANSPARENT") == "1"

SB = {"permissions": {"type": "managed", "network": "restricted",
                      "file_system": {"type": "restricted", "entries": [
                          {"path": {"type": "special", "value": {"kind": "root"}},
                           "access": "read"}]}},
      "windowsSandboxLevel": "disabled", "cwd": "file://" + W}

# Run inside the sandbox: each probe prints one JSON line {probe: result}.
PROBES = r'''
import json, socket, struct, sys, threading
args = json.loads(sys.argv[1])
def say(k, v):
    print(json.dumps({k: v}), flush=True)
def echo(k, addr, fam=0, timeout=5):
    try:
        if fam:
            ai = socket.getaddrinfo(addr[0], addr[1], fam, socket.SOCK_STREAM)
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.settimeout(timeout)
            say(k + ":addr", ai[0][4][0])
            s.connect(ai[0][4])
        else:
            s = socket.create_connection(addr, timeout=timeout)
        s.sendall(b"ping-" + k.encode())
        say(k, s.recv(100).decode())
        s.close()
    except OSError as e:
        say(k, "errno:%s" % (e.errno,))
port = args["port"]
for name in args["names"]:
    echo("name:" + name, (name, port))
echo("v4:" + args["names"][0], (args["names"][0], port), socket.AF_INET)
echo("v6:" + args["names"][0], (args["names"][0], port), socket.AF_INET6)
for lit in args["literals"]:
    echo("literal:" + lit, (lit, args["lport"]), socket.AF_INET6 if ":" in lit else 0)
# the swapped socket keeps what the program set before connect
import os
try:
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    s.set_inheritable(True)
    s.connect((args["names"][0], port))
    n = socket.socket(); n.setblocking(False)
    rc = n.connect_ex((args["names"][0], port))
    say("kept", [s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0,
                 s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) != 0,
                 os.get_inheritable(s.fileno()), os.get_inheritable(n.fileno()),
                 rc, n.getblocking()])
    s.close(); n.close()
except OSError as e:
    say("kept", "errno:%s" % e.errno)
# what the kernel refuses whatever the address stays refused: connected twice,
# an IPv6 socket given an IPv4 address, a listening socket
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def raw(s, fam, addr, port):
    if fam == socket.AF_INET:
        sa = struct.pack("=H", fam) + struct.pack("!H", port) + socket.inet_aton(addr) + bytes(8)
    r = libc.connect(s.fileno(), sa, len(sa))
    return 0 if r == 0 else ctypes.get_errno()
odd = {}
try:
    s = socket.create_connection((args["names"][0], port), timeout=5)
    odd["again"] = raw(s, socket.AF_INET, "198.18.0.1", port)
    s.close()
except OSError as e:
    odd["again"] = "first:%d" % e.errno
s6 = socket.socket(socket.AF_INET6)
odd["v6-socket-v4-address"] = raw(s6, socket.AF_INET, "192.0.2.7", port) != 0
s6.close()
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
odd["listening"] = raw(ls, socket.AF_INET, "192.0.2.7", port)
ls.close()
say("refused-anyway", odd)
# the sandbox's own loopback: a server here, reached from here, not proxied
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
def serve():
    c, _ = srv.accept(); c.sendall(c.recv(100)); c.close()
threading.Thread(target=serve, daemon=True).start()
echo("own-loopback", ("127.0.0.1", srv.getsockname()[1]))
# the host's loopback services are not there (execd-proxy's listener, the origin)
for p in args["host_ports"]:
    echo("host-loopback:%d" % p, ("127.0.0.1", p), timeout=2)
    echo("host-loopback6:%d" % p, ("::ffff:127.0.0.1", p), socket.AF_INET6, timeout=2)
# the answerer's upstream (the test's dnsmasq on the host's loopback): not there
if args["dns_port"]:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
    try:
        u.sendto(b"\x00\x02\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x02ok\x04test\x00\x00\x01\x00\x01",
                 ("127.0.0.1", args["dns_port"]))
        say("host-loopback-dns", "answered %r" % u.recv(512))
    except OSError as e:
        say("host-loopback-dns", "errno:%s" % e.errno)
# a made-up address never handed out
echo("never-given", ("198.18.250.250", port))
# UDP elsewhere than the answerer
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.connect((args["literals"][0] if args["literals"] else "192.0.2.1", 9)); u.send(b"x")
    say("udp", "sent")
except OSError as e:
    say("udp", "errno:%s" % e.errno)
try:
    u.sendto(b"x", ("192.0.2.1", 9)); say("udp-sendto", "sent")
except OSError as e:
    say("udp-sendto", "errno:%s" % e.errno)
# DNS over TCP, 2-byte length framing
q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
for label in args["names"][0].split("."):
    q += bytes([len(label)]) + label.encode()
q += b"\x00\x00\x01\x00\x01"
try:
    s = socket.create_connection(("127.0.0.53", 53), timeout=5)
    s.sendall(struct.pack("!H", len(q)) + q)
    n = struct.unpack("!H", s.recv(2))[0]
    a = b""
    while len(a) < n:
        a += s.recv(n - len(a))
    say("tcp-dns", "%d answers %s" % (struct.unpack("!H", a[6:8])[0], socket.inet_ntoa(a[-4:])))
except OSError as e:
    say("tcp-dns", "errno:%s" % e.errno)
# a malformed query: FORMERR, and the answerer still answers after it
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3)
    u.sendto(b"\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x01\x00\x01",
             ("127.0.0.53", 53))
    say("formerr", u.recv(512)[3] & 15)
    u.sendto(q, ("127.0.0.53", 53))
    say("after-formerr", socket.inet_ntoa(u.recv(512)[-4:]))
except OSError as e:
    say("formerr", "errno:%s" % e.errno)
# answers to odd queries: (rcode, answer count), or None for no answer at all
def ask(raw):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(1)
    try:
        u.sendto(raw, ("127.0.0.53", 53)); a = u.recv(2048)
        return [a[3] & 15, struct.unpack("!H", a[6:8])[0]]
    except OSError:
        return None
H = b"\x00\x03\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
say("odd", {
    "short-header": ask(b"\x00\x03\x01"),
    "label-past-end": ask(H + b"\x3f" + b"a" * 10),
    "no-type": ask(H + b"\x01a\x00\x00"),
    "two-questions": ask(H[:5] + b"\x02" + H[6:] + b"\x01a\x00\x00\x01\x00\x01" * 2),
    "bad-byte": ask(H + b"\x03a.b\x00\x00\x01\x00\x01"),
    "nul-byte": ask(H + b"\x03a\x00b\x00\x00\x01\x00\x01"),
    "class-chaos": ask(H + b"\x01a\x00\x00\x01\x00\x03"),
    "type-mx": ask(H + b"\x01a\x00\x00\x0f\x00\x01"),
    "a-response": ask(b"\x00\x03\x81\x00" + H[4:] + b"\x01a\x00\x00\x01\x00\x01"),
    "long-name": ask(H + (b"\x3f" + b"a" * 63) * 4 + b"\x00\x00\x01\x00\x01"),
    "oversized": ask(H + b"\x01a\x00\x00\x01\x00\x01" + b"\x00" * 1500),
})
with open("/etc/resolv.conf") as f:
    say("resolv", f.read().split())
'''


def run(c, pid, args, np):
    r = c.start(pid, [sys.executable, "-c", PROBES, json.dumps(args)], sandbox=SB,
                networkProxy=np, env={"PATH": "/usr/bin:/bin"})
    if "result" not in r:
        return r, {}
    out, code, _ = c.collect(pid, timeout=60)
    res = {}
    for line in out.get("stdout", b"").decode(errors="replace").splitlines():
        try:
            res.update(json.loads(line))
        except ValueError:
            res.setdefault("junk", []).append(line)
    return r, res


def decisions(c, pid, timeout=3):
    got = []
    try:
        while True:
            got.append(c.wait_notification("network/policyDecision",
                                           lambda p: p.get("processId") == pid, timeout=timeout))
    except TimeoutError:
        pass
    return got


RACE = r'''
import ctypes, socket, struct, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sa = ctypes.create_string_buffer(16)
lo = struct.pack("!HH4s8x", socket.AF_INET, port, socket.inet_aton("127.0.0.1"))
far = struct.pack("!HH4s8x", socket.AF_INET, port, socket.inet_aton(host))
sa.raw = lo
sa[0:2] = struct.pack("=H", socket.AF_INET)
lo, far = sa.raw, far[:0] + struct.pack("=H", socket.AF_INET) + far[2:]
stop = False
def flip():
    while not stop:
        ctypes.memmove(sa, far, 16)
        ctypes.memmove(sa, lo, 16)
threading.Thread(target=flip, daemon=True).start()
got = {}
for i in range(n):
    s = socket.socket()
    r = libc.connect(s.fileno(), sa, 16)
    e = 0 if r == 0 else ctypes.get_errno()
    if r == 0:
        s.settimeout(2)
        try:
            s.sendall(b"race"); e = "reached:" + s.recv(10).decode()
        except OSError as x:
            e = "connected-no-echo:%s" % x.errno
    got[str(e)] = got.get(str(e), 0) + 1
    s.close()
stop = True
print(got)
'''


def race_check(c, np):
    """The host's own origin (not allowed) under a racing address: never reached."""
    if HOST is None:
        t.skip("a racing connect address never reaches the host", "no non-loopback address")
        return
    c.start("race", [sys.executable, "-c", RACE, HOST, str(wide.server_address[1]), "300"],
            sandbox=SB, networkProxy=np, env={"PATH": "/usr/bin:/bin"})
    out, _, _ = c.collect("race", timeout=90)
    text = out.get("stdout", b"").decode()
    t.ok(text.startswith("{") and "reached" not in text and "connected" not in text,
         "a connect address flipped between loopback and a denied host address while execd "
         "reads it: refused or unreachable, never connected", text)
    print("# race: %s" % text.strip())


def git_checks(c, np):
    """bash /dev/tcp and git ls-remote git:// by name, allowed and denied."""
    import subprocess
    import tempfile
    if shutil.which("git") is None or shutil.which("bash") is None:
        t.skip("bash /dev/tcp and git ls-remote through transparent TCP", "no git or bash")
        return
    d = tempfile.mkdtemp(prefix="tp-git-")
    subprocess.run(["git", "init", "-q", "--bare", os.path.join(d, "r.git")], check=True)
    w = os.path.join(d, "w")
    subprocess.run(["git", "init", "-q", w], check=True)
    subprocess.run(["git", "-C", w, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    subprocess.run(["git", "-C", w, "push", "-q", os.path.join(d, "r.git"), "HEAD:refs/heads/main"],
                   check=True, capture_output=True)
    gport = free_port()
    gd = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1",
                           "--port=%d" % gport, "--base-path=" + d, d],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from proxytest import _procs, wait_listening
    _procs.append(gd)
    wait_listening(gport)
    script = ("exec 3<>/dev/tcp/ok.test/%d && printf bash >&3 && head -c 4 <&3; echo \" bash=$?\"; "
              "git ls-remote git://ok.test:%d/r.git; echo \"git=$?\"; "
              "git ls-remote git://no.test:%d/r.git 2>&1 | tail -1; echo \"denied=${PIPESTATUS[0]}\""
              % (echo.port, gport, gport))
    c.start("git", ["bash", "-c", script], sandbox=SB, networkProxy=np,
            env={"PATH": "/usr/bin:/bin", "HOME": d})
    out, _, _ = c.collect("git", timeout=60)
    text = out.get("stdout", b"").decode()
    t.ok("bash bash=0" in text, "bash's /dev/tcp reaches an allowed name", text)
    t.ok("refs/heads/main" in text and "git=0" in text,
         "git ls-remote git://ok.test reaches the git daemon by name", text)
    t.ok("denied=128" in text, "git ls-remote git://no.test is refused", text)
    gd.kill()
    gd.wait()
    shutil.rmtree(d, ignore_errors=True)


UNSPEC = r'''
import ctypes, json, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
name, port, hport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
got = {}
def dial():
    ai = socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(ai[0][4])
    return s
def unspec(s):
    sa = struct.pack("=H", socket.AF_UNSPEC) + bytes(14)
    r = libc.connect(s.fileno(), sa, len(sa))
    return 0 if r == 0 else ctypes.get_errno()
# the swapped socket was made in execd's (the host's) network namespace: a
# disconnect (connect to AF_UNSPEC) then a loopback connect, which execd lets
# the kernel make, would reach the host's loopback
try:
    s = dial()
    got["unspec"] = unspec(s)
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", hport)); s.sendall(b"host")
        got["host-loopback"] = "reached:" + s.recv(10).decode()
    except OSError as e:
        got["host-loopback"] = "errno:%s" % e.errno
    s.close()
    s = dial()
    unspec(s)
    try:
        s.bind(("127.0.0.1", 0)); s.listen(1)
        got["listen"] = "listening:%d" % s.getsockname()[1]
    except OSError as e:
        got["listen"] = "errno:%s" % e.errno
    s.close()
except OSError as e:
    got["first"] = "errno:%s" % e.errno
# a connect from a thread other than the leader goes through the proxy too
import threading
def thr():
    try:
        s = dial(); s.sendall(b"thread"); got["thread"] = s.recv(20).decode(); s.close()
    except OSError as e:
        got["thread"] = "errno:%s" % e.errno
th = threading.Thread(target=thr); th.start(); th.join()
# a blocking connect to the sandbox's own loopback, made by execd: connected for good
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
s = socket.socket(); s.connect(ls.getsockname())
got["loop-again"] = libc.connect(s.fileno(), struct.pack("=H", socket.AF_INET) +
    struct.pack("!H", ls.getsockname()[1]) + socket.inet_aton("127.0.0.1") + bytes(8), 16) \
    and ctypes.get_errno()
s.close(); ls.close()
# UDP's disconnect (glibc's getaddrinfo does it) still works on its own sockets
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect(("127.0.0.1", 9))
got["udp-unspec"] = unspec(u)
print(json.dumps(got))
'''


def unspec_check(c, np):
    """A swapped socket disconnected (AF_UNSPEC) and connected again: not the host's."""
    c.start("unspec", [sys.executable, "-c", UNSPEC, "ok.test", str(echo.port),
                       str(echo.port)], sandbox=SB, networkProxy=np,
            env={"PATH": "/usr/bin:/bin"})
    out, _, _ = c.collect("unspec", timeout=60)
    text = out.get("stdout", b"").decode()
    try:
        got = json.loads(text)
    except ValueError:
        got = {"junk": text}
    t.ok(got.get("unspec") not in (None, 0) and
         str(got.get("host-loopback", "")).startswith("errno:") and
         str(got.get("listen", "")).startswith("errno:") and got.get("udp-unspec") == 0,
         "a swapped (host) socket cannot be disconnected and connected again to the host's "
         "loopback, nor made to listen there; a UDP disconnect still works", got)
    t.eq(got.get("loop-again"), 106,
         "a blocking loopback connect made by execd leaves the socket connected (EISCONN)")
    t.eq(got.get("thread"), "thread",
         "a connect from a thread other than the leader is proxied too (was ENETUNREACH)")


def transparent_np(domains):
    np = network_proxy(domains, allow_local=True)
    np["proxy"]["transparentTcp"] = True
    return np


echo = EchoServer()                     # the allowed origin, on the host's loopback
HOST = host_address()
wide = None
if HOST is not None:
    # an origin on the host's own address, for the literal-address probes
    import socketserver
    import threading
    from proxytest import _Echo
    wide = socketserver.ThreadingTCPServer((HOST, 0), _Echo)
    wide.daemon_threads = True
    threading.Thread(target=wide.serve_forever, daemon=True).start()

# ---------------------------------------------------------------- through the sidecar
if shutil.which("dnsmasq") is None:
    t.skip("transparent TCP through the sidecar", "no dnsmasq")
else:
    dns = Dnsmasq({"ok.test": "127.0.0.1", "no.test": "127.0.0.1"})
    hport, sport = free_port(), free_port()
    P = Proxy("listen http 127.0.0.1:%d\nlisten socks5 127.0.0.1:%d\ndns-server %s\n"
              "allow ok.test no.test %s\nallow-local yes\n"
              % (hport, sport, dns.server, HOST or "192.0.2.7"))
    c = Execd(["--proxy-control", P.ctl_path])
    cap = c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp")
    if cap is not True and not FORCE:
        t.skip("transparent TCP through the sidecar", "networkProxyTransparentTcp is %r" % cap)
    else:
        domains = {"ok.test": "allow", "no.test": "deny"}
        if HOST:
            domains[HOST] = "allow"
        args = {"port": echo.port, "names": ["ok.test", "no.test"],
                "literals": ([HOST] if HOST else []) + ["192.0.2.7", "2001:db8::7"],
                "lport": wide.server_address[1] if wide else 9,
                "host_ports": [echo.port], "dns_port": dns.port}
        r, res = run(c, "tp", args, transparent_np(domains))
        t.ok("result" in r, "process/start with transparentTcp and a sandbox is accepted", r)
        t.eq(res.get("resolv"), ["nameserver", "127.0.0.53"],
             "the sandbox's /etc/resolv.conf names the answerer")
        t.eq(res.get("name:ok.test"), "ping-name:ok.test",
             "an allowed name is reached by a plain connect (getaddrinfo, create_connection)")
        t.eq(res.get("name:no.test"), "errno:111", "a denied name: ECONNREFUSED")
        t.ok(str(res.get("v4:ok.test:addr", "")).startswith("198.18.") and
             res.get("v4:ok.test") == "ping-v4:ok.test",
             "IPv4: a made-up address from 198.18.0.0/15, connected by name", res)
        t.ok(str(res.get("v6:ok.test:addr", "")).startswith("fdc0:de00::") and
             res.get("v6:ok.test") == "ping-v6:ok.test",
             "IPv6: a made-up address from fdc0:de00::/96, connected by name", res)
        if HOST:
            t.eq(res.get("literal:" + HOST), "ping-literal:" + HOST,
                 "an allowed literal address is reached, decided on the address")
        else:
            t.skip("an allowed literal address is reached", "no non-loopback address here")
        t.eq(res.get("literal:192.0.2.7"), "errno:111", "a literal address not allowed: refused")
        t.eq(res.get("literal:2001:db8::7"), "errno:111",
             "an IPv6 literal not allowed: refused (CONNECT by IPv6 address)")
        t.eq(res.get("kept"), [True, True, True, False, 0, False],
             "the swapped socket keeps TCP_NODELAY, SO_KEEPALIVE, close-on-exec (off and on) "
             "and O_NONBLOCK (a non-blocking connect answers 0)")
        t.eq(res.get("refused-anyway"), {"again": 106, "v6-socket-v4-address": True,
                                         "listening": 106},
             "what the kernel refuses whatever the address stays refused: EISCONN on a "
             "connected (swapped) socket and on a listening one, an IPv6 socket given an "
             "IPv4 address")
        t.eq(res.get("own-loopback"), "ping-own-loopback",
             "the sandbox's own loopback is reached, not proxied")
        hl = {k: v for k, v in res.items() if k.startswith("host-loopback") and
              not k.endswith(":addr")}
        t.ok(len(hl) == 3 and all(v.startswith("errno:") for v in hl.values()),
             "the host's loopback services are out of reach (v4, v4-mapped, the DNS upstream)",
             hl)
        t.eq(res.get("never-given"), "errno:113",
             "a made-up address never handed out: EHOSTUNREACH, nothing proxied")
        t.eq((res.get("udp"), res.get("udp-sendto")), ("errno:101", "errno:101"),
             "UDP other than DNS: ENETUNREACH (connect and sendto)")
        t.ok(str(res.get("tcp-dns", "")).startswith("1 answers 198.18."),
             "DNS over TCP answered with the made-up address", res.get("tcp-dns"))
        t.eq((res.get("formerr"), res.get("after-formerr", "")[:7]), (1, "198.18."),
             "a compressed question: FORMERR, and the answerer goes on")
        t.eq(res.get("odd"), {"short-header": None, "label-past-end": [1, 0],
                              "no-type": [1, 0], "two-questions": [1, 0],
                              "bad-byte": [5, 0], "nul-byte": [5, 0], "class-chaos": [4, 0],
                              "type-mx": [0, 0], "a-response": None, "long-name": [1, 0],
                              "oversized": None},
             "odd queries: FORMERR, REFUSED for bytes a proxy name cannot carry, NOTIMP, "
             "an empty answer, or nothing")
        ds = decisions(c, "tp")
        seen = sorted({(d.get("host"), d.get("decision"), d.get("protocol")) for d in ds})
        want = [("192.0.2.7", "deny", "socks5_tcp"), ("2001:db8::7", "deny", "socks5_tcp"),
                ("no.test", "deny", "socks5_tcp"),
                ("ok.test", "allow", "socks5_tcp")]
        if HOST:
            want.insert(0, (HOST, "allow", "socks5_tcp"))
        t.eq(seen, sorted(want), "every flow is a network/policyDecision, by name, socks5_tcp")
        audit = [a for a in P.audit() if a.get("event") == "decision"]
        t.ok(audit and all(a.get("tags", {}).get("process_id") == "tp" for a in audit) and
             any(a.get("host") == "ok.test" and a.get("decision") == "allow" for a in audit),
             "the proxy's audit records each flow by name with the process's tag",
             [(a.get("host"), a.get("decision"), a.get("tags")) for a in audit])
        # programs that know nothing of proxies: bash's /dev/tcp, git's own protocol
        git_checks(c, transparent_np(domains))
        # an attacker flipping connect's address between loopback and the host's
        # address while execd reads it: never the host's origin, which the policy denies
        race_check(c, transparent_np({"ok.test": "allow"}))
        # a swapped socket, disconnected, reused against the host's loopback
        unspec_check(c, transparent_np({"ok.test": "allow"}))
        # a process with transparentTcp false keeps the plain managed network
        np = network_proxy({"ok.test": "allow"}, allow_local=True)
        r, res = run(c, "plain", {"port": echo.port, "names": ["ok.test"], "literals": [],
                                  "lport": 9, "host_ports": [], "dns_port": 0}, np)
        t.ok(res.get("name:ok.test", "").startswith("errno:") and
             res.get("resolv") != ["nameserver", "127.0.0.53"],
             "without transparentTcp: no answerer, no way out but the proxy variables", res)
    t.eq(c.close(), 0, "execd exits cleanly (sidecar)")
    P.stop()

# ---------------------------------------------------------------- execd's embedded proxy
c = Execd()
cap = c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp")
if cap is not True and not FORCE:
    t.skip("transparent TCP through the embedded proxy", "networkProxyTransparentTcp is %r" % cap)
elif HOST is None:
    t.skip("transparent TCP through the embedded proxy", "no non-loopback address here")
else:
    args = {"port": echo.port, "names": ["denied.test"], "literals": [HOST],
            "lport": wide.server_address[1], "host_ports": [echo.port], "dns_port": 0}
    r, res = run(c, "emb", args, transparent_np({HOST: "allow", "denied.test": "deny"}))
    t.eq(res.get("literal:" + HOST), "ping-literal:" + HOST,
         "embedded proxy: an allowed literal address is reached")
    t.eq(res.get("name:denied.test"), "errno:111", "embedded proxy: a denied name is refused")
    ds = decisions(c, "emb")
    seen = sorted({(d.get("host"), d.get("decision"), d.get("protocol")) for d in ds})
    t.ok((HOST, "allow", "socks5_tcp") in seen and ("denied.test", "deny", "socks5_tcp") in seen,
         "embedded proxy: network/policyDecision for each flow", seen)
    # not in the allowlist, with policyDecisionTimeoutMs: the client is asked, by address
    ONE = ("import socket, sys\ntry:\n s = socket.create_connection((sys.argv[1], %d), "
           "timeout=20); s.sendall(b'asked'); print(s.recv(10).decode())\n"
           "except OSError as e: print('errno:%%d' %% e.errno)\n" % wide.server_address[1])
    np = transparent_np({"denied.test": "deny"})
    np["policyDecisionTimeoutMs"] = 5000
    c.start("ask", [sys.executable, "-c", ONE, HOST], sandbox=SB, networkProxy=np,
            env={"PATH": "/usr/bin:/bin"})
    try:
        q = c.wait_server_request("network/policyRequest", timeout=20)
    except TimeoutError:
        q = {}
    t.eq(q.get("params", {}).get("request"), {"protocol": "socks5_tcp", "host": HOST,
                                              "port": wide.server_address[1]},
         "not in the allowlist: network/policyRequest names the flow")
    if "id" in q:
        c.send({"id": q["id"], "result": {"decision": {"type": "allow"}}})
    out, _, _ = c.collect("ask", timeout=40)
    t.eq(out.get("stdout"), b"asked\n", "allowed by the client: the plain connect goes through")
t.eq(c.close(), 0, "execd exits cleanly (embedded)")

# ---------------------------------------------------------------- a kernel without it
c = Execd(env=dict(os.environ, EXECD_SANDBOX_DISABLE="transparent"))
cap = c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp")
r = c.start("nok", ["true"], sandbox=SB, networkProxy=transparent_np({"ok.test": "allow"}))
t.ok(cap is False and r.get("error") == {
    "code": -32602, "message": "transparent TCP is unavailable on this executor",
    "data": {"kind": "sandboxUnavailable"}},
    "without user notification: the capability is false and such a start is refused", (cap, r))
t.eq(c.close(), 0, "execd exits cleanly (no user notification)")

# ---------------------------------------------------------------- --linux-sandbox-transparent-tcp
c = Execd(["--linux-sandbox-transparent-tcp"])
cap = c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp")
if (cap is not True and not FORCE) or HOST is None:
    t.skip("--linux-sandbox-transparent-tcp", "unsupported here, or no non-loopback address")
else:
    args = {"port": echo.port, "names": ["denied.test"], "literals": [HOST],
            "lport": wide.server_address[1], "host_ports": [], "dns_port": 0}
    r, res = run(c, "flag", args, network_proxy({HOST: "allow", "denied.test": "deny"}))
    t.ok(res.get("literal:" + HOST) == "ping-literal:" + HOST and
         res.get("name:denied.test") == "errno:111",
         "--linux-sandbox-transparent-tcp: a managed start without transparentTcp is "
         "transparent", res)
t.eq(c.close(), 0, "execd exits cleanly (--linux-sandbox-transparent-tcp)")
t.done()
