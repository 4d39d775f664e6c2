#!/usr/bin/python3
"""execd-proxy: one reading of every target.  A table of address spellings
against address and CIDR deny entries on HTTP, CONNECT and SOCKS5; legacy
IPv4 spellings and percent-encoded hosts refused; IPv4 embedded in IPv6
checked as its IPv4; host names with bad bytes refused on every protocol;
an upstream proxy only ever sees the canonical address; control-socket
patterns keep their brackets; unregister only of one's own credentials."""

import json
import socket
import struct
import subprocess
import threading

from proxytest import (PROXY_BIN, Dnsmasq, EchoServer, Proxy, Tap, clean_env, deadline, raw_http,
                       socks_open, tmpdir)

deadline(150)
t = Tap()

dns = Dnsmasq({"example.test": "127.0.0.1", "other.test": "127.0.0.1"})
echo = EchoServer()
E = echo.port



def http_get(proxy, creds, authority):
    return raw_http(proxy, creds, ("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" %
                                   (authority, authority)).encode("latin-1"), timeout=10)


def http_connect(proxy, creds, authority):
    return raw_http(proxy, creds, ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
                                   (authority, authority)).encode("latin-1"), timeout=10)


def socks(proxy, creds, addr, port, cmd=1):
    """addr: bytes ATYP+ADDR; returns the reply code or None."""
    try:
        s, rep = socks_open(proxy, creds, b"\x05" + bytes([cmd]) + b"\x00" + addr +
                            struct.pack(">H", port))
    except OSError:
        return None
    s.close()
    return rep[1] if len(rep) >= 2 else None


def socks_name(name):
    if isinstance(name, str):
        name = name.encode("latin-1")
    return b"\x03" + bytes([len(name)]) + name


def socks_v4(a):
    return b"\x01" + socket.inet_pton(socket.AF_INET, a)


def socks_v6(a):
    return b"\x04" + socket.inet_pton(socket.AF_INET6, a)


def reason_of(data):
    body = data.partition(b"\r\n\r\n")[2]
    try:
        return json.loads(body).get("reason")
    except ValueError:
        for line in data.split(b"\r\n"):
            if line.lower().startswith(b"x-proxy-error:"):
                return line.split(b":", 1)[1].strip().decode()
    return None


# -------------------------------------------------- the table, on proxy A
A = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
dns-server %s
connect-timeout 2
allow *
allow-local yes
deny 8.8.8.8 127.0.0.3 ::1 [2001:4860:4860::8888] 10.9.0.0/16 2001:db8:1::/48
deny secret.example.test
""" % dns.server)
ca = A.register(tags={"process_id": "addr"})

DENIED, INVALID = "denied", "invalid"
# (spelling in a URL authority, expected outcome)
TABLE = [
    ("8.8.8.8", DENIED),
    ("008.008.008.008", INVALID),
    ("0x08080808", INVALID),
    ("134744072", INVALID),
    ("0010.0010.0010.0010", INVALID),
    ("8.8.2056", INVALID),
    ("0x8.0x8.0x8.0x8", INVALID),
    ("0177.0.0.1", INVALID),
    ("0x7f000001", INVALID),
    ("0x7f.1", INVALID),
    ("127.1", INVALID),
    ("2130706433", INVALID),
    ("127.0.0.3.", DENIED),
    ("127.0.0.%253", INVALID),
    ("127.0.0.3", DENIED),
    ("[::ffff:8.8.8.8]", DENIED),
    ("[::ffff:808:808]", DENIED),
    ("[::8.8.8.8]", DENIED),
    ("[64:ff9b::808:808]", DENIED),
    ("[2002:808:808::1]", DENIED),
    ("[2001:0:4136:e378:8000:63bf:f7f7:f7f7]", DENIED),
    ("[2001:4860:4860:0::8888]", DENIED),
    ("[2001:4860:4860:0000:0000:0000:0000:8888]", DENIED),
    ("[2001:4860:4860::8888%25eth0]", INVALID),
    ("[0:0:0:0:0:0:0:1]", DENIED),
    ("[0::1]", DENIED),
    ("[::1]", DENIED),
    ("[::ffff:127.0.0.3]", DENIED),
    ("[::ffff:7f00:3]", DENIED),
    ("10.9.1.2", DENIED),
    ("[::ffff:10.9.1.2]", DENIED),
    ("[2002:a09:102::]", DENIED),
    ("[2001:db8:1:2::5]", DENIED),
    ("[2001:DB8:1::]", DENIED),
    ("secret.example.test", DENIED),
    ("SECRET.example.test", DENIED),
    ("secret.example.test.", DENIED),
    ("secre%74.example.test", INVALID),
    ("secre\\t.example.test", INVALID),
    ("xn--bcher-kva.example.test", "allowed"),
]

for spelling, want in TABLE:
    st, data = http_get(A, ca, spelling)
    if want == DENIED:
        t.ok(st == 403 and reason_of(data) == "denied", "http %s: denied" % spelling, data[:300])
    elif want == INVALID:
        t.eq(st, 400, "http %s: refused as invalid (400)" % spelling)
    else:
        t.ok(st not in (400, 403), "http %s: not refused (%d)" % (spelling, st), data[:300])
    port = "%d" % E
    st, data = http_connect(A, ca, spelling + ":" + port)
    if want == DENIED:
        t.eq(st, 403, "CONNECT %s: denied" % spelling)
    elif want == INVALID:
        t.eq(st, 400, "CONNECT %s: refused as invalid (400)" % spelling)
    else:
        t.ok(st not in (400, 403), "CONNECT %s: not refused (%d)" % (spelling, st))
    # SOCKS5 by name: the spelling without brackets
    name = spelling[1:-1] if spelling.startswith("[") else spelling
    rep = socks(A, ca, socks_name(name), E)
    if want == DENIED:
        t.eq(rep, 2, "socks5 name %s: not allowed by ruleset (2)" % name)
    elif want == INVALID:
        t.eq(rep, 1, "socks5 name %s: general failure (1)" % name)
    else:
        t.ok(rep not in (1, 2), "socks5 name %s: not refused (%r)" % (name, rep))

# the SOCKS5 address fields, binary
for atyp, a in [(socks_v6, "::ffff:127.0.0.3"), (socks_v6, "::ffff:8.8.8.8"),
                (socks_v6, "64:ff9b::808:808"), (socks_v6, "2002:808:808::"),
                (socks_v6, "2001:0:4136:e378:8000:63bf:f7f7:f7f7"), (socks_v6, "::1"),
                (socks_v6, "2001:4860:4860::8888"), (socks_v4, "127.0.0.3"),
                (socks_v4, "10.9.200.1")]:
    t.eq(socks(A, ca, atyp(a), E), 2, "socks5 address field %s: denied" % a)

# bad bytes in SOCKS5 names: never reach the resolver, refused, recorded
for bad in [b"secre\\t.example.test", b"a b.example.test", b"a\x00b.example.test",
            b"\xff\xfe.example.test", b"caf\xc3\xa9.example.test", b"a%2eb.example.test",
            b"-" * 64 + b".example.test", (b"a" * 63 + b".") * 3 + b"a" * 62,
            b"a..b.example.test", b"a\tb.example.test", b"a\x7fb.example.test"]:
    t.eq(socks(A, ca, socks_name(bad), E), 1, "socks5 name %r: general failure" % bad[:40])
ev = A.wait_audit(lambda e: e["event"] == "decision" and e.get("reason") == "invalid_host" and
                  e["protocol"] == "socks5")
t.ok(ev is not None and ev["decision"] == "deny", "audit: invalid SOCKS5 name recorded", ev)
ev = A.wait_audit(lambda e: e["event"] == "decision" and e.get("reason") == "invalid_host" and
                  e["protocol"] == "http")
t.ok(ev is not None, "audit: invalid HTTP host recorded", ev)

# an allowed canonical literal still works
st, data = http_connect(A, ca, "127.0.0.1:%d" % E)
t.eq(st, 200, "CONNECT 127.0.0.1: allowed")
st, data = http_connect(A, ca, "[::ffff:127.0.0.1]:%d" % E)
t.eq(st, 200, "CONNECT [::ffff:127.0.0.1] (mapped, not denied): allowed")
ev = A.wait_audit(lambda e: e["event"] == "decision" and e["host"] == "::ffff:127.0.0.1")
t.ok(ev is not None, "audit: the host is recorded in canonical form", ev)
st, data = http_get(A, ca, "127.0.0.1:0%d" % E)
t.eq(st, 400, "port with a leading zero refused")

# ------------------------------------- embedded IPv4 is local, on proxy B
B = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
connect-timeout 2
allow *
allow-local no
""")
cb = B.register()
for a in ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "[64:ff9b::7f00:1]",
          "[64:ff9b::a00:1]", "[2002:7f00:1::1]", "[2002:c0a8:101::]",
          "[2001:0:4136:e378:8000:63bf:80ff:fffe]", "[2001::3f57:fefe]", "[0::1]"]:
    st, data = http_connect(B, cb, a + ":%d" % E)
    t.ok(st == 403 and b"blocked-by-allowlist" in data,
         "allow-local no: CONNECT %s refused as local" % a, data[:200])
t.eq(socks(B, cb, socks_v6("2001:0:4136:e378:8000:63bf:80ff:fffe"), E), 2,
     "allow-local no: SOCKS5 Teredo address of 127.0.0.1 refused")
ev = B.wait_audit(lambda e: e["event"] == "decision" and e["host"] == "2002:7f00:1::1")
t.ok(ev is not None and ev["reason"] == "not_allowed_local", "audit: 6to4 loopback local", ev)

# -------------------------------------- through an upstream proxy, on C
seen = []


def fake_upstream(srv):
    while True:
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        conn.settimeout(5)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            seen.append(data)
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n")
        except OSError:
            pass
        conn.close()


up = socket.socket()
up.bind(("127.0.0.1", 0))
up.listen(16)
threading.Thread(target=fake_upstream, args=(up,), daemon=True).start()
C = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
upstream http://127.0.0.1:%d
allow *
allow-local yes
deny 8.8.8.8
""" % up.getsockname()[1])
cc = C.register()
for spelling in ["0x08080808", "134744072", "0010.0010.0010.0010", "8.8.2056", "0177.0.0.1"]:
    st, _ = http_get(C, cc, spelling)
    t.eq(st, 400, "upstream: http %s refused, not forwarded" % spelling)
    st, _ = http_connect(C, cc, spelling + ":443")
    t.eq(st, 400, "upstream: CONNECT %s refused, not forwarded" % spelling)
    t.eq(socks(C, cc, socks_name(spelling), 443), 1, "upstream: socks5 %s refused" % spelling)
for spelling in ["[::ffff:8.8.8.8]", "[64:ff9b::808:808]"]:
    st, _ = http_get(C, cc, spelling)
    t.eq(st, 403, "upstream: http %s denied" % spelling)
t.eq(seen, [], "upstream: nothing refused or denied reached the upstream proxy")
st, _ = http_get(C, cc, "[0:0:0:0:0:0:0:2]")
st, _ = http_connect(C, cc, "[0::2]:443")
socks(C, cc, socks_name("0:0::2"), 443)
lines = [d.split(b"\r\n", 1)[0] for d in seen]
t.ok(b"GET http://[::2]:80/ HTTP/1.1" in lines, "upstream: absolute URI in canonical form", lines)
t.ok(b"CONNECT [::2]:443 HTTP/1.1" in lines, "upstream: CONNECT in canonical form", lines)

# ------------------------------------------- patterns and the control socket
D = Proxy("""
listen http 127.0.0.1:0
dns-server %s
connect-timeout 2
allow *
allow-local yes
deny [a-c]x.example.test
""" % dns.server)
r = D.call("register", tags={}, policy={
    "allow": ["*"], "allow_local": True,
    "deny": ["[s]ecret2.other.test", "[a-z]*.example.test"]})
t.ok(r.get("ok"), "register with bracket-glob deny patterns", r)
if r.get("ok"):
    from proxytest import Creds
    cd = Creds(D, r)
    for host, want in [("secret2.other.test", 403), ("s.other.test", 200),
                       ("abc.example.test", 403), ("9abc.example.test", 200),
                       ("a-z.example.test", 403)]:
        st, _ = http_connect(D, cd, "%s:%d" % (host, E))
        t.eq(st, want, "process pattern against %s" % host)
    cd2 = D.register()
    for host, want in [("bx.example.test", 403), ("dx.example.test", 200),
                       ("a-c.example.test", 200)]:
        st, _ = http_connect(D, cd2, "%s:%d" % (host, E))
        t.eq(st, want, "configured pattern [a-c]x.example.test against %s" % host)
for bad in ["[", "[a-z", "[]x.test", "[[:alpha:]].test", "0177.0.0.1", "127.1", "10.0.0.0/33",
            "10.0.0.1/8", "::1/129", "[::1]/200", "a b", "a%25b", "x\\y.test"]:
    r = D.call("register", tags={}, policy={"deny": [bad]})
    t.ok(not r.get("ok"), "register refuses deny pattern %r" % bad, r)

# a bad pattern in the file is a configuration error
for bad in ["0177.0.0.1", "[a-z", "0x7f000001", "10.0.0.0/40"]:
    d = tmpdir()
    path = d + "/bad.conf"
    with open(path, "w") as f:
        f.write("listen http 127.0.0.1:0\ncontrol %s/c.sock\ndeny %s\n" % (d, bad))
    rc = subprocess.run([PROXY_BIN, "-n", "-f", path], capture_output=True, env=clean_env())
    t.ok(rc.returncode != 0, "configuration with deny %s is refused" % bad,
         rc.stderr.decode(errors="replace"))

# unregister: only existing ids of one's own
mine = D.register(tags={"who": "first"})
other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
other.connect(D.ctl_path)
other.settimeout(10)
of = other.makefile("rwb")


def other_call(op, **kw):
    of.write((json.dumps(dict(kw, op=op, id=1)) + "\n").encode())
    of.flush()
    return json.loads(of.readline())


t.ok(other_call("auth", key=D.key()).get("ok"), "second control client authenticated")
r = other_call("unregister", credential=mine.id)
t.ok(not r.get("ok"), "another control client cannot unregister my credential", r)
st, _ = http_connect(D, mine, "127.0.0.1:%d" % E)
t.eq(st, 200, "... and my credential still works")
r = D.call("unregister", credential="x000000000000000")
t.ok(not r.get("ok"), "unregister of an id that does not exist fails", r)
r = D.call("unregister", credential=mine.id)
t.ok(r.get("ok"), "unregister of my own credential works", r)
other.close()

t.done()
