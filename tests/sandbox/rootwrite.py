#!/usr/bin/python3
"""What the capability flags linuxRootWritePreservesDevices and
linuxApprovedRootWritePreservesRestrictions promise, checked on execd and,
when it is installed, on the reference (each answer compared with its).

  - linuxRootWritePreservesDevices: with "/" writable (a path entry, or the
    special root with a deny entry, both of which build a view of the
    filesystem), /dev/null, /dev/zero and /dev/urandom stay usable.
  - linuxApprovedRootWritePreservesRestrictions: with "/" writable, what
    the policy restricts stays restricted: a writable root's .git, .codex
    and .agents stay read-only, a deny entry stays denied, and the devices
    stay usable.

Both flags must be advertised by initialize.  Output is TAP.
  EXECD, CODEX_REF   as tests/envconfig.py
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import envconfig as ec  # noqa: E402

FLAGS = ("linuxRootWritePreservesDevices", "linuxApprovedRootWritePreservesRestrictions")
DEVICES = ["write:/dev/null", "write:/dev/zero", "write:/dev/urandom", "read:/dev/zero",
           "read:/dev/urandom"]

SCRIPT = r'''
for spec in "$@"; do
  op=${spec%%:*} f=${spec#*:}
  case $op in
  write) (printf x > "$f") 2>/dev/null && echo "$spec ok" || echo "$spec denied" ;;
  read) (head -c1 "$f" > /dev/null) 2>/dev/null && echo "$spec ok" || echo "$spec denied" ;;
  esac
done
'''


def start(cmd, env, cwd):
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True)
    return p


def session(cmd, env, cwd, runs):
    """(capabilities, [output of each run]) from one server."""
    msgs = [{"id": 0, "method": "initialize", "params": {"clientName": "rootwrite"}},
            {"method": "initialized"}]
    for i, (sandbox, ops) in enumerate(runs):
        msgs.append({"id": i + 1, "method": "process/start", "params": {
            "processId": "p%d" % i, "argv": ["/bin/sh", "-c", SCRIPT, "sh"] + ops,
            "cwd": "file://" + cwd, "env": {"PATH": "/usr/bin:/bin"}, "tty": False,
            "sandbox": sandbox}})
    p = start(cmd, env, cwd)
    p.stdin.write("".join(json.dumps(m) + "\n" for m in msgs).encode())
    p.stdin.flush()
    caps, out, closed = None, {}, set()
    try:
        while len(closed) < len(runs):
            line = p.stdout.readline()
            if not line:
                break
            o = json.loads(line)
            if o.get("id") == 0:
                caps = o.get("result", {}).get("environmentInfo", {}).get("capabilities")
            elif "id" in o and "error" in o:
                out["p%d" % (o["id"] - 1)] = "error: " + o["error"]["message"]
                closed.add("p%d" % (o["id"] - 1))
            elif o.get("method") == "process/output":
                pid = o["params"]["processId"]
                out[pid] = out.get(pid, "") + base64.b64decode(o["params"]["chunk"]).decode()
            elif o.get("method") == "process/closed":
                closed.add(o["params"]["processId"])
    finally:
        p.kill()
        p.wait()
    return caps, [out.get("p%d" % i) for i in range(len(runs))]


def main():
    ref, execd = ec.find_ref(), os.path.join(ec.BUILD, "src", "execd")
    if not os.access(execd, os.X_OK):
        print("1..0 # SKIP execd not found")
        return 0
    scratch = tempfile.mkdtemp(prefix="rootwrite.", dir=os.path.abspath(ec.BUILD))
    os.chmod(scratch, 0o755)
    ws = os.path.join(scratch, "ws")
    for d in (".git", ".codex", ".agents", "den", "src"):
        os.makedirs(os.path.join(ws, d))
    home = os.path.join(scratch, "codex-home")
    os.makedirs(home)
    env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "CODEX_HOME": home}

    def sb(entries):
        return {"permissions": {"type": "managed", "network": "restricted",
                                "file_system": {"type": "restricted", "entries": entries}},
                "windowsSandboxLevel": "disabled", "cwd": "file://" + ws}

    def ent(p, access):
        return {"path": {"type": "path", "path": "file://" + p}, "access": access}
    root_w = {"path": {"type": "special", "value": {"kind": "root"}}, "access": "write"}
    kept = ["write:%s/%s/x" % (ws, d) for d in (".git", ".codex", ".agents", "den")]
    runs = [  # (name, flag, sandbox, ops, the ops that must be denied)
        ("path / writable", 0, sb([ent("/", "write")]), DEVICES, []),
        ("root writable, a deny entry", 0, sb([root_w, ent(ws + "/den", "deny")]), DEVICES, []),
        ("/ and a workspace writable", 1, sb([ent("/", "write"), ent(ws, "write"),
                                              ent(ws + "/den", "deny")]),
         DEVICES + kept + ["write:%s/src/x" % ws, "write:%s/y" % scratch], kept),
        ("root and a workspace writable", 1, sb([root_w, ent(ws, "write"),
                                                 ent(ws + "/den", "deny")]),
         DEVICES + ["write:%s/den/x" % ws, "write:%s/src/x" % ws], ["write:%s/den/x" % ws]),
    ]
    print("1..%d" % (2 + 2 * len(runs)))
    # its own state directory: the "/" it makes writable is recorded there, and
    # from then on execd leaves out every project layer changed (execd(8) SECURITY)
    state = os.path.join(scratch, "state")
    caps, got = session([execd, "--stdio", "--kill-grace-ms", "0", "--state-dir", state], env, ws,
                        [(r[2], r[3]) for r in runs])
    want = None
    if ref is not None:
        _, want = session([ref, "exec-server", "--listen", "stdio"], env, ws,
                          [(r[2], r[3]) for r in runs])
    n = 0
    failed = 0
    for flag in FLAGS:
        n += 1
        ok = caps is not None and caps.get(flag) is True
        failed += not ok
        print("%s %d - initialize advertises %s" % ("ok" if ok else "not ok", n, flag))
    for i, (name, flag, _, ops, denied) in enumerate(runs):
        expect = "".join("%s %s\n" % (op, "denied" if op in denied else "ok") for op in ops)
        n += 1
        ok = got[i] == expect
        failed += not ok
        if not ok:
            print("# want: %r\n# execd: %r" % (expect, got[i]))
        print("%s %d - %s: %s" % ("ok" if ok else "not ok", n, FLAGS[flag], name))
        n += 1
        if want is None:
            print("ok %d - %s: as the reference # SKIP reference not installed" % (n, name))
            continue
        ok = got[i] == want[i]
        failed += not ok
        if not ok:
            print("# reference: %r\n# execd:     %r" % (want[i], got[i]))
        print("%s %d - %s: as the reference" % ("ok" if ok else "not ok", n, name))
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
