"""fs/watchMissing and fs/missingChanged."""
import os
import shutil
import tempfile
import time

from execd_client import Execd, tap

t = tap(timeout=60)
d = tempfile.mkdtemp(prefix="execd-watch.")
u = lambda p: "file://" + os.path.join(d, p)
c = Execd()
t.eq(c.init_result["environmentInfo"]["capabilities"].get("fsWatchMissing"), True,
     "initialize advertises fsWatchMissing")


def watch(wid, paths):
    return c.call("fs/watchMissing", {"watchId": wid, "missing": paths})


def quiet(timeout):
    """No fs/missingChanged at all for timeout seconds (of any watch)."""
    try:
        c.wait_notification("fs/missingChanged", timeout=timeout, consume=False)
        return False
    except TimeoutError:
        return True


def fired(wid, timeout=2.0):
    try:
        c.wait_notification("fs/missingChanged", lambda p: p["watchId"] == wid, timeout=timeout)
        return True
    except TimeoutError:
        return False


t.eq(watch(5, [u("a/b.txt")]).get("result"), {"watching": True}, "a missing path is watched")
open(os.path.join(d, "unrelated"), "w").close()
t.ok(not fired(5, 0.5), "an unrelated change does not fire")
os.mkdir(os.path.join(d, "a"))
t.ok(fired(5), "creating an intermediate directory fires")
t.ok(not fired(5, 0.3), "and fires once")
t.eq(watch(5, [u("a/c")]).get("result"), {"watching": False}, "a watchId not above the last is stale")
t.eq(watch(6, []).get("result"), {"watching": False}, "an empty list is not watched")
t.eq(watch(7, [u("a")]).get("result"), {"watching": False}, "a path that exists is not watched")
t.eq(watch(8, [u("a/x"), u("deep/er/y")]).get("result"), {"watching": True}, "several paths")
t.eq(watch(9, [u("a/z")]).get("result"), {"watching": True}, "a newer watch replaces the older")
open(os.path.join(d, "a", "x"), "w").close()
# a/x is watched by 8 only: nothing may fire, neither as 8 nor as 9 (a newer watch
# that kept the older one's paths would fire under its own id)
t.ok(quiet(0.5), "the replaced watch no longer fires", c.notifications)
os.rename(os.path.join(d, "a", "x"), os.path.join(d, "a", "z"))
t.ok(fired(9), "a path moved into place fires")
# events come in order: anything a/x had made fire came before this one
t.ok(not [n for n in c.notifications if n["method"] == "fs/missingChanged"],
     "and nothing fired before it", c.notifications)
# as the reference: nothing can appear below a file, so that is no watch
open(os.path.join(d, "plainfile"), "w").close()
t.eq(watch(12, [u("plainfile/x")]).get("result"), {"watching": False},
     "a path below a file is not watched")
t.eq(watch(13, [u("plainfile/x/y"), u("q/r")]).get("result"), {"watching": False},
     "nor with other paths beside it")
r = watch(14, ["/tmp/x"])
t.eq(r.get("error"), {"code": -32602, "message": "invalid URI: relative URL without a base"}, "a bare path")
r = c.call("fs/watchMissing", {"watchId": -1, "missing": []})
t.eq(r.get("error"), {"code": -32602, "message": "invalid number"}, "a negative watchId")
r = c.call("fs/watchMissing", {"missing": []})
t.eq(r.get("error"), {"code": -32602, "message": "missing field `watchId`"}, "no watchId")
r = c.call("fs/watchMissing", {"watchId": 15, "missing": "x"})
t.eq(r.get("error"), {"code": -32602, "message": 'invalid type: string "x", expected a sequence'},
     "missing must be a list")

# With a sandbox, a path the sandbox denies (or does not show) is refused as
# every other fs method refuses it, whether or not something is there: no
# answer and no later fs/missingChanged may tell what exists in a denied place.
s = os.path.join(d, "sb")
os.makedirs(os.path.join(s, "ws", "den", "sub"))
os.makedirs(os.path.join(s, "out"))
open(os.path.join(s, "ws", "den", "there"), "w").close()
open(os.path.join(s, "out", "there"), "w").close()
ent = lambda p, a: {"path": {"type": "path", "path": "file://" + os.path.join(s, p)}, "access": a}
pol = {"permissions": {"type": "managed", "network": "restricted", "file_system": {
    "type": "restricted", "entries": [ent("ws", "write"), ent("ws/den", "deny")]}},
    "windowsSandboxLevel": "disabled"}
sw = lambda wid, p: c.call("fs/watchMissing", {"watchId": wid, "missing": [u("sb/" + p)],
                                               "sandbox": pol})
denied = {"code": -32600, "message": "Permission denied (os error 13)"}
absent = {"code": -32004, "message": "No such file or directory (os error 2)"}
for wid, p, want in ((20, "ws/den/there", denied), (21, "ws/den/none", denied),
                     (22, "ws/den/sub/x", denied), (23, "out/there", absent),
                     (24, "out/none", absent)):
    r = sw(wid, p)
    t.eq(r.get("error"), want, "sandbox: %s refused as the other fs methods do" % p)
r = c.call("fs/getMetadata", {"path": u("sb/ws/den/none"), "sandbox": pol})
t.eq(r.get("error"), denied, "sandbox: (fs/getMetadata says the same)")
open(os.path.join(s, "ws", "den", "none"), "w").close()
os.mkdir(os.path.join(s, "ws", "den", "sub", "x"))
open(os.path.join(s, "out", "none"), "w").close()
t.ok(quiet(0.5), "sandbox: the host creating denied paths tells nothing", c.notifications)
t.eq(sw(25, "ws/free").get("result"), {"watching": True}, "sandbox: an allowed path is watched")
open(os.path.join(s, "ws", "free"), "w").close()
t.ok(fired(25), "sandbox: and fires")
r = c.call("fs/watchMissing", {"watchId": 26, "missing": [u("sb/ws/y")], "sandbox": {
    "permissions": {"type": "bogus"}, "windowsSandboxLevel": "disabled"}})
t.eq(r.get("error", {}).get("code"), -32602, "sandbox: a malformed sandbox fails the params")
t.eq(c.close(), 0, "execd exits 0")

c = Execd(init=False)
r = c.call("fs/watchMissing", {"watchId": 1, "missing": [u("q")]})
t.eq(r.get("error"), {"code": -32600, "message": "client must call initialize before using filesystem methods"},
     "gated like every filesystem method")
c.close()
shutil.rmtree(d)
t.done()
