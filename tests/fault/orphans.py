"""An instance killed with SIGKILL: what is left of it, in each mode.

--listen: the listener is the subreaper of what a dead instance leaves
(each live instance is the subreaper of its own processes, so nothing of a
live one ever reaches the listener); it kills it all and removes the
instance's session socket and owner file at once.  Without a listener
(--inetd, socket activation, --stdio) the session socket goes at the next
start of any execd sharing the state directory; the spawn helper sees its
instance's end and kills every command's process group (a command, what it
forked, what it left running in its group after it exited) before it goes
(issue 37, item 2; on main they were left to init).  A daemon that left its
command's process group (setsid) is not in it: only a listener, a graceful
end or a cgroup (systemd's KillMode=control-group) ends it.  Whatever the
mode, a live detached session survives another instance's start-up clean-up
and can still be resumed.
"""
import os
import shlex
import signal
import socket
import subprocess
import tempfile
import threading
import time

from execd_client import Execd, EXECD, tap, pid_alive, spawn_helper_of
from faultlib import FaultListener, PidDir, RawWS, wait_dead, descendants

t = tap(timeout=150)
pd = PidDir()
state = tempfile.mkdtemp(prefix="execd-state.")
ARGS = ["--state-dir", state, "--resume-ttl-ms", "60000"]
token = os.urandom(16).hex()
token_file = os.path.join(pd.path, "token")
with open(token_file, "w") as f:
    f.write(token + "\n")
leftovers = []          # pids this test kills itself at the end


def files():
    return sorted(os.listdir(state))


def wait_files(want, timeout=3.0):
    deadline = time.time() + timeout
    while files() != want and time.time() < deadline:
        time.sleep(0.02)
    return files()


def start(ws, pid, argv, sandbox=None):
    params = {"processId": pid, "argv": argv, "cwd": "file:///tmp",
              "env": {"PATH": "/usr/bin:/bin"}, "tty": False}
    if sandbox is not None:
        params["sandbox"] = sandbox
    r = ws.call("process/start", params)
    assert "result" in r, r
    return r


def q(argv):
    return " ".join(shlex.quote(a) for a in argv)


def daemon_cmd():
    """A daemon in its own session whose parent lives on: 2 pids."""
    return ["sh", "-c", "setsid %s </dev/null >/dev/null 2>&1 & exec %s" %
            (q(pd.sh_reporting("sleep 600")), q(pd.sh_reporting("sleep 600")))]


def orphan_cmd():
    """A daemon whose parent exits at once: adopted by the instance, 1 pid."""
    return ["sh", "-c", "setsid %s </dev/null >/dev/null 2>&1 & exit 0" %
            q(pd.sh_reporting("sleep 600"))]


def group_cmds(e_start):
    """Start a command three ways: itself (exec), one it forks and waits for,
    one it leaves running in its group as it exits; 3 pids to watch."""
    e_start("plain", pd.sh_reporting("sleep 600"))
    e_start("forked", ["sh", "-c", "%s; true" % q(pd.sh_reporting("sleep 600"))])
    e_start("bg", ["sh", "-c", "%s & exit 0" % q(pd.sh_reporting("sleep 600"))])
    return 3


def ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def published(before, timeout=3.0):
    """The state directory entries that appeared since before."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        new = [f for f in files() if f not in before]
        if len(new) >= 2:
            return sorted(new)
        time.sleep(0.02)
    return sorted(f for f in files() if f not in before)


def is_session_pair(new):
    return (len(new) == 2 and new[0].endswith(".pid") and new[1].endswith(".sock") and
            new[0][:-4] == new[1][:-5] and new[0].startswith("session-"))


def reap_later(pids):
    leftovers.extend(p for p in pids if pid_alive(p))


try:
    # ----------------------------------------------------------- --listen
    L = FaultListener(ARGS)
    # B: a live instance beside the one that dies, with a process and an adopted orphan
    known = descendants(L.p.pid)
    b = RawWS(L.host, L.port, L.token)
    inst_b = L.new_instance(known)
    b.initialize()
    b_files = published([])
    before = pd.pids()
    start(b, "sleep", pd.sh_reporting("sleep 600"))
    start(b, "orphan", orphan_cmd())
    b_pids = pd.new_since(before, 2)
    deadline = time.time() + 3
    while time.time() < deadline and not any(ppid(p) == inst_b for p in b_pids
                                             if p != b_pids[0]):
        time.sleep(0.02)
    adopted = [p for p in b_pids if ppid(p) == inst_b]
    t.ok(len(b_pids) == 2 and len(adopted) == 2,
         "listener: a live instance's process and its orphaned daemon are its own children",
         "pids %s, adopted by instance %d: %s" % (b_pids, inst_b, adopted))

    # A: the instance that is killed
    known = descendants(L.p.pid)
    a = RawWS(L.host, L.port, L.token)
    inst_a = L.new_instance(known)
    a.initialize()
    a_files = published(b_files)
    t.ok(is_session_pair(a_files), "listener: a WebSocket session publishes its socket and "
         "owner file", a_files)
    before = pd.pids()
    start(a, "plain", pd.sh_reporting("sleep 600"))
    start(a, "daemon", daemon_cmd())
    start(a, "orphan", orphan_cmd())
    a_pids = pd.new_since(before, 4)
    helper_a = spawn_helper_of(inst_a)
    os.kill(inst_a, signal.SIGKILL)
    watched = a_pids + [helper_a]
    t.ok(len(a_pids) == 4 and helper_a and wait_dead(watched, 3),
         "listener: SIGKILL to an instance, and everything it left dies (a process, a daemon "
         "in its own session with a live parent, an adopted orphan, the spawn helper)",
         "pids %s, helper %s, alive %s" % (a_pids, helper_a,
                                           [p for p in watched if p and pid_alive(p)]))
    reap_later(a_pids)
    left = wait_files(b_files)
    t.eq(left, b_files, "listener: its session socket and owner file are removed at once, "
         "the live session's stay")
    t.ok(pid_alive(inst_b) and all(pid_alive(p) for p in b_pids),
         "listener: the live instance beside it and all its processes are untouched",
         "instance %d alive %s, pids alive %s" % (inst_b, pid_alive(inst_b),
                                                  [pid_alive(p) for p in b_pids]))
    r = b.call("process/read", {"processId": "sleep", "afterSeq": 0})
    t.ok("result" in r, "listener: and it still answers", r)
    c = RawWS(L.host, L.port, L.token)
    t.ok("result" in c.initialize(), "listener: it still serves after an instance was killed")
    c.close()
    rc = L.stop()
    t.ok(rc == 0 and wait_dead(b_pids + [inst_b], 5) and wait_files([]) == [],
         "listener: SIGTERM ends the live session too; nothing of either is left",
         "exit %r, alive %s, files %s" % (rc, [p for p in b_pids + [inst_b] if pid_alive(p)],
                                          files()))
    reap_later(b_pids)
    b.close()

    # --------------------------- without a listener: a connection handed to execd
    def one_connection(mode):
        """execd serving one TCP connection, as inetd (fd 0 and 1) or systemd Accept=yes
        (fd 3, LISTEN_FDS) start it; returns (process, RawWS)."""
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)
        box = {}

        def serve():
            s, _ = ls.accept()
            cmd = [EXECD, "--token-file", token_file, "--log", "none"] + ARGS
            if mode == "inetd":
                box["p"] = subprocess.Popen(cmd[:1] + ["--inetd"] + cmd[1:], stdin=s, stdout=s)
            else:
                # the connection as fd 3, moved there by the shell: a dup2 here
                # could land on a descriptor of ours (the listening socket)
                fd = s.fileno()
                move = "" if fd == 3 else "exec 3<&%d %d<&-; " % (fd, fd)
                box["p"] = subprocess.Popen(
                    ["sh", "-c", move + 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"', "sh"] + cmd,
                    stdin=subprocess.DEVNULL, pass_fds=(fd,))
            s.close()
        th = threading.Thread(target=serve)
        th.start()
        ws = RawWS("127.0.0.1", ls.getsockname()[1], token)
        th.join()
        ls.close()
        return box["p"], ws

    for mode in ("inetd", "systemd-accept"):
        before_files = files()
        p, ws = one_connection(mode)
        ws.initialize()
        mine = published(before_files, timeout=1.0 if mode == "inetd" else 3.0)
        before = pd.pids()
        n = group_cmds(lambda name, argv: start(ws, name, argv))
        pids = pd.new_since(before, n)
        helper = spawn_helper_of(p.pid)
        p.kill()
        p.wait()
        t.ok(helper is not None and wait_dead([helper], 3),
             "%s: SIGKILL to execd, and its spawn helper ends with it" % mode)
        t.ok(len(pids) == n and wait_dead(pids, 3),
             "%s: SIGKILL to execd, and its unsandboxed commands die (the command, its "
             "child, a child it left in its group)" % mode,
             "pids %s, alive %s" % (pids, [x for x in pids if pid_alive(x)]))
        reap_later(pids)
        if mode == "inetd":
            # fd 0 and 1 are two descriptors: nothing to hand over, nothing published
            t.eq(mine, [], "%s: a session on fd 0/1 publishes nothing in the state "
                 "directory" % mode)
            continue
        t.ok(is_session_pair(mine) and files() == sorted(before_files + mine),
             "%s: its session socket and owner file stay until the next start" % mode,
             (mine, files()))
        # the next start of any execd sharing the directory removes them
        e = Execd(ARGS)
        t.eq(files(), before_files, "%s: the next execd's start-up removes them" % mode)
        e.close()

    # ------------------------------------------------- --stdio, on pipes
    e = Execd(ARGS)
    before = pd.pids()
    n = group_cmds(lambda name, argv: e.start(name, argv, env={"PATH": "/usr/bin:/bin"}))
    n += 1
    e.start("pty", pd.sh_reporting("sleep 600"), tty=True, env={"PATH": "/usr/bin:/bin"})
    ppids = pd.new_since(before, n)
    before = pd.pids()
    e.start("daemon", orphan_cmd(), env={"PATH": "/usr/bin:/bin"})
    daemons = pd.new_since(before, 1)
    # a sandbox with namespaces (restricted file system): its command is pid 2 of
    # its own pid namespace, so it is found by a tag in its environment
    tag = "FAULT_ORPHANS_BOXED=%d" % os.getpid()
    r2 = e.start("boxed", ["sleep", "600"],
                 env={"PATH": "/usr/bin:/bin", tag.split("=")[0]: tag.split("=")[1]},
                 sandbox={"permissions": {"type": "managed", "network": "restricted",
                                          "file_system": {"type": "restricted", "entries": [
                                              {"path": {"type": "special",
                                                        "value": {"kind": "root"}},
                                               "access": "read"}]}},
                          "windowsSandboxLevel": "disabled", "cwd": "file:///tmp"})
    boxed = []
    end = time.time() + 5
    while "result" in r2 and not boxed and time.time() < end:
        for d in os.listdir("/proc"):
            try:
                with open("/proc/%s/environ" % d, "rb") as fh:
                    if tag.encode() in fh.read().split(b"\0"):
                        boxed.append(int(d))
            except (OSError, ValueError):
                pass
        time.sleep(0.02)
    helper = spawn_helper_of(e.pid)
    e.kill()
    t.ok(helper is not None and wait_dead([helper], 3),
         "stdio: SIGKILL to execd, and its spawn helper ends with it")
    t.ok(len(ppids) == n and wait_dead(ppids, 3),
         "stdio: SIGKILL to execd, and its unsandboxed commands die (the command, its "
         "child, a child it left in its group, a command on a PTY)",
         "pids %s, alive %s" % (ppids, [x for x in ppids if pid_alive(x)]))
    print("# stdio: a daemon that left its group (setsid), left to init: %s" %
          [x for x in daemons if pid_alive(x)])
    reap_later(ppids + daemons)
    t.eq(files(), [], "stdio: a session on pipes leaves nothing in the state directory")
    t.ok("result" in r2 and bool(boxed) and wait_dead(boxed, 3),
         "stdio: a sandboxed process dies with its SIGKILLed execd (its pid namespace "
         "goes with execd's child, PR_SET_PDEATHSIG)", (r2, boxed))
    reap_later(boxed)

    # -------------- a live detached session survives another instance's start-up clean-up
    L = FaultListener(ARGS)
    a = RawWS(L.host, L.port, L.token)
    sid = a.initialize()["result"]["sessionId"]
    live = published([])
    before = pd.pids()
    start(a, "keep", pd.sh_reporting("sleep 600"))
    kept = pd.new_since(before, 1)
    a.close()           # detached: waits for a resume for --resume-ttl-ms
    time.sleep(0.3)
    # stale entries of three kinds: an owner pid that is dead, no owner file, an owner alone
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = []
    for i, owner in enumerate((dead.pid, None, dead.pid)):
        base = os.path.join(state, "session-%032x" % (0xdead0 + i))
        if i < 2:
            s = socket.socket(socket.AF_UNIX)
            s.bind(base + ".sock")
            s.close()           # bound, never listening: as a killed instance leaves it
            stale.append(os.path.basename(base) + ".sock")
        if owner is not None:
            with open(base + ".pid", "w") as f:
                f.write("%d\n" % owner)
            stale.append(os.path.basename(base) + ".pid")
    # a socket someone listens on, without an owner file: left alone
    foreign = socket.socket(socket.AF_UNIX)
    fpath = os.path.join(state, "session-%032x.sock" % 0xf00)
    foreign.bind(fpath)
    foreign.listen(1)
    t.eq(files(), sorted(live + stale + [os.path.basename(fpath)]),
         "clean-up: a detached session and stale entries in the state directory")
    e = Execd(ARGS)
    t.eq(files(), sorted(live + [os.path.basename(fpath)]),
         "clean-up: another instance's start-up removes the stale entries only, never a "
         "socket something listens on")
    e.close()
    foreign.close()
    os.unlink(fpath)
    b = RawWS(L.host, L.port, L.token)
    r = b.call("initialize", {"clientName": "back", "resumeSessionId": sid})
    t.eq(r.get("result", {}).get("sessionId"), sid, "clean-up: the detached session is "
         "resumed afterwards")
    t.ok(all(pid_alive(p) for p in kept) and len(kept) == 1, "clean-up: its process still runs")
    # closing b detaches the session again, for --resume-ttl-ms (60 s): its instance
    # outlives the listener that long unless this test ends it
    instances = descendants(L.p.pid)
    b.close()
    L.stop()
    wait_dead(kept, 5)
    reap_later(kept + instances)
finally:
    for p in leftovers:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    pd.cleanup()
    for f in os.listdir(state):
        os.unlink(os.path.join(state, f))
    os.rmdir(state)
t.done()
