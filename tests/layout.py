#!/usr/bin/env python3
"""The tree keeps the layering doc/architecture.md describes.

From the calls between the .c files of src/ and proxy/: no circle between
files, none between folders, and every call from one folder to another
points down the documented order (upward, only through callbacks the
upper layer registers).  Also prints
the module and folder graphs' sizes, so a change that adds an edge shows.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from tap import Tap  # noqa: E402

TOP = os.environ.get("top_srcdir") or os.path.join(os.path.dirname(__file__), "..")
# top to bottom, as doc/architecture.md lists them
ORDER = {
    "src": ["", "proc", "snapshot", "spawn", "discovery", "envconfig", "fs", "http", "sandbox",
            "session", "transport", "policy", "util", "netproxy", "rpc", "toml"],
    "proxy": ["", "front", "proto", "relay", "tls", "policy"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


DEFN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(", re.M)
CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def modules(daemon):
    """{module: set(modules it calls)} for the .c files of a daemon.

    A module is a .c file ('folder/name', folder '' on top).  It depends on
    another when it calls a function the other defines and exports (the
    OpenBSD style these files keep puts a definition's name at the start of
    a line, its type and `static` on the line before).
    """
    root = os.path.join(TOP, daemon)
    text, defined = {}, {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(".c"):
                rel = os.path.relpath(os.path.join(d, n), root)
                t = NOISE.sub(" ", open(os.path.join(d, n), encoding="utf-8",
                                        errors="replace").read())
                text[rel[:-2]] = t
    for mod, t in text.items():
        lines = t.split("\n")
        for i, line in enumerate(lines):
            m = DEFN.match(line)
            if m and i > 0 and "static" not in lines[i - 1].split():
                defined.setdefault(m.group(1), set()).add(mod)
    graph = {}
    for mod, t in text.items():
        graph[mod] = set()
        for name in set(CALL.findall(t)):
            owners = defined.get(name, set())
            if len(owners) == 1 and mod not in owners:
                graph[mod] |= owners
    return graph


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def folder(mod):
    return os.path.dirname(mod)


tap = Tap(60)
ok = tap.ok


for daemon, order in ORDER.items():
    g = modules(daemon)
    edges = sum(len(v) for v in g.values())
    print("# %s: %d modules, %d call edges" % (daemon, len(g), edges))
    mc = cycles(g)
    ok(not mc, "%s: no circle between modules" % daemon, mc)
    fg = {}
    for m, deps in g.items():
        for d in deps:
            if folder(m) != folder(d):
                fg.setdefault(folder(m), set()).add(folder(d))
    fc = cycles(fg)
    ok(not fc, "%s: no circle between folders" % daemon, fc)
    unknown = sorted({folder(m) for m in g} - set(order))
    ok(not unknown, "%s: every folder has its place in the documented order" % daemon, unknown)
    up = ["%s -> %s (%s)" % (m, d, folder(d) or "top")
          for m, deps in sorted(g.items()) for d in sorted(deps)
          if folder(m) in order and folder(d) in order and folder(m) != folder(d)
          and order.index(folder(d)) < order.index(folder(m))]
    ok(not up, "%s: calls between folders point down the order" % daemon, "\n".join(up))

def includes(path, seen=None):
    """Every header of the tree path includes, through the headers it includes."""
    seen = set() if seen is None else seen
    for i in INCLUDE.findall(open(path, encoding="utf-8").read()):
        for base in ("src", "lib"):
            h = os.path.join(TOP, base, i)
            if os.path.exists(h) and h not in seen:
                seen.add(h)
                includes(h, seen)
    return seen


# the process table answers no request: it reports through struct proc_events
# and never includes rpc.h (doc/architecture.md), not even through a header,
# nor calls into rpc/rpc.c through another file of proc/
TABLE = ["proc/proc", "proc/proc_out", "proc/proc_env", "proc/proc_spawn", "proc/proc_snapshot"]
RPC_H = os.path.join(TOP, "src", "rpc", "rpc.h")
g = modules("src")
bad = ["%s.c includes rpc/rpc.h" % m for m in TABLE
       if RPC_H in includes(os.path.join(TOP, "src", m + ".c"))]
for m in TABLE:
    reach, todo = set(), [m]
    while todo:             # through the table's own files only
        for d in g.get(todo.pop(), ()):
            if d not in reach:
                reach.add(d)
                if d in TABLE:
                    todo.append(d)
    if "rpc/rpc" in reach:
        bad.append("%s.c reaches rpc/rpc.c" % m)
ok(not bad, "src: the process table includes no rpc.h and calls no rpc_fail", "\n".join(bad))

# execd's options (the global `conf`, src/execd.h) are read on top only:
# main.c and serve.c hand each layer its part at init (struct proc_limits,
# struct transport_conf, http_req_init, sandbox_set_state_dir), so no file
# of a folder includes execd.h, even through a header, or reads conf
EXECD_H = os.path.join(TOP, "src", "execd.h")
CONF = re.compile(r"(?<![\w.>])conf\s*(?:\.|->)")
reads = []
for d, _, names in sorted(os.walk(os.path.join(TOP, "src"))):
    if os.path.samefile(d, os.path.join(TOP, "src")):
        continue
    for n_ in sorted(names):
        if not n_.endswith((".c", ".h")):
            continue
        f = os.path.join(d, n_)
        rel = os.path.relpath(f, os.path.join(TOP, "src"))
        if EXECD_H in includes(f):
            reads.append("%s includes execd.h" % rel)
        if CONF.search(NOISE.sub(" ", open(f, encoding="utf-8").read())):
            reads.append("%s reads conf" % rel)
ok(not reads, "src: no file in a folder includes execd.h or reads conf", "\n".join(reads))

# a folder's *_int.h is its own: another folder uses what its public
# headers declare (fs/fs_access.h, policy/fs_policy_decode.h, ...)
private = []
for daemon in ORDER:
    root = os.path.join(TOP, daemon)
    for d, _, names in sorted(os.walk(root)):
        for n_ in sorted(names):
            if not n_.endswith((".c", ".h")):
                continue
            own = os.path.relpath(d, root)
            for i in INCLUDE.findall(open(os.path.join(d, n_), encoding="utf-8").read()):
                if i.endswith("_int.h") and os.path.dirname(i) not in ("", own):
                    private.append("%s/%s includes %s" % (os.path.relpath(d, TOP), n_, i))
ok(not private, "no file includes another folder's *_int.h", "\n".join(private))

# relay/ names no protocol (doc/architecture.md): what it must know, proto/
# tells it through the handler table or a flag on the connection; it compares
# c->proto with no protocol (audit_event.c only turns it into the audit's word)
named = []
for n_ in sorted(os.listdir(os.path.join(TOP, "proxy", "relay"))):
    if n_.endswith(".c"):
        t = NOISE.sub(" ", open(os.path.join(TOP, "proxy", "relay", n_), encoding="utf-8").read())
        named += ["relay/%s: %s" % (n_, m) for m in re.findall(r"[!=]=\s*PROTO_\w+|PROTO_\w+\s*[!=]=", t)]
ok(not named, "proxy: relay/ tests no protocol", "\n".join(named))

libinc = []
for n_ in sorted(os.listdir(os.path.join(TOP, "lib"))):
    if n_.endswith((".c", ".h")):
        text = open(os.path.join(TOP, "lib", n_), encoding="utf-8").read()
        libinc += ["%s: %s" % (n_, i) for i in INCLUDE.findall(text)
                   if i != "config.h" and not os.path.exists(os.path.join(TOP, "lib", i))]
ok(not libinc, "lib/ includes nothing of src/ or proxy/", "\n".join(libinc))
tap.done()
