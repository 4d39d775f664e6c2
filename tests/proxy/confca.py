#!/usr/bin/python3
"""execd-proxy.conf(5) keywords that take several words (inspect-ca CERT
KEY, inspect-host A B) are read as documented, and an operator's own
inspection CA works; the inspection CA is never a trust anchor for the
targets' certificates, even when upstream-ca names a bundle holding it."""

import os
import ssl
import subprocess
import time

from proxytest import PROXY_BIN, Dnsmasq, Proxy, Tap, connect_via_http, deadline, tmpdir
from tlstest import TestCA, TLSOrigin

deadline(60)
t = Tap()


def conf_check(text):
    """execd-proxy -n on a configuration: (exit status, stderr)."""
    d = tmpdir()
    path = os.path.join(d, "p.conf")
    with open(path, "w") as f:
        f.write("control %s/c.sock\nstate-directory %s\n%s" % (d, d, text))
    c = subprocess.run([PROXY_BIN, "-n", "-f", path], capture_output=True, text=True, timeout=10)
    return c.returncode, c.stderr


company = TestCA("company CA")       # the operator's own inspection CA
other = TestCA("origin CA")          # what real targets are signed by
rc, err = conf_check("listen http 127.0.0.1:0\ninspect-ca %s %s\n" % (company.cert, company.key))
t.ok(rc == 0, "inspect-ca CERT KEY is accepted by the parser", err)
rc, err = conf_check("listen http 127.0.0.1:0\ninspect-host a.test b.test\n")
t.ok(rc == 0, "inspect-host with two patterns is accepted", err)
rc, err = conf_check("listen http 127.0.0.1:0\ninspect-ca %s\n" % company.cert)
t.ok(rc != 0 and "inspect-ca" in err, "inspect-ca with one word: refused", err)
rc, err = conf_check("listen http 127.0.0.1:0\nmode full limited\n")
t.ok(rc != 0 and "usage: mode" in err, "mode with two words: refused", err)

good = TLSOrigin(*other.server_cert("tls.test", ["DNS:tls.test"]))
# signed by the inspection CA itself: never to be trusted
evil = TLSOrigin(*company.server_cert("evil.test", ["DNS:evil.test"]))
dns = Dnsmasq({"tls.test": "127.0.0.1", "evil.test": "127.0.0.1"})
both = os.path.join(tmpdir(), "both.pem")
with open(both, "w") as f:
    f.write(open(other.cert).read() + open(company.cert).read())
P = Proxy("""
listen http 127.0.0.1:0
dns-server %s
allow tls.test evil.test
allow-local yes
inspect-ca %s %s
inspect-host tls.test evil.test
upstream-ca %s
""" % (dns.server, company.cert, company.key, both))
C = P.register(policy=None)


def via(target, sni):
    s, status, _ = connect_via_http(P.http, target, C)
    ctx = ssl.create_default_context(cafile=company.cert)
    return status, ctx.wrap_socket(s, server_hostname=sni)


def get(tls, host):
    tls.sendall(("GET /x HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host).encode())
    data = b""
    try:
        while True:
            b = tls.recv(4096)
            if not b:
                break
            data += b
    except (ssl.SSLError, OSError):
        pass
    return data.decode(errors="replace")


try:
    status, tls = via("tls.test:%d" % good.port, "tls.test")
    issuer = dict(x[0] for x in tls.getpeercert()["issuer"])
    t.ok(issuer.get("commonName") == "company CA", "the leaf is signed by the operator's CA",
         issuer)
    ans = get(tls, "tls.test:%d" % good.port)
    t.ok(ans.startswith("HTTP/1.1 200") and "GET /x over TLS" in ans,
         "an inspected request passes with the operator's CA", ans[:300])
except (ssl.SSLError, OSError) as e:
    t.ok(False, "the leaf is signed by the operator's CA", e)
    t.ok(False, "an inspected request passes with the operator's CA")
try:
    status, tls = via("evil.test:%d" % evil.port, "evil.test")
    ans = get(tls, "evil.test:%d" % evil.port)
except (ssl.SSLError, OSError) as e:
    ans = str(e)
t.ok(not ans.startswith("HTTP/1.1 200") and not evil.requests,
     "a target signed by the inspection CA is refused though upstream-ca holds it", ans[:300])

# an SNI with control characters is logged escaped (execd-proxy runs with -v: info level)
s, status, _ = connect_via_http(P.http, "tls.test:%d" % good.port, C)
try:
    ssl._create_unverified_context().wrap_socket(s, server_hostname="x\x1b[31m\rforged: line.test")
except (ssl.SSLError, OSError):
    pass
s.close()
log = ""
for _ in range(50):
    log = P.logtext()
    if "forged" in log:
        break
    time.sleep(0.05)
t.ok("forged" in log and "\x1b" not in log and "\r" not in log and
     "\\x1b[31m\\x0dforged" in log, "an SNI's control characters are logged escaped",
     repr(log[-600:]))
t.eq(P.stop(), 0, "execd-proxy exits 0 (and clean under the sanitizers)")
t.done()
