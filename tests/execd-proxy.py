#!/usr/bin/python3
"""execd with the sidecar: every managed process (networkProxy) is registered,
its environment points at the proxy, its traffic is decided and audited with
its tags, and with the sidecar gone process/start fails instead of launching
with open network.  (tests/proxy/loop.py: unmanaged processes keep their
environment.)"""
import base64
import os

from proxytest import Origin, Proxy, Tap, deadline, free_port
from execd_client import Execd, network_proxy, unb64

deadline(90)
t = Tap()
origin = Origin()
hport, sport = free_port(), free_port()
P = Proxy("listen http 127.0.0.1:%d\nlisten socks5 127.0.0.1:%d\nallow 127.0.0.1\n" % (hport, sport))
c = Execd(["--proxy-control", P.ctl_path])
t.eq(c.init_result["environmentInfo"]["capabilities"].get("networkProxyLaunch"), True,
     "networkProxyLaunch is advertised with a sidecar")

MANAGED = network_proxy({"127.0.0.1": "allow"}, allow_local=False)
c.start("env", ["/usr/bin/env"], env={"PATH": "/usr/bin:/bin", "HTTP_PROXY": "http://evil:1",
        "Http_Proxy": "http://evil:2"}, networkProxy=MANAGED)
out, code, _ = c.collect("env")
env = dict(l.split("=", 1) for l in out.get("stdout", b"").decode().splitlines() if "=" in l)
hp = env.get("HTTP_PROXY", "")
t.ok(hp.startswith("http://") and ("127.0.0.1:%d" % hport) in hp and "@" in hp,
     "HTTP_PROXY carries per-process credentials", hp)
t.ok("Http_Proxy" not in env and "evil" not in hp, "the client's own proxy variables are replaced")
want = ["HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY",
        "no_proxy", "NODE_USE_ENV_PROXY"]
t.ok(all(k in env for k in want), "the reference's proxy variables are set",
     [k for k in want if k not in env])
t.eq(env.get("NO_PROXY"), "", "NO_PROXY is empty without local access")

url = "http://127.0.0.1:%d/hello" % origin.port
c.start("curl", ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", url],
        metadata={"threadId": "00000000-0000-4000-8000-000000000001", "toolCallId": "call-7"},
        networkProxy=MANAGED)
out, code, _ = c.collect("curl", timeout=30)
t.eq(out.get("stdout"), b"200", "a child's curl goes through the proxy and is allowed")
rec = P.wait_audit(lambda r: r.get("decision") == "allow" and r.get("port") == origin.port)
t.ok(rec is not None and "call-7" in str(rec.get("tags")), "the audit line carries the tool call", rec)
c.start("deny", ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "http://example.com/"],
        networkProxy=MANAGED)
out, code, _ = c.collect("deny", timeout=30)
t.eq(out.get("stdout"), b"403", "a host outside the policy is refused with 403")

# http/request made by execd itself goes through the sidecar too
r = c.call("http/request", {"method": "GET", "url": url, "requestId": "h1"})
t.eq(r.get("result", {}).get("status"), 200, "http/request goes through the sidecar and is allowed")
rec = P.wait_audit(lambda r: r.get("decision") == "allow" and "http/request" in str(r.get("tags")))
t.ok(rec is not None, "and is audited as http/request", rec)
r = c.call("http/request", {"method": "GET", "url": "http://example.com/", "requestId": "h2"})
t.eq(r.get("result", {}).get("status"), 403, "http/request to a host outside the policy: 403")

# A sidecar in limited mode inspects HTTPS: execd's own libcurl trusts the
# bundle the sidecar names (its CA), the origin is checked upstream by the
# proxy; a GET passes, a POST is refused inside the tunnel.
from tlstest import TestCA, TLSOrigin
tca = TestCA()
tls = TLSOrigin(*tca.server_cert("tls.test", ["DNS:tls.test", "IP:127.0.0.1"]))
L = Proxy("listen http 127.0.0.1:0\nmode limited\nupstream-ca %s\nallow 127.0.0.1\n"
          "allow-local yes\n" % tca.cert)
cl = Execd(["--proxy-control", L.ctl_path])
turl = "https://127.0.0.1:%d/" % tls.port
r = cl.call("http/request", {"method": "GET", "url": turl, "requestId": "t1"})
t.ok(r.get("result", {}).get("status") == 200,
     "http/request through a limited (inspecting) sidecar: HTTPS GET trusts its CA", r)
r = cl.call("http/request", {"method": "POST", "url": turl, "requestId": "t2",
                             "bodyBase64": "eA=="})
t.ok(r.get("result", {}).get("status") == 403,
     "http/request through a limited sidecar: HTTPS POST refused inside the tunnel", r)
t.eq(cl.close(), 0, "the second execd exits 0")
L.stop()

P.stop()
r = c.start("nope", ["/bin/true"], networkProxy=MANAGED)
t.ok(r.get("error", {}).get("code") == -32603 and "execd-proxy" in r["error"]["message"],
     "the sidecar unreachable: process/start fails", r)
t.eq(c.close(), 0, "execd exits 0")
t.done()
