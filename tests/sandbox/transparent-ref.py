#!/usr/bin/python3
"""Transparent TCP beside 0.171.0: the same process/start (managed sandbox,
networkProxy with transparentTcp, execd's and the reference's own embedded
proxy) and the same plain program, on both; the program's view compared.

The reference's mode needs a distro bubblewrap at /usr/bin/bwrap: give one
with EXECD_TEST_BWRAP=/path/to/bwrap (Debian 12's: `apt-get download
bubblewrap` and `dpkg-deb -x`; contrib/install-deps.sh unpacks it in
/opt/execd-test/bubblewrap, the default), and the test, as root, overlays it on
/usr/bin in a private mount namespace of its own, so the host is not
changed.  Skips without the reference, without such a bwrap, without root,
and in the sanitizer pass (slow).

Compared: the start's answer, /etc/resolv.conf, the made-up addresses (A and
AAAA) of the first and second names asked, an allowed literal address
reached, a denied name and a literal outside the allowlist not reached, and
each flow's network/policyDecision (host, decision, protocol).  Known and
documented differences, checked as such: a refused flow is ECONNREFUSED at
connect here and ECONNRESET on the first read there (its TUN stack accepts
first); UDP elsewhere is ENETUNREACH here and silently dropped there;
execd-proxy's decision names the SOCKS method (CONNECT), the reference's
does not.  Then both with --tcp-upstream-proxy to a fake HTTP CONNECT proxy
of the test's, allowUpstreamProxy true and false: what the program reaches
and the CONNECT requests the upstream gets (header names folded) are the
same."""
import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading

from proxytest import FakeConnectProxy, Tap, _Echo, deadline
from execd_client import EXECD, Execd, find_ref, network_proxy

INNER = "--in-private-mount-namespace"


def outer():
    t = Tap()
    # install-deps unpacks Debian's bubblewrap there, never installed on PATH
    bwrap = os.environ.get("EXECD_TEST_BWRAP") or "/opt/execd-test/bubblewrap/usr/bin/bwrap"
    why = ("sanitizer pass (slow)" if os.environ.get("EXECD_SANITIZERS") else
           "no reference codex" if not find_ref() else
           "EXECD_TEST_BWRAP names no bubblewrap" if not bwrap or not os.access(bwrap, os.X_OK)
           else "not root (the overlay needs a private mount namespace)" if os.geteuid() != 0
           else "no unshare(1)" if shutil.which("unshare") is None else None)
    if why:
        t.skip("transparent TCP beside 0.171.0", why)
        t.done()
        return
    d = tempfile.mkdtemp(prefix="tp-bwrap-")
    shutil.copy(bwrap, os.path.join(d, "bwrap"))
    try:
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            'mount -t overlay overlay -o lowerdir="$1":/usr/bin /usr/bin && '
                            'exec "$2" "$3" "$4"', "sh", d, sys.executable,
                            os.path.abspath(__file__), INNER], timeout=240)
        sys.exit(r.returncode)
    finally:
        shutil.rmtree(d, ignore_errors=True)


SB = {"permissions": {"type": "managed", "network": "restricted",
                      "file_system": {"type": "restricted", "entries": [
                          {"path": {"type": "special", "value": {"kind": "root"}},
                           "access": "read"}]}},
      "windowsSandboxLevel": "disabled", "cwd": "file:///tmp"}

PROBE = r'''
import json, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
res = {"resolv": open("/etc/resolv.conf").read().split()}
for n in ("first.test", "second.test"):
    res[n] = sorted(a[4][0] for a in socket.getaddrinfo(n, 80, 0, socket.SOCK_STREAM))
def talk(k, h):
    try:
        s = socket.create_connection((h, port), timeout=10)
    except OSError as e:
        res[k] = "connect:%d" % e.errno
        return
    try:
        s.settimeout(10); s.sendall(b"hello"); got = s.recv(10)
        res[k] = "echo:" + got.decode() if got else "eof"
    except OSError as e:
        res[k] = "read:%d" % e.errno
talk("allowed", host)
talk("denied", "denied.test")
talk("outside", "192.0.2.77" if host != "192.0.2.77" else "192.0.2.78")
print(json.dumps(res))
'''


def run(c, host, port):
    np = network_proxy({host: "allow", "denied.test": "deny"}, allow_local=True)
    np["proxy"]["transparentTcp"] = True
    r = c.start("tp", [sys.executable, "-c", PROBE, host, str(port)], sandbox=SB,
                networkProxy=np, env={"PATH": "/usr/bin:/bin"})
    out = {}
    if "result" in r:
        o, _, _ = c.collect("tp", timeout=90)
        try:
            out = json.loads(o.get("stdout", b"{}").decode() or "{}")
        except ValueError:
            out = {"junk": o}
    ds = []
    try:
        while True:
            ds.append(c.wait_notification("network/policyDecision",
                                          lambda p: p.get("processId") == "tp", timeout=3))
    except TimeoutError:
        pass
    c.close()
    return r.get("result", r.get("error")), out, ds


UPROBE = r'''
import json, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
res = {}
for k, h in (("name", "up.test"), ("denied", "denied.test"), ("public", "8.8.8.8"),
             ("private", host)):
    try:
        s = socket.create_connection((h, port), timeout=10)
        s.settimeout(10); s.sendall(b"hi"); got = s.recv(10)
        res[k] = "echo:" + got.decode() if got else "eof"
    except OSError as e:
        res[k] = "err"
print(json.dumps(res))
'''


def run_upstream(argv_env, host, port, allow_upstream):
    """--tcp-upstream-proxy to a fake upstream: what the program sees, what the upstream got."""
    up = FakeConnectProxy()
    argv, env = argv_env
    c = Execd(argv=argv + ["--tcp-upstream-proxy", "127.0.0.1:%d" % up.port], env=env)
    np = network_proxy({"up.test": "allow", "denied.test": "deny", "8.8.8.8": "allow",
                        host: "allow"}, allow_local=True)
    np["proxy"]["transparentTcp"] = True
    np["proxy"]["allowUpstreamProxy"] = allow_upstream
    r = c.start("up", [sys.executable, "-c", UPROBE, host, str(port)], sandbox=SB,
                networkProxy=np, env={"PATH": "/usr/bin:/bin"})
    out = {}
    if "result" in r:
        o, _, _ = c.collect("up", timeout=90)
        try:
            out = json.loads(o.get("stdout", b"{}").decode() or "{}")
        except ValueError:
            out = {"junk": o}
    c.close()
    heads = sorted(h.lower().split("\r\n\r\n")[0] for h in up.heads)
    return out, heads


def inner():
    deadline(200)
    t = Tap()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        host = s.getsockname()[0]
    except OSError:
        host = None
    if host is None or host.startswith("127."):
        t.skip("transparent TCP beside 0.171.0", "no non-loopback address here")
        t.done()
        return
    srv = socketserver.ThreadingTCPServer((host, 0), _Echo)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    home = tempfile.mkdtemp(dir="/var/tmp")
    ours = run(Execd(), host, port)
    ref = run(Execd(argv=[find_ref(), "exec-server", "--listen", "stdio"],
                    env=dict(os.environ, CODEX_HOME=home)), host, port)
    # --tcp-upstream-proxy on both, allowUpstreamProxy true and false
    ups = {}
    for allow in (True, False):
        ups[allow] = (run_upstream(([EXECD, "--stdio"], None), host, port, allow),
                      run_upstream(([find_ref(), "exec-server", "--listen", "stdio"],
                                    dict(os.environ, CODEX_HOME=home)), host, port, allow))
    shutil.rmtree(home, ignore_errors=True)
    (ra, ro, rd), (ea, eo, ed) = ref, ours
    t.eq(ea, ra, "the start's answer is the reference's")
    for k in ("resolv", "first.test", "second.test"):
        t.eq(eo.get(k), ro.get(k), "%s as the reference sees it" % k)
    t.eq((eo.get("allowed"), ro.get("allowed")), ("echo:hello", "echo:hello"),
         "an allowed literal address is reached on both")
    for k in ("denied", "outside"):
        t.eq((eo.get(k), ro.get(k)), ("connect:111", "read:104"),
             "%s: not reached on either (here ECONNREFUSED at connect, there ECONNRESET "
             "on the first read)" % k)

    def flows(ds):
        return sorted({(d.get("host"), d.get("decision"), d.get("protocol")) for d in ds})
    t.eq(flows(ed), flows(rd), "each flow's network/policyDecision: host, decision, protocol")
    t.eq([sorted(set(d) - {"method"}) for d in ed[:1]], [sorted(d) for d in rd[:1]],
         "network/policyDecision's fields, but execd-proxy's method (CONNECT)")
    (eo, eh), (ro, rh) = ups[True]
    t.eq(eo, ro, "--tcp-upstream-proxy: the program sees what it sees there (the upstream's "
         "echo by name and public address, the rest not reached)")
    t.eq(eh, rh, "--tcp-upstream-proxy: the upstream is asked the same CONNECTs (by name, "
         "the public address; never the denied name or the private address)")
    t.ok(any(h.startswith("connect up.test:%d http/1.1" % port) for h in eh), "... namely", eh)
    (eo, eh), (ro, rh) = ups[False]
    t.eq((eo, eh), (ro, rh), "--tcp-upstream-proxy with allowUpstreamProxy false: the same "
         "(no raw TCP at all)")
    t.done()


if __name__ == "__main__":
    if INNER in sys.argv:
        inner()
    else:
        outer()
