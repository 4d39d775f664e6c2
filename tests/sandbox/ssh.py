#!/usr/bin/python3
"""The real OpenSSH client, which knows nothing of proxies, under transparent
TCP: `ssh ok.test` resolves the name through the sandbox's answerer, and its
connect goes through the proxy by name to a local listener that answers an
SSH banner (and records the client's); `ssh no.test` is refused by the
policy and never reaches the listener.  Through the execd-proxy sidecar,
whose dnsmasq says where ok.test and no.test are.

Skips without ssh or dnsmasq, or when execd says networkProxyTransparentTcp
false."""
import json
import os
import shutil
import socket
import sys
import threading

from proxytest import Dnsmasq, Proxy, Tap, deadline, free_port
from execd_client import Execd, network_proxy

deadline(120)
t = Tap()
W = os.environ.get("TMPDIR", "/tmp")

SB = {"permissions": {"type": "managed", "network": "restricted",
                      "file_system": {"type": "restricted", "entries": [
                          {"path": {"type": "special", "value": {"kind": "root"}},
                           "access": "read"}]}},
      "windowsSandboxLevel": "disabled", "cwd": "file://" + W}


class Banner:
    """Answers an SSH banner, records the client's first line, then closes."""

    def __init__(self):
        self.seen = []
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            c.settimeout(10)
            try:
                c.sendall(b"SSH-2.0-execd-test-banner\r\n")
                data = b""
                while b"\n" not in data and len(data) < 512:
                    d = c.recv(512)
                    if not d:
                        break
                    data += d
                self.seen.append(data.split(b"\n")[0].decode(errors="replace").strip())
            except OSError:
                pass
            c.close()


ssh = shutil.which("ssh")
if ssh is None or shutil.which("dnsmasq") is None:
    t.skip("the OpenSSH client under transparent TCP", "no ssh or no dnsmasq")
    t.done()
    sys.exit(0)

srv = Banner()
dns = Dnsmasq({"ok.test": "127.0.0.1", "no.test": "127.0.0.1"})
hport, sport = free_port(), free_port()
P = Proxy("listen http 127.0.0.1:%d\nlisten socks5 127.0.0.1:%d\ndns-server %s\n"
          "allow ok.test no.test\nallow-local yes\n" % (hport, sport, dns.server))
c = Execd(["--proxy-control", P.ctl_path])
cap = c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp")
if cap is not True:
    t.skip("the OpenSSH client under transparent TCP", "networkProxyTransparentTcp is %r" % cap)
else:
    np = network_proxy({"ok.test": "allow", "no.test": "deny"}, allow_local=True)
    np["proxy"]["transparentTcp"] = True
    script = ("for h in ok.test no.test; do %s -F /dev/null -o BatchMode=yes "
              "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
              "-o ConnectTimeout=10 -p %d probe@$h true 2>&1 | tail -1; "
              "echo \"$h rc=${PIPESTATUS[0]}\"; done" % (ssh, srv.port))
    r = c.start("ssh", ["bash", "-c", script], sandbox=SB, networkProxy=np,
                env={"PATH": "/usr/bin:/bin", "HOME": W})
    out, _, _ = c.collect("ssh", timeout=60) if "result" in r else ({"stdout": repr(r).encode()},
                                                                    None, None)
    text = out.get("stdout", b"").decode(errors="replace")
    print("# " + text.replace("\n", "\n# "))
    t.ok(any(s.startswith("SSH-2.0-OpenSSH") for s in srv.seen),
         "ssh ok.test: OpenSSH's banner reaches the listener, by name through the proxy",
         (srv.seen, text))
    first = text.split("ok.test rc=")[0]
    t.ok("ok.test rc=255" in text and ("closed by" in first or "kex_exchange" in first),
         "ssh ok.test: the connection is made (then the fake server hangs up)", text)
    t.ok("Connection refused" in text.split("ok.test rc=")[-1] and "no.test rc=255" in text
         and len(srv.seen) == 1,
         "ssh no.test: refused by the policy, the listener never sees it", (text, srv.seen))
    ds = []
    try:
        while True:
            ds.append(c.wait_notification("network/policyDecision",
                                          lambda p: p.get("processId") == "ssh", timeout=3))
    except TimeoutError:
        pass
    got = sorted({(d.get("host"), d.get("port"), d.get("decision")) for d in ds})
    t.eq(got, [("no.test", srv.port, "deny"), ("ok.test", srv.port, "allow")],
         "network/policyDecision for each, by name")
t.eq(c.close(), 0, "execd exits cleanly")
P.stop()
t.done()
