#!/usr/bin/python3
"""execd-proxy's loopback sockets and congestion control: a relay whose
client and target are on loopback sends with loopback-congestion-control
(reno by default: the host's pacing algorithm costs more than the bytes
there), a target at any other address keeps the host's algorithm, `host`
turns it off, and a bad or unavailable name is refused, never cut.  The
proxy's sockets are looked at from outside with ss(8)."""

import os
import shutil
import socket
import subprocess
import sys
import threading

from proxytest import PROXY_BIN, Proxy, Tap, connect_via_http, deadline, tmpdir

deadline(60)
t = Tap()
SS = shutil.which("ss")
with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
    HOST_CC = f.read().strip()


def echo_server():
    """An echo server on every IPv4 address: loopback and this host's others."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", 0))
    ls.listen(8)

    def serve(c):
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
        c.close()

    def run():
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(c,), daemon=True).start()
    threading.Thread(target=run, daemon=True).start()
    return ls.getsockname()[1]


def algorithms(*filt):
    """The congestion control of each established TCP socket ss selects."""
    out = subprocess.run([SS, "-Htin", "state", "established"] + list(filt),
                         capture_output=True, text=True, timeout=10).stdout
    algs = []
    for line in out.splitlines():
        if line.startswith(("\t", " ")) and line.split():
            algs.append(line.split()[0])
    return algs


def other_address():
    """An IPv4 address of this host that is not loopback, or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))     # no packet: only picks the route's source
        a = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if a.startswith("127.") or a == "0.0.0.0" else a


def tunnel(p, target):
    c = p.register()
    s, status, _ = connect_via_http(p.http, target, c, timeout=10)
    s.sendall(b"ping")
    got = b""
    while len(got) < 4:
        d = s.recv(16)
        if not d:
            break
        got += d
    return s, status == "HTTP/1.1 200 OK" and got == b"ping"


if SS is None:
    print("1..0 # SKIP ss(8) (iproute2) is not installed")
    sys.exit(0)

ECHO = echo_server()
OTHER = other_address()
P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1%s\n" % (" " + OTHER if OTHER else ""))
PPORT = P.http.rsplit(":", 1)[1]

s, ok = tunnel(P, "127.0.0.1:%d" % ECHO)
t.ok(ok, "a tunnel to a loopback target carries bytes")
up = algorithms("dport", "=", ":%d" % ECHO)
down = algorithms("sport", "=", ":%s" % PPORT)
t.eq(up, ["reno"], "the proxy's socket to a loopback target sends with reno (host: %s)" % HOST_CC)
t.eq(down, ["reno"], "the proxy's socket to its loopback client sends with reno")
s.close()

if OTHER is None:
    t.skip("a target at a non-loopback address keeps the host's algorithm",
           "this host has no IPv4 address but loopback")
else:
    s, ok = tunnel(P, "%s:%d" % (OTHER, ECHO))
    up = algorithms("dst", OTHER, "dport", "=", ":%d" % ECHO)
    t.ok(ok and up == [HOST_CC],
         "the proxy's socket to %s (not loopback) keeps the host's %s" % (OTHER, HOST_CC),
         (ok, up))
    s.close()
t.eq(P.stop(), 0, "proxy exits 0")

P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nloopback-congestion-control host\n")
PPORT = P.http.rsplit(":", 1)[1]
s, ok = tunnel(P, "127.0.0.1:%d" % ECHO)
up = algorithms("dport", "=", ":%d" % ECHO)
down = algorithms("sport", "=", ":%s" % PPORT)
if HOST_CC == "reno":
    t.skip("loopback-congestion-control host keeps the host's algorithm",
           "the host's algorithm is reno itself: nothing to tell apart")
else:
    t.ok(ok and up == [HOST_CC] and down == [HOST_CC],
         "loopback-congestion-control host: loopback sockets keep the host's %s" % HOST_CC,
         (ok, up, down))
s.close()
t.eq(P.stop(), 0, "proxy exits 0 (host)")

# -n: names the kernel cannot take are refused with the reason, never cut
path = os.path.join(tmpdir(), "loopcc.conf")
for value, want in [("Reno", "takes host or an algorithm's name"),
                    ("reno_and_more_15", "takes host or an algorithm's name"),
                    ("reno;x", "takes host or an algorithm's name"),
                    ("nosuchalgorithm", "not available")]:
    with open(path, "w") as f:
        f.write("listen http 127.0.0.1:3128\nloopback-congestion-control %s\n" % value)
    r = subprocess.run([PROXY_BIN, "-n", "-f", path], capture_output=True, text=True,
                       timeout=10)
    t.ok(r.returncode == 1 and want in r.stderr, "-n refuses loopback-congestion-control %s: %s"
         % (value, want), r.stderr.strip())
t.done()
