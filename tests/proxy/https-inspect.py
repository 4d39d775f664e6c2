#!/usr/bin/python3
"""execd-proxy HTTPS inspection (limited mode and inspect-host): its CA and
bundle, the leaves it mints, curl, Python and git through it with only the
environment execd gives a managed process, the reference's refusals inside
the tunnel, the target's certificate checked, one audit record per inner
request without paths or bodies, and nothing uninspected passing."""

import json
import os
import signal
import socket
import ssl
import stat
import subprocess
import threading
import time

from proxytest import (TOP_BUILDDIR, Dnsmasq, EchoServer, Proxy, Tap, _procs, auth_header,
                       connect_via_http, curl, deadline, tmpdir)
from tlstest import GIT_SHA, TestCA, TLSOrigin

deadline(150)
t = Tap()
HELPER = os.environ.get("NETPROXY_HELPER", os.path.join(TOP_BUILDDIR, "tests", "netproxy_helper"))
CA_KEYS = ["CODEX_CA_CERTIFICATE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
           "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT", "BUNDLE_SSL_CA_CERT",
           "npm_config_cafile", "NPM_CONFIG_CAFILE", "CARGO_HTTP_CAINFO"]
SECRET = "body-that-must-not-be-logged-7c1"

ca = TestCA()
good = TLSOrigin(*ca.server_cert("tls.test", ["DNS:tls.test", "DNS:full.test", "IP:127.0.0.1"]))
wrong = TLSOrigin(*ca.server_cert("other.test", ["DNS:other.test"]))
echo = EchoServer()
G, W = good.port, wrong.port
dns = Dnsmasq({"tls.test": "127.0.0.1", "wrong.test": "127.0.0.1", "full.test": "127.0.0.1"})

# The global policy is full; the process's own (from networkProxy) is limited.
P = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
dns-server %s
upstream-ca %s
allow tls.test wrong.test full.test 127.0.0.1
allow-local yes
inspect-host full.test
""" % (dns.server, ca.cert))

# ------------------------------------------------------------- CA and bundle
ca_pem, ca_key = os.path.join(P.dir, "ca.pem"), os.path.join(P.dir, "ca.key")
bundle = os.path.join(P.dir, "ca-bundle.pem")
t.eq(stat.S_IMODE(os.stat(ca_key).st_mode), 0o600, "CA key is kept 0600")
ca_text = subprocess.run(["openssl", "x509", "-in", ca_pem, "-noout", "-text"],
                         capture_output=True, text=True).stdout
t.ok("ASN1 OID: prime256v1" in ca_text and "CA:TRUE" in ca_text and
     "Certificate Sign" in ca_text, "CA: EC P-256, CA:TRUE, keyCertSign", ca_text[:600])
with open(bundle) as f:
    btext = f.read()
with open(ca_pem) as f:
    ours = f.read()
t.ok(btext.endswith(ours) and btext.count("BEGIN CERTIFICATE") > 10,
     "bundle: the system's CA certificates, then ours")


class Helper:
    def __init__(self, ctl):
        self.p = subprocess.Popen([HELPER, ctl], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        _procs.append(self.p)

    def register(self, pid, **params):
        self.p.stdin.write((json.dumps({"cmd": "register", "process_id": pid,
                                        "params": params}) + "\n").encode())
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())


NP = {"enabled": True, "enableSocks5": True, "enableSocks5Udp": False,
      "allowUpstreamProxy": False, "dangerouslyAllowAllUnixSockets": False, "mode": "limited",
      "domains": {"tls.test": "allow", "wrong.test": "allow", "127.0.0.1": "allow"},
      "unixSockets": None, "allowLocalBinding": True}
home = tmpdir()
h = Helper(P.ctl_path)
r = h.register("p-limited", env={"PATH": "/usr/bin:/bin", "HOME": home},
               networkProxy={"proxy": NP})
env = r.get("env", {})
t.ok(r["rc"] == 0 and all(env.get(k) == bundle for k in CA_KEYS),
     "limited process: every CA variable names the bundle", {k: env.get(k) for k in CA_KEYS})
r2 = h.register("p-own", env={"PATH": "/usr/bin", "SSL_CERT_FILE": "/my/ca.pem",
                              "CURL_CA_BUNDLE": ""}, networkProxy={"proxy": NP})
e2 = r2.get("env", {})
t.ok(e2.get("SSL_CERT_FILE") == "/my/ca.pem" and e2.get("CURL_CA_BUNDLE") == bundle,
     "a process's own CA variable stays; an empty one is set", e2)
r3 = h.register("p-full", env={}, networkProxy={"proxy": dict(NP, mode="full")})
t.ok(r3["rc"] == 0 and "SSL_CERT_FILE" in r3["env"],
     "full mode with inspect-host configured: the bundle is named too")


def run(cmd, **kw):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=20, **kw)


def curl_env(*args):
    """curl with only the managed environment; (code, body, stderr)."""
    c = run(["curl", "-sS", "-m", "10", "-D", "/dev/stderr", "-w", "\n%{http_code}"] + list(args))
    body, _, code = c.stdout.rpartition("\n")
    return int(code or 0), body, c.stderr


def header(stderr, name):
    for line in stderr.splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip().lower() == name.lower():
            return v.strip()
    return None


# ------------------------------------------------------- curl, inspected
code, body, err = curl_env("https://tls.test:%d/hello?x=1" % G)
t.ok(code == 200 and body == "GET /hello?x=1 over TLS\n", "curl: GET through inspection", err)
req = good.requests[-1] if good.requests else {}
t.ok(req.get("headers", {}).get("Connection") == "close" and
     "Proxy-Authorization" not in req.get("headers", {}), "forwarded with Connection: close",
     req)
n = len(good.requests)
code, body, err = curl_env("-X", "POST", "-d", SECRET, "https://tls.test:%d/form" % G)
t.ok(code == 403 and body == "Method not allowed in limited mode." and
     header(err, "x-proxy-error") == "blocked-by-method-policy",
     "curl: POST refused inside the tunnel with the reference's reason", (code, body, err))
code, body, err = curl_env("-H", "Content-Length: 3", "-d", "abc", "-X", "GET",
                           "https://tls.test:%d/getbody" % G)
t.eq(code, 403, "curl: GET with a body refused")
code, body, err = curl_env("-H", "Upgrade: websocket", "-H", "Connection: upgrade",
                           "https://tls.test:%d/ws" % G)
t.eq(code, 403, "curl: GET with Upgrade refused")
t.eq(len(good.requests), n, "none of the refused requests reached the origin")
code, body, err = curl_env("-H", "Host: evil.test:%d" % G, "https://tls.test:%d/h" % G)
t.ok(code == 400 and body == "host mismatch", "Host naming another host: 400 host mismatch",
     (code, body))
code, body, err = curl_env("-H", "Host: tls.test:1", "https://tls.test:%d/h" % G)
t.eq(code, 400, "Host naming another port: 400")
code, body, err = curl_env("https://wrong.test:%d/" % W)
t.ok(code == 502 and body == "mitm upstream error" and not wrong.requests,
     "target presenting a certificate for another host: 502, nothing sent", (code, body))
t.ok("certificate is refused" in P.logtext(), "... and the refusal is logged")
# (NO_PROXY names loopback when the process may bind locally: the proxy is forced here)
code, body, err = curl_env("--noproxy", "", "-I", "https://127.0.0.1:%d/lit" % G)
t.ok(code == 200, "curl: HEAD to an address (IP SAN both ways)", (code, body, err))
code, body, err = curl_env("-X", "OPTIONS", "https://tls.test:%d/o" % G)
t.eq(code, 200, "curl: OPTIONS allowed")
code, body, err = curl_env("https://tls.test:%d/big/3000000" % G, "-o", "/dev/null")
t.eq(code, 200, "curl: a 3 MB response crosses the bounded buffers")

# ------------------------------------------------------- Python and git
py = run(["/usr/bin/python3", "-c",
          "import urllib.request; print(urllib.request.urlopen("
          "'https://tls.test:%d/py', timeout=10).read().decode().strip())" % G])
t.ok(py.returncode == 0 and py.stdout.strip() == "GET /py over TLS",
     "python urllib: GET through inspection", py.stderr[-600:])
py = run(["/usr/bin/python3", "-c",
          "import urllib.request, urllib.error\n"
          "try: urllib.request.urlopen(urllib.request.Request('https://tls.test:%d/p', "
          "data=b'x', method='POST'), timeout=10)\n"
          "except urllib.error.HTTPError as e: print(e.code, e.headers['x-proxy-error'])" % G])
t.eq(py.stdout.strip(), "403 blocked-by-method-policy", "python urllib: POST refused")
git = run(["git", "ls-remote", "https://tls.test:%d/repo.git" % G],
          cwd=home)
t.ok(git.returncode == 0 and ("%s\trefs/heads/main" % GIT_SHA) in git.stdout,
     "git ls-remote over https through inspection", git.stderr[-600:])

# ------------------------------------------------------- the leaf
creds = r["env"]["HTTPS_PROXY"][len("http://"):].rsplit("@", 1)[0].split(":")


class C:
    id, secret = creds


def tls_via(target, sni, verify=True):
    s, status, _ = connect_via_http(P.http, target, C)
    ctx = ssl.create_default_context(cafile=bundle) if verify else \
        ssl._create_unverified_context()
    if verify:
        ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    return status, ctx.wrap_socket(s, server_hostname=sni)


try:
    status, tls = tls_via("tls.test:%d" % G, "tls.test")
except ssl.SSLError as e:
    t.ok(False, "the leaf passes Python's strict verification with the bundle", e)
    t.done()
der = tls.getpeercert(binary_form=True)
leaf = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-text", "-dates"],
                      input=der, capture_output=True).stdout.decode()
t.ok("DNS:tls.test" in leaf and "TLS Web Server Authentication" in leaf and
     "Digital Signature" in leaf and "CN = execd-proxy inspection CA" in leaf and
     "Authority Key Identifier" in leaf and "CA:FALSE" in leaf,
     "leaf: SAN, serverAuth, digitalSignature, issuer, AKI (strict verification passed)", leaf)
nb = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-checkend", str(8 * 86400)],
                    input=der, capture_output=True)
t.ok(nb.returncode != 0, "leaf: valid for a week at most")
tls.sendall(b"CONNECT tls.test:443 HTTP/1.1\r\nHost: tls.test:443\r\n\r\n")
ans = tls.recv(4096).decode(errors="replace")
t.ok(ans.startswith("HTTP/1.1 405") and ans.endswith("CONNECT not supported inside MITM"),
     "CONNECT inside the tunnel: 405", ans)
tls.close()
status, tls = tls_via("127.0.0.1:%d" % G, "127.0.0.1")
der = tls.getpeercert(binary_form=True)
leaf = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-ext", "subjectAltName"],
                      input=der, capture_output=True).stdout.decode()
t.ok("IP Address:127.0.0.1" in leaf, "leaf for an address: IP SAN", leaf)
tls.close()
try:
    status, tls = tls_via("tls.test:%d" % G, "evil.test", verify=False)
    tls.close()
    sni_refused = False
except (ssl.SSLError, OSError):
    sni_refused = True
t.ok(sni_refused, "SNI naming another host than the CONNECT target: handshake refused")

# ------------------------------------------------------- nothing uninspected
s, status, _ = connect_via_http(P.http, "127.0.0.1:%d" % echo.port, C)
s.settimeout(5)
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nplain bytes")
try:
    got = s.recv(4096)
except OSError:
    got = b""
t.ok(status.split()[1] == "200" and b"plain bytes" not in got,
     "limited: plain bytes inside a CONNECT reach nothing", got)
s.close()
socks = "socks5h://%s:%s@%s" % (C.id, C.secret, P.socks)
code, body, err = curl_env("--noproxy", "", "-x", socks, "http://127.0.0.1:%d/" % echo.port)
t.ok(code == 0 and "SOCKS" in err.upper(), "limited: SOCKS5 to a port other than 443 refused",
     err[-300:])

try:
    o443 = TLSOrigin(*ca.server_cert("tls443", ["DNS:tls.test"]), port=443)
except OSError as e:
    o443 = None
    t.skip("SOCKS5 to port 443 is inspected", "cannot listen on 127.0.0.1:443: %s" % e)
if o443 is not None:
    code, body, err = curl_env("--noproxy", "", "-x", socks, "https://tls.test/s5")
    t.ok(code == 200 and body == "GET /s5 over TLS\n", "SOCKS5 to port 443 is inspected: GET",
         (code, body, err))
    code, body, err = curl_env("--noproxy", "", "-x", socks, "-d", "x", "https://tls.test/s5")
    t.ok(code == 403 and len(o443.requests) == 1, "SOCKS5 to port 443: POST refused inside",
         (code, body))
    o443.srv.shutdown()
    o443.srv.server_close()

# ------------------------------------------------------- handshake deadline
# (a proxy of its own: a 1 s deadline is too short for curl on a loaded machine)
PH = Proxy("listen http 127.0.0.1:0\nallow *\nallow-local yes\nmode limited\n"
           "handshake-timeout 1\n")
ch = PH.register()
s, status, _ = connect_via_http(PH.http, "127.0.0.1:%d" % G, ch)
s.settimeout(5)
t0 = time.time()
try:
    got = s.recv(100)
except OSError:
    got = b"?"
t.ok(status.split()[1] == "200" and got == b"" and time.time() - t0 < 4,
     "a client that never starts TLS is closed after handshake-timeout (%.1f s)"
     % (time.time() - t0))
s.close()
t.ok(PH.wait_audit(lambda e: e["event"] == "close" and e["result"] == "handshake_timeout")
     is not None, "audit: the tunnel closed at the handshake deadline")
t.eq(PH.stop(), 0, "that proxy exits 0")

# ------------------------------------------------------- full mode, inspect-host
rf = P.register(policy={"allow": ["*"], "allow_local": True})
code = curl("-x", rf.http_url, "--cacert", bundle, "-d", "k=v", "https://full.test:%d/post" % G)
t.ok(code.code == 200 and good.requests[-1]["body"] == b"k=v",
     "full mode, inspect-host: a POST passes with its body", code)

# ------------------------------------------------------- the owner's decider
# an allowlist miss the owner allows: the tunnel opens, and its requests are
# still checked for everything else (limited mode)
ow = socket.socket(socket.AF_UNIX)
ow.connect(P.ctl_path)
owf = ow.makefile("rwb")
ow.settimeout(15)


def ow_call(**kw):
    owf.write((json.dumps(kw) + "\n").encode())
    owf.flush()


def ow_line(kind):
    while True:
        m = json.loads(owf.readline())
        if m.get("event", "reply") == kind:
            return m


ow_call(op="auth", key=P.key(), id=1)
ow_line("reply")
ow_call(op="register", id=2, tags={}, events=True, ask_timeout_ms=20000,
        policy={"allow": ["localhost"], "allow_local": True, "mode": "limited"})
reg = ow_line("reply")["credentials"]
purl = "http://%s:%s@%s" % (reg["id"], reg["secret"], P.http)
for args, want, name in ((["https://127.0.0.1:%d/dec" % G], 200, "GET"),
                         (["-d", "x", "https://127.0.0.1:%d/dec" % G], 403, "POST")):
    out = {}
    th = threading.Thread(target=lambda: out.__setitem__("r", curl(
        "-x", purl, "--cacert", bundle, *args, timeout=20)))
    th.start()
    q = ow_line("ask")
    ow_call(op="decide", id=3, credential=reg["id"], ask=q["ask"], decision="allow")
    th.join()
    t.eq(out["r"].code, want, "decider allowed the host: inner %s answered %d" % (name, want))

# ------------------------------------------------------- audit
time.sleep(0.3)
evs = [e for e in P.audit() if e["event"] == "request"]
get = [e for e in evs if e["method"] == "GET" and e["status"] == 200 and e["host"] == "tls.test"]
t.ok(get and get[0]["path_length"] == len("/hello?x=1") and get[0]["bytes_down"] > 0 and
     get[0]["protocol"] == "https", "audit: one record per inner request", evs[:2])
post = [e for e in evs if e["method"] == "POST" and e["decision"] == "deny"]
t.ok(post and post[0]["reason"] == "method_not_allowed" and post[0]["source"] == "mode_guard",
     "audit: the refused POST", post)
t.ok(any(e["reason"] == "host_mismatch" for e in evs), "audit: the Host mismatch")
t.ok(any(e.get("result") == "upstream_tls_failed" for e in evs), "audit: the refused target")
with open(P.audit_path) as f:
    audit_text = f.read()
logs = audit_text + P.logtext()
t.ok("/hello" not in logs and SECRET not in logs and "k=v" not in logs,
     "no path and no body in the audit log or the log")

# ------------------------------------------------------- restart, inspect no
t.eq(P.stop(), 0, "proxy exits 0 on SIGTERM (clean under the sanitizers)")
P2 = Proxy("listen http 127.0.0.1:0\nallow *\nallow-local yes\nmode limited\n", dir=P.dir)
with open(ca_pem) as f:
    t.eq(f.read(), ours, "restart: the state directory's CA is kept")
c2 = P2.register()
r = curl("-p", "-x", c2.http_url, "--cacert", bundle, "https://127.0.0.1:%d/" % G)
t.eq(r.connect_code, 200, "restarted: limited CONNECT inspected with the same CA")
P2.write_conf("listen http 127.0.0.1:0\nallow *\nallow-local yes\nmode limited\ninspect no\n")
P2.signal(signal.SIGHUP)
end = time.time() + 5
while time.time() < end and "generation 2" not in P2.logtext():
    time.sleep(0.05)
r = curl("-p", "-x", c2.http_url, "https://127.0.0.1:%d/" % G)
t.ok(r.connect_code == 403 and r.header("x-proxy-error") == "blocked-by-mitm-required",
     "reload with inspect no: limited CONNECT refused (mitm required)", r)
t.eq(P2.register().reply.get("ca_bundle"), None, "... and no bundle named any more")
t.eq(P2.stop(), 0, "restarted proxy exits 0")
P3 = Proxy("listen http 127.0.0.1:0\nallow *\nallow-local yes\nmode limited\ninspect no\n")
c3 = P3.register()
t.eq(c3.reply.get("ca_bundle"), None, "inspect no: no bundle named")
r = curl("-p", "-x", c3.http_url, "https://127.0.0.1:%d/" % G)
t.ok(r.connect_code == 403 and r.header("x-proxy-error") == "blocked-by-mitm-required",
     "inspect no: limited mode refuses CONNECT (mitm required)", r)
t.ok(not os.path.exists(os.path.join(P3.dir, "ca.key")), "inspect no: no CA generated")
t.eq(P3.stop(), 0, "proxy without inspection exits 0")
P4 = Proxy("listen http 127.0.0.1:0\nallow *\nca-bundle /etc/upstream-ca.pem\n")
t.eq((P4.register(policy={"allow": ["*"], "mode": "limited"}).reply.get("ca_bundle"),
      P4.register().reply.get("ca_bundle")),
     (os.path.join(P4.dir, "ca-bundle.pem"), "/etc/upstream-ca.pem"),
     "ca-bundle configured: an inspected process gets ours, the others that one")
t.eq(P4.stop(), 0, "that proxy exits 0")
t.done()
