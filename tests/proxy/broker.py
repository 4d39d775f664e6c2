#!/usr/bin/python3
"""execd-proxy brokered credentials (register's `brokered`): a request to one
of a credential's URL prefixes leaves with the real value where the process
put its dummy, over plain HTTP and through HTTPS inspection; a host, port,
scheme or path outside the prefixes gets the dummy; another registration's
requests are untouched; the real value is in neither the audit log nor the
proxy's log; malformed registrations are refused.  A credential whose
provider uses Basic is swapped inside the base64 of user:password; prefixes
match as the reference's: at a segment boundary, no dot segments, *.host;
an IPv6 literal prefix ([0::1] is ::1) matches the connection's address."""

import base64
import http.server
import socket
import ssl
import threading

import proxytest
from proxytest import Dnsmasq, Origin, Proxy, Tap, curl, deadline
from tlstest import TestCA, TLSOrigin

deadline(90)
t = Tap()
DUMMY = "ghp_maskedAbCdEfGhIjKlMnOpQrStUvWxYz0123"
REAL = "ghp_REALsecretREALsecretREALsecret012345"


class V6Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


def v6_origin(tls=None):
    """an Origin on [::1]; over TLS with tls's (cert, key)"""
    o = Origin.__new__(Origin)
    o.srv = V6Server(("::1", 0), proxytest._Handler)
    o.srv.daemon_threads = True
    o.srv.requests = []
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*tls)
        o.srv.socket = ctx.wrap_socket(o.srv.socket, server_side=True)
    o.port = o.srv.server_address[1]
    threading.Thread(target=o.srv.serve_forever, daemon=True).start()
    return o


origin = Origin()
other = Origin()
ca = TestCA()
tls = TLSOrigin(*ca.server_cert("api.test", ["DNS:api.test", "DNS:else.test"]))
dns = Dnsmasq({"api.test": "127.0.0.1", "else.test": "127.0.0.1"})
P = Proxy("""
listen http 127.0.0.1:0
dns-server %s
upstream-ca %s
allow api.test else.test *.api.test 127.0.0.1 [::1]
allow-local yes
""" % (dns.server, ca.cert))

O, X, T = origin.port, other.port, tls.port
creds = P.register(brokered=[{"dummy": DUMMY, "real": REAL, "url_prefixes": [
    "http://127.0.0.1:%d/api/" % O, "https://api.test:%d/v1" % T]}])
plain = P.register()
bundle = creds.reply.get("ca_bundle")


def last_auth(srv):
    return srv.requests[-1]["headers"].get("Authorization") if srv.requests else None


def get(c, url, *extra):
    args = ["-x", c.http_url, "-H", "Authorization: Bearer " + DUMMY] + list(extra)
    if bundle:
        args += ["--cacert", bundle]
    return curl(*(args + [url]))


r = get(creds, "http://127.0.0.1:%d/api/repos?x=1" % O, "-H", "X-Token: t=" + DUMMY)
t.eq(r.code, 200, "plain HTTP request on the prefix goes through")
t.eq(last_auth(origin), "Bearer " + REAL, "plain HTTP: the origin gets the real credential")
t.eq(origin.requests[-1]["headers"].get("X-Token"), "t=" + REAL,
     "every header value holding the dummy gets the real value")
t.ok(DUMMY not in origin.requests[-1]["path"] and REAL not in origin.requests[-1]["path"],
     "the request target is left alone")
r = get(creds, "http://127.0.0.1:%d/other/" % O)
t.eq((r.code, last_auth(origin)), (200, "Bearer " + DUMMY), "a path off the prefix: the dummy")
r = get(creds, "http://127.0.0.1:%d/api/" % X)
t.eq((r.code, last_auth(other)), (200, "Bearer " + DUMMY), "another port: the dummy")
r = get(creds, "http://api.test:%d/api/" % O)
t.eq((r.code, last_auth(origin)), (200, "Bearer " + DUMMY), "another host name: the dummy")
r = get(plain, "http://127.0.0.1:%d/api/" % O)
t.eq((r.code, last_auth(origin)), (200, "Bearer " + DUMMY),
     "another registration's request: the dummy")

if bundle is None:
    t.skip("HTTPS through inspection", "the proxy has no inspection CA")
else:
    r = get(creds, "https://api.test:%d/v1/user" % T)
    t.eq(r.code, 200, "HTTPS on the prefix goes through the inspecting stage")
    t.eq(last_auth(tls), "Bearer " + REAL, "HTTPS: the TLS origin gets the real credential")
    r = get(creds, "https://api.test:%d/v2/user" % T)
    t.eq((r.code, last_auth(tls)), (200, "Bearer " + DUMMY), "HTTPS off the path: the dummy")
    # not inspected: a plain tunnel, the origin's own certificate
    r = curl("-x", creds.http_url, "--cacert", ca.cert, "-H", "Authorization: Bearer " + DUMMY,
             "https://else.test:%d/v1/user" % T)
    t.eq((r.code, last_auth(tls)), (200, "Bearer " + DUMMY),
         "HTTPS to another host: an uninspected tunnel, the dummy")
    n = len(tls.requests)
    r = curl("-x", creds.http_url, "-k", "-H", "Authorization: Bearer " + DUMMY,
             "http://api.test:%d/v1/user" % T)
    t.ok(len(tls.requests) == n, "the https prefix is not applied to plain http", r)

# Basic: the dummy inside the base64 of user:password (as the pair, the user or the
# password) leaves as the real value, encoded again, when the provider uses basic
B_DUMMY, B_REAL = "bk-maskedDummy0123456789", "bk-REALsecretREAL9876543"
W_DUMMY, W_REAL = "wk-maskedDummy0123456789", "wk-REALsecretREAL9876543"
b64 = lambda v: base64.b64encode(v.encode()).decode()
more = P.register(brokered=[
    {"dummy": B_DUMMY, "real": B_REAL, "basic": True,
     "url_prefixes": ["http://127.0.0.1:%d/basic" % O]},
    {"dummy": W_DUMMY, "real": W_REAL, "url_prefixes": ["http://*.api.test:%d/w/" % O]},
    {"dummy": DUMMY, "real": REAL, "url_prefixes": ["http://127.0.0.1:%d/nobasic/" % O]}])


def basic(c, url, pair, *extra):
    curl("-x", c.http_url, "-H", "Authorization: Basic " + b64(pair), *(list(extra) + [url]))
    return last_auth(origin)


u = "http://127.0.0.1:%d/basic/x" % O
for pair, want, why in ((B_DUMMY, B_REAL, "the whole pair"),
                        ("user:" + B_DUMMY, "user:" + B_REAL, "the password"),
                        (B_DUMMY + ":x-oauth-basic", B_REAL + ":x-oauth-basic", "the user"),
                        (B_DUMMY + ":" + B_DUMMY, B_REAL + ":" + B_REAL, "user and password")):
    t.eq(basic(more, u, pair), "Basic " + b64(want), "Basic on the prefix: %s swapped" % why)
t.eq(basic(more, u, "user:" + B_DUMMY + "x"), "Basic " + b64("user:" + B_DUMMY + "x"),
     "Basic: a password that only contains the dummy is left alone")
t.eq(basic(more, "http://127.0.0.1:%d/other" % O, "user:" + B_DUMMY),
     "Basic " + b64("user:" + B_DUMMY), "Basic off the prefix: the dummy")
t.eq(basic(more, "http://127.0.0.1:%d/nobasic/" % O, "user:" + DUMMY),
     "Basic " + b64("user:" + DUMMY), "Basic for a credential whose provider does not use it: "
     "the dummy")
# prefixes as the reference reads them: a path at a segment boundary, no dot segments,
# *.host for the names under host
for path, want, why in (("/basic", B_REAL, "the prefix itself"),
                        ("/basic/a?q=1", B_REAL, "under it, with a query"),
                        ("/basicx", B_DUMMY, "not at a segment boundary"),
                        ("/basic/../admin", B_DUMMY, "a .. segment"),
                        ("/basic/%2E%2e/admin", B_DUMMY, "an encoded .. segment")):
    n = len(origin.requests)
    r = curl("-x", more.http_url, "--path-as-is", "-H", "X-Key: " + B_DUMMY,
             "http://127.0.0.1:%d%s" % (O, path))
    t.eq((len(origin.requests) > n and origin.requests[-1]["path"],
          origin.requests[-1]["headers"].get("X-Key") if origin.requests else None),
         (path, want), "path %s: %s" % (path, why))
for host, want in (("x.api.test", W_REAL), ("api.test", W_DUMMY)):
    r = curl("-x", more.http_url, "-H", "X-Key: " + W_DUMMY, "http://%s:%d/w/" % (host, O))
    t.eq(origin.requests[-1]["headers"].get("X-Key") if origin.requests else None, want,
         "*.api.test and %s" % host)

# an IPv6 literal prefix, written in a longer form than the proxy names the address in
v6 = v6_origin()
six = P.register(brokered=[{"dummy": W_DUMMY, "real": W_REAL,
                            "url_prefixes": ["http://[0:0::1]:%d/v6/" % v6.port]}])
for path, want in (("/v6/x", W_REAL), ("/v7/x", W_DUMMY)):
    r = curl("-x", six.http_url, "-H", "X-Key: " + W_DUMMY, "http://[::1]:%d%s" % (v6.port, path))
    t.eq((r.code, v6.requests[-1]["headers"].get("X-Key") if v6.requests else None), (200, want),
         "IPv6 literal prefix [0:0::1], a request to [::1]%s" % path)
if bundle is None:
    t.skip("HTTPS to an IPv6 literal through inspection", "the proxy has no inspection CA")
else:
    # and over HTTPS: the inspecting stage serves [::1] (an IP name in its certificate)
    v6tls = v6_origin(ca.server_cert("v6", ["IP:::1"]))
    six_tls = P.register(brokered=[{"dummy": W_DUMMY, "real": W_REAL,
                                    "url_prefixes": ["https://[::1]:%d/v6/" % v6tls.port]}])
    r = curl("-x", six_tls.http_url, "--cacert", six_tls.reply.get("ca_bundle"), "-H",
             "X-Key: " + W_DUMMY, "https://[::1]:%d/v6/x" % v6tls.port)
    got = (r.code, v6tls.requests[-1]["headers"].get("X-Key") if v6tls.requests else None)
    t.ok(got == (200, W_REAL), "HTTPS to [::1] on an IPv6 literal prefix: inspected, the "
         "real value", (got, r.stderr[-300:]))

for bad, why in (([{"dummy": DUMMY, "real": REAL}], "no prefixes"),
                 ([{"dummy": DUMMY, "real": REAL, "url_prefixes": ["ftp://x/"]}], "ftp prefix"),
                 ([{"dummy": DUMMY, "real": "a\r\nX-Evil: 1", "url_prefixes": ["http://x/"]}],
                  "CR LF in the real value"),
                 ([{"dummy": "short", "real": REAL, "url_prefixes": ["http://x/"]}],
                  "a short dummy"),
                 ({"dummy": DUMMY}, "not an array")):
    r = P.call("register", tags={}, brokered=bad)
    t.ok(not r.get("ok") and r.get("error"), "refused: %s" % why, r)

P.stop()
with open(P.audit_path) as f:
    audit = f.read()
reals = (REAL, B_REAL, W_REAL, b64(B_REAL), b64("user:" + B_REAL))
t.ok(not any(v in audit for v in reals) and "ghp_REAL" not in audit,
     "the real credentials are not in the audit log")
t.ok(not any(v in P.logtext() for v in reals), "nor in the proxy's log")
t.done()
