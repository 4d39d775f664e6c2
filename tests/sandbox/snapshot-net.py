#!/usr/bin/python3
"""A shell snapshot captured under a transparent-TCP sandbox has the
network the command would have, as 0.171.0's capture does (observed: its
~/.bashrc resolves a name to a made-up 198.18.0.x address and reaches an
allowed host): names resolve through the sandbox's answerer, an allowed
address is reached, a denied name is refused.  The ~/.bashrc runs at the
capture and exports what it saw; the command prints it from the snapshot.

Skips when execd says networkProxyTransparentTcp false."""
import os
import shutil
import socket
import socketserver
import sys
import tempfile
import threading

from proxytest import _Echo, Tap, deadline, host_address
from execd_client import Execd, network_proxy

deadline(120)
t = Tap()
W = os.environ.get("TMPDIR", "/tmp")
os.umask(0o022)

SB = {"permissions": {"type": "managed", "network": "restricted",
                      "file_system": {"type": "restricted", "entries": [
                          {"path": {"type": "special", "value": {"kind": "root"}},
                           "access": "read"}]}},
      "windowsSandboxLevel": "disabled", "cwd": "file://" + W}

BASHRC = r'''
SNAP_PY='import socket, sys
def dial(h):
    try:
        s = socket.create_connection((h, int(sys.argv[2])), timeout=10)
        s.sendall(b"hi")
        return s.recv(10).decode()
    except OSError as e:
        return "errno:%d" % e.errno
try:
    a = socket.getaddrinfo("first.test", 80, socket.AF_INET)[0][4][0]
except OSError as e:
    a = "dns:%s" % e
print(a + "|" + (dial(sys.argv[1]) if sys.argv[1] else "-") + "|" + dial("denied.test"))'
SNAP_SOCKS='import os, socket, sys
u = os.environ["ALL_PROXY"].split("//", 1)[1]
cred, hp = u.split("@")
user, pw = cred.split(":", 1)
ph, pp = hp.rstrip("/").rsplit(":", 1)
try:
    s = socket.create_connection((ph, int(pp)), timeout=10)
    s.settimeout(10)
    s.sendall(b"\x05\x01\x02")
    s.recv(2)
    s.sendall(bytes([1, len(user)]) + user.encode() + bytes([len(pw)]) + pw.encode())
    s.recv(2)
    a = socket.inet_aton(sys.argv[1])
    s.sendall(b"\x05\x01\x00\x01" + a + int(sys.argv[2]).to_bytes(2, "big"))
    r = s.recv(10)
    if r[1] != 0:
        print("rep:%d" % r[1])
    else:
        s.sendall(b"hi")
        print(s.recv(10).decode())
except OSError as e:
    print("errno:%s" % e.errno)'
if [ "$SNAP_MODE" = socks ]; then
	export SNAPRES="$(python3 -c "$SNAP_SOCKS" "$SNAP_HOST" "$SNAP_PORT" 2>&1)"
else
	export SNAPRES="$(python3 -c "$SNAP_PY" "$SNAP_HOST" "$SNAP_PORT" 2>&1)"
fi
'''


HOST = host_address()
port = 9
if HOST is not None:
    srv = socketserver.ThreadingTCPServer((HOST, 0), _Echo)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]

home = tempfile.mkdtemp(prefix="snapnet-")
os.chmod(home, 0o755)
with open(os.path.join(home, ".bashrc"), "w") as f:
    f.write(BASHRC)
with open(os.path.join(home, ".profile"), "w") as f:
    f.write("")

c = Execd(env=dict(os.environ, HOME=home))
cap = c.init_result["environmentInfo"]["capabilities"].get("networkProxyTransparentTcp")
if cap is not True or shutil.which("bash") is None:
    t.skip("a shell snapshot's capture under transparent TCP",
           "networkProxyTransparentTcp is %r, or no bash" % cap)
else:
    np = network_proxy(dict({"denied.test": "deny"}, **({HOST: "allow"} if HOST else {})),
                       allow_local=True)
    np["proxy"]["transparentTcp"] = True
    r = c.start("snap", ["/bin/bash", "-lc", "echo RES=$SNAPRES"], sandbox=SB,
                networkProxy=np, shellSnapshot={"scopeId": "net", "shell": {
                    "name": "bash", "path": "/bin/bash"}},
                env={"PATH": "/usr/bin:/bin", "HOME": home, "SNAP_HOST": HOST or "",
                     "SNAP_PORT": str(port)})
    out, _, _ = c.collect("snap", timeout=60) if "result" in r else ({}, None, None)
    text = out.get("stdout", b"").decode(errors="replace").strip()
    res = text[4:].split("|") if text.startswith("RES=") else [text]
    t.ok(res[0].startswith("198.18."),
         "the capture's getaddrinfo gets a made-up address from the sandbox's answerer", text)
    if HOST:
        t.eq(res[1:2], ["hi"], "the capture reaches an allowed address through the proxy")
    else:
        t.skip("the capture reaches an allowed address", "no non-loopback address here")
    t.eq(res[2:3], ["errno:111"], "the capture's connect to a denied name is refused")
    # a managed network without transparent TCP: the capture's own SOCKS5 client
    if HOST:
        np["proxy"]["transparentTcp"] = False
        r = c.start("socks", ["/bin/bash", "-lc", "echo RES=$SNAPRES"], sandbox=SB,
                    networkProxy=np, shellSnapshot={"scopeId": "net-socks", "shell": {
                        "name": "bash", "path": "/bin/bash"}},
                    env={"PATH": "/usr/bin:/bin", "HOME": home, "SNAP_HOST": HOST,
                         "SNAP_PORT": str(port), "SNAP_MODE": "socks"})
        out, _, _ = c.collect("socks", timeout=60) if "result" in r else ({}, None, None)
        t.eq(out.get("stdout", b"").decode(errors="replace").strip(), "RES=hi",
             "a managed network without transparent TCP: the capture reaches an allowed "
             "address through its ALL_PROXY (its registration and proxy routes live)")
    else:
        t.skip("the capture's own SOCKS5 client", "no non-loopback address here")
t.eq(c.close(), 0, "execd exits cleanly")
shutil.rmtree(home, ignore_errors=True)
t.done()
