#!/usr/bin/python3
"""execd-proxy SOCKS5 listener: username/password with the registration's
credentials, CONNECT by name and by address, the reply codes for refusals
and failures, UDP ASSOCIATE refused, and the audit records."""

import socket
import struct
import time

from proxytest import (Dnsmasq, EchoServer, Origin, Proxy, Tap, curl, deadline, free_port)

deadline(90)
t = Tap()

dns = Dnsmasq({"rebind.test": "10.0.0.1", "loop.test": "127.0.0.1"})
origin = Origin()
echo = EchoServer()
O = origin.port

P = Proxy("""
listen http 127.0.0.1:0
listen socks5 127.0.0.1:0
dns-server %s
allow 127.0.0.1 loop.test rebind.test nx.invalid
""" % dns.server)
c = P.register(tags={"process_id": "p-socks", "tool_call_id": "call-9"})
t.eq(c.reply["socks5"], P.socks, "register returns the SOCKS5 listener address")
t.eq(c.reply["socks5_enabled"], True, "register reports SOCKS5 enabled")


def socks_connect(host, port, user=None, password=None, atyp=None, cmd=1):
    """Raw SOCKS5 client: returns (socket, method reply, auth reply, request reply)."""
    h, p = P.socks.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=10)
    s.sendall(b"\x05\x01\x02" if user is not None else b"\x05\x01\x00")
    method = s.recv(2)
    if method != b"\x05\x02":
        return s, method, None, None
    u, pw = user.encode(), password.encode()
    s.sendall(b"\x01" + bytes([len(u)]) + u + bytes([len(pw)]) + pw)
    auth = s.recv(2)
    if auth != b"\x01\x00":
        return s, method, auth, None
    if atyp == 1:
        addr = b"\x01" + socket.inet_pton(socket.AF_INET, host)
    elif atyp == 4:
        addr = b"\x04" + socket.inet_pton(socket.AF_INET6, host)
    else:
        addr = b"\x03" + bytes([len(host)]) + host.encode()
    s.sendall(b"\x05" + bytes([cmd]) + b"\x00" + addr + struct.pack(">H", port))
    rep = s.recv(10)
    return s, method, auth, rep


r = curl("-x", c.socks_url, "http://127.0.0.1:%d/via-socks" % O)
t.ok(r.code == 200 and "GET /via-socks" in r.body, "curl socks5h with credentials: allowed", r)
r = curl("--socks5-hostname", P.socks, "--proxy-user", "%s:%s" % (c.id, c.secret),
         "http://127.0.0.1:%d/via-socks2" % O)
t.ok(r.code == 200, "curl --socks5-hostname --proxy-user: allowed", r)
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["protocol"] == "socks5" and
                  e["decision"] == "allow")
t.ok(ev is not None, "audit: SOCKS5 allow recorded")
if ev:
    t.eq(ev["method"], "CONNECT", "audit socks5: method")
    t.eq(ev["host"], "127.0.0.1", "audit socks5: host")
    t.eq(ev["port"], O, "audit socks5: port")
    t.eq(ev["address"], "127.0.0.1", "audit socks5: address")
    t.eq(ev["tags"], {"process_id": "p-socks", "tool_call_id": "call-9"}, "audit socks5: tags")
    t.eq(ev["credential"], c.id, "audit socks5: credential")
ev = P.wait_audit(lambda e: e["event"] == "close" and e["protocol"] == "socks5")
t.ok(ev is not None and ev["result"] == "ok" and ev["bytes_up"] > 0 and ev["bytes_down"] > 0,
     "audit: SOCKS5 close with bytes", ev)

r = curl("--socks5-hostname", P.socks, "http://127.0.0.1:%d/" % O)
t.ok(r.rc == 97 and r.code == 0, "SOCKS5 without credentials refused", r)
s, method, _, _ = socks_connect("127.0.0.1", O)
t.eq(method, b"\x05\xff", "no acceptable method (05 FF) without username/password")
s.close()
ev = P.wait_audit(lambda e: e["protocol"] == "socks5" and e.get("reason") == "proxy_auth_required")
t.ok(ev is not None and ev["decision"] == "deny", "audit: unauthenticated SOCKS5 refused", ev)
s, method, auth, _ = socks_connect("127.0.0.1", O, user=c.id, password="f" * 32)
t.eq(auth, b"\x01\x01", "wrong secret: authentication failure (01 01)")
s.close()

s, _, auth, rep = socks_connect("127.0.0.1", echo.port, c.id, c.secret, atyp=1)
t.ok(auth == b"\x01\x00" and rep and rep[:2] == b"\x05\x00" and rep[3] == 1,
     "CONNECT by IPv4 address succeeds with an IPv4 BND", rep)
s.sendall(b"socks echo")
t.eq(s.recv(100), b"socks echo", "SOCKS5 tunnel relays data")
s.close()

for host, what in (("loop.test", "name resolving to 127.0.0.1"),
                   ("rebind.test", "name resolving to 10.0.0.1"),
                   ("other.test", "name outside the allowlist"),
                   ("localhost", "localhost")):
    s, _, _, rep = socks_connect(host, O, c.id, c.secret)
    t.ok(rep is not None and rep[:2] == b"\x05\x02", "%s: REP 02 not allowed by ruleset" % what, rep)
    s.close()
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["host"] == "rebind.test")
t.ok(ev and ev["decision"] == "deny" and ev["reason"] == "not_allowed_local" and
     ev["address"] == "10.0.0.1" and ev["protocol"] == "socks5", "audit: rebind.test via SOCKS5", ev)
s, _, _, rep = socks_connect("10.0.0.1", O, c.id, c.secret, atyp=1)
t.ok(rep and rep[1] == 2, "private IPv4 literal: REP 02", rep)
s.close()
s, _, _, rep = socks_connect("::ffff:10.0.0.1", O, c.id, c.secret, atyp=4)
t.ok(rep and rep[1] == 2, "IPv4-mapped private IPv6 literal: REP 02", rep)
s.close()
r = curl("-x", c.socks_url, "http://loop.test:%d/" % O)
t.ok(r.rc == 97, "curl sees the refusal as a SOCKS5 error", r)

s, _, _, rep = socks_connect("nx.invalid", O, c.id, c.secret)
t.ok(rep and rep[1] == 4, "DNS failure: REP 04 host unreachable", rep)
s.close()
s, _, _, rep = socks_connect("127.0.0.1", free_port(), c.id, c.secret, atyp=1)
t.ok(rep and rep[1] == 5, "connection refused: REP 05", rep)
s.close()
s, _, _, rep = socks_connect("0.0.0.0", 0, c.id, c.secret, atyp=1, cmd=3)
t.ok(rep and rep[1] == 2, "UDP ASSOCIATE refused without socks5-udp: REP 02", rep)
s.close()
s, _, _, rep = socks_connect("127.0.0.1", O, c.id, c.secret, atyp=1, cmd=2)
t.ok(rep and rep[1] == 7, "BIND: REP 07 command not supported", rep)
s.close()

# a process whose policy turns SOCKS5 off
n = P.register(policy={"allow": ["127.0.0.1"], "socks5": False})
t.eq(n.reply["socks5_enabled"], False, "register reports SOCKS5 off for that process")
s, _, _, rep = socks_connect("127.0.0.1", O, n.id, n.secret, atyp=1)
t.ok(rep and rep[1] == 2, "SOCKS5 off in the process policy: REP 02", rep)
s.close()

t.eq(P.stop(), 0, "proxy exits 0")

# ------------------------------------------------------------ UDP ASSOCIATE
udp_echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp_echo.bind(("127.0.0.1", 0))
UE = udp_echo.getsockname()[1]
# the refused 127.0.0.2 gets a listener too: what reaches it was relayed, whether or
# not a reply makes it back (the relay passes replies only from allowed destinations)
udp_echo2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp_echo2.bind(("127.0.0.2", UE))
udp_seen = []       # every datagram either echo server received


def udp_echo_loop(sock):
    while True:
        try:
            data, src = sock.recvfrom(65535)
        except OSError:
            return
        udp_seen.append(data)
        sock.sendto(b"echo:" + data, src)


import threading
for sock in (udp_echo, udp_echo2):
    threading.Thread(target=udp_echo_loop, args=(sock,), daemon=True).start()

P = Proxy("""
listen socks5 127.0.0.1:0
dns-server %s
socks5-udp yes
allow 127.0.0.1 rebind.test
""" % dns.server)
u = P.register(tags={"process_id": "p-udp"})
ctl, _, auth, rep = socks_connect("0.0.0.0", 0, u.id, u.secret, atyp=1, cmd=3)
t.ok(rep is not None and rep[:2] == b"\x05\x00" and rep[3] == 1, "UDP ASSOCIATE granted", rep)
relay = (socket.inet_ntoa(rep[4:8]), struct.unpack(">H", rep[8:10])[0])
t.eq(relay[0], "127.0.0.1", "relay address is loopback")
us = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
us.bind(("127.0.0.1", 0))
us.settimeout(3)


def udp_hdr_v4(addr, port):
    return b"\x00\x00\x00\x01" + socket.inet_aton(addr) + struct.pack(">H", port)


def udp_hdr_name(name, port):
    return b"\x00\x00\x00\x03" + bytes([len(name)]) + name.encode() + struct.pack(">H", port)


us.sendto(udp_hdr_v4("127.0.0.1", UE) + b"hello udp", relay)
try:
    data, src = us.recvfrom(65535)
except OSError as e:
    data = repr(e).encode()
t.eq(data, udp_hdr_v4("127.0.0.1", UE) + b"echo:hello udp",
     "datagram relayed and the reply wrapped with its source")
us.sendto(udp_hdr_name("rebind.test", UE) + b"to 10.0.0.1", relay)
us.sendto(udp_hdr_name("other.test", UE) + b"not allowed", relay)
us.sendto(udp_hdr_v4("127.0.0.2", UE) + b"not allowed", relay)
us.settimeout(0.5)
try:
    data = us.recvfrom(65535)[0]
except socket.timeout:
    data = None
t.ok(data is None and b"not allowed" not in udp_seen,
     "nothing relayed for refused destinations", (data, udp_seen))
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["host"] == "rebind.test")
t.ok(ev and ev["decision"] == "deny" and ev["reason"] == "not_allowed_local" and
     ev["address"] == "10.0.0.1" and ev["protocol"] == "socks5-udp",
     "audit: UDP destination resolving to 10.0.0.1 refused", ev)
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["host"] == "other.test")
t.ok(ev and ev["reason"] == "not_allowed", "audit: UDP destination outside the allowlist", ev)
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["protocol"] == "socks5-udp" and
                  e["method"] == "UDP_ASSOCIATE" and e["host"] == "127.0.0.1")
t.ok(ev and ev["decision"] == "allow" and ev["tags"] == {"process_id": "p-udp"},
     "audit: UDP destination 127.0.0.1 allowed", ev)
other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
other.bind(("127.0.0.1", 0))
other.settimeout(0.5)
other.sendto(udp_hdr_v4("127.0.0.1", UE) + b"from another port", relay)
try:
    data = other.recvfrom(65535)[0]
except socket.timeout:
    data = None
# a reply would go to the association's client port, not to `other`: look at what
# the echo server got
t.ok(data is None and b"from another port" not in udp_seen,
     "datagrams from another client port are ignored", (data, udp_seen))
ctl.close()
ev = P.wait_audit(lambda e: e["event"] == "close" and e["protocol"] == "socks5-udp")
t.ok(ev and ev["bytes_up"] == len(b"hello udp") and ev["bytes_down"] == len(b"echo:hello udp"),
     "audit: association close with datagram bytes", ev)
time.sleep(0.2)
us.sendto(udp_hdr_v4("127.0.0.1", UE) + b"after close", relay)
us.settimeout(0.5)
try:
    data = us.recvfrom(65535)[0]
except OSError:
    data = None
t.eq(data, None, "the association ends with its TCP connection")
n = P.register(policy={"allow": ["127.0.0.1"], "socks5_udp": False})
ctl, _, _, rep = socks_connect("0.0.0.0", 1, n.id, n.secret, atyp=1, cmd=3)
t.ok(rep and rep[1] == 2, "process policy without UDP: REP 02", rep)
ctl.close()


def udp_probe(sock, relay, payload):
    """Send one datagram through the association; the echoed reply or None."""
    sock.settimeout(0.5)
    sock.sendto(udp_hdr_v4("127.0.0.1", UE) + payload, relay)
    try:
        return sock.recvfrom(65535)[0]
    except socket.timeout:
        return None


def udp_socket(addr="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 0))
    return s


def associate(addr, port):
    ctl, _, _, rep = socks_connect(addr, port, u.id, u.secret, atyp=1, cmd=3)
    return ctl, (socket.inet_ntoa(rep[4:8]), struct.unpack(">H", rep[8:10])[0])


# the client said where it sends from: only that address and port
mine, thief = udp_socket(), udp_socket()
ctl, relay = associate("127.0.0.1", mine.getsockname()[1])
t.eq(udp_probe(thief, relay, b"hijack"), None,
     "UDP: a datagram from another port before the client's is dropped")
t.ok(udp_probe(mine, relay, b"mine") == udp_hdr_v4("127.0.0.1", UE) + b"echo:mine",
     "UDP: the port given at ASSOCIATE is served")
t.eq(udp_probe(thief, relay, b"hijack2"), None, "UDP: and stays the only one")
ctl.close()

# zeros: the first datagram from the TCP client's own address binds it
mine, thief, elsewhere = udp_socket(), udp_socket(), udp_socket("127.0.0.2")
ctl, relay = associate("0.0.0.0", 0)
t.eq(udp_probe(elsewhere, relay, b"other host"), None,
     "UDP (zeros): a datagram from another address is dropped")
t.ok(udp_probe(mine, relay, b"first") == udp_hdr_v4("127.0.0.1", UE) + b"echo:first",
     "UDP (zeros): the first datagram from the client's address binds the association")
t.eq(udp_probe(thief, relay, b"second port"), None,
     "UDP (zeros): then another port of that address is dropped")
ctl.close()

# the port alone: the TCP client's address with that port
mine, thief = udp_socket(), udp_socket()
ctl, relay = associate("0.0.0.0", mine.getsockname()[1])
t.eq(udp_probe(thief, relay, b"hijack"), None, "UDP (port only): another port dropped")
t.ok(udp_probe(mine, relay, b"port") == udp_hdr_v4("127.0.0.1", UE) + b"echo:port",
     "UDP (port only): the given port served")
ctl.close()

# a 65th destination is over the association's bound: refused, and said once
mine = udp_socket()
ctl, relay = associate("127.0.0.1", mine.getsockname()[1])
for port in range(40000, 40064):
    mine.sendto(udp_hdr_v4("127.0.0.1", port) + b"fill", relay)
ev = P.wait_audit(lambda e: e["event"] == "decision" and e["port"] == 40063)
t.ok(ev and ev["decision"] == "allow", "UDP: 64 destinations of one association decided", ev)
mine.sendto(udp_hdr_v4("127.0.0.1", UE) + b"over the bound", relay)
mine.sendto(udp_hdr_v4("127.0.0.1", UE + 1 if UE < 65535 else UE - 1) + b"again", relay)
ev = P.wait_audit(lambda e: e["event"] == "decision" and
                  e["reason"] == "udp_destination_limit")
t.ok(ev and ev["decision"] == "deny" and ev["host"] == "127.0.0.1" and ev["port"] == UE and
     ev["tags"] == {"process_id": "p-udp"},
     "UDP: a destination over the bound is refused with an audit record", ev)
time.sleep(0.3)
t.ok(b"over the bound" not in udp_seen, "UDP: nothing relayed over the bound", udp_seen)
n_limit = len([e for e in P.audit() if e.get("reason") == "udp_destination_limit"])
t.eq(n_limit, 1, "UDP: the bound is recorded once per association")
ctl.close()
t.eq(P.stop(), 0, "proxy exits 0")
t.done()
