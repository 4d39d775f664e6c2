#!/usr/bin/python3
"""Input from the client and its tags is decoded strictly.  An answer to
network/policyRequest with a NUL inside any of its strings ("allow\\u0000",
"allow\\u0000deny", or elsewhere) is malformed and denies.  A process
whose metadata.toolCallId holds a NUL or a lone UTF-16 surrogate gets an
answer to process/start, and another process's open tunnel through
execd-proxy is not cut."""
import base64
import os
import time

from proxytest import EchoServer, Origin, Proxy, Tap, deadline, tmpdir
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
    # the odd processes start in between; "two" once they all have
    for _ in range(600):
        if os.path.exists(sys.argv[1]):
            break
        time.sleep(0.1)
'''.replace("PORT", str(echo.port))
FLAG = os.path.join(tmpdir(), "odd-done")
c.start("tunnel", ["python3", "-c", TUNNEL, FLAG], networkProxy=network_proxy({"127.0.0.1": "allow"}))
# the tunnel is open (its first echo came back) before the odd processes start
end = time.time() + 20
while time.time() < end and b"one" not in b"".join(
        base64.b64decode(n["params"]["chunk"]) for n in c.notifications
        if n["method"] == "process/output" and n["params"].get("processId") == "tunnel"):
    c._pump(0.2)
NP = network_proxy({"127.0.0.1": "allow"})
for name, tcid, pid, np in (
        ("NUL in toolCallId", "call\u0000x", "odd-NUL", NP),
        ("lone surrogate in toolCallId", "call\ud800x", "odd-sur", NP),
        ("lone low surrogate in toolCallId", "\udc00", "odd-low", NP),
        ("NUL in processId", "c", "odd\u0000pid", NP),
        ("NUL in environmentId", "c", "odd-env", dict(NP, environmentId="e\u0000v")),
        ("NUL in executionId", "c", "odd-exe", dict(NP, executionId="e\u0000x"))):
    r = c.request("process/start", {"processId": pid, "argv": ["/bin/true"],
                                    "cwd": "file:///tmp", "env": {"PATH": "/usr/bin:/bin"},
                                    "tty": False, "metadata": {"toolCallId": tcid},
                                    "networkProxy": np})
    # a lone surrogate is a parse error, as serde_json's (the answer has no id)
    end = time.time() + 10
    while r not in c.responses and -1 not in c.responses and time.time() < end:
        c._pump(0.2)
    resp = c.responses.pop(r, None) or c.responses.pop(-1, None)
    t.ok(resp is not None and ("result" in resp or "error" in resp),
         "%s: process/start is answered" % name, resp)
    if resp is not None and "result" in resp:
        c.collect(pid, timeout=20)
open(FLAG, "w").close()
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
