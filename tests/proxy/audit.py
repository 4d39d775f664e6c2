#!/usr/bin/python3
"""execd-proxy audit sinks: with "audit-overflow drop" a full disk (/dev/full)
and a closed stderr never stop the proxy; lost events are counted, logged and
reported by status.  With "block" (the default) a failing sink keeps its
records queued and loses none."""

import os
import signal
import subprocess
import time

from proxytest import PROXY_BIN, Origin, Proxy, Tap, clean_env, curl, deadline, tmpdir

deadline(60)
t = Tap()
origin = Origin()
url = "http://127.0.0.1:%d/" % origin.port

# a full disk
P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\naudit-overflow drop\n",
          audit="file /dev/full")
c = P.register()
codes = [curl("-x", c.http_url, url).code for _ in range(3)]
t.eq(codes, [200, 200, 200], "requests keep working with a full audit disk")
# each request's closing event may be written after curl is done: allow it a moment
end = time.time() + 5
while True:
    st = P.call("status")
    if st["audit"]["lost"] >= 6 or time.time() > end:
        break
    time.sleep(0.05)
t.ok(st["audit"]["lost"] >= 6 and st["audit"]["written"] == 0, "status counts lost events", st)
t.ok("audit: " in P.logtext() and "events lost" in P.logtext(), "lost events are logged",
     P.logtext()[-400:])
t.eq(P.stop(), 0, "proxy exits 0")

# stderr whose reader went away
d = tmpdir()
ctl = os.path.join(d, "c.sock")
conf = os.path.join(d, "p.conf")
with open(conf, "w") as f:
    f.write("listen http 127.0.0.1:0\nallow 127.0.0.1\naudit stderr\ncontrol %s\n"
            "audit-overflow drop\n" % ctl)
proc = subprocess.Popen([PROXY_BIN, "-f", conf], stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, env=clean_env())
try:
    from proxytest import _procs
    _procs.append(proc)
    end = time.time() + 10
    while not os.path.exists(ctl) and time.time() < end:
        time.sleep(0.02)
    proc.stderr.close()		# the audit reader is gone
    import json
    import socket
    # bind() makes the file before listen(): retry a refused connect (bounded)
    while True:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(ctl)
            break
        except ConnectionRefusedError:
            s.close()
            if time.time() >= end:
                raise
            time.sleep(0.02)
    f = s.makefile("rwb")

    def call(**req):
        f.write((json.dumps(req) + "\n").encode())
        f.flush()
        return json.loads(f.readline())
    with open(ctl + ".key") as kf:
        t.ok(call(op="auth", key=kf.read().strip())["ok"], "control: authenticated with the key")
    r = call(op="register")
    st0 = call(op="status")
    http = st0["http"]
    cred = "http://%s:%s@%s" % (r["credentials"]["id"], r["credentials"]["secret"], http)
    codes = [curl("-x", cred, url).code for _ in range(3)]
    end = time.time() + 5
    t.eq(codes, [200, 200, 200], "requests keep working after the stderr reader closed")
    # the closing records follow the replies: wait for them (bounded)
    st = call(op="status")
    while st["audit"]["lost"] < 5 and time.time() < end:
        time.sleep(0.05)
        st = call(op="status")
    t.ok(st["audit"]["lost"] >= 5, "events to a closed stderr are counted as lost", st)
    t.ok(proc.poll() is None, "proxy still running")
finally:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=5)

# a full disk under "block": kept, not lost, below the bound requests go on
P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\n", audit="file /dev/full")
c = P.register()
codes = [curl("-x", c.http_url, url).code for _ in range(3)]
t.eq(codes, [200, 200, 200], "block: requests work with a full disk below the bound")
end = time.time() + 5
while True:
    st = P.call("status")
    if st["audit"]["queued"] >= 6 or time.time() > end:
        break
    time.sleep(0.05)
t.ok(st["audit"]["lost"] == 0 and st["audit"]["queued"] >= 6,
     "block: the records wait in the queue, none lost", st)
t.eq(P.stop(), 0, "proxy exits 0")

# syslog sink without a syslog daemon: counted or kept, never fatal
P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\n", audit="syslog")
c = P.register()
t.eq(curl("-x", c.http_url, url).code, 200, "syslog sink: requests work")
# the closing record is written when the proxy has seen the client go: wait for it (bounded)
end = time.time() + 5
st = P.call("status")
while st["audit"]["written"] + st["audit"]["lost"] + st["audit"]["queued"] < 2 and \
        time.time() < end:
    time.sleep(0.05)
    st = P.call("status")
t.ok(st["audit"]["written"] + st["audit"]["lost"] + st["audit"]["queued"] >= 2,
     "syslog sink: events written, kept or counted", st)
t.eq(P.stop(), 0, "proxy exits 0")

# SIGHUP reopens a rotated audit file
P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\n")
c = P.register()
curl("-x", c.http_url, url)
os.rename(P.audit_path, P.audit_path + ".1")
P.signal(signal.SIGHUP)
end = time.time() + 5
while P.call("status")["generation"] < 2 and time.time() < end:
    time.sleep(0.05)
curl("-x", c.http_url, url)
t.ok(P.wait_audit(lambda e: e["event"] == "decision") is not None,
     "after SIGHUP the audit goes to a new file at the configured path")
t.eq(P.stop(), 0, "proxy exits 0")
t.done()
