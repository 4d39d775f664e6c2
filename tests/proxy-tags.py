#!/usr/bin/python3
"""Input from the client and its tags is decoded strictly.  An answer to
network/policyRequest with a NUL inside any of its strings ("allow\\u0000",
"allow\\u0000deny", or elsewhere) is malformed and denies.  A process
whose metadata.toolCallId holds a NUL or a lone UTF-16 surrogate gets an
answer to process/start, and another process's open tunnel through
execd-proxy is not cut."""
import time

from proxytest import EchoServer, Origin, Proxy, Tap, deadline
from execd_client import Execd, network_proxy

deadline(150)
t = Tap()
origin = Origin()
echo = EchoServer()
URL = "http://127.0.0.1:%d/hello" % origin.port
ASKED = {"localhost": "allow"}          # 127.0.0.1 is not in the allowlist: asked


def curl(url):
    return ["curl", "-sS", "-m", "20", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}",
            url]


c = Execd()
# ------------------------------------------------ a NUL anywhere in the answer: deny
for i, answer in enumerate(({"decision": {"type": "allow\u0000"}},
                            {"decision": {"type": "allow\u0000deny"}},
                            {"decision": {"type": "allow", "reason": "ok\u0000"}},
                            {"decision": {"type": "allow"}, "note": "x\u0000"})):
    pid = "nul-%d" % i
    c.start(pid, curl(URL), networkProxy=network_proxy(ASKED, timeout_ms=5000))
    q = c.wait_server_request("network/policyRequest", timeout=20)
    c.send({"id": q["id"], "result": answer})
    out, _, _ = c.collect(pid, timeout=30)
    t.ok(out.get("stdout") == b"403", "policyRequest answer %r: malformed, denied" % (answer,),
         out)
pid = "plain-allow"
c.start(pid, curl(URL), networkProxy=network_proxy(ASKED, timeout_ms=5000))
q = c.wait_server_request("network/policyRequest", timeout=20)
c.send({"id": q["id"], "result": {"decision": {"type": "allow"}}})
out, _, _ = c.collect(pid, timeout=30)
t.ok(out.get("stdout") == b"200", "a clean allow still allows", out)

# ------------------------------------------------ odd tags: an answer, nobody else cut
TUNNEL = r'''
import os, socket, sys, time, urllib.parse
u = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
import base64
s = socket.create_connection((u.hostname, u.port), timeout=20)
auth = base64.b64encode(("%s:%s" % (u.username, u.password)).encode()).decode()
s.sendall(("CONNECT 127.0.0.1:PORT HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n"
           "Proxy-Authorization: Basic %s\r\n\r\n" % auth).encode())
head = b""
while b"\r\n\r\n" not in head:
    b = s.recv(4096)
    if not b:
        break
    head += b
print(head.split(b"\r\n")[0].decode(), flush=True)
for word in ("one", "two"):
    s.sendall(word.encode())
    print(s.recv(100).decode(), flush=True)
    time.sleep(6)
'''.replace("PORT", str(echo.port))
c.start("tunnel", ["python3", "-c", TUNNEL], networkProxy=network_proxy({"127.0.0.1": "allow"}))
time.sleep(2)
for name, tcid in (("NUL", "call\u0000x"), ("lone surrogate", "call\ud800x"),
                   ("lone low surrogate", "\udc00")):
    t0 = time.time()
    r = c.request("process/start", {"processId": "odd-" + name, "argv": ["/bin/true"],
                                    "cwd": "file:///tmp", "env": {"PATH": "/usr/bin:/bin"},
                                    "tty": False, "metadata": {"toolCallId": tcid},
                                    "networkProxy": network_proxy({"127.0.0.1": "allow"})})
    # a lone surrogate is a parse error, as serde_json's (the answer has no id)
    end = time.time() + 10
    while r not in c.responses and -1 not in c.responses and time.time() < end:
        c._pump(0.2)
    resp = c.responses.pop(r, None) or c.responses.pop(-1, None)
    t.ok(resp is not None and ("result" in resp or "error" in resp),
         "toolCallId with a %s: process/start is answered" % name, resp)
    if resp is not None and "result" in resp:
        c.collect("odd-" + name, timeout=20)
out, code, _ = c.collect("tunnel", timeout=40)
t.ok(out.get("stdout") == b"HTTP/1.1 200 OK\none\ntwo\n",
     "another process's open tunnel survives the odd tags", out)
r = c.call("environment/status")
t.ok(r.get("result") == {"status": "ready"}, "the connection goes on", r)
t.eq(c.close(), 0, "execd exits 0 (and clean under the sanitizers)")

# ------------------------------------------------ execd-proxy's control socket on its own
P = Proxy("listen http 127.0.0.1:0\nallow *\n")
r = P.call("register", tags={"tool_call_id": "a\u0000b"})
t.ok(r.get("ok") is False and r.get("id") == P._id and "NUL" in r.get("error", ""),
     "control: a tag holding a NUL is refused with the request's id", r)
r = P.call("decide", credential="x0", ask=1, decision="allow\u0000deny")
t.ok(r.get("ok") is False and r.get("id") == P._id, "control: decide \"allow\\0deny\" is refused",
     r)
r = P.call("status")
t.ok(r.get("ok") is True, "control: the connection goes on", r)
t.eq(P.stop(), 0, "execd-proxy exits 0 (and clean under the sanitizers)")
t.done()
