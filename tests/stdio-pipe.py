#!/usr/bin/python3
"""execd's stdout pipe under bulk output: with megabytes queued (a 4 MiB
fs/readFile answer the client does not read yet) the pipe grows to 1 MiB,
and once the client has taken everything it goes back to its size, so an
idle instance holds no more of the user's pipe allowance than the kernel
gave it.  The pipe is looked at from the client's end (F_GETPIPE_SZ)."""

import fcntl
import os
import tempfile
import time

from execd_client import Execd, tap

F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
t = tap(60)


def big_pipes_allowed():
    r, w = os.pipe()
    try:
        return fcntl.fcntl(r, F_SETPIPE_SZ, 1 << 20) >= 1 << 20
    except OSError:
        return False
    finally:
        os.close(r)
        os.close(w)


d = tempfile.mkdtemp(prefix="stdio-pipe.")
path = os.path.join(d, "four.bin")
with open(path, "wb") as f:
    f.write(os.urandom(4 << 20))
c = Execd()
out = c.p.stdout.fileno()
fcntl.fcntl(out, F_SETPIPE_SZ, 64 << 10)      # the test client grows its pipes: undo
small = fcntl.fcntl(out, F_GETPIPE_SZ)
rid = c.request("fs/readFile", {"path": "file://" + path})
time.sleep(0.5)                                 # execd writes until the pipe is full
grown = fcntl.fcntl(out, F_GETPIPE_SZ)
if big_pipes_allowed():
    t.eq(grown, 1 << 20, "4 MiB queued for an unread pipe: it grows to 1 MiB (from %d)" % small)
else:
    t.skip("4 MiB queued: the pipe grows", "1 MiB pipes refused to this user now")
r = c.wait_response(rid, timeout=20)
t.ok("result" in r and len(r["result"].get("dataBase64", "")) == ((4 << 20) + 2) // 3 * 4,
     "the answer arrives whole", {k: (v if k != "result" else "...") for k, v in r.items()})
end = time.time() + 5
while time.time() < end and fcntl.fcntl(out, F_GETPIPE_SZ) != small:
    time.sleep(0.02)
t.eq(fcntl.fcntl(out, F_GETPIPE_SZ), small, "once the client took it all, the pipe is %d bytes again"
     % small)
r = c.call("fs/getMetadata", {"path": "file://" + path})
t.ok("result" in r, "the instance still answers")
t.eq(c.close(), 0, "execd exits 0")
os.unlink(path)
os.rmdir(d)
t.done()
