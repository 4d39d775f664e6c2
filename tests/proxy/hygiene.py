#!/usr/bin/python3
"""execd-proxy HTTP hygiene and limited mode: only GET, HEAD and OPTIONS
without a body or Upgrade, for every request a connection carries (nothing
pipelined behind the first is forwarded); duplicate Host or Content-Length,
CR or NUL inside a value, Content-Length with Transfer-Encoding: 400."""


from proxytest import Origin, Proxy, Tap, deadline, raw_http

deadline(90)
t = Tap()
origin = Origin()
O = origin.port


def methods():
    return [r["method"] for r in origin.requests]


URL = b"http://127.0.0.1:%d" % O
HOST = b"Host: 127.0.0.1:%d\r\n" % O

# ------------------------------------------------------------ limited mode
L = Proxy("""
listen http 127.0.0.1:0
allow 127.0.0.1
mode limited
""")
c = L.register()
for m in [b"GET", b"HEAD", b"OPTIONS"]:
    st, _ = raw_http(L, c, m + b" " + URL + b"/ok HTTP/1.1\r\n" + HOST + b"\r\n")
    t.eq(st, 200, "limited: %s allowed" % m.decode())
cases = [
    ("GET with Upgrade", b"GET " + URL + b"/ws HTTP/1.1\r\n" + HOST +
     b"Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n"),
    ("GET with Upgrade but no Connection: upgrade", b"GET " + URL + b"/ws2 HTTP/1.1\r\n" +
     HOST + b"Upgrade: websocket\r\n\r\n"),
    ("GET with a body", b"GET " + URL + b"/body HTTP/1.1\r\n" + HOST +
     b"Content-Length: 5\r\n\r\nhello"),
    ("GET with a chunked body", b"GET " + URL + b"/chunked HTTP/1.1\r\n" + HOST +
     b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
    ("POST", b"POST " + URL + b"/post HTTP/1.1\r\n" + HOST + b"Content-Length: 0\r\n\r\n"),
]
for name, raw in cases:
    before = len(origin.requests)
    st, data = raw_http(L, c, raw)
    t.ok(st == 403 and b"blocked-by-method-policy" in data, "limited: %s refused" % name,
         data[:200])
    t.eq(len(origin.requests), before, "limited: %s not forwarded" % name)

before = len(origin.requests)
st, data = raw_http(L, c, b"GET " + URL + b"/first HTTP/1.1\r\n" + HOST + b"\r\n" +
                b"DELETE " + URL + b"/second HTTP/1.1\r\n" + HOST + b"\r\n")
t.ok("DELETE" not in methods()[before:], "limited: a DELETE pipelined behind a GET is not "
     "forwarded", methods()[before:])
ev = L.wait_audit(lambda e: e["event"] == "decision" and e["method"] == "DELETE")
t.ok(ev is not None and ev["decision"] == "deny" and ev["reason"] == "method_not_allowed",
     "limited: the pipelined DELETE is recorded as refused", ev)
before = len(origin.requests)
st, data = raw_http(L, c, b"GET " + URL + b"/later HTTP/1.1\r\n" + HOST + b"\r\n", wait=0.3,
                more=b"DELETE " + URL + b"/later2 HTTP/1.1\r\n" + HOST + b"\r\n")
t.ok("DELETE" not in methods()[before:], "limited: a DELETE sent later on the connection "
     "is not forwarded", methods()[before:])
before = len(origin.requests)
st, data = raw_http(L, c, b"GET " + URL + b"/smuggle HTTP/1.1\r\n" + HOST + b"\r\n",
                wait=0.3, more=b"xxDELETE /x HTTP/1.1\r\n\r\n")
t.ok("DELETE" not in methods()[before:], "limited: no byte after the head is forwarded",
     methods()[before:])

# ------------------------------------------------------- hygiene, full mode
F = Proxy("""
listen http 127.0.0.1:0
allow 127.0.0.1
""")
f = F.register()
bad = [
    ("duplicate Host", b"GET " + URL + b"/ HTTP/1.1\r\n" + HOST + HOST + b"\r\n"),
    ("duplicate Host, other value", b"GET " + URL + b"/ HTTP/1.1\r\n" + HOST +
     b"Host: evil.test\r\n\r\n"),
    ("duplicate Content-Length", b"POST " + URL + b"/ HTTP/1.1\r\n" + HOST +
     b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc"),
    ("Content-Length with Transfer-Encoding", b"POST " + URL + b"/ HTTP/1.1\r\n" + HOST +
     b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
    ("bad Content-Length", b"POST " + URL + b"/ HTTP/1.1\r\n" + HOST +
     b"Content-Length: +3\r\n\r\nabc"),
    ("Transfer-Encoding other than chunked", b"POST " + URL + b"/ HTTP/1.1\r\n" + HOST +
     b"Transfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
    ("CR inside a value", b"GET " + URL + b"/ HTTP/1.1\r\n" + HOST +
     b"X-A: one\rX-B: two\r\n\r\n"),
    ("NUL inside a value", b"GET " + URL + b"/ HTTP/1.1\r\n" + HOST + b"X-A: a\x00b\r\n\r\n"),
    ("CR in the Host value", b"GET " + URL + b"/ HTTP/1.1\r\nHost: 127.0.0.1:%d\rX: y\r\n\r\n"
     % O),
]
for name, raw in bad:
    before = len(origin.requests)
    st, _ = raw_http(F, f, raw)
    t.eq(st, 400, "hygiene: %s -> 400" % name)
    t.eq(len(origin.requests), before, "hygiene: %s not forwarded" % name)
ev = F.wait_audit(lambda e: e["event"] == "decision" and e.get("reason") == "bad_request")
t.ok(ev is not None and ev["credential"] == f.id, "hygiene: refusals recorded", ev)
st, _ = raw_http(F, f, b"POST " + URL + b"/post HTTP/1.1\r\n" + HOST +
             b"Content-Length: 3\r\n\r\nabcGET /smuggled HTTP/1.1\r\n" + HOST + b"\r\n")
t.ok(st == 200 and origin.requests[-1]["body"] == b"abc" and
     all(r["path"] != "/smuggled" for r in origin.requests),
     "full: bytes after the declared body are not forwarded",
     [r["path"] for r in origin.requests[-3:]])
st, _ = raw_http(F, f, b"POST " + URL + b"/chunk HTTP/1.1\r\n" + HOST +
             b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
t.eq(st, 200, "full: a chunked body still works")

t.done()
