#!/usr/bin/python3
"""A brokered credential's URL prefix is matched on the path the origin will
act on, under every decoding and normalisation it may do: percent-encoded
separators and dots, double encoding, backslashes, repeated slashes,
";" path parameters, fragments.  A path that leaves the prefix under any
of them gets the dummy, never the real value; one that stays under it
(an encoded slash inside a segment, as GitLab's project paths) still
gets the real value.  Plain HTTP and inside an inspected HTTPS tunnel."""

import socket
import ssl

from proxytest import Dnsmasq, Origin, Proxy, Tap, auth_header, deadline
from tlstest import TestCA, TLSOrigin

deadline(90)
t = Tap()
DUMMY, REAL = "pk-maskedDummy0123456789", "pk-REALsecretREAL9876543"
origin = Origin()
ca = TestCA()
tls = TLSOrigin(*ca.server_cert("api.test", ["DNS:api.test"]))
dns = Dnsmasq({"api.test": "127.0.0.1"})
O, T = origin.port, tls.port
P = Proxy("""
listen http 127.0.0.1:0
dns-server %s
upstream-ca %s
allow 127.0.0.1 api.test
allow-local yes
""" % (dns.server, ca.cert))
C = P.register(brokered=[{"dummy": DUMMY, "real": REAL, "url_prefixes": [
    "http://127.0.0.1:%d/api/" % O, "https://api.test:%d/api/" % T]}])

CASES = (
    ("/api/x", REAL, "under the prefix"),
    ("/api/projects/g%2Fp/x", REAL, "an encoded slash that stays under it"),
    ("/api/..%2fadmin", DUMMY, "..%2f"),
    ("/api/..%2Fadmin", DUMMY, "..%2F"),
    ("/api/a%2fb%2f..%2f..%2f..%2fadmin", DUMMY, "encoded slashes and dots"),
    ("/api/..\\admin", DUMMY, "a backslash"),
    ("/api/..%5cadmin", DUMMY, "%5c"),
    ("/api/%2e%2e%5cadmin", DUMMY, "%2e%2e%5c"),
    ("/api/.%2e/admin", DUMMY, ".%2e"),
    ("/api/%252e%252e/admin", DUMMY, "double-encoded dots"),
    ("/api/..;/admin", DUMMY, "a ..; segment"),
    ("/api//..//admin", DUMMY, "repeated slashes around .."),
    ("/api%2fx", DUMMY, "an encoded slash in place of the prefix's"),
    ("/api\\x", DUMMY, "a backslash in place of the prefix's"),
    ("/api/x#/../../admin", DUMMY, "a fragment"),
)


def got_key(reqs, n):
    return reqs[-1]["headers"].get("X-Key") if len(reqs) > n else None


def plain(path):
    n = len(origin.requests)
    h, p = P.http.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=5)
    s.sendall(("GET http://127.0.0.1:%d%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s"
               "X-Key: %s\r\nConnection: close\r\n\r\n" % (O, path, O, auth_header(C), DUMMY))
              .encode())
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
    s.close()
    return got_key(origin.requests, n)


def inspected(path):
    n = len(tls.requests)
    h, p = P.http.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=5)
    s.sendall(("CONNECT api.test:%d HTTP/1.1\r\nHost: api.test:%d\r\n%s\r\n" %
               (T, T, auth_header(C))).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(4096)
        if not b:
            break
        head += b
    ctx = ssl.create_default_context(cafile=P.dir + "/ca-bundle.pem")
    try:
        tl = ctx.wrap_socket(s, server_hostname="api.test")
        tl.sendall(("GET %s HTTP/1.1\r\nHost: api.test:%d\r\nX-Key: %s\r\nConnection: close"
                    "\r\n\r\n" % (path, T, DUMMY)).encode())
        while tl.recv(65536):
            pass
    except (OSError, ssl.SSLError):
        pass
    s.close()
    return got_key(tls.requests, n)


for path, want, why in CASES:
    got = plain(path)
    ok = got == want if want == REAL else got != REAL
    t.ok(ok, "HTTP %s (%s): %s" % (path, why, "the real value" if want == REAL else
                                      "never the real value"), got)
for path, want, why in CASES:
    got = inspected(path)
    ok = got == want if want == REAL else got != REAL
    t.ok(ok, "HTTPS %s (%s): %s" % (path, why, "the real value" if want == REAL else
                                       "never the real value"), got)
t.ok(REAL not in P.logtext() and all(REAL not in str(e) for e in P.audit()),
     "the real value is in neither log")
t.eq(P.stop(), 0, "execd-proxy exits 0 (and clean under the sanitizers)")
t.done()
