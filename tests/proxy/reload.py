#!/usr/bin/python3
"""execd-proxy configuration: -n checks a file, SIGHUP reloads atomically,
a bad file is refused with a clear log line and the old policy stays."""

import os
import signal
import subprocess
import time

from proxytest import PROXY_BIN, Origin, Proxy, Tap, curl, deadline, tmpdir

deadline(60)
t = Tap()
d = tmpdir()


def check(text):
    path = os.path.join(d, "check.conf")
    with open(path, "w") as f:
        f.write(text)
    c = subprocess.run([PROXY_BIN, "-n", "-f", path], capture_output=True, text=True, timeout=10)
    return c.returncode, c.stderr.strip()


rc, err = check("listen http 127.0.0.1:3128\nallow example.com *.example.org\n")
t.ok(rc == 0 and "configuration OK" in err, "-n accepts a good file", err)
bad_files = [
    ("allow example.com\n", "no listener"),
    ("listen http 192.0.2.1:3128\n", "not a loopback address"),
    ("listen http 127.0.0.1:3128\ndeny *\n", "global wildcard"),
    ("listen http 127.0.0.1:3128\nallow exa[mple.com\n", "invalid domain pattern"),
    ("listen http 127.0.0.1:3128\nports 0\n", "bad port"),
    ("listen http 127.0.0.1:3128\nallow-local maybe\n", "yes or no"),
    ("listen http 127.0.0.1:3128\nfrobnicate 1\n", "unknown keyword"),
    ("listen http 127.0.0.1:3128\nidle-timeout forever\n", "bad value"),
    ("listen http 127.0.0.1:3128\nupstream socks5://127.0.0.1:1080\n", "http:// proxy URL"),
    ("listen http 127.0.0.1:3128\naudit file relative.log\n", "absolute path"),
]
for text, want in bad_files:
    rc, err = check(text)
    t.ok(rc == 1 and want in err and "check.conf:" in err, "-n refuses: %s" % want, err)
rc, err = check("listen http 127.0.0.1:3128\ndns-server 127.0.0.1:5353 [::1]\n"
                "upstream http://user:pw@127.0.0.1:3129/\nmode limited\nports 80 443 8000-8080\n"
                "idle-timeout 500ms\nmax-connections-per-client 10\naudit syslog\n"
                "loopback-congestion-control reno\nloopback-congestion-control host\n")
t.ok(rc == 0, "-n accepts every keyword", err)
c = subprocess.run([PROXY_BIN, "-n", "-f", os.path.join(d, "missing.conf")],
                   capture_output=True, text=True, timeout=10)
t.ok(c.returncode == 1 and "No such file" in c.stderr, "-n on a missing file", c.stderr)

origin = Origin()
conf_a = "listen http 127.0.0.1:0\nallow-local yes\nallow localhost\n"
P = Proxy(conf_a)
cr = P.register()
url = "http://localhost:%d/" % origin.port
t.eq(curl("-x", cr.http_url, url).code, 200, "initial policy allows localhost")
t.eq(P.call("status")["generation"], 1, "generation 1 at start")

P.write_conf("listen http 127.0.0.1:0\nallow-local yes\nallow localhost\ndeny *\n")
P.signal(signal.SIGHUP)
time.sleep(0.3)
log = P.logtext()
t.ok("reload failed, keeping the running configuration" in log and "global wildcard" in log,
     "bad file on SIGHUP: clear log message", log[-500:])
t.eq(P.call("status")["generation"], 1, "bad file: generation unchanged")
t.eq(curl("-x", cr.http_url, url).code, 200, "bad file: the old policy is still in force")

P.write_conf("listen http 127.0.0.1:0\nallow-local yes\nallow 127.0.0.1\n")
P.signal(signal.SIGHUP)
end = time.time() + 5
while P.call("status")["generation"] != 2 and time.time() < end:
    time.sleep(0.05)
t.eq(P.call("status")["generation"], 2, "good file: generation 2")
r = curl("-x", cr.http_url, url)
t.ok(r.code == 403 and '"reason":"not_allowed"' in r.body, "new policy refuses localhost", r)
t.eq(curl("-x", cr.http_url, "http://127.0.0.1:%d/" % origin.port).code, 200,
     "new policy allows 127.0.0.1")
t.ok(P.call("status")["registrations"] == 1, "registrations survive a reload")

P.write_conf("listen http 127.0.0.1:1\nallow-local yes\nallow 127.0.0.1\n")
P.signal(signal.SIGHUP)
time.sleep(0.3)
t.ok("listener changes take effect at the next restart" in P.logtext(),
     "listener changes on reload are reported, not applied")
t.eq(P.call("status")["http"], P.http, "listener unchanged after reload")

t.eq(P.stop(), 0, "proxy exits 0")
t.ok(not os.path.exists(P.ctl_path), "control socket removed at exit")
t.done()
