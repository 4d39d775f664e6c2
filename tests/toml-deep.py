#!/usr/bin/python3
"""A TOML document nested deeper than the reference's bound after a shape
error: execd answers the first error and stays up.

The reference's nesting count goes below zero when a bracket is skipped
after a missing key in an inline table (the skipped bracket's close counts,
its open did not); after many of those its bound allows any depth.  Its
reader then recursed until its stack ran out (0.171.0: no answer).  execd's
shape pass (src/toml/toml_shape.c) also stops at its own real nesting:
the answer is the first error, as the reference's would have been.  TAP.
"""
import os
import shutil
import tempfile
import time

from execd_client import Execd, tap

t = tap(120)
tmp = tempfile.mkdtemp(prefix="toml-deep.", dir="/var/tmp")
try:
    home = os.path.join(tmp, "home")
    os.mkdir(home)
    for n, what in ((200000, "300,000 arrays deep after 200,000 skipped brackets"),
                    (0, "300,000 arrays deep")):
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write("x = [" + " { [ ] }, " * n + "[" * 300000 + "]" * 300000 + "]\n")
        c = Execd(env=dict(os.environ, CODEX_HOME=home, HOME=tmp), extra_args=[
            "--state-dir", tempfile.mkdtemp(dir=tmp)])
        start = time.time()
        r = c.call("environmentConfig/read", {"cwd": "file://" + tmp, "configPaths": [["a"]],
                                              "requirementsPaths": []})
        msg = (r.get("error") or {}).get("message", "")
        want = ("config.toml:1:9: missing key for inline table element, expected key" if n else
                "config.toml:1:85: cannot recurse further; max recursion depth met")
        t.ok(msg.endswith(want), what + ": the first error", msg[-120:])
        t.ok(time.time() - start < 60, "... in bounded time")
        t.eq(c.close(), 0, "execd exits 0")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
