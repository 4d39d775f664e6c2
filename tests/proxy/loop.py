#!/usr/bin/python3
"""The client in the loop, and execd's own execd-proxy.

With no sidecar configured, process/start with networkProxy starts an
execd-proxy of the instance's own (on demand, ended with the instance);
each decision on a managed process's connection reaches the client as
network/policyDecision, and with policyDecisionTimeoutMs a host only the
allowlist refuses is put to the client as network/policyRequest (allow,
deny, ask, an error, or no answer: deny).  A process without networkProxy
gets exactly the environment it asked for, sidecar or not."""
import shlex
import time

from proxytest import Origin, Proxy, Tap, deadline, free_port
from execd_client import Execd, network_proxy, pid_alive

deadline(150)
t = Tap()
origin = Origin()
URL = "http://127.0.0.1:%d/hello" % origin.port
# the reference's network/policyDecision params
DECISION_KEYS = {"processId", "timestamp", "scope", "decision", "source", "reason", "protocol",
                 "host", "port", "method", "client", "policyOverride"}


def eq(got, want, desc, diag=None):
    t.ok(got == want, desc, {"got": got, "want": want, "more": diag})


def proxy_children(c):
    out = []
    for pid in c.children():
        try:
            with open("/proc/%d/comm" % pid) as f:
                if f.read().strip() == "execd-proxy":
                    out.append(pid)
        except OSError:
            pass
    return out


def curl(url, *extra):
    # --noproxy '': through the proxy even with local access (NO_PROXY lists 127.0.0.1)
    return ["curl", "-sS", "-m", "20", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}"] + \
        list(extra) + [url]


def decisions(c, pid, n, timeout=10):
    got = []
    try:
        for _ in range(n):
            got.append(c.wait_notification("network/policyDecision",
                                           lambda p: p.get("processId") == pid, timeout=timeout))
    except TimeoutError:
        pass
    return got + [{}] * (n - len(got))


ASKED = {"localhost": "allow", "denied.test": "deny"}      # 127.0.0.1 is not in the allowlist

# ---------------------------------------------------------------- embedded: capabilities, on demand
c = Execd()
caps = c.init_result["environmentInfo"]["capabilities"]
eq((caps.get("networkProxyLaunch"), caps.get("networkProxyReviewDomains")), (True, True),
     "without a sidecar: networkProxyLaunch and networkProxyReviewDomains advertised")
c.start("plain", ["/bin/true"])
c.collect("plain")
eq(proxy_children(c), [], "no execd-proxy until a process asks for a managed network")

# ---------------------------------------------------------------- decisions reach the client
np = network_proxy({"127.0.0.1": "allow", "denied.test": "deny"})
r = c.start("m", ["sh", "-c", "%s; echo; %s" % (shlex.join(curl(URL)),
                                                 shlex.join(curl("http://denied.test/")))],
            networkProxy=np)
t.ok("result" in r, "process/start with networkProxy works with no sidecar configured", r)
out, code, _ = c.collect("m", timeout=40)
eq(out.get("stdout"), b"200\n403", "allowed through execd's own proxy, denied host 403")
kids = proxy_children(c)
t.ok(len(kids) == 1, "execd started one execd-proxy of its own", kids)
ds = decisions(c, "m", 2)
allow = next((d for d in ds if d.get("decision") == "allow"), {})
deny = next((d for d in ds if d.get("decision") == "deny"), {})
eq(set(allow), DECISION_KEYS, "network/policyDecision has the reference's fields", allow)
eq((allow.get("host"), allow.get("port"), allow.get("protocol"), allow.get("method"),
      allow.get("scope"), allow.get("reason"), allow.get("policyOverride")),
     ("127.0.0.1", origin.port, "http", "GET", "domain", "allow", False),
     "the allowed request's decision", allow)
eq((deny.get("host"), deny.get("reason"), deny.get("source"), deny.get("protocol")),
     ("denied.test", "denied", "baseline_policy", "http"), "the denied request's decision", deny)
eq(list(allow), ["processId", "timestamp", "scope", "decision", "source", "reason", "protocol",
                 "host", "port", "method", "client", "policyOverride"],
   "in the reference's order")
t.ok(str(allow.get("timestamp", "")).endswith("Z") and len(allow["timestamp"]) == 24,
     "timestamp is RFC 3339 with milliseconds", allow.get("timestamp"))

# ---------------------------------------------------------------- policyRequest: allow, deny, ask
for answer, want_code, want in (
        ({"type": "allow"}, b"200", ("allow", "not_allowed", "decider", True)),
        ({"type": "deny", "reason": "nope"}, b"403", ("deny", "nope", "decider", False)),
        ({"type": "ask", "reason": "ask me"}, b"403", ("ask", "ask me", "decider", False))):
    pid = "ask-" + answer["type"]
    c.start(pid, curl(URL), networkProxy=network_proxy(ASKED, timeout_ms=3000))
    q = c.wait_server_request("network/policyRequest", timeout=20)
    eq(q.get("params"), {"processId": pid, "request": {"protocol": "http", "host": "127.0.0.1",
                                                         "port": origin.port}},
         "%s: network/policyRequest names the process and the destination" % answer["type"], q)
    t.ok(isinstance(q.get("id"), int), "the request has an integer id", q)
    c.send({"id": q["id"], "result": {"decision": answer}})
    out, code, _ = c.collect(pid, timeout=30)
    eq(out.get("stdout"), want_code, "%s: curl sees %s" % (answer["type"], want_code.decode()))
    d = decisions(c, pid, 1)[0]
    eq((d.get("decision"), d.get("reason"), d.get("source"), d.get("policyOverride")), want,
         "%s: the decision notification says so" % answer["type"], d)

# an error response is a deny
c.start("ask-err", curl(URL), networkProxy=network_proxy(ASKED, timeout_ms=3000))
q = c.wait_server_request("network/policyRequest", timeout=20)
c.send({"id": q["id"], "error": {"code": -32603, "message": "no"}})
out, _, _ = c.collect("ask-err", timeout=30)
eq(out.get("stdout"), b"403", "an error response to network/policyRequest denies")
r = c.call("environment/status")
eq(r.get("result"), {"status": "ready"}, "and the connection goes on")

# no answer: deny at the timeout plus the reference's 5 s margin
t0 = time.time()
c.start("ask-none", curl(URL), networkProxy=network_proxy(ASKED, timeout_ms=300))
q = c.wait_server_request("network/policyRequest", timeout=20)
out, _, _ = c.collect("ask-none", timeout=40)
took = time.time() - t0
d = decisions(c, "ask-none", 1)[0]
t.ok(out.get("stdout") == b"403" and 5.0 <= took < 15,
     "no answer: denied after policyDecisionTimeoutMs + 5 s", (out, took))
eq((d.get("decision"), d.get("reason"), d.get("source")), ("deny", "not_allowed", "decider"),
     "the timeout's decision notification", d)
c.send({"id": q["id"], "result": {"decision": {"type": "allow"}}})
r = c.call("environment/status")
eq(r.get("result"), {"status": "ready"}, "a late answer is ignored, the connection stays")

# without policyDecisionTimeoutMs nobody is asked
c.start("noask", curl(URL), networkProxy=network_proxy(ASKED))
out, _, _ = c.collect("noask", timeout=30)
d = decisions(c, "noask", 1)[0]
t.ok(out.get("stdout") == b"403" and d.get("reason") == "not_allowed" and
     d.get("source") == "baseline_policy" and not c.server_requests,
     "without policyDecisionTimeoutMs the allowlist miss is denied without asking", (out, d))

# ---------------------------------------------------------------- an unmanaged process's env
asked = {"PATH": "/usr/bin:/bin", "HTTP_PROXY": "http://mine:1", "FOO": "bar", "no_proxy": "x"}
c.start("env", ["/usr/bin/env"], env=asked)
out, _, _ = c.collect("env")
env = dict(l.split("=", 1) for l in out.get("stdout", b"").decode().splitlines() if "=" in l)
eq(env, asked, "an unmanaged process gets exactly the environment it asked for")

# ---------------------------------------------------------------- lifetime
eq(c.close(), 0, "execd exits 0")
time.sleep(0.2)
t.ok(not any(pid_alive(p) for p in kids), "its execd-proxy is gone with it", kids)

c = Execd()
c.start("k", ["sleep", "30"], networkProxy=network_proxy({"127.0.0.1": "allow"}))
kids = proxy_children(c)
c.kill()
end = time.time() + 5
while any(pid_alive(p) for p in kids) and time.time() < end:
    time.sleep(0.05)
t.ok(len(kids) == 1 and not any(pid_alive(p) for p in kids),
     "execd killed with SIGKILL: its execd-proxy ends too", kids)

c = Execd(["--no-embedded-proxy"])
caps = c.init_result["environmentInfo"]["capabilities"]
eq((caps.get("networkProxyLaunch"), caps.get("networkProxyReviewDomains")), (False, False),
     "--no-embedded-proxy: neither capability")
r = c.start("x", ["/bin/true"], networkProxy=network_proxy(None))
eq(r.get("error"), {"code": -32600, "message": "network proxy launch is not supported"},
     "--no-embedded-proxy: networkProxy refused as the reference's OpenClaw expects")
c.close()

# ---------------------------------------------------------------- with a sidecar
P = Proxy("listen http 127.0.0.1:%d\nallow 127.0.0.1 localhost\n" % free_port())
c = Execd(["--proxy-control", P.ctl_path])
c.start("env", ["/usr/bin/env"], env=asked)
out, _, _ = c.collect("env")
env = dict(l.split("=", 1) for l in out.get("stdout", b"").decode().splitlines() if "=" in l)
eq(env, asked, "with a sidecar too, an unmanaged process's environment is exactly its own")
c.start("s", curl(URL), networkProxy=network_proxy(ASKED, timeout_ms=3000))
q = c.wait_server_request("network/policyRequest", timeout=20)
c.send({"id": q["id"], "result": {"decision": {"type": "allow"}}})
out, _, _ = c.collect("s", timeout=30)
d = decisions(c, "s", 1)[0]
t.ok(out.get("stdout") == b"200" and d.get("policyOverride") is True,
     "the sidecar asks and reports through its control connection the same way", (out, d))
eq(proxy_children(c), [], "with a sidecar, execd starts no proxy of its own")
eq(c.close(), 0, "execd exits 0 (sidecar)")
P.stop()
t.done()
