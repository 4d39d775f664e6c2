#!/usr/bin/python3
"""execd-proxy HTTP listener: absolute-URI forwarding and CONNECT, credentials,
policy with local-address checks (dnsmasq as the resolver), wildcard
precedence, per-process policies, and the audit record of each case."""

import base64
import socket
import time

from proxytest import (Dnsmasq, EchoServer, Origin, Proxy, Tap, connect_via_http, curl,
                       deadline, free_port)

deadline(120)
t = Tap()

dns = Dnsmasq({"rebind.test": "10.0.0.1", "loop.test": "127.0.0.1", "test": "127.0.0.1"})
origin = Origin()
echo = EchoServer()
O = origin.port


def last_decision(p, host, **match):
    def pred(ev):
        return ev["event"] == "decision" and ev["host"] == host and all(
            ev.get(k) == v for k, v in match.items())
    return p.wait_audit(pred)


# ------------------------------------------------------------------ proxy A
# Local access off: only the exact literal 127.0.0.1 reaches loopback.
A = Proxy("""
listen http 127.0.0.1:0
dns-server %s
dns-timeout 2
connect-timeout 3
allow 127.0.0.1 loop.test rebind.test nx.invalid
""" % dns.server)
ca = A.register(tags={"process_id": "p-a", "thread_id": "t-1", "tool_call_id": "call-1"})
t.eq(ca.reply["http"], A.http, "register returns the HTTP listener address")
t.eq(ca.reply["allow_local"], False, "register reports allow_local false")

r = curl("-x", ca.http_url, "http://127.0.0.1:%d/hello?q=1" % O)
t.ok(r.rc == 0 and r.code == 200 and r.body == "GET /hello?q=1 from origin %d\n" % O,
     "absolute-URI GET to an allowed literal is forwarded", r)
req = origin.requests[-1]
t.ok("Proxy-Authorization" not in req["headers"], "Proxy-Authorization is not forwarded",
     req["headers"])
t.eq(req["headers"].get("Connection"), "close", "forwarded request carries Connection: close")
t.eq(req["path"], "/hello?q=1", "request target rewritten to origin form")
t.eq(r.header("Connection"), "close", "response to the client says Connection: close")
t.eq(r.header("Keep-Alive"), None, "hop-by-hop Keep-Alive stripped from the response")

ev = last_decision(A, "127.0.0.1", protocol="http", decision="allow")
t.ok(ev is not None, "audit: allow decision recorded")
if ev:
    t.eq(ev["reason"], "allow", "audit allow: reason")
    t.eq(ev["source"], "baseline_policy", "audit allow: source")
    t.eq(ev["method"], "GET", "audit allow: method")
    t.eq(ev["port"], O, "audit allow: port")
    t.eq(ev["address"], "127.0.0.1", "audit allow: address")
    t.eq(ev["credential"], ca.id, "audit allow: credential id")
    t.eq(ev["tags"], {"process_id": "p-a", "thread_id": "t-1", "tool_call_id": "call-1"},
         "audit allow: the registration's tags")
    t.ok(ev["client"].startswith("127.0.0.1:"), "audit allow: client address")
    t.ok(len(ev["time"]) == 24 and ev["time"].endswith("Z"), "audit allow: RFC 3339 time",
         ev["time"])
ev = A.wait_audit(lambda e: e["event"] == "close" and e["protocol"] == "http" and
                  e["host"] == "127.0.0.1")
t.ok(ev is not None and ev["result"] == "ok" and ev["bytes_up"] > 0 and
     ev["bytes_down"] > len(r.body) and ev["duration_ms"] >= 0,
     "audit: close record with bytes each way and duration", ev)

r = curl("-x", ca.http_url, "-d", "a=1&b=2", "http://127.0.0.1:%d/post" % O)
t.ok(r.code == 200 and origin.requests[-1]["body"] == b"a=1&b=2", "POST body is relayed", r)

# CONNECT tunnels
s, status, head = connect_via_http(A.http, "127.0.0.1:%d" % echo.port, ca)
t.eq(status, "HTTP/1.1 200 OK", "CONNECT to an allowed literal answers 200 OK")
s.sendall(b"ping through the tunnel")
t.eq(s.recv(100), b"ping through the tunnel", "CONNECT tunnel relays both ways")
s.shutdown(socket.SHUT_WR)
t.eq(s.recv(100), b"", "half-close is passed through the tunnel")
s.close()
ev = A.wait_audit(lambda e: e["event"] == "close" and e["protocol"] == "http-connect" and
                  e["port"] == echo.port)
t.ok(ev is not None and ev["bytes_up"] == 23 and ev["bytes_down"] == 23 + 19,
     "audit: CONNECT close counts tunnel bytes (and the 200 line)", ev)

r = curl("-p", "-x", ca.http_url, "http://127.0.0.1:%d/tunnelled" % O)
t.ok(r.code == 200 and "GET /tunnelled" in r.body, "curl --proxytunnel through CONNECT", r)

# credentials
r = curl("-x", "http://" + A.http, "http://127.0.0.1:%d/" % O)
t.eq(r.code, 407, "no credentials: 407")
t.eq(r.header("Proxy-Authenticate"), 'Basic realm="execd-proxy"', "407 carries Proxy-Authenticate")
ev = A.wait_audit(lambda e: e.get("reason") == "proxy_auth_required" and e["credential"] is None)
t.ok(ev is not None and ev["decision"] == "deny" and ev["source"] == "proxy_auth",
     "audit: unauthenticated request recorded as a deny", ev)
r = curl("-x", "http://%s:%s@%s" % (ca.id, "0" * 32, A.http), "http://127.0.0.1:%d/" % O)
t.eq(r.code, 407, "wrong secret: 407")
r = curl("-p", "-x", "http://" + A.http, "http://127.0.0.1:%d/" % O)
t.ok(r.connect_code == 407 and r.rc != 0, "CONNECT without credentials: 407", r)

# local and private addresses
r = curl("-x", ca.http_url, "http://loop.test:%d/" % O)
t.eq(r.code, 403, "name resolving to 127.0.0.1 is refused")
t.eq(r.header("x-proxy-error"), "blocked-by-allowlist", "... with x-proxy-error blocked-by-allowlist")
t.ok('"reason":"not_allowed_local"' in r.body and '"status":"blocked"' in r.body,
     "... and the reference's JSON body", r.body)
ev = last_decision(A, "loop.test")
t.ok(ev and ev["decision"] == "deny" and ev["reason"] == "not_allowed_local" and
     ev["address"] == "127.0.0.1", "audit: loop.test denied with its resolved address", ev)

before = len(A.audit())
r = curl("-p", "-x", ca.http_url, "http://rebind.test:%d/" % O)
t.eq(r.connect_code, 403, "CONNECT to a name resolving to 10.0.0.1 is refused before any connect")
ev = last_decision(A, "rebind.test")
t.ok(ev and ev["reason"] == "not_allowed_local" and ev["address"] == "10.0.0.1" and
     ev["protocol"] == "http-connect", "audit: rebind.test denied, address 10.0.0.1", ev)
time.sleep(0.2)
t.ok(not any(e["event"] == "close" and e["host"] == "rebind.test" for e in A.audit()[before:]),
     "no relay was opened for rebind.test")
r = curl("-x", ca.http_url, "http://rebind.test:%d/" % O)
t.eq(r.code, 403, "absolute-URI request to rebind.test refused too")

for target, what in (("10.0.0.1", "private literal"), ("[::ffff:127.0.0.1]", "IPv4-mapped loopback"),
                     ("localhost", "localhost"), ("169.254.169.254", "link-local metadata"),
                     ("100.64.0.1", "CGNAT")):
    r = curl("-p", "-x", ca.http_url, "http://%s:%d/" % (target, O))
    t.eq(r.connect_code, 403, "CONNECT to %s (%s) refused" % (target, what))
t.ok(not any(e["event"] == "close" and e["host"] in ("10.0.0.1", "::ffff:127.0.0.1")
             for e in A.audit()), "no relay opened for the private literals")
ev = last_decision(A, "10.0.0.1")
t.ok(ev and ev["reason"] == "not_allowed_local", "private literal: not_allowed_local", ev)

r = curl("-x", ca.http_url, "http://other.test/")
t.ok(r.code == 403 and r.header("x-proxy-error") == "blocked-by-allowlist" and
     '"reason":"not_allowed"' in r.body, "name outside the allowlist: not_allowed", r)
r = curl("-p", "-x", ca.http_url, "http://other.test/")
t.eq(r.connect_code, 403, "CONNECT outside the allowlist: 403")

# failures
r = curl("-x", ca.http_url, "http://nx.invalid/")
t.eq(r.code, 502, "DNS failure: 502")
ev = last_decision(A, "nx.invalid")
t.ok(ev and ev["decision"] == "deny" and ev["reason"] == "dns_failure", "audit: dns_failure", ev)
closed = free_port()
r = curl("-x", ca.http_url, "http://127.0.0.1:%d/" % closed)
t.eq(r.code, 502, "connection refused upstream: 502")
ev = A.wait_audit(lambda e: e["event"] == "close" and e["port"] == closed)
t.ok(ev and ev["result"] == "connection_refused", "audit: close result connection_refused", ev)
r = curl("-x", ca.http_url, "-H", "Host: elsewhere.test", "http://127.0.0.1:%d/" % O)
t.eq(r.code, 400, "Host header not matching the absolute URI: 400")
r = curl("-x", ca.http_url, "-H", "Host: 127.0.0.1", "http://127.0.0.1:%d/" % O)
t.eq(r.code, 400, "Host without the non-default port: 400")

# ------------------------------------------------------------------ proxy B
# Local access on (every *.test name is 127.0.0.1): wildcard precedence.
B = Proxy("""
listen http 127.0.0.1:0
dns-server %s
allow-local yes
allow exact.test *.star.test **.dstar.test *.mixed.test
deny bad.mixed.test **.evil.dstar.test
""" % dns.server)
cb = B.register(tags={"process_id": "p-b"})
t.eq(cb.reply["allow_local"], True, "register reports allow_local true")
cases = [
    ("exact.test", 200), ("www.exact.test", 403),
    ("a.star.test", 200), ("a.b.star.test", 200), ("star.test", 403), ("evilstar.test", 403),
    ("dstar.test", 200), ("x.dstar.test", 200),
    ("good.mixed.test", 200), ("bad.mixed.test", 403),
    ("evil.dstar.test", 403), ("a.evil.dstar.test", 403),
    ("EXACT.Test.", 200),
]
for host, want in cases:
    r = curl("-x", cb.http_url, "http://%s:%d/" % (host, O))
    t.ok(r.code == want, "wildcards: %s -> %d" % (host, want), r)
ev = last_decision(B, "bad.mixed.test")
t.ok(ev and ev["reason"] == "denied", "deny wins over a matching allow wildcard", ev)
r = curl("-x", cb.http_url, "http://bad.mixed.test:%d/" % O)
t.eq(r.header("x-proxy-error"), "blocked-by-denylist", "denylist refusal: x-proxy-error blocked-by-denylist")
ev = last_decision(B, "star.test")
t.ok(ev and ev["reason"] == "not_allowed", "*.star.test excludes the apex", ev)

# per-process policy narrows the global one
cn = B.register(tags={"process_id": "p-narrow"},
                policy={"allow": ["exact.test", "a.star.test"], "deny": ["a.star.test"],
                        "allow_local": True})
r = curl("-x", cn.http_url, "http://exact.test:%d/" % O)
t.eq(r.code, 200, "per-process policy: allowed by both")
r = curl("-x", cn.http_url, "http://x.dstar.test:%d/" % O)
t.eq(r.code, 403, "per-process policy: global allow but not in the process allowlist")
ev = last_decision(B, "x.dstar.test", credential=cn.id)
t.ok(ev and ev["source"] == "process_policy" and ev["reason"] == "not_allowed" and
     ev["tags"] == {"process_id": "p-narrow"}, "audit: refusal by the process policy", ev)
r = curl("-x", cn.http_url, "http://a.star.test:%d/" % O)
t.eq(r.code, 403, "per-process deny wins")
cl = B.register(policy={"allow": ["exact.test"], "allow_local": False})
t.eq(cl.reply["allow_local"], False, "process without local access is told so")
r = curl("-x", cl.http_url, "http://exact.test:%d/" % O)
t.ok(r.code == 403 and '"reason":"not_allowed_local"' in r.body,
     "per-process allow_local false refuses a name resolving to loopback", r)
cp = B.register(policy={"allow": ["*"], "ports": [443, "8000-8100"]})
r = curl("-x", cp.http_url, "http://exact.test:%d/" % O)
t.ok(r.code == 403 and '"reason":"port_not_allowed"' in r.body, "per-process port list", r)
cm = B.register(policy={"allow": ["*"], "mode": "limited", "allow_local": True})
r = curl("-x", cm.http_url, "http://exact.test:%d/" % O)
t.ok(r.code == 200, "limited mode: GET allowed", r)
r = curl("-x", cm.http_url, "-X", "DELETE", "http://exact.test:%d/" % O)
t.ok(r.code == 403 and r.header("x-proxy-error") == "blocked-by-method-policy",
     "limited mode: DELETE refused with blocked-by-method-policy", r)
before = len(origin.requests)
r = curl("-p", "-x", cm.http_url, "http://exact.test:%d/" % O)
t.ok(r.connect_code == 200 and r.code != 200 and len(origin.requests) == before,
     "limited mode: CONNECT is inspected, and what is not TLS inside it reaches nothing", r)
co = B.register(policy={"deny": ["exact.test"], "allow_local": True})
r = curl("-x", co.http_url, "http://a.star.test:%d/" % O)
t.eq(r.code, 200, "process policy without an allowlist: the configured one applies")
r = curl("-x", co.http_url, "http://exact.test:%d/" % O)
t.eq(r.code, 403, "... and its deny list narrows it")
ce = B.register(policy={"allow": [], "allow_local": True})
r = curl("-x", ce.http_url, "http://a.star.test:%d/" % O)
t.eq(r.code, 403, "process policy with an empty allowlist allows nothing")
cd = B.register(policy={"enabled": False})
r = curl("-x", cd.http_url, "http://exact.test:%d/" % O)
t.eq(r.code, 503, "disabled policy: 503")

bad = B.call("register", policy={"deny": ["*"]})
t.ok(not bad["ok"] and "global wildcard" in bad["error"], "deny * refused", bad)
bad = B.call("register", policy={"allow": ["a[b"]})
t.ok(not bad["ok"] and "invalid domain pattern" in bad["error"], "bracket pattern refused", bad)

# websocket-style upgrade through CONNECT: bytes flow unchanged after 200
s, status, head = connect_via_http(B.http, "exact.test:%d" % echo.port, cb)
s.sendall(b"GET /chat HTTP/1.1\r\nUpgrade: websocket\r\n\r\n")
t.eq(s.recv(100), b"GET /chat HTTP/1.1\r\nUpgrade: websocket\r\n\r\n",
     "CONNECT to a name: websocket handshake bytes relayed verbatim")
s.close()

t.eq(A.stop(), 0, "proxy A exits 0 on SIGTERM")
t.eq(B.stop(), 0, "proxy B exits 0 on SIGTERM")
t.done()
