#!/usr/bin/python3
"""What a sandbox adds to process/start: /bin/true from process/start to
process/closed, unsandboxed and under each kind of sandbox, for execd and for
the reference `codex exec-server` (which wraps the command in its bubblewrap
helper).  Run with /usr/bin/python3; environment as tests/bench/bench.py (EXECD,
CODEX_REF, top_builddir), and EXECD_BEFORE: another execd binary (an older
build) measured beside it, in its own column.  Every round runs each server's
profiles in turn, so that drift and load hit all columns alike.  Options:
--quick, --markdown.
"""
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Server, find_execd, find_ref, start_params  # noqa: E402


def profiles(work):
    w = os.path.join(work, "w")
    d = os.path.join(work, "d")
    os.makedirs(os.path.join(w, ".git"), exist_ok=True)
    os.makedirs(d, exist_ok=True)
    root = {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}
    wr = {"path": {"type": "path", "path": "file://" + w}, "access": "write"}
    deny = {"path": {"type": "path", "path": "file://" + d}, "access": "deny"}

    def managed(entries, network="restricted"):
        return {"permissions": {"type": "managed", "network": network,
                                "file_system": {"type": "restricted", "entries": entries}},
                "windowsSandboxLevel": "disabled", "cwd": "file://" + w}
    ext = {"permissions": {"type": "external", "network": "restricted"},
           "windowsSandboxLevel": "disabled", "cwd": "file://" + w}
    return [
        ("unsandboxed", None, {}),
        ("network off, filesystem unrestricted", ext, {}),
        ("read all, write one root (+ .git read-only)", managed([root, wr]), {}),
        ("... and a denied directory", managed([root, wr, deny]), {}),
        ("... and a managed network", managed([root, wr, deny]),
         {"enforceManagedNetwork": True, "managedNetwork": {"loopbackPorts": [9],
                                                            "allowLocalBinding": False}}),
    ]


def one(c, server, pid, sandbox, extra):
    """ms from process/start to process/closed of /bin/true"""
    params = start_params(pid, ["/bin/true"], server.cwd)
    # the reference's proxy bridge wants a proxy variable to route
    params["env"]["HTTP_PROXY"] = "http://127.0.0.1:9"
    if sandbox is not None:
        params["sandbox"] = sandbox
    params.update(extra)
    t = time.monotonic()
    c.nid += 1
    c.send({"id": c.nid, "method": "process/start", "params": params})
    deadline = time.monotonic() + 20
    needle = b'"processId":"%s"' % pid.encode()
    while True:
        line = c.readline(deadline)
        if b'"process/closed"' in line and needle in line:
            return (time.monotonic() - t) * 1000
        if b'"error"' in line and b'"id":%d,' % c.nid in line:
            raise RuntimeError(line.decode())


def measure(servers, profs, reps):
    """Median per server and profile; servers and profiles take turns each round."""
    conns, samples = [], []
    try:
        for s in servers:
            c = s.spawn()
            conns.append(c)
            c.initialize()
            samples.append([[] for _ in profs])
        for i in range(reps + 2):
            for k, (s, c) in enumerate(zip(servers, conns)):
                if c is None:
                    continue
                for j, (_, sandbox, extra) in enumerate(profs):
                    try:
                        v = one(c, s, "t%d-%d" % (i, j), sandbox, extra)
                    except Exception as e:
                        print("# %s: %s" % (s.name, e), file=sys.stderr)
                        conns[k] = None
                        c.close()
                        samples[k] = None
                        break
                    if i >= 2:      # warm-up rounds
                        samples[k][j].append(v)
    finally:
        for c in conns:
            if c is not None:
                c.close()
    return [None if x is None else [statistics.median(v) for v in x] for x in samples]


def main(argv):
    quick = "--quick" in argv
    reps = 5 if quick else 40
    execd, ref = find_execd(), find_ref()
    before = os.environ.get("EXECD_BEFORE")
    work = tempfile.mkdtemp(prefix="execd-bench-sbx.")
    home = tempfile.mkdtemp(prefix="codexhome.", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    env = {k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "CODEX_HOME")}
    env["CODEX_HOME"] = home
    servers = [("execd", Server("execd", [execd, "--stdio"], env, work) if execd else None)]
    if before:
        servers.append(("execd before", Server("execd before", [before, "--stdio"], env, work)))
    servers.append(("reference", Server("reference", [ref, "exec-server", "--listen", "stdio"],
                                        env, work) if ref else None))
    profs = profiles(work)
    try:
        running = [s for _, s in servers if s is not None]
        medians = iter(measure(running, profs, reps))
        cols = [next(medians) if s is not None else None for _, s in servers]
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    rows = []
    for j, (name, sandbox, _) in enumerate(profs):
        row = [name]
        for col in cols:
            if col is None:
                row.append("n/a")
            elif sandbox is None:
                row.append("%.2f" % col[j])
            else:
                row.append("%.2f (%+.2f)" % (col[j], col[j] - col[0]))
        rows.append(row)
    head = ["process/start /bin/true -> closed, ms (added)"] + [k for k, _ in servers]
    if "--markdown" in argv:
        print("| " + " | ".join(head) + " |")
        print("|---|" + "---:|" * len(servers))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
        for r in [head] + rows:
            print(" | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)))
    print("\nmedians of %d rounds, profiles interleaved%s" % (reps, " (quick)" if quick else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
