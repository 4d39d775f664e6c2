"""Processes that resist: SIGTERM ignored, daemons that leave their group, fork storms.

execd puts each process in its own process group and session, kills the
group, and is a child subreaper: whatever a process forks off comes back to
execd when its parent dies and is killed once the client is gone.
"""
import os
import signal
import subprocess
import time

from execd_client import Execd, EXECD, b64, tap, pid_alive
from faultlib import (FaultListener, PidDir, RawWS, no_resume_args, wait_dead, descendants,
                      children)

t = tap(timeout=180)
pd = PidDir()
EXTRA = no_resume_args(pd.path)
MARK = "97.%03d" % (os.getpid() % 1000)     # `sleep MARK`: the fork storm's children


def marked():
    out = subprocess.run(["pgrep", "-x", "-f", "sleep %s" % MARK], capture_output=True,
                         text=True).stdout.split()
    return [int(p) for p in out]


def start(c, pid, argv, **kw):
    r = c.start(pid, argv, env={"PATH": "/usr/bin:/bin"}, **kw)
    assert "result" in r, r
    return r


try:
    # --- SIGTERM ignored: terminate escalates to SIGKILL after the grace period
    c = Execd(["--kill-grace-ms", "300"] + EXTRA)
    start(c, "stubborn", pd.sh_reporting("sh -c 'trap \"\" TERM; echo ready; exec sleep 60'"))
    c.wait_notification("process/output", lambda p: p["processId"] == "stubborn")
    t0 = time.time()
    r = c.call("process/terminate", {"processId": "stubborn"})
    t.eq(r.get("result"), {"running": True}, "terminate of a process that ignores SIGTERM")
    ex = c.wait_notification("process/exited", lambda p: p["processId"] == "stubborn", timeout=10)
    dt = time.time() - t0
    t.ok(ex["exitCode"] == 137 and 0.25 <= dt < 3,
         "it is SIGKILLed after --kill-grace-ms (exit 137 after %.2fs)" % dt, ex)

    # --- disconnect with a SIGTERM-ignoring process and a daemon out of its group
    start(c, "stub2", pd.sh_reporting("sh -c 'trap \"\" TERM INT HUP; exec sleep 60'"))
    start(c, "parent", ["sh", "-c", "setsid %s </dev/null >/dev/null 2>&1 & exec sleep 60" %
                        " ".join("'%s'" % a for a in pd.sh_reporting("sleep 60"))])
    pids = pd.wait_pids(3)
    t.eq(len(pids), 3, "a stubborn process and a daemon in its own session are running")
    sids = {p: os.getsid(p) for p in pids if pid_alive(p)}
    t.ok(len(set(sids.values())) == len(sids), "the daemon left its parent's session", sids)
    rc = c.close()
    t.ok(rc == 0 and wait_dead(pids, 5), "a disconnect kills them all, the daemon too",
         "exit %r, alive %s" % (rc, [p for p in pids if pid_alive(p)]))

    # --- the daemon's parent is killed first; the orphan comes back to execd and is swept
    c = Execd(["--kill-grace-ms", "300"] + EXTRA)
    before = pd.pids()
    start(c, "p", ["sh", "-c", "setsid %s </dev/null >/dev/null 2>&1 & exec sleep 60" %
                   " ".join("'%s'" % a for a in pd.sh_reporting("sleep 60"))])
    daemon = pd.new_since(before, 1)[0]
    c.call("process/terminate", {"processId": "p"})
    c.wait_notification("process/exited", lambda p: p["processId"] == "p", timeout=10)
    time.sleep(0.2)
    t.ok(daemon in children(c.pid), "the orphaned daemon is re-parented to execd (subreaper)",
         "daemon %d, execd's children %s" % (daemon, children(c.pid)))
    rc = c.close()
    t.ok(rc == 0 and wait_dead([daemon], 5), "and killed when the client goes")

    # --- a fork storm of daemons: every one of them is caught
    c = Execd(EXTRA)
    start(c, "storm", ["sh", "-c", "i=0; while [ $i -lt 200 ]; do setsid sleep %s "
                       "</dev/null >/dev/null 2>&1 & i=$((i+1)); done; echo done; exec sleep 60" %
                       MARK])
    c.wait_notification("process/output", lambda p: p["processId"] == "storm", timeout=30)
    # "done" comes when the loop has forked them all, not when each has exec'd sleep
    deadline = time.time() + 10
    while len(marked()) < 200 and time.time() < deadline:
        time.sleep(0.05)
    n = len(marked())
    rc = c.close()
    deadline = time.time() + 10
    while marked() and time.time() < deadline:
        time.sleep(0.05)
    t.ok(n >= 150 and not marked(), "200 daemons forked in a loop all die with the session",
         "%d were running, %d left" % (n, len(marked())))

    # --- SIGTERM to execd itself ends the session the same way
    c = Execd(EXTRA)
    before = pd.pids()
    start(c, "s", pd.sh_reporting("sh -c 'trap \"\" TERM; exec sleep 60'"))
    start(c, "d", ["sh", "-c", "setsid %s </dev/null >/dev/null 2>&1 & exec sleep 60" %
                   " ".join("'%s'" % a for a in pd.sh_reporting("sleep 60"))])
    pids = pd.new_since(before, 2)
    os.kill(c.pid, signal.SIGTERM)
    try:
        rc = c.p.wait(3)
    except subprocess.TimeoutExpired:
        rc = None
    t.ok(len(pids) == 2 and wait_dead(pids, 5), "SIGTERM to execd kills its processes and "
         "daemons", "alive %s" % [p for p in pids if pid_alive(p)])
    t.ok(rc == 0, "and execd exits while the client still holds the pipes", rc)
    c.kill()

    # --- the same over the WebSocket listener, where each instance is the subreaper
    L = FaultListener(["--kill-grace-ms", "300"] + EXTRA)
    known = descendants(L.p.pid)
    ws = RawWS(L.host, L.port, L.token)
    inst = L.new_instance(known)
    ws.initialize()
    before = pd.pids()
    for pid, cmd in (("s", pd.sh_reporting("sh -c 'trap \"\" TERM; exec sleep 60'")),
                     ("d", ["sh", "-c", "setsid %s </dev/null >/dev/null 2>&1 & exec sleep 60" %
                            " ".join("'%s'" % a for a in pd.sh_reporting("sleep 60"))])):
        r = ws.call("process/start", {"processId": pid, "argv": cmd, "cwd": "file:///tmp",
                                      "env": {"PATH": "/usr/bin:/bin"}, "tty": False})
        assert "result" in r, r
    pids = pd.new_since(before, 2)
    ws.close()
    t.ok(wait_dead([inst] + pids, 5), "a WebSocket client dropping takes stubborn processes "
         "and daemons with it", [p for p in [inst] + pids if pid_alive(p)])

    # SIGTERM to the listener: every instance ends its session
    known = descendants(L.p.pid)
    ws = RawWS(L.host, L.port, L.token)
    L.new_instance(known)
    ws.initialize()
    before = pd.pids()
    r = ws.call("process/start", {"processId": "x", "argv": pd.sh_reporting("sleep 60"),
                                  "cwd": "file:///tmp", "env": {}, "tty": False})
    pids = pd.new_since(before, 1)
    rc = L.stop()
    t.ok(rc == 0 and wait_dead(pids, 5), "SIGTERM to the listener ends every session",
         "exit %r, alive %s" % (rc, [p for p in pids if pid_alive(p)]))
    ws.close()

    # --- an instance that dies (SIGKILL, the OOM killer) cannot kill anything itself:
    # the listener, subreaper of its instances, kills what it left
    L = FaultListener(EXTRA)
    known = descendants(L.p.pid)
    ws = RawWS(L.host, L.port, L.token)
    inst = L.new_instance(known)
    ws.initialize()
    before = pd.pids()
    ws.call("process/start", {"processId": "x", "argv": pd.sh_reporting("sleep 60"),
                              "cwd": "file:///tmp", "env": {}, "tty": False})
    # a daemon in its own session whose parent lives on: it reaches the listener only
    # once the listener has killed its parent
    ws.call("process/start", {"processId": "d", "argv": [
        "sh", "-c", "setsid %s </dev/null >/dev/null 2>&1 & exec %s" % (
            " ".join("'%s'" % a for a in pd.sh_reporting("sleep 60")),
            " ".join("'%s'" % a for a in pd.sh_reporting("sleep 60")))],
        "cwd": "file:///tmp", "env": {"PATH": "/usr/bin:/bin"}, "tty": False})
    pids = pd.new_since(before, 3)
    os.kill(inst, signal.SIGKILL)
    t.ok(len(pids) == 3 and wait_dead(pids, 3), "the processes of an instance killed by "
         "SIGKILL die too, a daemon with a live parent in its own session included",
         "pids %s, alive %s" % (pids, [p for p in pids if pid_alive(p)]))
    ws.close()
    L.stop()
finally:
    for p in marked():
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    pd.cleanup()
t.done()
