#!/usr/bin/python3
"""environmentConfig/read never opens a layer that is not a regular file.

A layer may be a link a sandboxed command planted (or an operator's
mistake) to a device, and opening some devices acts by itself: a watchdog
arms, a tape rewinds.  execd looks at the file through an O_PATH
descriptor and reads only a regular one, through that descriptor.  Seen
here with inotify: IN_OPEN fires on a real open, never on an O_PATH one.
The device is a null device the test makes (mknod: root only).  TAP.
"""
import ctypes
import os
import select
import shutil
import struct
import tempfile

from execd_client import Execd, skip_all, tap

IN_OPEN = 0x20
if os.geteuid() != 0:
    skip_all("mknod needs root")
t = tap(60)
libc = ctypes.CDLL(None, use_errno=True)
tmp = tempfile.mkdtemp(prefix="envconfig-device.", dir="/var/tmp")
try:
    home = os.path.join(tmp, "home")
    os.mkdir(home)
    dev = os.path.join(tmp, "dev0")
    os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))     # a character device: null
    os.symlink(dev, os.path.join(home, "config.toml"))
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    ifd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    t.ok(ifd >= 0, "inotify")
    for p in (dev, fifo):
        t.ok(libc.inotify_add_watch(ifd, p.encode(), IN_OPEN) >= 0, "watching %s" % p)

    def opened():
        if not select.select([ifd], [], [], 0.5)[0]:
            return 0
        data = os.read(ifd, 4096)
        return len(data) // struct.calcsize("iIII")

    for target, what in ((dev, "a character device"), (fifo, "a FIFO")):
        os.unlink(os.path.join(home, "config.toml"))
        os.symlink(target, os.path.join(home, "config.toml"))
        c = Execd(env=dict(os.environ, CODEX_HOME=home, HOME=tmp), extra_args=[
            "--state-dir", tempfile.mkdtemp(dir=tmp)])
        r = c.call("environmentConfig/read", {"cwd": "file://" + tmp, "configPaths": [["a"]],
                                              "requirementsPaths": []})
        msg = (r.get("error") or {}).get("message", "")
        t.ok(msg.endswith("path `%s/config.toml` is not a file" % home),
             "a user layer that is %s: refused as not a file" % what, msg)
        t.eq(opened(), 0, "... and never opened (no IN_OPEN)")
        t.eq(c.close(), 0, "execd exits 0")
    os.close(ifd)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
