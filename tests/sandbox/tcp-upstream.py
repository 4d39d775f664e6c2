#!/usr/bin/python3
"""--tcp-upstream-proxy HOST:PORT as 0.171.0 means it ("Require this HTTP
CONNECT proxy for raw TCP from the managed SOCKS listener"), observed on it
with a listener of our own as the upstream:

- every SOCKS5 TCP flow of a managed process (transparent TCP, or a program
  speaking SOCKS5 to ALL_PROXY) that the policy allows goes to HOST:PORT as
  "CONNECT target:port HTTP/1.1" with a Host header, by name when the
  program asked by name; the HTTP listener's flows do not;
- a flow the policy denies never reaches the upstream;
- an allowed literal address that is not public is refused ("IP
  destination cannot use the TCP upstream proxy"), never dialled directly;
- a launch config with allowUpstreamProxy false gets no raw TCP at all
  (the upstream is required, and it may not use one);
- a HOST:PORT that is not one is refused at start.

Through execd's embedded proxy and through an execd-proxy sidecar (whose
audit has one decision record per flow).  Skips when execd says
networkProxyTransparentTcp false."""
import json
import os
import socket
import subprocess
import sys
import threading

from proxytest import FakeConnectProxy, Proxy, Tap, deadline, free_port, host_address
from execd_client import EXECD, Execd, network_proxy

deadline(150)
t = Tap()
W = os.environ.get("TMPDIR", "/tmp")
FORCE = os.environ.get("EXECD_TEST_FORCE_TRANSPARENT") == "1"
PUBLIC = "8.8.8.8"      # never dialled: the fake upstream below only echoes

SB = {"permissions": {"type": "managed", "network": "restricted",
                      "file_system": {"type": "restricted", "entries": [
                          {"path": {"type": "special", "value": {"kind": "root"}},
                           "access": "read"}]}},
      "windowsSandboxLevel": "disabled", "cwd": "file://" + W}


PROBE = r'''
import json, os, socket, sys
a = json.loads(sys.argv[1])
res = {}
def talk(k, h, p):
    try:
        s = socket.create_connection((h, p), timeout=10)
    except OSError as e:
        res[k] = "errno:%s" % e.errno; return
    try:
        s.settimeout(10); s.sendall(b"hi"); res[k] = s.recv(100).decode()
    except OSError as e:
        res[k] = "read-errno:%s" % e.errno
def hostport(var):
    u = os.environ[var].split("//", 1)[1].split("@")[-1].rstrip("/")
    h, p = u.rsplit(":", 1)
    return h, int(p), os.environ[var].split("//", 1)[1].split("@")[0]
def socks(k, h, p):
    ph, pp, cred = hostport("ALL_PROXY")
    user, pw = cred.split(":", 1)
    try:
        s = socket.create_connection((ph, pp), timeout=10); s.settimeout(10)
        s.sendall(b"\x05\x01\x02"); s.recv(2)
        s.sendall(bytes([1, len(user)]) + user.encode() + bytes([len(pw)]) + pw.encode())
        s.recv(2)
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(h)]) + h.encode() + p.to_bytes(2, "big"))
        r = s.recv(10)
        if r[1] != 0:
            res[k] = "rep:%d" % r[1]; return
        s.sendall(b"hi"); res[k] = s.recv(100).decode()
    except OSError as e:
        res[k] = "errno:%s" % e.errno
def http_connect(k, h, p):
    ph, pp, cred = hostport("HTTP_PROXY")
    import base64
    auth = base64.b64encode(cred.encode()).decode()
    try:
        s = socket.create_connection((ph, pp), timeout=10); s.settimeout(10)
        s.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\nProxy-Authorization: Basic %s"
                   "\r\n\r\n" % (h, p, h, p, auth)).encode())
        r = b""
        while b"\r\n\r\n" not in r:
            d = s.recv(1000)
            if not d: break
            r += d
        if not r.startswith(b"HTTP/1.1 200"):
            res[k] = "http:" + r[:12].decode(); return
        s.sendall(b"hi"); res[k] = s.recv(100).decode()
    except OSError as e:
        res[k] = "errno:%s" % e.errno
for k, how, h, p in a["probes"]:
    {"tcp": talk, "socks": socks, "http": http_connect}[how](k, h, p)
print(json.dumps(res))
'''


def np_for(domains, transparent=True, allow_upstream=True):
    np = network_proxy(domains, allow_local=True)
    np["proxy"]["transparentTcp"] = transparent
    np["proxy"]["allowUpstreamProxy"] = allow_upstream
    return np


def run(c, pid, probes, np):
    r = c.start(pid, [sys.executable, "-c", PROBE, json.dumps({"probes": probes})], sandbox=SB,
                networkProxy=np, env={"PATH": "/usr/bin:/bin"})
    if "result" not in r:
        return {"start": r}
    out, _, _ = c.collect(pid, timeout=60)
    try:
        return json.loads(out.get("stdout", b"{}").decode() or "{}")
    except ValueError:
        return {"junk": out}


def decisions(c, pid, timeout=3):
    got = []
    try:
        while True:
            got.append(c.wait_notification("network/policyDecision",
                                           lambda p: p.get("processId") == pid, timeout=timeout))
    except TimeoutError:
        pass
    return sorted({(d.get("host"), d.get("decision"), d.get("protocol")) for d in got})


# ---------------------------------------------------------------- the option's value
for bad, why in (("foo", "no port"), ("127.0.0.1:0", "port 0"), (":80", "no host"),
                 ("h:99999", "port too large"), ("::1:80", "IPv6 without brackets"),
                 ("http://127.0.0.1:3128", "a URL"), ("a b:1", "a space in the host"),
                 ("user@h:1", "credentials")):
    p = subprocess.run([EXECD, "--stdio", "--tcp-upstream-proxy", bad], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=20)
    t.ok(p.returncode == 2 and b"invalid value" in p.stderr,
         "--tcp-upstream-proxy %r (%s) is refused at start" % (bad, why),
         (p.returncode, p.stderr[-300:]))

up = FakeConnectProxy()
HOST = host_address()
wide_port = 9
if HOST is not None:
    import socketserver
    from proxytest import _Echo
    wide = socketserver.ThreadingTCPServer((HOST, 0), _Echo)
    wide.daemon_threads = True
    threading.Thread(target=wide.serve_forever, daemon=True).start()
    wide_port = wide.server_address[1]


def upstream_checks(c, label, P=None):
    domains = {"ok.test": "allow", "no.test": "deny", PUBLIC: "allow"}
    probes = [["name", "tcp", "ok.test", 4321], ["denied", "tcp", "no.test", 4321],
              ["public", "tcp", PUBLIC, 4322], ["socks", "socks", "ok.test", 4323]]
    if HOST:
        domains[HOST] = "allow"
        probes += [["private", "tcp", HOST, wide_port], ["http", "http", HOST, wide_port]]
    res = run(c, label, probes, np_for(domains))
    t.eq(res.get("name"), "UP:hi",
         "%s: an allowed name goes to the upstream (transparent TCP)" % label)
    t.eq(res.get("denied"), "errno:111", "%s: a denied name is refused" % label)
    t.eq(res.get("public"), "UP:hi",
         "%s: an allowed public literal goes to the upstream" % label)
    t.eq(res.get("socks"), "UP:hi",
         "%s: a program's own SOCKS5 CONNECT (ALL_PROXY) goes to the upstream too" % label)
    if HOST:
        t.ok(str(res.get("private", "")).startswith("errno:"),
             "%s: an allowed literal that is not public is refused, not dialled "
             "directly" % label, res.get("private"))
        t.eq(res.get("http"), "hi",
             "%s: the HTTP listener's CONNECT does not use the TCP upstream" % label)
    else:
        t.skip("%s: a private literal is refused" % label, "no non-loopback address here")
    seen = [h for h in up.heads if "4321" in h or "4322" in h or "4323" in h]
    t.ok(any(h.startswith("CONNECT ok.test:4321 HTTP/1.1\r\n") and "ost: ok.test:4321\r\n"
             in h for h in seen),
         "%s: the upstream is asked CONNECT ok.test:4321 HTTP/1.1 with a Host header" % label,
         seen)
    t.ok(all("no.test" not in h for h in up.heads) and
         all(HOST is None or HOST not in h for h in up.heads),
         "%s: the denied name and the private literal never reach the upstream" % label,
         up.heads)
    ds = decisions(c, label)
    t.ok(("ok.test", "allow", "socks5_tcp") in ds and ("no.test", "deny", "socks5_tcp") in ds
         and (PUBLIC, "allow", "socks5_tcp") in ds,
         "%s: the policy decided each flow first (network/policyDecision)" % label, ds)
    if P is not None:
        audit = [a for a in P.audit() if a.get("event") == "decision" and
                 a.get("tags", {}).get("process_id") == label]
        hosts = [a.get("host") for a in audit]
        # no.test is tried at each of its made-up addresses (A, AAAA): a flow each
        t.ok(sorted(set(hosts)) == sorted({"ok.test", "no.test", PUBLIC} | ({HOST} if HOST else
                                                                          set())) and
             hosts.count("ok.test") == 2 and hosts.count(PUBLIC) == 1 and
             hosts.count(HOST) == (2 if HOST else 0),
             "%s: one audit decision record per flow" % label, hosts)
    # allowUpstreamProxy false: the upstream is required and may not be used
    n = len(up.heads)
    res = run(c, label + "-no", [["name", "tcp", "ok.test", 4324]],
              np_for({"ok.test": "allow"}, allow_upstream=False))
    t.ok(str(res.get("name", "")).startswith("errno:") and len(up.heads) == n,
         "%s: allowUpstreamProxy false: no raw TCP, direct or upstream" % label,
         (res, up.heads[n:]))


# ---------------------------------------------------------------- embedded proxy
c = Execd(["--tcp-upstream-proxy", "127.0.0.1:%d" % up.port])
cap = c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp")
if cap is not True and not FORCE:
    t.skip("--tcp-upstream-proxy through the embedded proxy",
           "networkProxyTransparentTcp is %r" % cap)
else:
    upstream_checks(c, "emb")
    # a managed process without transparent TCP: its SOCKS5 flows take the upstream too
    res = run(c, "plain", [["socks", "socks", "ok.test", 4325]],
              np_for({"ok.test": "allow"}, transparent=False))
    t.eq(res.get("socks"), "UP:hi",
         "without transparentTcp: the process's SOCKS5 CONNECT goes to the upstream")
t.eq(c.close(), 0, "execd exits cleanly (embedded)")

# ---------------------------------------------------------------- sidecar
hport, sport = free_port(), free_port()
P = Proxy("listen http 127.0.0.1:%d\nlisten socks5 127.0.0.1:%d\n"
          "allow ok.test no.test %s %s\nallow-local yes\n"
          % (hport, sport, PUBLIC, HOST or "192.0.2.7"))
c = Execd(["--proxy-control", P.ctl_path, "--tcp-upstream-proxy", "127.0.0.1:%d" % up.port])
cap = c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp")
if cap is not True and not FORCE:
    t.skip("--tcp-upstream-proxy through the sidecar", "networkProxyTransparentTcp is %r" % cap)
else:
    upstream_checks(c, "side", P)
t.eq(c.close(), 0, "execd exits cleanly (sidecar)")
P.stop()
t.done()
