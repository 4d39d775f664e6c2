#!/usr/bin/python3
"""A full disk during fs/writeFile and fs/writeBlock.

execd runs in a mount namespace of its own with a 256 KiB tmpfs: a write
that does not fit fails with ENOSPC, the file it was replacing keeps its
old content, no temporary file is left behind, and execd goes on serving.
"""
import base64
import os
import shutil
import subprocess
import tempfile

from execd_client import Execd, EXECD, tap, skip_all

t = tap(timeout=60)
d = tempfile.mkdtemp(prefix="execd-disk.")
inner = ("mount -t tmpfs -o size=256k,mode=0755 tmpfs '%s' && exec '%s' --stdio" % (d, EXECD))
argv = None
for pre in (["unshare", "--mount", "--propagation", "private"],
            ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]):
    if subprocess.run(pre + ["sh", "-c", "mount -t tmpfs tmpfs '%s' && umount '%s'" % (d, d)],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
        argv = pre + ["sh", "-c", inner]
        break
if argv is None:
    os.rmdir(d)
    skip_all("cannot make a private tmpfs (unshare --mount)")

c = Execd(argv=argv)
uri = "file://" + d


def write(name, data):
    return c.call("fs/writeFile", {"path": "%s/%s" % (uri, name),
                                   "dataBase64": base64.b64encode(data).decode()})


try:
    r = write("f", b"old" * 20000)
    if r.get("error", {}).get("code") == -32601:
        skip_all("no fs/writeFile in this execd")
    t.ok("result" in r, "a 60 KB file fits", r)
    r = write("f", b"N" * (400 << 10))
    t.ok(r.get("error", {}).get("message") == "No space left on device (os error 28)",
         "a 400 KB rewrite of it does not: ENOSPC", r)
    r = c.call("fs/readFile", {"path": uri + "/f"})
    t.ok(base64.b64decode(r.get("result", {}).get("dataBase64", "")) == b"old" * 20000,
         "the file keeps its old content")
    r = c.call("fs/readDirectory", {"path": uri})
    names = sorted(e["fileName"] for e in r.get("result", {}).get("entries", []))
    t.eq(names, ["f"], "no temporary file is left behind")

    # fill it up, then every kind of write fails cleanly
    n = 0
    while "result" in write("fill%d" % n, b"z" * (32 << 10)):
        n += 1
    r = write("new", b"x" * 8192)
    t.ok("error" in r and "os error 28" in r["error"]["message"],
         "on a full disk a new file is refused with ENOSPC", r)
    r = c.call("fs/open", {"handleId": "h", "path": uri + "/blk", "mode": "replace"})
    if "result" in r:
        r = c.call("fs/writeBlock", {"handleId": "h", "offset": 0,
                                     "chunk": base64.b64encode(b"y" * (64 << 10)).decode()})
        t.ok("error" in r and "os error 28" in r["error"]["message"],
             "fs/writeBlock on a full disk: ENOSPC", r)
        t.ok("result" in c.call("fs/close", {"handleId": "h"}), "the handle still closes")
    else:
        t.ok("error" in r and "os error 28" in r["error"]["message"],
             "fs/open replace on a full disk: ENOSPC", r)
    c.call("fs/remove", {"path": uri + "/fill0"})
    r = write("after", b"ok")
    t.ok("result" in r, "with room again, writes succeed", r)
    r = c.start("p", ["sh", "-c", "echo alive"], env={"PATH": "/usr/bin:/bin"})
    out, code, _ = c.collect("p")
    t.ok(out.get("stdout") == b"alive\n" and code == 0, "and processes run as ever")
    t.eq(c.close(), 0, "execd exits cleanly")
finally:
    c.kill()
    shutil.rmtree(d, ignore_errors=True)
t.done()
