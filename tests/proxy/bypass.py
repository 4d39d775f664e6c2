#!/usr/bin/python3
"""execd-proxy: ways around a decision that other readers of the same bytes
open.  A fragment in an absolute target ("http://allowed#@denied/") that an
upstream proxy (tinyproxy) reads as userinfo; a short name that the
resolver's search domains turn into a denied one; IPv6 prefixes that lead
to local networks (local-use NAT64) taken for public ones; a request
pipelined behind an Upgrade or a chunked body that a keep-alive upstream
proxy would serve unchecked, and behind a chunked body in an inspected
tunnel; the unspecified address (0.0.0.0, ::), which connect(2) takes to
this host's loopback past a deny of 127.0.0.0/8 and ::1; "localhost" past
the same deny."""

import http.server
import os
import socket
import ssl
import threading
import time

from proxytest import (Dnsmasq, EchoServer, Origin, Proxy, Tap, auth_header, connect_via_http,
                       deadline, raw_http, socks_open, start_tinyproxy)

deadline(90)
t = Tap()


class _Secret(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.server.hits.append(self.path)
        body = b"secret\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


# a server on another loopback address: the host the policy does not allow
secret = http.server.ThreadingHTTPServer(("127.0.0.2", 0), _Secret)
secret.daemon_threads = True
secret.hits = []
threading.Thread(target=secret.serve_forever, daemon=True).start()
S = secret.server_address[1]
origin = Origin()
O = origin.port

# ------------------------------------------- a fragment, through tinyproxy
tiny = start_tinyproxy()
if tiny is None:
    t.skip("fragment through an upstream proxy", "tinyproxy not installed or not listening")
else:
    tport = tiny[1]
    U = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nallow-local yes\n"
              "upstream http://127.0.0.1:%d\n" % tport)
    cu = U.register()
    st, _ = raw_http(U, cu, b"GET http://127.0.0.2:%d/direct HTTP/1.1\r\n\r\n" % S)
    t.eq(st, 403, "upstream: the other host is not allowed")
    st, data = raw_http(U, cu, b"GET http://127.0.0.1:%d#@127.0.0.2:%d/frag HTTP/1.1\r\n\r\n"
                        % (O, S))
    t.eq(st, 400, "upstream: a fragment after the authority is refused")
    t.eq(secret.hits, [], "upstream: tinyproxy never reached the other host")
    st, _ = raw_http(U, cu, b"GET /x#@127.0.0.2:%d/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n"
                     % (S, O))
    t.eq(st, 400, "upstream: a fragment in an origin-form target is refused")
    st, _ = raw_http(U, cu, b"GET http://127.0.0.1:%d/ok HTTP/1.1\r\n\r\n" % O)
    t.eq(st, 200, "upstream: the allowed host still works")

# -------------------------------------------- search domains (LOCALDOMAIN)
dns = Dnsmasq({"secret.corp.test": "127.0.0.1", "open.corp.test": "127.0.0.1"})
echo = EchoServer()
os.environ["LOCALDOMAIN"] = "corp.test"	# as "search corp.test" in resolv.conf
try:
    D = Proxy("listen http 127.0.0.1:0\nlisten socks5 127.0.0.1:0\ndns-server %s\n"
              "allow *\nallow-local yes\ndeny secret.corp.test\n" % dns.server)
finally:
    del os.environ["LOCALDOMAIN"]
cd = D.register()
s, st, _ = connect_via_http(D.http, "secret.corp.test:%d" % echo.port, cd)
s.close()
t.eq(st, "HTTP/1.1 403 Forbidden", "search: the denied name is denied")
s, st, _ = connect_via_http(D.http, "secret:%d" % echo.port, cd)
s.close()
t.ok(st != "HTTP/1.1 200 OK", "search: its short name does not reach it (%s)" % st)
ev = D.wait_audit(lambda e: e["event"] == "decision" and e["host"] == "secret")
t.ok(ev is not None and ev["decision"] == "deny" and "resolved" not in ev,
     "search: the short name resolves to nothing", ev)
s, st, _ = connect_via_http(D.http, "open.corp.test:%d" % echo.port, cd)
s.close()
t.eq(st, "HTTP/1.1 200 OK", "search: a full name still resolves")

# ------------------------------- IPv6 prefixes that are not global either
L = Proxy("listen http 127.0.0.1:0\nlisten socks5 127.0.0.1:0\nconnect-timeout 2\n"
          "allow *\nallow-local no\n")
cl = L.register()
for a in ["64:ff9b:1::a00:1", "64:ff9b:1:a00:1::", "64:ff9b:1:ffff::7f00:1", "2001:2::1",
          "3fff::1", "5f00::1"]:
    s, st, head = connect_via_http(L.http, "[%s]:80" % a, cl)
    s.close()
    t.ok(st == "HTTP/1.1 403 Forbidden" and b"blocked-by-allowlist" in head,
         "local: CONNECT [%s] refused as local (%s)" % (a, st))
ev = L.wait_audit(lambda e: e["event"] == "decision" and e["host"] == "64:ff9b:1::a00:1")
t.ok(ev is not None and ev["reason"] == "not_allowed_local",
     "local: local-use NAT64 is not_allowed_local", ev)
s, rep = socks_open(L, cl, b"\x05\x01\x00\x04" +
                    socket.inet_pton(socket.AF_INET6, "64:ff9b:1::a00:1") + b"\x00\x50", timeout=5)
s.close()
t.ok(rep[:2] == b"\x05\x02", "local: SOCKS5 to local-use NAT64: REP 02", rep)

# ------------- pipelined behind an Upgrade or a chunked body, to a keep-alive upstream
seen = []


def keepalive_proxy(conn):
    """An upstream proxy that serves requests one after another on a connection
    until one says Connection: close (as it should): records the request lines
    and the body bytes."""
    conn.settimeout(3)
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                x = conn.recv(4096)
                if not x:
                    return
                buf += x
            head, _, buf = buf.partition(b"\r\n\r\n")
            seen.append(head.split(b"\r\n")[0])
            for line in head.lower().split(b"\r\n"):
                if line.startswith(b"content-length:"):
                    need = int(line.split(b":")[1])
                    while len(buf) < need:
                        x = conn.recv(4096)
                        if not x:
                            return
                        buf += x
                    seen.append(buf[:need])
                    buf = buf[need:]
            if b"transfer-encoding: chunked" in head.lower():
                while not (buf.endswith(b"\r\n\r\n") and b"\r\n0\r\n" in b"\r\n" + buf):
                    x = conn.recv(4096)
                    if not x:
                        return
                    buf += x
                seen.append(buf)
                buf = b""
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            if b"connection: close" in head.lower():
                return
    except OSError:
        pass
    finally:
        conn.close()


def upgrader(conn):
    """An origin that switches to an echo protocol on Upgrade."""
    conn.settimeout(3)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            buf += conn.recv(4096)
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\n"
                     b"Connection: Upgrade\r\n\r\n")
        while True:
            x = conn.recv(4096)
            if not x:
                return
            conn.sendall(x.upper())
    except OSError:
        pass
    finally:
        conn.close()


def listener(fn):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def loop():
        while True:
            c, _ = srv.accept()
            threading.Thread(target=fn, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1]


K = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nallow-local yes\n"
          "upstream http://127.0.0.1:%d\n" % listener(keepalive_proxy))
ck = K.register()
st, data = raw_http(K, ck, b"GET http://127.0.0.1:81/up HTTP/1.1\r\nUpgrade: x\r\n"
                    b"Connection: Upgrade\r\n\r\nGET http://127.0.0.2:82/behind-upgrade "
                    b"HTTP/1.1\r\n\r\n")
t.ok(st == 200 and data.count(b"HTTP/1.1") == 1, "smuggle: one response to an Upgrade "
     "request the upstream did not switch", data)
t.ok(not any(b"127.0.0.2" in x for x in seen), "smuggle: nothing pipelined behind an "
     "Upgrade reaches the upstream proxy", seen)
# a Connection header naming the framing may not take it away from the upstream
del seen[:]
smug = b"GET http://127.0.0.2:82/in-body HTTP/1.1\r\n\r\n"
st, data = raw_http(K, ck, b"GET http://127.0.0.1:81/up2 HTTP/1.1\r\nUpgrade: x\r\n"
                    b"Connection: Upgrade, Content-Length\r\nContent-Length: %d\r\n\r\n"
                    % len(smug) + smug)
t.ok(st == 200 and seen == [b"GET http://127.0.0.1:81/up2 HTTP/1.1", smug], "smuggle: "
     "Connection: Content-Length does not strip the length the body was framed by", seen)
del seen[:]
st, data = raw_http(K, ck, b"POST http://127.0.0.1:81/te HTTP/1.1\r\nConnection: "
                    b"Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n"
                    % len(smug) + smug + b"\r\n0\r\n\r\n")
t.ok(st == 200 and len(seen) == 2 and seen[1].startswith(b"%x\r\n" % len(smug)),
     "smuggle: Connection: Transfer-Encoding does not strip the chunked framing", seen)
del seen[:]
st, data = raw_http(K, ck, b"POST http://127.0.0.1:81/ch HTTP/1.1\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n"
                    b"GET http://127.0.0.2:82/behind-chunks HTTP/1.1\r\n\r\n")
t.eq(st, 200, "smuggle: a chunked body with an extension and a trailer is forwarded")
t.ok(seen[-1:] == [b"3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n"], "smuggle: the chunks reach the "
     "upstream, nothing after them", seen)
# the same with the body in pieces, the end and what follows it in one
_, data = raw_http(K, ck, b"POST http://127.0.0.1:81/ch2 HTTP/1.1\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n5\r\nhe", wait=0.3,
                  more=[b"llo\r\n", b"0\r\n\r\nGET http://127.0.0.2:82/later HTTP/1.1\r\n\r\n"])
t.ok(data.startswith(b"HTTP/1.1 200") and seen[-1:] == [b"5\r\nhello\r\n0\r\n\r\n"] and
     not any(b"127.0.0.2" in x for x in seen), "smuggle: chunks in pieces, nothing after "
     "the last", seen)
st, _ = raw_http(K, ck, b"POST http://127.0.0.1:81/bad HTTP/1.1\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\nzz\r\n")
t.eq(st, 400, "smuggle: a malformed chunk size is refused")
# a real switch still works: 101, then bytes both ways
W = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nallow-local yes\n")
cw = W.register()
wport = listener(upgrader)
h, p = W.http.rsplit(":", 1)
s = socket.create_connection((h, int(p)), timeout=5)
s.sendall(b"GET http://127.0.0.1:%d/ws HTTP/1.1\r\n" % wport + auth_header(cw).encode() +
          b"Upgrade: echo\r\nConnection: Upgrade\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(4096)
s.sendall(b"hello")
got = b""
try:
    while len(got) < 5:
        got += s.recv(4096)
except socket.timeout:
    pass
s.close()
t.ok(head.startswith(b"HTTP/1.1 101") and got == b"HELLO", "upgrade: after 101 the "
     "connection carries the new protocol", (head, got))

# ------------------------------------- behind a chunked body, inspected
from tlstest import TestCA  # noqa: E402

tca = TestCA()
tcert, tkey = tca.server_cert("full.test", ["DNS:full.test"])
raw_in = []


def tls_recorder(conn):
    """A TLS origin that keeps every byte it gets for a second, then answers."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tcert, tkey)
    try:
        conn = ctx.wrap_socket(conn, server_side=True)
        conn.settimeout(1)
        data = b""
        try:
            while True:
                x = conn.recv(4096)
                if not x:
                    break
                data += x
        except (socket.timeout, ssl.SSLError):
            pass
        raw_in.append(data)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    except (OSError, ssl.SSLError):
        pass
    finally:
        conn.close()


rport = listener(tls_recorder)
idns = Dnsmasq({"full.test": "127.0.0.1"})
I = Proxy("listen http 127.0.0.1:0\ndns-server %s\nupstream-ca %s\nallow full.test\n"
          "allow-local yes\ninspect-host full.test\n" % (idns.server, tca.cert))
ci = I.register()
for name, pieces in [("in one", [b"3\r\nabc\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n"
                                 b"Host: full.test:%d\r\n\r\n" % rport]),
                     ("in pieces", [b"3\r\nab", b"c\r\n0\r\n", b"\r\nGET /smuggled "
                                    b"HTTP/1.1\r\nHost: full.test:%d\r\n\r\n" % rport])]:
    del raw_in[:]
    tun, st, _ = connect_via_http(I.http, "full.test:%d" % rport, ci)
    cctx = ssl.create_default_context(cafile=os.path.join(I.dir, "ca-bundle.pem"))
    tls = cctx.wrap_socket(tun, server_hostname="full.test")
    tls.sendall(b"POST /c HTTP/1.1\r\nHost: full.test:%d\r\nTransfer-Encoding: chunked\r\n"
                b"\r\n" % rport + pieces[0])
    for more in pieces[1:]:
        time.sleep(0.2)
        tls.sendall(more)
    reply = b""
    try:
        while True:
            x = tls.recv(4096)
            if not x:
                break
            reply += x
    except (socket.timeout, ssl.SSLError, OSError):
        pass
    tls.close()
    body = raw_in[0].partition(b"\r\n\r\n")[2] if raw_in else None
    t.ok(reply.startswith(b"HTTP/1.1 200") and body == b"3\r\nabc\r\n0\r\n\r\n",
         "inspected: chunks %s reach the target, nothing after them" % name, (reply, raw_in))

# ------------------------------------ 0.0.0.0 and :: are this host's loopback
zdns = Dnsmasq({"zero.test": "0.0.0.0"})
Z = Proxy("listen http 127.0.0.1:0\nlisten socks5 127.0.0.1:0\ndns-server %s\n"
          "connect-timeout 2\nallow *\nallow-local yes\ndeny 127.0.0.0/8 ::1 localhost\n"
          % zdns.server)
cz = Z.register()
zecho = EchoServer()
for a in ["127.0.0.1", "0.0.0.0", "[::ffff:0.0.0.0]", "[::]", "zero.test"]:
    s, st, head = connect_via_http(Z.http, "%s:%d" % (a, zecho.port), cz)
    s.close()
    t.eq(st, "HTTP/1.1 403 Forbidden", "unspecified: CONNECT %s past deny 127.0.0.0/8 refused"
         % a)
s, rep = socks_open(Z, cz, b"\x05\x01\x00\x01\x00\x00\x00\x00" +
                    bytes([zecho.port >> 8, zecho.port & 255]), timeout=5)
s.close()
t.ok(rep[:2] == b"\x05\x02", "unspecified: SOCKS5 to 0.0.0.0: REP 02", rep)
ev = Z.wait_audit(lambda e: e["event"] == "decision" and e["host"] == "zero.test")
t.ok(ev is not None and ev["reason"] == "not_allowed_local", "unspecified: a name for 0.0.0.0 "
     "is not_allowed_local", ev)

# -------------------------------- localhost is 127.0.0.1 and ::1 for a deny too
LH = Proxy("listen http 127.0.0.1:0\nlisten socks5 127.0.0.1:0\nallow *\nallow-local yes\n"
           "deny 127.0.0.0/8 ::1\n")
clh = LH.register()
for a in ["localhost", "LOCALHOST."]:
    s, st, head = connect_via_http(LH.http, "%s:%d" % (a, zecho.port), clh)
    s.close()
    t.eq(st, "HTTP/1.1 403 Forbidden", "localhost: CONNECT %s past deny 127.0.0.0/8 refused" % a)
ev = LH.wait_audit(lambda e: e["event"] == "decision" and e["host"] == "localhost")
t.ok(ev is not None and ev["reason"] == "denied" and ev["address"] == "127.0.0.1",
     "localhost: denied as the address it is", ev)
LH2 = Proxy("listen http 127.0.0.1:0\nallow *\nallow-local yes\n")
s, st, head = connect_via_http(LH2.http, "localhost:%d" % zecho.port, LH2.register())
s.close()
t.eq(st, "HTTP/1.1 200 OK", "localhost: allowed without the deny")
r = LH2.call("register", tags={}, policy={"allow": ["localhost"], "allow_local": True,
                                          "deny": ["::1"]})
t.ok(r.get("ok"), "localhost: register a process policy denying ::1", r)
if r.get("ok"):
    from proxytest import Creds
    s, st, head = connect_via_http(LH2.http, "localhost:%d" % zecho.port, Creds(LH2, r))
    s.close()
    t.eq(st, "HTTP/1.1 403 Forbidden", "localhost: a process deny of ::1 holds for localhost")

t.done()
