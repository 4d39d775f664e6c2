#!/usr/bin/python3
"""Transparent TCP's cost (networkProxy.proxy.transparentTcp), with execd's
embedded proxy: inside one managed sandbox, connect + 1 KiB echo to an origin
on the host's own non-loopback address, through transparent TCP (a plain
connect, execd swaps the socket) against the same through ALL_PROXY (a SOCKS5
handshake by the program itself, on the bridged route); and the start cost of
a transparent sandbox over a plain managed one (/bin/true, process/start to
process/closed, the two interleaved).  Medians.  Options: --quick, --markdown.
Environment as tests/bench.py (EXECD, top_builddir).  The reference's
transparent mode is not measured: it needs a distro bubblewrap."""
import json
import os
import socket
import socketserver
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from execd_client import Execd, network_proxy  # noqa: E402
from proxytest import _Echo  # noqa: E402

INNER = r'''
import json, os, socket, sys, time
n, host, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
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
transparent(); socks()
for i in range(n):      # interleaved: load from elsewhere falls on both alike
    for name, f in (("transparent", transparent), ("socks", socks)):
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
    finally:
        os.dup2(saved, 2)
    if rows is None:
        print("# transparent TCP unavailable here: nothing measured")
        return
    md = "--markdown" in sys.argv
    for name, v in rows:
        print(("| %s | %.2f |" if md else "%-46s %10.2f") % (name, v))
    print(("| %s | %.2f |" if md else "%-46s %10.2f") % (
        "transparent / ALL_PROXY", rows[0][1] / rows[1][1]))
    print(("| %s | %+.2f |" if md else "%-46s %+10.2f") % (
        "start cost of transparent over managed (ms)", rows[3][1] - rows[2][1]))


def measure(host, port, quick):
    c = Execd()
    if c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp") is not True:
        c.close()
        return None
    np = network_proxy({host: "allow"}, allow_local=True)
    tnp = json.loads(json.dumps(np))
    tnp["proxy"]["transparentTcp"] = True
    n = 50 if quick else 300
    c.start("bench", [sys.executable, "-c", INNER, str(n), host, str(port)], sandbox=SB,
            networkProxy=tnp)
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
        ("connect + 1 KiB echo, ALL_PROXY SOCKS5 (us)", statistics.median(res["socks"]) * 1e6),
        ("start, managed sandbox (ms)", statistics.median(starts["managed"]) * 1e3),
        ("start, transparent sandbox (ms)", statistics.median(starts["transparent"]) * 1e3),
    ]


if __name__ == "__main__":
    main()
