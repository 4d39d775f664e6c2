#!/usr/bin/python3
"""execd's side of execd-proxy (src/netproxy/netproxy.c) through tests/netproxy_helper:
registration with tags and the networkProxy policy, the child environment,
the reference's error texts, re-registration after a proxy restart, and a
clear failure when the proxy is unreachable."""

import json
import os
import signal
import subprocess
import time

from proxytest import TOP_BUILDDIR, Origin, Proxy, Tap, _procs, curl, deadline, free_port

deadline(90)
t = Tap()
HELPER = os.environ.get("NETPROXY_HELPER", os.path.join(TOP_BUILDDIR, "tests", "netproxy_helper"))
origin = Origin()
url = "http://127.0.0.1:%d/" % origin.port
hport, sport = free_port(), free_port()
CONF = ("listen http 127.0.0.1:%d\nlisten socks5 127.0.0.1:%d\nallow 127.0.0.1 localhost\n"
        % (hport, sport))
P = Proxy(CONF)


class Helper:
    def __init__(self, ctl):
        self.log = open(os.path.join(P.dir, "helper.log"), "wb")
        self.p = subprocess.Popen([HELPER, ctl], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log)
        _procs.append(self.p)

    def cmd(self, **c):
        self.p.stdin.write((json.dumps(c) + "\n").encode())
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def register(self, pid, **params):
        params.setdefault("env", {})
        return self.cmd(cmd="register", process_id=pid, params=params)


h = Helper(P.ctl_path)
r = h.register("p1", env={"PATH": "/usr/bin", "no_proxy": "*", "Http_Proxy": "http://evil:1",
                          "SOCKS_PROXY": "socks://evil:1", "GIT_PROXY_COMMAND": "nc",
                          "CODEX_NETWORK_PROXY_ATTRIBUTION": "forged", "HOME": "/root"},
               metadata={"threadId": "thread-1", "toolCallId": "call-7"})
t.eq(r["rc"], 0, "register succeeds")
env = r.get("env", {})
creds = env.get("HTTP_PROXY", "")[len("http://"):].rsplit("@", 1)[0]
t.ok(env.get("HTTP_PROXY", "").startswith("http://x") and
     env["HTTP_PROXY"].endswith("@127.0.0.1:%d" % hport), "HTTP_PROXY carries credentials", env)
t.eq(env.get("ALL_PROXY"), "socks5h://%s@127.0.0.1:%d" % (creds, sport), "ALL_PROXY is socks5h")
t.eq(env.get("ftp_proxy"), env.get("ALL_PROXY"), "ftp_proxy follows ALL_PROXY")
want_http = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "WS_PROXY", "WSS_PROXY",
             "ws_proxy", "wss_proxy", "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY",
             "npm_config_http_proxy", "npm_config_https_proxy", "npm_config_proxy",
             "NPM_CONFIG_HTTP_PROXY", "NPM_CONFIG_HTTPS_PROXY", "NPM_CONFIG_PROXY",
             "BUNDLE_HTTP_PROXY", "BUNDLE_HTTPS_PROXY", "PIP_PROXY", "DOCKER_HTTP_PROXY",
             "DOCKER_HTTPS_PROXY"]
t.ok(all(env.get(k) == env["HTTP_PROXY"] for k in want_http), "every HTTP proxy variable set",
     {k: env.get(k) for k in want_http})
no_proxy = ["NO_PROXY", "no_proxy", "npm_config_noproxy", "NPM_CONFIG_NOPROXY", "BUNDLE_NO_PROXY"]
t.ok(all(env.get(k) == "" for k in no_proxy), "no-proxy variables empty without local access")
t.eq((env.get("NODE_USE_ENV_PROXY"), env.get("CODEX_NETWORK_PROXY_ACTIVE"),
      env.get("ELECTRON_GET_USE_PROXY")), ("1", "1", "true"), "Node/Electron/marker toggles")
t.ok(all(k not in env for k in ("Http_Proxy", "SOCKS_PROXY", "GIT_PROXY_COMMAND",
                                "CODEX_NETWORK_PROXY_ATTRIBUTION")),
     "bypass and foreign proxy variables removed", sorted(env))
t.eq((env.get("PATH"), env.get("HOME")), ("/usr/bin", "/root"), "other variables kept")
t.ok("SSL_CERT_FILE" not in env, "no CA variables without a CA bundle")
reference_keys = set(want_http + no_proxy + ["ALL_PROXY", "all_proxy", "FTP_PROXY", "ftp_proxy",
                                             "NODE_USE_ENV_PROXY", "CODEX_NETWORK_PROXY_ACTIVE",
                                             "ELECTRON_GET_USE_PROXY"])
t.eq(set(env) - {"PATH", "HOME"}, reference_keys, "exactly the reference's variable set")

r1 = curl("-x", env["HTTP_PROXY"], url)
t.eq(r1.code, 200, "the child's HTTP_PROXY works")
r1 = curl("-x", env["ALL_PROXY"], url)
t.eq(r1.code, 200, "the child's ALL_PROXY works")
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["decision"] == "allow")
t.ok(ev and ev["tags"] == {"process_id": "p1", "thread_id": "thread-1", "tool_call_id": "call-7"},
     "audit carries the process's tags", ev)

NP = {"enabled": True, "enableSocks5": False, "enableSocks5Udp": False,
      "allowUpstreamProxy": False, "dangerouslyAllowAllUnixSockets": False, "mode": "full",
      "domains": {"localhost": "allow", "127.0.0.1": "none"}, "unixSockets": None,
      "allowLocalBinding": True}
r = h.register("p2", networkProxy={"proxy": NP, "environmentId": "env-1", "executionId": "ex-1",
                                   "auditMetadata": {"conversationId": "conv-1"}})
t.eq(r["rc"], 0, "register with a networkProxy launch config")
env2 = r.get("env", {})
t.eq(env2.get("ALL_PROXY"), env2.get("HTTP_PROXY"), "SOCKS5 off: ALL_PROXY falls back to HTTP")
t.eq(env2.get("NO_PROXY"), "", "global policy has no local access: NO_PROXY stays empty")
t.eq(curl("-x", env2["HTTP_PROXY"], "http://localhost:%d/" % origin.port).code, 200,
     "localhost, named exactly by both policies, is allowed")
r2 = curl("-x", env2["HTTP_PROXY"], url)
t.ok(r2.code == 403 and '"source":"process_policy"' in r2.body,
     "127.0.0.1 is outside the process's domains", r2)
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["tags"].get("process_id") == "p2")
t.ok(ev and ev["tags"] == {"process_id": "p2", "environment_id": "env-1", "execution_id": "ex-1",
                           "audit": {"conversationId": "conv-1"}}, "launch-config tags", ev)


def bad(np, want, name):
    r = h.register("bad", networkProxy=np)
    t.ok(r["rc"] == -2 and r["error"] == want, name, r)


bad({}, "missing field `proxy`", "missing proxy")
bad({"proxy": {}}, "missing field `enabled`", "missing enabled")
bad({"proxy": dict(NP, mode="fast")}, "unknown variant `fast`, expected `limited` or `full`",
    "unknown mode")
bad({"proxy": dict(NP, enabled="yes")}, 'invalid type: string "yes", expected a boolean',
    "enabled not a boolean")
bad({"proxy": dict(NP, enabled=False)}, "invalid network proxy config: executor-local network "
    "proxy launch requires an enabled proxy", "disabled proxy")
bad({"proxy": dict(NP, domains={"*": "deny"})}, "invalid network proxy config: invalid value for "
    "network.denied_domains: * (allowed exact hosts or scoped wildcards like *.example.com or "
    "**.example.com)", "deny * refused with the reference's words")
bad({"proxy": dict(NP, domains={"a[b": "allow"})}, "invalid network proxy config: brackets are "
    "only supported for IPv6 literals or [*]: a[b", "bracket pattern")
bad({"proxy": dict(NP, domains={"a.com": "maybe"})}, "unknown variant `maybe`, expected one of "
    "`none`, `allow`, `deny`", "unknown domain permission")
bad({"proxy": dict(NP, domains=[1])}, "invalid type: sequence, expected a map", "domains list")
bad({"proxy": NP, "auditMetadata": 5}, "invalid type: number, expected struct "
    "NetworkProxyAuditMetadata", "auditMetadata not an object")
bad({"proxy": NP, "policyDecisionTimeoutMs": 0}, "network policy decision callback timeout "
    "must be nonzero", "zero decision timeout")
t.eq(P.call("status")["registrations"], 2, "failed registrations leave nothing behind")
r = h.cmd(cmd="check", params={"networkProxy": {"proxy": dict(NP, mode="x")}})
t.ok(r["rc"] == -2 and "unknown variant `x`" in r["error"], "netproxy_check_params refuses", r)
r = h.cmd(cmd="check", params={"networkProxy": {"proxy": NP}})
t.eq(r["rc"], 0, "netproxy_check_params accepts")
t.eq(P.call("status")["registrations"], 2, "checking registers nothing")

# the proxy restarts: running processes are registered again with the same credentials
P.stop()
P2 = Proxy(CONF, dir=P.dir)
# the helper's loop runs (and reconnects) only while it waits: in steps, until
# both are back or 30 s pass, however slowly a loaded machine runs it
ran, regs, until = True, 0, time.time() + 30
while regs < 2 and time.time() < until:
    ran = ran and h.cmd(cmd="wait", ms=300)["rc"] == 0
    regs = P2.call("status")["registrations"]
t.ok(ran, "helper ran its loop while the proxy came back")
t.eq(regs, 2, "both processes registered again")
t.eq(curl("-x", env["HTTP_PROXY"], url).code, 200, "the old credentials work after the restart")
t.ok("(restored)" in P2.logtext(), "the proxy logged restored registrations")

t.eq(h.cmd(cmd="unregister", process_id="p1")["rc"], 0, "unregister")
time.sleep(0.2)
t.eq(curl("-x", env["HTTP_PROXY"], url).code, 407, "credentials stop working after unregister")
t.eq(P2.call("status")["registrations"], 1, "one registration left")

# execd reads the key at every connect: a wrong or missing one is a clear refusal
key_path = P2.ctl_path + ".key"
good_key = P2.key()
with open(key_path, "w") as f:
    f.write("0" * 64 + "\n")
h2 = Helper(P2.ctl_path)
r = h2.register("p4")
t.ok(r["rc"] == -1 and "refused us: wrong key" in r["error"],
     "a wrong key in SOCKET.key: register fails, saying so", r)
os.unlink(key_path)
r = h2.register("p4")
t.ok(r["rc"] == -1 and "cannot read the execd-proxy key %s" % key_path in r["error"],
     "no SOCKET.key: register fails, saying so", r)
with open(key_path, "w") as f:
    f.write(good_key + "\n")
t.eq(h2.register("p4")["rc"], 0, "with the right key back, the same client registers")
h2.p.stdin.close()
t.eq(h2.p.wait(timeout=10), 0, "second helper exits cleanly")

P2.stop()
r = h.register("p3")
t.ok(r["rc"] == -1 and "cannot reach execd-proxy at %s" % P.ctl_path in r["error"],
     "unreachable proxy: register fails with a clear error", r)

h.p.stdin.close()
t.eq(h.p.wait(timeout=10), 0, "helper exits cleanly")
t.done()
