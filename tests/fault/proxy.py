#!/usr/bin/python3
"""The sidecar killed (SIGKILL) and restarted in the middle of a tunnel.

A process execd started talks through execd-proxy with its own
credentials; the proxy dies mid-tunnel: the tunnel breaks, processes
started meanwhile are refused (never launched with an open network), execd
goes on serving; once the proxy is back the running process's credentials
work again and new processes get theirs.
"""
import base64
import os
import socket
import time

from proxytest import EchoServer, Proxy, connect_via_http, free_port
from execd_client import Execd, network_proxy, tap, unb64

t = tap(timeout=90)
echo = EchoServer()
hport = free_port()
CONF = "listen http 127.0.0.1:%d\nallow 127.0.0.1 localhost\nallow-local yes\n" % hport
P = Proxy(CONF)


class Creds:
    def __init__(self, url):
        self.id, self.secret = url[len("http://"):].rsplit("@", 1)[0].split(":", 1)


# only a managed process is registered and gets proxy variables
MANAGED = network_proxy({"127.0.0.1": "allow"})


def proxy_url(c, pid):
    r = c.start(pid, ["sh", "-c", 'echo "$HTTP_PROXY"; exec sleep 60'],
                env={"PATH": "/usr/bin:/bin"}, networkProxy=MANAGED)
    if "result" not in r:
        return None, r
    out = b""
    deadline = time.time() + 10
    while b"\n" not in out and time.time() < deadline:
        n = c.wait_notification("process/output", lambda p: p["processId"] == pid, timeout=10)
        out += unb64(n["chunk"])
    return out.decode().strip(), r


def tunnel_ok(creds, timeout=5):
    s, status, _ = connect_via_http("127.0.0.1:%d" % hport, "127.0.0.1:%d" % echo.port, creds,
                                    timeout=timeout)
    try:
        if " 200" not in status:
            return False, status
        s.sendall(b"ping")
        return s.recv(16) == b"ping", status
    finally:
        s.close()


c = Execd(["--proxy-control", P.ctl_path])
url, r = proxy_url(c, "a")
t.ok(url and url.startswith("http://x") and url.endswith("@127.0.0.1:%d" % hport),
     "the process's HTTP_PROXY carries its credentials", (url, r))
creds = Creds(url)

s, status, _ = connect_via_http("127.0.0.1:%d" % hport, "127.0.0.1:%d" % echo.port, creds)
s.sendall(b"hello")
t.ok(" 200" in status and s.recv(16) == b"hello", "a tunnel through the sidecar works", status)

# SIGKILL mid-tunnel
P.proc.kill()
P.proc.wait()
s.settimeout(5)
try:
    s.sendall(b"more")
    got = s.recv(16)
except socket.timeout:
    got = "no answer and no close within 5 s"     # the tunnel still open: not broken
except OSError as e:
    got = b""                                       # reset: broken
s.close()
t.ok(got == b"", "the tunnel breaks when the sidecar dies", got)

# a process that would leave a trace if it ran at all
trace = os.path.join(P.dir, "ran-unproxied")
t0 = time.time()
r = c.start("b", ["sh", "-c", "touch %s" % trace], env={"PATH": "/usr/bin:/bin"},
            networkProxy=MANAGED)
refused = "error" in r and "execd-proxy" in r["error"].get("message", "") and \
    time.time() - t0 < 10
# had it been launched, sh would have touched the file by the time execd answers
# environment/status (asked after the start) and a little more
st = c.call("environment/status")
time.sleep(0.3)
t.ok(refused and not os.path.exists(trace),
     "with the sidecar gone process/start is refused, not run unproxied",
     (r, "ran" if os.path.exists(trace) else "did not run"))
t.eq(st.get("result"), {"status": "ready"}, "execd goes on serving")

# restarted on the same control socket
P2 = Proxy(CONF, dir=P.dir)
ok, status = False, None
deadline = time.time() + 10
while not ok and time.time() < deadline:
    try:
        ok, status = tunnel_ok(creds)
    except OSError as e:
        status = repr(e)
    if not ok:
        time.sleep(0.1)
t.ok(ok, "after the restart the running process's credentials work again", status)
url2, r = proxy_url(c, "c")
t.ok(url2 and url2 != url and tunnel_ok(Creds(url2))[0],
     "a process started after the restart gets working credentials of its own", (url2, r))
rc = c.close()
t.eq(rc, 0, "execd exits cleanly")
# the proxy learns of it through the control connection: give it a bounded while
deadline = time.time() + 5
while True:
    code = tunnel_ok(creds)[1].split(" ", 1)[-1][:3]
    if code == "407" or time.time() >= deadline:
        break
    time.sleep(0.05)
t.eq(code, "407", "credentials stop working once their process is gone")
P2.stop()
t.done()
