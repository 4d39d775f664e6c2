#!/usr/bin/python3
"""Transparent TCP's cost (networkProxy.proxy.transparentTcp), with execd's
embedded proxy: inside one managed sandbox, connect + 1 KiB echo to an origin
on the host's own non-loopback address, through transparent TCP (a plain
connect, execd swaps the socket) against the same through ALL_PROXY (a SOCKS5
handshake by the program itself, on the bridged route); and the start cost of
a transparent sandbox over a plain managed one (/bin/true, process/start to
process/closed, the two interleaved).  Medians.  Options: --quick, --markdown.
Environment as tests/bench/bench.py (EXECD, top_builddir); with EXECD_TEST_BWRAP
(a distro bubblewrap, see tests/sandbox/transparent-ref.py), as root, the
same rows for 0.171.0's transparent mode too, in a private mount namespace."""
import json
import os
import shutil
import socket
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from execd_client import Execd, network_proxy  # noqa: E402
from proxytest import _Echo  # noqa: E402

INNER = r'''
import json, os, socket, sys, time
n, host, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
with_socks = sys.argv[4] == "both"
if with_socks:
    url = os.environ["ALL_PROXY"][len("socks5h://"):]
    cred, hp = url.rsplit("@", 1)
    user, pw = cred.split(":", 1)
    ph, pp = hp.rsplit(":", 1)
msg = b"x" * 1024
def once(s):
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        got += s.recv(65536)
    s.close()
def transparent():
    once(socket.create_connection((host, port)))
def socks():
    s = socket.create_connection((ph, int(pp)))
    a = bytes([4]) + bytes(map(int, host.split(".")))
    s.sendall(b"\x05\x01\x02" + bytes([1, len(user)]) + user.encode() + bytes([len(pw)]) +
              pw.encode() + b"\x05\x01\x00\x01" + a[1:] + port.to_bytes(2, "big"))
    r = b""
    while len(r) < 4 + 10:
        r += s.recv(4 + 10 - len(r))
    assert r[5] == 0, r
    once(s)
res = {"transparent": [], "socks": []}
kinds = (("transparent", transparent), ("socks", socks)) if with_socks else \
    (("transparent", transparent),)
for name, f in kinds:
    f()
for i in range(n):      # interleaved: load from elsewhere falls on both alike
    for name, f in kinds:
        t0 = time.perf_counter(); f(); res[name].append(time.perf_counter() - t0)
print(json.dumps(res))
'''

SB = {"permissions": {"type": "managed", "network": "restricted",
                      "file_system": {"type": "restricted", "entries": [
                          {"path": {"type": "special", "value": {"kind": "root"}},
                           "access": "read"}]}},
      "windowsSandboxLevel": "disabled", "cwd": "file:///tmp"}


def host_address():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        return s.getsockname()[0]
    finally:
        s.close()


def main():
    reexec_private()
    quick = "--quick" in sys.argv
    host = host_address()
    srv = socketserver.ThreadingTCPServer((host, 0), _Echo)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    # the embedded proxy's audit and execd's log go to stderr: not into the table
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        rows = measure(host, port, quick)
        ref = measure_ref(host, port, quick)
    finally:
        os.dup2(saved, 2)
    if rows is None:
        print("# transparent TCP unavailable here: nothing measured")
        return
    if ref is not None:
        rows = rows[:6] + [("0.171.0: connect + 1 KiB echo, transparent (us)", ref[0][1]),
                 ("0.171.0: start, managed sandbox (ms)", ref[2][1]),
                 ("0.171.0: start, transparent sandbox (ms)", ref[3][1])]
    md = "--markdown" in sys.argv
    for name, v in rows:
        print(("| %s | %.2f |" if md else "%-46s %10.2f") % (name, v))
    print(("| %s | %.2f |" if md else "%-46s %10.2f") % (
        "transparent / ALL_PROXY", rows[0][1] / rows[1][1]))
    print(("| %s | %+.2f |" if md else "%-46s %+10.2f") % (
        "start cost of transparent over managed (ms)", rows[3][1] - rows[2][1]))
    print(("| %s | %+.2f |" if md else "%-46s %+10.2f") % (
        "the same, least against least (ms)", rows[5][1] - rows[4][1]))
    if ref is not None:
        print(("| %s | %.2f |" if md else "%-46s %10.2f") % (
            "transparent connect + echo: execd / 0.171.0", rows[0][1] / ref[0][1]))
        print(("| %s | %+.2f |" if md else "%-46s %+10.2f") % (
            "0.171.0: start cost of transparent (ms)", ref[3][1] - ref[2][1]))


def measure_ref(host, port, quick):
    """0.171.0's rows, when it can run its transparent mode here: inside a
    private mount namespace with EXECD_TEST_BWRAP overlaid on /usr/bin (see
    tests/sandbox/transparent-ref.py); None otherwise."""
    from execd_client import find_ref
    ref = find_ref()
    if not ref or os.environ.get("BENCH_IN_PRIVATE_NS") != "1":
        return None
    home = tempfile.mkdtemp(dir="/var/tmp")
    try:
        return measure(host, port, quick, [ref, "exec-server", "--listen", "stdio"],
                       dict(os.environ, CODEX_HOME=home))
    finally:
        shutil.rmtree(home, ignore_errors=True)


def reexec_private():
    """With EXECD_TEST_BWRAP, as root: run again with it overlaid on /usr/bin."""
    bwrap = os.environ.get("EXECD_TEST_BWRAP")
    if (os.environ.get("BENCH_IN_PRIVATE_NS") == "1" or not bwrap or os.geteuid() != 0 or
            shutil.which("unshare") is None):
        return
    d = tempfile.mkdtemp(prefix="tp-bwrap-")
    shutil.copy(bwrap, os.path.join(d, "bwrap"))
    try:
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            'mount -t overlay overlay -o lowerdir="$1":/usr/bin /usr/bin && '
                            'shift && exec "$@"', "sh", d, sys.executable,
                            os.path.abspath(__file__)] + sys.argv[1:],
                           env=dict(os.environ, BENCH_IN_PRIVATE_NS="1"))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    sys.exit(r.returncode)


def measure(host, port, quick, argv=None, env=None):
    c = Execd(argv=argv, env=env)
    if c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp") is not True:
        c.close()
        return None
    np = network_proxy({host: "allow"}, allow_local=True)
    tnp = json.loads(json.dumps(np))
    tnp["proxy"]["transparentTcp"] = True
    n = 50 if quick else 300
    c.start("bench", [sys.executable, "-c", INNER, str(n), host, str(port),
                      "transparent" if argv else "both"], sandbox=SB, networkProxy=tnp)
    out, code, _ = c.collect("bench", timeout=300)
    res = json.loads(out["stdout"].decode())
    starts = {"managed": [], "transparent": []}
    for i in range(10 if quick else 40):
        for kind, p in (("managed", np), ("transparent", tnp)):
            pid = "%s%d" % (kind, i)
            t0 = time.perf_counter()
            c.start(pid, ["/bin/true"], sandbox=SB, networkProxy=p)
            c.collect(pid)
            starts[kind].append(time.perf_counter() - t0)
    c.close()
    return [
        ("connect + 1 KiB echo, transparent TCP (us)", statistics.median(res["transparent"]) * 1e6),
        ("connect + 1 KiB echo, ALL_PROXY SOCKS5 (us)",
         statistics.median(res["socks"]) * 1e6 if res["socks"] else float("nan")),
        ("start, managed sandbox (ms)", statistics.median(starts["managed"]) * 1e3),
        ("start, transparent sandbox (ms)", statistics.median(starts["transparent"]) * 1e3),
        # the least of each: what is left when load from elsewhere is not
        ("start, managed sandbox (ms, least)", min(starts["managed"]) * 1e3),
        ("start, transparent sandbox (ms, least)", min(starts["transparent"]) * 1e3),
    ]


if __name__ == "__main__":
    main()
