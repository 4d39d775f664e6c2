#!/usr/bin/python3
"""Every refusal leaves exactly one audit record naming what the client
asked for: SOCKS4 and SOCKS4a requests on the SOCKS5 listener, a SOCKS5
name of length 0, a UDP datagram to a name with a zone id, a request URL
without a host but with a Host header (http:///path, http://:PORT/path),
and a 70 KiB request line or header (431)."""

import socket
import time

from proxytest import Proxy, Tap, auth_header, deadline, socks_open

deadline(60)
t = Tap()
P = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
allow *
socks5-udp yes
""")
C = P.register(tags={"who": "refusals"})


def records(port, settle=0.3):
    time.sleep(settle)
    return [e for e in P.audit() if e.get("port") == port and e.get("event") == "decision"]


def one(port, host, what, reason=None):
    evs = []
    end = time.time() + 3
    while time.time() < end and not evs:
        evs = records(port)
    evs = records(port)
    t.ok(len(evs) == 1 and evs[0].get("host") == host and evs[0].get("decision") != "allow" and
         (reason is None or evs[0].get("reason") == reason),
         "%s: exactly one record naming %r" % (what, host), evs)


def socks_raw(data):
    h, p = P.socks.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=5)
    s.sendall(data)
    try:
        rep = s.recv(16)
    except OSError:
        rep = b""
    s.close()
    return rep


# SOCKS4: VN CD DSTPORT DSTIP USERID NUL
rep = socks_raw(b"\x04\x01" + (4001).to_bytes(2, "big") + socket.inet_aton("192.0.2.7") +
                b"someone\x00")
t.ok(len(rep) == 8 and rep[0] == 0 and rep[1] == 0x5b, "SOCKS4: a rejection reply", rep)
one(4001, "192.0.2.7", "SOCKS4")
# SOCKS4a: DSTIP 0.0.0.x, then the name
rep = socks_raw(b"\x04\x01" + (4002).to_bytes(2, "big") + b"\x00\x00\x00\x01" +
                b"u\x00socks4a.example.test\x00")
t.ok(len(rep) == 8 and rep[1] == 0x5b, "SOCKS4a: a rejection reply", rep)
one(4002, "socks4a.example.test", "SOCKS4a")
rep = socks_raw(b"\x04\x01" + (4003).to_bytes(2, "big") + b"\x00\x00\x00\x01" +
                b"u\x00evil\x1b[31m.test\x00")
one(4003, "evil\x1b[31m.test", "SOCKS4a with a control character (escaped in JSON)")

# SOCKS5 name of length 0
s, rep = socks_open(P, C, b"\x05\x01\x00\x03\x00" + (4004).to_bytes(2, "big"))
s.close()
t.ok(len(rep) > 1 and rep[1] != 0, "SOCKS5 empty name: refused", rep)
one(4004, "", "SOCKS5 empty name")

# UDP to a name with a zone id
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
s, rep = socks_open(P, C, b"\x05\x03\x00\x01\x7f\x00\x00\x01" +
                    u.getsockname()[1].to_bytes(2, "big"))
if len(rep) >= 10 and rep[1] == 0:
    relay = (socket.inet_ntoa(rep[4:8]), int.from_bytes(rep[8:10], "big"))
    name = b"::1%lo"
    u.sendto(b"\x00\x00\x00\x03" + bytes([len(name)]) + name + (4005).to_bytes(2, "big") +
             b"x", relay)
    one(4005, "::1%lo", "UDP to a name with a zone id")
    u.sendto(b"\x00\x00\x00\x03\x00" + (4010).to_bytes(2, "big") + b"x", relay)
    one(4010, "", "UDP to an empty name")
    name = b"frag.example.test"
    u.sendto(b"\x00\x00\x01\x03" + bytes([len(name)]) + name + (4011).to_bytes(2, "big") +
             b"x", relay)
    one(4011, "frag.example.test", "UDP fragment (not reassembled)")
else:
    t.ok(False, "UDP association granted", rep)
s.close()


def http_raw(head):
    h, p = P.http.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=5)
    first, _, rest = head.partition(b"\r\n")
    s.sendall(first + b"\r\n" + auth_header(C).encode() + rest)
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        pass
    s.close()
    return data


ans = http_raw(b"GET http:///path HTTP/1.1\r\nHost: hosthdr.example.test:4006\r\n\r\n")
t.ok(ans.startswith(b"HTTP/1.1 400"), "http:///path: 400", ans[:100])
one(4006, "hosthdr.example.test", "GET http:///path with a Host header")
ans = http_raw(b"GET http://:4007/path HTTP/1.1\r\nHost: other.example.test:4007\r\n\r\n")
t.ok(ans.startswith(b"HTTP/1.1 400"), "http://:PORT/path: 400", ans[:100])
one(4007, "other.example.test", "GET http://:PORT/path with a Host header")

big = b"X-Big: " + b"a" * (70 * 1024) + b"\r\n"
ans = http_raw(b"GET http://bighead.example.test:4008/ HTTP/1.1\r\nHost: bighead.example.test:4008\r\n"
               + big + b"\r\n")
t.ok(ans.startswith(b"HTTP/1.1 431"), "70 KiB header: 431", ans[:100])
one(4008, "bighead.example.test", "70 KiB header")
ans = http_raw(b"GET http://bigline.example.test:4009/" + b"p" * (70 * 1024) +
               b" HTTP/1.1\r\nHost: bigline.example.test:4009\r\n\r\n")
t.ok(ans.startswith(b"HTTP/1.1 431"), "70 KiB request line: 431", ans[:100])
one(4009, "bigline.example.test", "70 KiB request line")
log = P.logtext()
t.ok("\x1b" not in log, "the log holds no raw control character", repr(log[-500:]))
t.eq(P.stop(), 0, "execd-proxy exits 0 (and clean under the sanitizers)")
t.done()
