#!/usr/bin/python3
"""Generated differential test of the TOML reader's errors: random TOML
documents (tests/lib/gendiff_gen.py's, every one spoiled by its mutate())
read by execd and by the reference as the user's config.toml (short
"file:line:col: words" form) and, every other case, as a trusted project's
(the long form: the line and a caret under the span), through
environmentConfig/read.  The answers must be the same.  Denser than
tests/gendiff.py for the reader: there one case in ten has a spoiled file.

Seeded and repeatable:
  GEN_CASES  generated documents (default 300; 60 in a sanitizer build)
  GEN_SEED   the seed (default 34); GEN_ONLY=n[,m] runs those alone
  GEN_SHOW   differences printed (default 5)
  EXECD, CODEX_REF as in tests/gendiff.py; without the reference: SKIP
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile

import gendiff_gen
from execd_client import find_ref

TOP = os.environ.get("top_builddir", ".")
EXECD = os.path.abspath(os.environ.get("EXECD") or os.path.join(TOP, "src", "execd"))
SAN = bool(os.environ.get("EXECD_SANITIZERS", "").strip())
NCASES = int(os.environ.get("GEN_CASES") or (60 if SAN else 300))
SEED = int(os.environ.get("GEN_SEED") or 34)
ONLY = os.environ.get("GEN_ONLY")
BATCH = 500


def load_server_class():
    """tests/gendiff.py's Server (one request at a time over stdio)."""
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("gendiff", os.path.join(here, "gendiff.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Server


def doc(n):
    r = random.Random("toml:%d:%d" % (SEED, n))
    text = gendiff_gen.Toml(r).doc()
    return gendiff_gen.mutate(r, text), n % 2 == 1


def main():
    ref = find_ref()
    if ref is None or not os.access(EXECD, os.X_OK):
        print("1..0 # SKIP reference codex or execd not found")
        return 0
    Server = load_server_class()
    numbers = [int(x) for x in ONLY.split(",")] if ONLY else list(range(NCASES))
    signal.alarm(int(os.environ.get("GEN_ALARM") or max(300, len(numbers) // 20)))
    root = tempfile.mkdtemp(prefix="toml-gen.", dir=os.path.abspath(TOP))
    os.chmod(root, 0o755)
    for d in ("home/.codex", "p/.codex", "p/.git"):
        os.makedirs(os.path.join(root, d))
    with open(os.path.join(root, "p/.git/HEAD"), "w") as f:
        f.write("ref: x\n")
    os.mkdir(os.path.join(root, "state"), 0o700)
    user = os.path.join(root, "home/.codex/config.toml")
    trust = '[projects."%s/p"]\ntrust_level = "trusted"\n' % root
    env = {"PATH": "/usr/bin:/bin", "HOME": root + "/home", "CODEX_HOME": root + "/home/.codex"}
    cmds = [[ref, "exec-server", "--listen", "stdio"],
            [EXECD, "--stdio", "--kill-grace-ms", "0", "--state-dir", root + "/state"]]
    pair, served, diffs, sanitizer = None, 0, [], []
    print("1..%d" % len(numbers))
    print("# seed %d, %d documents" % (SEED, len(numbers)))
    try:
        for t, n in enumerate(numbers, 1):
            if pair is None or served >= BATCH:
                if pair is not None:
                    pair[0].close()
                    sanitizer += pair[1].close()
                pair, served = [Server(c, env, root) for c in cmds], 0
            served += 1
            text, project = doc(n)
            with open(user, "w") as f:
                f.write(trust if project else text)
            with open(os.path.join(root, "p/.codex/config.toml"), "w") as f:
                f.write(text if project else "")
            params = {"cwd": "file://%s/%s" % (root, "p" if project else ""), "configPaths": [["a"]],
                      "requirementsPaths": []}
            got = [json.loads(json.dumps(s.ask("environmentConfig/read", params)).replace(root, "@R"))
                   for s in pair]
            ok = got[0] is not None and got[0] == got[1]
            print("%s %d - document %d (%s)" % ("ok" if ok else "not ok", t, n,
                                                "project" if project else "user"))
            if not ok:
                diffs.append((n, text, got))
                sanitizer += pair[1].close()
                pair[0].close()
                pair = None
            sys.stdout.flush()
    finally:
        if pair is not None:
            pair[0].close()
            sanitizer += pair[1].close()
        shutil.rmtree(root, ignore_errors=True)
    for n, text, got in diffs[:int(os.environ.get("GEN_SHOW") or 5)]:
        print("# document %d (GEN_SEED=%d GEN_ONLY=%d): %s" % (n, SEED, n, json.dumps(text)[:800]))
        print("#   reference: %s" % json.dumps(got[0])[:800])
        print("#   execd:     %s" % json.dumps(got[1])[:800])
    for l in sanitizer[:10]:
        print("# execd: %s" % l)
    print("# seed %d: %d documents, %d differ" % (SEED, len(numbers), len(diffs)))
    return 1 if diffs or sanitizer else 0


if __name__ == "__main__":
    sys.exit(main())
