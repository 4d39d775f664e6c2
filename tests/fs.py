#!/usr/bin/python3
"""fs/* methods of execd: results and errors as the reference codex
exec-server 0.169.0 gives them, plus what execd promises beyond it
(atomic fs/writeFile, trees of any depth, never leaving the named tree,
in-process sandbox policies)."""

import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
import urllib.parse

from execd_client import Execd, b64, tap, unb64

# a guard against a hang: every wait ends when its answer comes, and on a
# loaded machine the big-file case alone took over 7 minutes
t = tap(timeout=1800)
# MiB through fs/writeBlock and back: under the sanitizers a quarter (their
# base64 and JSON are several times slower; the same offsets and checks)
BLOCKS = 256 if os.environ.get("EXECD_SANITIZERS") else 1024
ROOT = tempfile.mkdtemp(prefix="execd-fs.", dir="/tmp")
c = Execd()


def U(path):
    if isinstance(path, str):
        path = path.encode()
    return "file://" + urllib.parse.quote(path, safe=b"/")


def P(*parts):
    return os.path.join(ROOT, *parts)


def call(method, params):
    return c.call(method, params, timeout=120)


def is_ok(r, desc):
    return t.ok("result" in r, desc, r)


def is_err(r, code, msg, desc):
    return t.eq(r.get("error"), {"code": code, "message": msg}, desc)


ENOENT = (-32004, "No such file or directory (os error 2)")


def err_is(r, e, desc):
    return is_err(r, e[0], e[1], desc)


def touch(path, data=b""):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def make_fixture():
    d = P("d")
    os.makedirs(P("d", "sub", "inner"))
    touch(P("d", "f"), b"hello\n")
    os.chmod(P("d", "f"), 0o751)
    os.symlink("f", P("d", "lf"))
    os.symlink("nowhere", P("d", "dang"))
    os.symlink("sub", P("d", "ld"))
    os.symlink("loop", P("d", "loop"))
    os.mkfifo(P("d", "fifo"))
    touch(P("d", "sub", "inner", "g"), b"x\n")
    return d


D = make_fixture()


def test_uris():
    f = U(P("d", "f"))
    is_err(call("fs/readFile", {"path": P("d", "f")}), -32602,
           "invalid URI: relative URL without a base", "plain path refused")
    is_err(call("fs/readFile", {"path": "http://x/tmp"}), -32602,
           "unsupported path URI scheme `http`", "other scheme refused")
    is_err(call("fs/readFile", {"path": "file://h/x"}), -32600,
           "'file://h/x' is invalid on 'linux'", "a host is not local")
    is_ok(call("fs/readFile", {"path": "file://localhost" + P("d", "f")}), "localhost is local")
    r = call("fs/readFile", {"path": U(P("d")) + "/%66"})
    t.eq(unb64(r["result"]["dataBase64"]), b"hello\n", "percent-decoding")
    r = call("fs/readFile", {"path": U(P("d", "sub")) + "/../f"})
    t.eq(unb64(r["result"]["dataBase64"]), b"hello\n", ".. resolved lexically")
    r = call("fs/readFile", {"path": U(P("d")) + "/%2e%2E/d/f/"})
    t.ok("result" in r, "%2e%2e is .., a trailing slash is dropped", r)
    is_err(call("fs/readFile", {"path": f + "?q"}), -32602,
           "query parameters are not allowed in path URIs", "query refused")
    is_err(call("fs/readFile", {"path": f + "#x"}), -32602,
           "fragments are not allowed in path URIs", "fragment refused")
    is_err(call("fs/readFile", {"path": "file:///x/%00"}), -32602,
           "'file:///x/%00' is invalid on 'linux'", "NUL refused")
    is_err(call("fs/readFile", {"path": "file:///C:/x"}), -32600,
           "'file:///C:/x' is invalid on 'linux'", "drive letter refused")
    is_err(call("fs/readFile", {"path": 5}), -32602,
           "invalid type: number, expected a string", "path of the wrong type")
    is_err(call("fs/readFile", {}), -32602, "missing field `path`", "path missing")
    is_err(call("fs/readFile", None), -32602,
           "invalid type: null, expected struct WireFsReadFileParams", "params missing")
    is_err(call("fs/readFile", []), -32602,
           "invalid length 0, expected struct WireFsReadFileParams with 3 elements",
           "empty positional params")
    r = call("fs/canonicalize", {"path": U(P("d", "sub")) + "/a%20b%23c/.."})
    t.eq(r.get("result"), {"path": U(os.path.realpath(P("d", "sub")))}, "canonicalize a URI")


def test_read_file():
    r = call("fs/readFile", {"path": U(P("d", "lf")), "sandbox": None})
    t.eq(unb64(r["result"]["dataBase64"]), b"hello\n", "readFile follows a symlink")
    err_is(call("fs/readFile", {"path": U(P("d", "dang"))}), ENOENT, "dangling symlink")
    err_is(call("fs/readFile", {"path": U(P("d", "nope"))}), ENOENT, "missing file")
    is_err(call("fs/readFile", {"path": U(P("d", "loop"))}), -32603,
           "Symbolic link loop (os error 40)", "symlink loop")
    is_err(call("fs/readFile", {"path": U(P("d", "f", "x"))}), -32603,
           "Not a directory (os error 20)", "file as a directory")
    is_err(call("fs/readFile", {"path": U(P("d", "ld"))}), -32600,
           "path `%s` is not a file" % P("d", "ld"), "directory is not a file")
    is_err(call("fs/readFile", {"path": U(P("d", "fifo"))}), -32600,
           "path `%s` is not a file" % P("d", "fifo"), "FIFO is not a file")
    is_err(call("fs/readFile", {"path": "file:///dev/null"}), -32600,
           "path `/dev/null` is not a file", "device is not a file")
    big = P("sparse")
    with open(big, "wb") as f:
        f.truncate(512 * 1024 * 1024 + 1)
    is_err(call("fs/readFile", {"path": U(big)}), -32600,
           "file is too large to read: limit is 536870912 bytes", "over 512 MiB refused")
    os.unlink(big)
    data = os.urandom(3 * 1024 * 1024 + 7)
    touch(P("mid"), data)
    r = call("fs/readFile", {"path": U(P("mid"))})
    t.ok(unb64(r["result"]["dataBase64"]) == data, "3 MiB + 7 bytes read back exactly")
    # the answer is built around the data: an id too long for the room left before it
    for rid in ("x" * 46, "y" * 47, 'q"\\' * 30, 2 ** 63 - 1):
        c.request("fs/readFile", {"path": U(P("mid"))}, id=rid)
        r = c.wait_response(rid, 60)
        t.ok(unb64(r["result"]["dataBase64"]) == data, "readFile answered to id %.20r" % (rid,))
    os.unlink(P("mid"))


def test_write_file():
    f = P("d", "f")
    ino = os.stat(f).st_ino
    is_ok(call("fs/writeFile", {"path": U(f), "dataBase64": b64("new")}), "writeFile replaces")
    st = os.stat(f)
    t.eq((read(f), stat.S_IMODE(st.st_mode)), (b"new", 0o751), "content replaced, mode kept")
    t.ok(st.st_ino != ino, "replaced by rename, not written in place")
    t.eq(sorted(os.listdir(P("d"))), sorted(["f", "lf", "dang", "ld", "loop", "fifo", "sub"]),
         "no temporary file left behind")
    is_ok(call("fs/writeFile", {"path": U(P("d", "lf")), "dataBase64": b64("via link")}),
          "writeFile through a symlink")
    t.ok(os.path.islink(P("d", "lf")) and read(f) == b"via link", "link kept, target written")
    is_ok(call("fs/writeFile", {"path": U(P("d", "dang")), "dataBase64": ""}),
          "writeFile through a dangling symlink")
    t.ok(os.path.isfile(P("d", "nowhere")), "dangling link's target created")
    os.unlink(P("d", "nowhere"))
    os.umask(0o022)
    is_ok(call("fs/writeFile", {"path": U(P("d", "new")), "dataBase64": b64("x")}), "new file")
    t.eq(stat.S_IMODE(os.stat(P("d", "new")).st_mode), 0o644, "new file 0666 less umask")
    os.unlink(P("d", "new"))
    is_err(call("fs/writeFile", {"path": U(P("d", "sub")), "dataBase64": ""}), -32603,
           "Is a directory (os error 21)", "directory refused")
    err_is(call("fs/writeFile", {"path": U(P("d", "nodir", "x")), "dataBase64": ""}), ENOENT,
           "missing parent")
    is_err(call("fs/writeFile", {"path": U(P("d", "f", "x")), "dataBase64": ""}), -32603,
           "Not a directory (os error 20)", "parent is a file")
    is_err(call("fs/writeFile", {"path": U(f), "dataBase64": "!!"}), -32600,
           "fs/writeFile requires valid base64 dataBase64: Invalid symbol 33, offset 0.",
           "bad base64")
    is_err(call("fs/writeFile", {"path": "file://h/x", "dataBase64": "!!"}), -32600,
           "fs/writeFile requires valid base64 dataBase64: Invalid symbol 33, offset 0.",
           "base64 checked before the path")
    is_err(call("fs/writeFile", {"path": U(f)}), -32602, "missing field `dataBase64`",
           "data missing")
    t.eq(read(f), b"via link", "failed writes left the file alone")


def test_long_write():
    """dataBase64 of 64 KiB or more is decoded from the message's own text
    (not jansson's copy), a stretch at a time: the same bytes and the same
    errors as a short one."""
    f = P("long")
    data = os.urandom(300001)
    is_ok(call("fs/writeFile", {"path": U(f), "dataBase64": b64(data)}), "long write")
    t.ok(read(f) == data, "long write: every byte")
    text = b64(data)
    bad = text[:200000] + "*" + text[200001:]
    is_err(call("fs/writeFile", {"path": U(f), "dataBase64": bad}), -32600,
           "fs/writeFile requires valid base64 dataBase64: Invalid symbol 42, offset 200000.",
           "long write: a bad symbol deep in it, at its offset")
    is_err(call("fs/writeFile", {"path": U(f), "dataBase64": text[:-4] + "A==="}), -32600,
           "fs/writeFile requires valid base64 dataBase64: Invalid symbol 61, offset 400001.",
           "long write: bad padding at the end")
    t.ok(read(f) == data, "long write: failed writes left the file alone")
    t.eq([n for n in os.listdir(ROOT) if n.startswith(".long")], [], "no temporary file left")
    # an escaped slash is JSON for '/': such text goes through the tree
    esc = text.replace("/", "\\/")
    c.send_raw('{"id":"esc","method":"fs/writeFile","params":{"path":%s,"dataBase64":"%s"}}\n'
               % (json.dumps(U(f)), esc))
    is_ok(c.wait_response("esc", 60), "long write with escapes")
    t.ok(esc != text and read(f) == data, "long write with escapes: every byte")
    # a request queued behind a long-poll keeps its own copy of the text
    q = Execd()
    try:
        q.start("slp", ["sleep", "5"])
        rid = q.request("process/read", {"processId": "slp", "waitMs": 1000})
        wid = q.request("fs/writeFile", {"path": U(f), "dataBase64": b64(data[::-1])})
        # the next line takes the queued request's message's place in execd's buffer
        q.send_raw(" " * 600000 + "\n")
        t.ok("result" in q.wait_response(rid, 30), "long-poll answered")
        is_ok(q.wait_response(wid, 30), "queued long write")
        t.ok(read(f) == data[::-1], "queued long write: every byte")
    finally:
        q.kill()
    # a file with other names is written in place: growing, shrinking, odd offsets
    g = P("linked")
    touch(g, b"old content")
    os.link(g, P("linked2"))
    for n in (200000, 100001, 65537 * 3 + 2, 0):
        d = os.urandom(n)
        is_ok(call("fs/writeFile", {"path": U(g), "dataBase64": b64(d)}),
              "hard link: %d bytes" % n)
        t.ok(read(P("linked2")) == d and os.stat(g).st_nlink == 2,
             "hard link: %d bytes, seen by the other name" % n)
    os.unlink(g)
    os.unlink(P("linked2"))
    os.unlink(f)


def test_full_disk():
    mnt = P("tmpfs")
    os.mkdir(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        t.skip("ENOSPC keeps the old content", "cannot mount a tmpfs here")
        return
    try:
        old = P("tmpfs", "old")
        touch(old, b"old content\n")
        r = call("fs/writeFile", {"path": U(old), "dataBase64": b64(os.urandom(2 << 20))})
        is_err(r, -32603, "No space left on device (os error 28)", "full disk: ENOSPC")
        t.eq(read(old), b"old content\n", "full disk: old content intact")
        t.eq(os.listdir(mnt), ["old"], "full disk: temporary file removed")
    finally:
        subprocess.run(["umount", mnt])


def test_create_directory():
    is_ok(call("fs/createDirectory", {"path": U(P("c1", "a", "b"))}), "recursive by default")
    is_ok(call("fs/createDirectory", {"path": U(P("c1", "a")), "recursive": True}),
          "existing directory is fine")
    is_err(call("fs/createDirectory", {"path": U(P("c1", "a")), "recursive": False}), -32603,
           "File exists (os error 17)", "non-recursive EEXIST")
    err_is(call("fs/createDirectory", {"path": U(P("c2", "x")), "recursive": False}), ENOENT,
           "non-recursive, missing parent")
    is_err(call("fs/createDirectory", {"path": U(P("d", "f"))}), -32603,
           "File exists (os error 17)", "a file is in the way")
    is_err(call("fs/createDirectory", {"path": U(P("d", "f", "x"))}), -32603,
           "Not a directory (os error 20)", "under a file")
    is_err(call("fs/createDirectory", {"path": U(P("d", "dang"))}), -32603,
           "File exists (os error 17)", "a dangling symlink is in the way")
    is_err(call("fs/createDirectory", {"path": U(P("c1")), "recursive": 5}), -32602,
           "invalid type: number, expected a boolean", "recursive of the wrong type")


def test_metadata():
    r = call("fs/getMetadata", {"path": U(P("d", "lf"))})["result"]
    t.eq((r["isFile"], r["isDirectory"], r["isSymlink"], r["size"], r["createdAtMs"]),
         (True, False, True, 8, 0), "metadata of a symlink to a file")
    t.ok(abs(r["modifiedAtMs"] - os.stat(P("d", "f")).st_mtime * 1000) < 2000, "mtime in ms")
    r = call("fs/getMetadata", {"path": U(P("d", "ld"))})["result"]
    t.eq((r["isFile"], r["isDirectory"], r["isSymlink"]), (False, True, True), "symlink to dir")
    r = call("fs/getMetadata", {"path": U(P("d", "fifo"))})["result"]
    t.eq((r["isFile"], r["isDirectory"], r["isSymlink"]), (False, False, False), "FIFO")
    err_is(call("fs/getMetadata", {"path": U(P("d", "dang"))}), ENOENT, "dangling symlink")


def test_read_directory():
    r = call("fs/readDirectory", {"path": U(P("d"))})["result"]["entries"]
    got = sorted((e["fileName"], e["isDirectory"], e["isFile"]) for e in r)
    t.eq(got, [("f", False, True), ("fifo", False, False), ("ld", True, False),
               ("lf", False, True), ("sub", True, False)],
         "entries followed through links, dangling and looping ones left out")
    os.mkdir(P("u"))
    touch(P("u").encode() + b"/\xff\xfe")
    touch(P("u", "a b"))
    r = call("fs/readDirectory", {"path": U(P("u"))})["result"]["entries"]
    t.eq(sorted(e["fileName"] for e in r), ["a b", "\ufffd\ufffd"], "non-UTF-8 name shown lossily")
    r = call("fs/getMetadata", {"path": U(P("u").encode() + b"/\xff\xfe")})
    t.ok("result" in r and r["result"]["isFile"], "non-UTF-8 name reachable by URI", r)
    r = call("fs/walk", {"path": U(P("u")), "options": {"maxDepth": 1, "maxDirectories": 10,
                         "maxEntries": 10, "followDirectorySymlinks": False}})["result"]
    t.eq((r["entries"], r["errors"]),
         ([{"path": U(P("u", "a b")), "kind": "file"}],
          [{"path": U(P("u")) + "/%EF%BF%BD%EF%BF%BD", "message": ENOENT[1]}]),
         "walk: a non-UTF-8 name is an error, as the reference's lossy join")
    is_err(call("fs/readDirectory", {"path": U(P("d", "f"))}), -32603,
           "Not a directory (os error 20)", "readDirectory of a file")
    err_is(call("fs/readDirectory", {"path": U(P("d", "dang"))}), ENOENT, "dangling")


def deep_tree(base, depth):
    p = base
    os.mkdir(p)
    fd = os.open(p, os.O_RDONLY)
    for i in range(depth):
        os.mkdir("d", dir_fd=fd)
        with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o640, dir_fd=fd), "wb") as f:
            f.write(b"%d" % i)
        nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(fd)


def deep_check(base, depth):
    fd = os.open(base, os.O_RDONLY)
    ok = True
    for i in range(depth):
        with open(os.open("f", os.O_RDONLY, dir_fd=fd), "rb") as f:
            ok = ok and f.read() == b"%d" % i
        ok = ok and stat.S_IMODE(os.stat("f", dir_fd=fd).st_mode) == 0o640
        nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(fd)
    return ok


def test_remove():
    is_ok(call("fs/remove", {"path": U(P("nope"))}), "force by default: missing is fine")
    err_is(call("fs/remove", {"path": U(P("nope")), "force": False}), ENOENT, "force false")
    is_err(call("fs/remove", {"path": U(P("d", "f", "x"))}), -32603,
           "Not a directory (os error 20)", "ENOTDIR even with force")
    os.makedirs(P("r", "full", "x"))
    is_err(call("fs/remove", {"path": U(P("r", "full")), "recursive": False}), -32603,
           "Directory not empty (os error 39)", "non-recursive ENOTEMPTY")
    os.makedirs(P("outside"))
    touch(P("outside", "keep"), b"keep")
    os.symlink(P("outside"), P("r", "full", "x", "escape"))
    os.symlink(P("outside", "keep"), P("r", "full", "tofile"))
    is_ok(call("fs/remove", {"path": U(P("r", "full"))}), "recursive remove")
    t.ok(not os.path.lexists(P("r", "full")) and read(P("outside", "keep")) == b"keep",
         "symlinks inside removed, never followed out of the tree")
    os.symlink(P("outside"), P("r", "ltop"))
    is_ok(call("fs/remove", {"path": U(P("r", "ltop"))}), "remove a symlink to a directory")
    t.ok(not os.path.lexists(P("r", "ltop")) and os.path.exists(P("outside", "keep")),
         "the link went, its target stayed")
    deep_tree(P("r", "deep"), 2000)
    t0 = time.time()
    is_ok(call("fs/remove", {"path": U(P("r", "deep"))}), "remove a 2000-deep tree")
    t.ok(not os.path.exists(P("r", "deep")), "deep tree gone (%.1fs)" % (time.time() - t0))


def test_copy():
    s = P("cp")
    os.makedirs(P("cp", "src", "inner"))
    touch(P("cp", "src", "a"), b"aaa")
    os.chmod(P("cp", "src", "a"), 0o604)
    touch(P("cp", "src", "inner", "b"), b"bbb")
    os.symlink("../a", P("cp", "src", "inner", "la"))
    os.symlink("nowhere", P("cp", "src", "dang"))
    os.mkfifo(P("cp", "src", "fifo"))
    is_err(call("fs/copy", {"sourcePath": U(P("cp", "src")), "destinationPath": U(P("cp", "x"))}),
           -32602, "missing field `recursive`", "recursive is required")
    is_err(call("fs/copy", {"sourcePath": U(P("cp", "src")), "destinationPath": U(P("cp", "x")),
                            "recursive": False}), -32600,
           "fs/copy requires recursive: true when sourcePath is a directory", "dir needs recursive")
    is_err(call("fs/copy", {"sourcePath": U(P("cp", "src")), "destinationPath":
                            U(P("cp", "src", "inner", "x")), "recursive": True}), -32600,
           "fs/copy cannot copy a directory to itself or one of its descendants", "into itself")
    is_ok(call("fs/copy", {"sourcePath": U(P("cp", "src")), "destinationPath":
                           U(P("cp", "dst", "deeper")), "recursive": True}), "copy a tree")
    dst = P("cp", "dst", "deeper")
    t.eq((read(os.path.join(dst, "a")), stat.S_IMODE(os.stat(os.path.join(dst, "a")).st_mode),
          read(os.path.join(dst, "inner", "b")), os.readlink(os.path.join(dst, "inner", "la")),
          os.readlink(os.path.join(dst, "dang")), os.path.exists(os.path.join(dst, "fifo"))),
         (b"aaa", 0o604, b"bbb", "../a", "nowhere", False),
         "files with modes, symlinks as symlinks, FIFOs skipped")
    is_err(call("fs/copy", {"sourcePath": U(P("cp", "src")), "destinationPath": U(dst),
                            "recursive": True}), -32603, "File exists (os error 17)",
           "copy onto a copy: an existing symlink is in the way")
    is_ok(call("fs/copy", {"sourcePath": U(P("cp", "src", "a")), "destinationPath":
                           U(P("cp", "a2")), "recursive": False}), "copy a file")
    touch(P("cp", "a2"), b"longer old content")
    is_ok(call("fs/copy", {"sourcePath": U(P("cp", "src", "a")), "destinationPath":
                           U(P("cp", "a2")), "recursive": False}), "copy over a file")
    t.eq(read(P("cp", "a2")), b"aaa", "old content replaced")
    is_ok(call("fs/copy", {"sourcePath": U(P("cp", "src", "a")), "destinationPath":
                           U(P("cp", "src", "a")), "recursive": False}), "copy a file onto itself")
    t.eq(read(P("cp", "src", "a")), b"aaa", "onto itself: content kept (the reference empties it)")
    is_ok(call("fs/copy", {"sourcePath": U(P("cp", "src", "inner", "la")), "destinationPath":
                           U(P("cp", "la2")), "recursive": True}), "copy a symlink")
    t.eq(os.readlink(P("cp", "la2")), "../a", "a symlink stays a symlink")
    is_err(call("fs/copy", {"sourcePath": U(P("cp", "src", "fifo")), "destinationPath":
                            U(P("cp", "ff")), "recursive": True}), -32600,
           "fs/copy only supports regular files, directories, and symlinks", "FIFO refused")
    err_is(call("fs/copy", {"sourcePath": U(P("cp", "nope")), "destinationPath": U(P("cp", "n")),
                            "recursive": True}), ENOENT, "missing source")
    is_err(call("fs/copy", {"sourcePath": U(P("cp", "src", "a")), "destinationPath":
                            U(P("cp")), "recursive": False}), -32603,
           "Is a directory (os error 21)", "file onto a directory")
    # inside the destination tree a symlink is never written through
    os.makedirs(P("cp", "d2", "inner"))
    touch(P("outside2"), b"safe")
    os.symlink(P("outside2"), P("cp", "d2", "inner", "b"))
    is_err(call("fs/copy", {"sourcePath": U(P("cp", "src")), "destinationPath": U(P("cp", "d2")),
                            "recursive": True}), -32603, "File exists (os error 17)",
           "destination symlink in the tree refused")
    t.eq(read(P("outside2")), b"safe", "nothing written through it")
    deep_tree(P("cp", "deep"), 2000)
    t0 = time.time()
    is_ok(call("fs/copy", {"sourcePath": U(P("cp", "deep")), "destinationPath":
                           U(P("cp", "deep2")), "recursive": True}), "copy a 2000-deep tree")
    t.ok(deep_check(P("cp", "deep2"), 2000), "deep copy complete (%.1fs)" % (time.time() - t0))
    subprocess.run(["rm", "-rf", s])


def test_walk():
    w = P("w")
    os.makedirs(os.path.join(w, "sub", "inner", "deeper"))
    os.makedirs(os.path.join(w, ".hid", "x"))
    touch(os.path.join(w, "f"))
    touch(os.path.join(w, ".hf"))
    touch(os.path.join(w, "sub", "inner", "g"))
    os.symlink("f", os.path.join(w, "lf"))
    os.symlink("sub", os.path.join(w, "ld"))

    def walk(path, **o):
        opts = {"maxDepth": 5, "maxDirectories": 100, "maxEntries": 100,
                "followDirectorySymlinks": False}
        opts.update(o)
        return call("fs/walk", {"path": U(path), "options": opts})

    def paths(r):
        return [(e["path"][len(U(w)):], e["kind"][0]) for e in r["result"]["entries"]]
    r = walk(w, maxDepth=0)
    t.eq(paths(r), [("/.hf", "f"), ("/.hid", "d"), ("/f", "f"), ("/sub", "d")],
         "walk depth 0: sorted, symlinks left out")
    r = walk(w, pruneHiddenDirectories=True)
    t.eq(paths(r), [("/.hf", "f"), ("/.hid", "d"), ("/f", "f"), ("/sub", "d"),
                    ("/sub/inner", "d"), ("/sub/inner/deeper", "d"), ("/sub/inner/g", "f")],
         "walk breadth first, hidden directories not entered")
    r = walk(w, followDirectorySymlinks=True, maxDepth=1)
    t.eq(paths(r), [("/.hf", "f"), ("/.hid", "d"), ("/f", "f"), ("/ld", "d"), ("/sub", "d"),
                    ("/.hid/x", "d"), ("/ld/inner", "d")],
         "followed links: each real directory once")
    r = walk(w, maxEntries=3)
    t.eq((len(r["result"]["entries"]), r["result"]["truncated"]), (3, True), "maxEntries")
    r = walk(w, maxDirectories=1)
    t.eq((len(r["result"]["entries"]), r["result"]["truncated"]), (4, True), "maxDirectories")
    is_err(walk(w, maxDirectories=0), -32600, "filesystem walk limits must be greater than zero",
           "zero limit")
    is_err(walk(w, maxDepth=65), -32600, "filesystem walk limits exceed maximums: depth=64, "
           "directories=10000, entries=50000", "limits above the maximums")
    is_err(walk(w, maxDepth=-1), -32602, "invalid number", "negative limit")
    is_err(call("fs/walk", {"path": U(w), "options": {"maxDepth": 1}}), -32602,
           "missing field `maxDirectories`", "options incomplete")
    t.eq(walk(os.path.join(w, "f"))["result"], {"entries": [], "errors": [], "truncated": False},
         "walking a file: nothing")
    t.eq(walk(os.path.join(w, "ld"))["result"]["entries"], [], "link root not followed")
    many = os.path.join(w, "many")      # more subdirectories than the walk queue starts with
    for i in range(40):
        os.makedirs(os.path.join(many, "d%02d" % i, "x"))
    r = walk(many, maxDepth=3, maxDirectories=1000, maxEntries=1000)
    t.eq(len(r["result"]["entries"]), 80, "walk of 40 subdirectories, each with one (the queue grows)")
    shutil.rmtree(many)
    err_is(walk(os.path.join(w, "nope")), ENOENT, "walk a missing root")


def test_handles():
    f = P("h.txt")
    touch(f, b"hello world\n")
    is_ok(call("fs/open", {"handleId": "r1", "path": U(f), "mode": "read"}), "open")
    r = call("fs/readBlock", {"handleId": "r1", "offset": 0, "len": 5})
    t.eq(r.get("result"), {"chunk": b64("hello"), "eof": False}, "readBlock")
    r = call("fs/readBlock", {"handleId": "r1", "offset": 6, "len": 6})
    t.eq(r.get("result"), {"chunk": b64("world\n"), "eof": False}, "eof only on a short read")
    r = call("fs/readBlock", {"handleId": "r1", "offset": 6, "len": 100})
    t.eq(r.get("result"), {"chunk": b64("world\n"), "eof": True}, "short read is eof")
    r = call("fs/readBlock", {"handleId": "r1", "offset": 1000, "len": 1})
    t.eq(r.get("result"), {"chunk": "", "eof": True}, "past the end")
    is_err(call("fs/open", {"handleId": "r1", "path": U(P("nope"))}), -32600,
           "file handle `r1` already exists", "duplicate handle")
    is_err(call("fs/open", {"handleId": "x" * 33, "path": U(f)}), -32600,
           "file handle ID must not exceed 32 bytes", "handle ID too long")
    is_ok(call("fs/open", {"handleId": "\u00e9" * 16, "path": U(f)}), "32-byte UTF-8 handle ID")
    is_err(call("fs/open", {"handleId": "d", "path": U(P("d"))}), -32600,
           "path `%s` is not a file" % P("d"), "open a directory")
    err_is(call("fs/open", {"handleId": "m", "path": U(P("nope"))}), ENOENT, "open missing")
    is_err(call("fs/open", {"handleId": "b", "path": U(f), "mode": "bogus"}), -32602,
           "unknown variant `bogus`, expected `read` or `replace`", "bad mode")
    is_err(call("fs/readBlock", {"handleId": "r1", "offset": 0, "len": 0}), -32600,
           "file read block length must be between 1 and 1048576", "len 0")
    is_err(call("fs/readBlock", {"handleId": "r1", "offset": 0, "len": 1048577}), -32600,
           "file read block length must be between 1 and 1048576", "len too big")
    is_err(call("fs/readBlock", {"handleId": "zz", "offset": 0, "len": 1}), -32004,
           "unknown file handle `zz`", "unknown handle")
    is_err(call("fs/readBlock", {"handleId": "r1", "offset": -1, "len": 1}), -32602,
           "invalid number", "negative offset")
    is_ok(call("fs/open", {"handleId": "w1", "path": U(P("w.bin")), "mode": "replace"}),
          "open replace")
    is_ok(call("fs/writeBlock", {"handleId": "w1", "offset": 10, "chunk": b64("tail")}),
          "writeBlock at an offset")
    is_ok(call("fs/writeBlock", {"handleId": "w1", "offset": 0, "chunk": b64("head")}),
          "writeBlock at 0")
    t.eq(read(P("w.bin")), b"head" + b"\0" * 6 + b"tail", "written at once, sparse gap")
    is_err(call("fs/writeBlock", {"handleId": "w1", "offset": 0, "chunk": ""}), -32600,
           "file write block length must be between 1 and 1048576", "empty block")
    is_err(call("fs/writeBlock", {"handleId": "w1", "offset": 0, "chunk": "!!"}), -32602,
           "Invalid symbol 33, offset 0.", "bad base64 block")
    is_err(call("fs/writeBlock", {"handleId": "w1", "offset": 2 ** 63 - 1, "chunk": b64("x")}),
           -32600, "file write range exceeds the signed 64-bit file offset limit", "range")
    is_err(call("fs/writeBlock", {"handleId": "r1", "offset": 0, "chunk": b64("x")}), -32603,
           "Bad file descriptor (os error 9)", "writeBlock on a read handle")
    is_ok(call("fs/readBlock", {"handleId": "r1", "offset": 0, "len": 1}),
          "a failed write keeps the handle")
    is_err(call("fs/readBlock", {"handleId": "w1", "offset": 0, "len": 1}), -32603,
           "Bad file descriptor (os error 9)", "readBlock on a replace handle")
    is_err(call("fs/writeBlock", {"handleId": "w1", "offset": 0, "chunk": b64("x")}), -32004,
           "unknown file handle `w1`", "a failed read closes the handle")
    is_ok(call("fs/close", {"handleId": "r1"}), "close")
    is_ok(call("fs/close", {"handleId": "r1"}), "close again")
    is_err(call("fs/close", {"handleId": "x" * 33}), -32600,
           "file handle ID must not exceed 32 bytes", "close: ID too long")
    for i in range(127):
        r = call("fs/open", {"handleId": "h%d" % i, "path": U(f)})
        if "result" not in r:
            break
    t.eq(r.get("result"), {"handleId": "h126"}, "128 handles open")
    is_err(call("fs/open", {"handleId": "one-more", "path": U(P("nope"))}), -32600,
           "at most 128 file handles may be open per connection", "handle limit")
    for i in range(127):
        call("fs/close", {"handleId": "h%d" % i})
    call("fs/close", {"handleId": "\u00e9" * 16})


def test_gib_blocks():
    """BLOCKS MiB (1 GiB, a quarter under the sanitizers) through fs/writeBlock and back
    through fs/readBlock."""
    st = os.statvfs(ROOT)
    if st.f_bavail * st.f_frsize < 3 << 30:
        t.skip("1 GiB through blocks", "less than 3 GiB free")
        return
    path = P("gib")
    blk = os.urandom(1 << 20)
    want = hashlib.sha256()
    t0 = time.time()
    call("fs/open", {"handleId": "g", "path": U(path), "mode": "replace"})
    chunk = b64(blk)
    ok = True
    for i in range(BLOCKS):
        c.request("fs/writeBlock", {"handleId": "g", "offset": i << 20, "chunk": chunk})
        want.update(blk)
    for rid in range(c.next_id - BLOCKS, c.next_id):
        ok = ok and "result" in c.wait_response(rid, timeout=120)
    call("fs/close", {"handleId": "g"})
    t.ok(ok and os.path.getsize(path) == BLOCKS << 20, "%d MiB written in 1 MiB blocks (%.1fs)" %
         (BLOCKS, time.time() - t0))
    call("fs/open", {"handleId": "g", "path": U(path)})
    got = hashlib.sha256()
    t0 = time.time()
    for i in range(BLOCKS):
        r = call("fs/readBlock", {"handleId": "g", "offset": i << 20, "len": 1 << 20})
        got.update(unb64(r["result"]["chunk"]))
    call("fs/close", {"handleId": "g"})
    t.ok(got.digest() == want.digest(), "%d MiB read back identical (%.1fs)" %
         (BLOCKS, time.time() - t0))
    os.unlink(path)


def sb(entries, **kw):
    d = {"permissions": {"type": "managed", "network": "restricted",
                         "file_system": {"type": "restricted", "entries": entries}},
         "windowsSandboxLevel": "disabled"}
    d.update(kw)
    return d


def ent(path, access):
    return {"path": {"type": "path", "path": U(path)}, "access": access}


def test_sandbox():
    s = P("sb")
    for d in ("ws/.git", "ws/sub", "ws/den", "other", "ro/wr"):
        os.makedirs(os.path.join(s, d))
    touch(os.path.join(s, "ws", "a"), b"w")
    touch(os.path.join(s, "ws", "den", "x"), b"d")
    touch(os.path.join(s, "other", "b"), b"o")
    touch(os.path.join(s, "ro", "c"), b"r")
    os.symlink(os.path.join(s, "other"), os.path.join(s, "ws", "link"))
    pol = sb([ent(s + "/ws", "write"), ent(s + "/ws/den", "deny"), ent(s + "/ro", "read"),
              ent(s + "/ro/wr", "write")])

    def q(method, path, **kw):
        p = {"path": U(os.path.join(s, path)), "sandbox": pol}
        p.update(kw)
        return call(method, p)
    is_err(call("fs/readFile", {"path": U(s + "/ws/a"), "sandbox": {"permissions":
                {"type": "disabled"}}}), -32602, "missing field `windowsSandboxLevel`",
           "sandbox: windowsSandboxLevel required")
    is_err(call("fs/readFile", {"path": U(s + "/ws/a"), "sandbox": {"permissions":
                {"type": "bogus"}, "windowsSandboxLevel": "disabled"}}), -32602,
           "unknown variant `bogus`, expected one of `managed`, `disabled`, `external`",
           "sandbox: unknown profile")
    is_err(call("fs/readFile", {"path": U(s + "/ws/a"), "sandbox": sb([{"path": {"type":
                "glob_pattern", "pattern": "**/.env"}, "access": "deny"}])}), -32602,
           "file system sandbox context with dynamic permissions requires cwd",
           "sandbox: relative glob needs cwd")
    is_err(call("fs/readFile", {"path": U(s + "/ws/a"), "sandbox": sb([{"path": {"type": "path",
                "path": 5}, "access": "read"}])}), -32602,
           "invalid type: integer `5`, expected a string", "sandbox: entry path of the wrong type")
    for prof in ({"type": "disabled"}, {"type": "external", "network": "restricted"},
                 {"type": "managed", "network": "enabled", "file_system": {"type": "unrestricted"}}):
        r = call("fs/readFile", {"path": U(s + "/other/b"), "sandbox": {"permissions": prof,
                 "windowsSandboxLevel": "disabled"}})
        t.ok("result" in r, "sandbox %s: unrestricted" % prof["type"], r)
    t.eq(unb64(q("fs/readFile", "ws/a")["result"]["dataBase64"]), b"w", "sandbox: read granted")
    err_is(q("fs/readFile", "other/b"), ENOENT, "sandbox: outside the roots does not exist")
    err_is(q("fs/readFile", "ws/link/b"), ENOENT, "sandbox: a symlink does not lead out")
    is_err(q("fs/readFile", "ws/den/x"), -32600, "Permission denied (os error 13)",
           "sandbox: denied read")
    is_err(q("fs/readDirectory", "ws/den"), -32600, "Permission denied (os error 13)",
           "sandbox: denied listing")
    is_err(q("fs/writeFile", "ro/new", dataBase64=""), -32603,
           "Read-only file system (os error 30)", "sandbox: denied write")
    t.ok(not os.path.exists(os.path.join(s, "ro", "new")), "sandbox: nothing written")
    is_ok(q("fs/writeFile", "ro/wr/new", dataBase64=b64("n")), "sandbox: nested writable root")
    is_ok(q("fs/writeFile", "ws/new", dataBase64=b64("n")), "sandbox: write granted")
    is_err(q("fs/writeFile", "ws/.git/x", dataBase64=""), -32603,
           "Read-only file system (os error 30)", "sandbox: .git of a writable root read-only")
    # the same names a sandboxed process finds read-only (the reference's helper
    # runs in that very view): a missing .codex, .agents or .aws cannot be made
    for name in (".codex", ".agents", ".aws"):
        for method, kw in (("fs/createDirectory", {"recursive": True}),
                           ("fs/writeFile", {"dataBase64": b64("x")})):
            is_err(q(method, "ws/" + name, **kw), -32603, "Read-only file system (os error 30)",
                   "sandbox: %s %s of a writable root refused" % (method, name))
        t.ok(not os.path.exists(os.path.join(s, "ws", name)),
             "sandbox: and no %s appeared on the host" % name)
    os.makedirs(os.path.join(s, "ws", ".aws"), exist_ok=True)
    is_err(q("fs/writeFile", "ws/.aws/credentials", dataBase64=b64("x")), -32603,
           "Read-only file system (os error 30)", "sandbox: an existing .aws is read-only too")
    shutil.rmtree(os.path.join(s, "ws", ".aws"))
    is_err(q("fs/writeFile", "ws/den/x", dataBase64=""), -32600,
           "Permission denied (os error 13)", "sandbox: denied file not written")
    t.eq(read(os.path.join(s, "ws", "den", "x")), b"d", "sandbox: denied file intact")
    r = q("fs/readDirectory", "")["result"]["entries"]
    t.eq(sorted(e["fileName"] for e in r), ["ro", "ws"], "sandbox: the way to the roots")
    is_err(q("fs/remove", "ro/c"), -32603, "Read-only file system (os error 30)",
           "sandbox: remove in a read-only root")
    is_ok(q("fs/remove", "other/b"), "sandbox: removing what does not exist (force)")
    t.ok(os.path.exists(os.path.join(s, "other", "b")), "sandbox: ... and it is still there")
    r = q("fs/remove", "ws")
    t.ok(r.get("error", {}).get("code") in (-32600, -32603),
         "sandbox: a denied or read-only entry inside refuses the remove", r)
    t.ok(os.path.exists(os.path.join(s, "ws", "a")) and os.path.exists(os.path.join(s, "ws",
         "sub")), "sandbox: nothing removed")
    r = call("fs/copy", {"sourcePath": U(s + "/ro/c"), "destinationPath": U(s + "/ws/c"),
                         "recursive": False, "sandbox": pol})
    t.ok("result" in r and read(os.path.join(s, "ws", "c")) == b"r", "sandbox: copy in", r)
    err_is(call("fs/copy", {"sourcePath": U(s + "/other/b"), "destinationPath": U(s + "/ws/b"),
                            "recursive": False, "sandbox": pol}), ENOENT,
           "sandbox: copy from outside")
    is_err(call("fs/copy", {"sourcePath": U(s + "/ws"), "destinationPath": U(s + "/ro/wr/cp"),
                            "recursive": True, "sandbox": pol}), -32600,
           "Permission denied (os error 13)", "sandbox: copying a tree with a denied entry")
    t.ok(not os.path.exists(os.path.join(s, "ro", "wr", "cp")), "sandbox: nothing copied")
    is_err(q("fs/createDirectory", "ro/nd"), -32603, "Read-only file system (os error 30)",
           "sandbox: mkdir in a read-only root")
    is_ok(q("fs/createDirectory", "ro"), "sandbox: an existing directory is fine")
    is_err(q("fs/open", "ro/c", handleId="x", mode="replace"), -32603,
           "Read-only file system (os error 30)", "sandbox: open for replace")
    err_is(q("fs/open", "other/b", handleId="x"), ENOENT, "sandbox: open outside")
    err_is(q("fs/canonicalize", "ws/link"), ENOENT, "sandbox: canonicalize out of the roots")
    r = q("fs/walk", "", options={"maxDepth": 5, "maxDirectories": 100, "maxEntries": 100,
                                  "followDirectorySymlinks": True})["result"]
    got = [e["path"][len(U(s)):] for e in r["entries"]]
    t.ok("/ws/a" in got and not any(g.startswith("/other") or g.startswith("/ws/link")
         for g in got), "sandbox: walk stays in the roots", got)
    t.eq(r["errors"], [{"path": U(s + "/ws/den"), "message": "Permission denied (os error 13)"}],
         "sandbox: walk reports the denied directory")
    glob = sb([ent(s + "/ws", "write"), {"path": {"type": "glob_pattern", "pattern":
               "**/*.secret"}, "access": "deny"}], cwd=U(s + "/ws"))
    touch(os.path.join(s, "ws", "sub", "k.secret"), b"k")
    is_err(call("fs/readFile", {"path": U(s + "/ws/sub/k.secret"), "sandbox": glob}), -32600,
           "Permission denied (os error 13)", "sandbox: deny glob")
    is_ok(call("fs/readFile", {"path": U(s + "/ws/a"), "sandbox": glob}), "sandbox: glob spares others")
    roots = sb([{"path": {"type": "special", "value": {"kind": "project_roots"}},
                 "access": "read"}], cwd=U(s), workspaceRoots=[U(s + "/ro")])
    is_ok(call("fs/readFile", {"path": U(s + "/ro/c"), "sandbox": roots}),
          "sandbox: project_roots are the workspace roots")
    err_is(call("fs/readFile", {"path": U(s + "/ws/a"), "sandbox": roots}), ENOENT,
           "sandbox: ... and nothing else")
    r = call("fs/readFile", {"path": "file:///etc/passwd", "sandbox": sb([])})
    t.ok("result" in r, "sandbox: system directories stay readable", r)
    is_err(call("fs/readFile", {"path": U(s + "/ws/a"), "sandbox": sb([{"path": {"type": "path",
                "path": "file://h/x"}, "access": "read"}])}), -32600,
           "invalid sandbox permission path URI: 'file://h/x' is invalid on 'linux'",
           "sandbox: an entry for another host")
    is_err(call("fs/readFile", {"path": U(s + "/ws/a"), "sandbox": sb([ent(s + "/ws", "read"),
                {"path": {"type": "glob_pattern", "pattern": s + "/ws/a"}, "access": "deny"}])}),
           -32603, "fs sandbox helper failed with status exit status: 1: error building "
           "bubblewrap command: Fatal error: unreadable glob `%s/ws/a` cannot be safely "
           "expanded; use a pattern with a non-root directory prefix" % s,
           "sandbox: a deny pattern without wildcards is refused as by the reference")


def test_gating():
    g = Execd(init=False)
    try:
        r = g.call("fs/readFile", {"path": U(P("d", "f"))})
        is_err(r, -32600, "client must call initialize before using filesystem methods",
               "fs methods wait for initialize")
        is_err(g.call("fs/readFile", {}), -32602, "missing field `path`",
               "params are decoded before the gating, as by the reference")
        is_err(g.call("fs/writeBlock", {"handleId": "x", "offset": 0, "chunk": "!!"}), -32602,
               "Invalid symbol 33, offset 0.", "a block's base64 is part of the params")
    finally:
        g.kill()


tests = [test_uris, test_read_file, test_write_file, test_long_write, test_full_disk, test_create_directory,
         test_metadata, test_read_directory, test_remove, test_copy, test_walk, test_handles,
         test_gib_blocks, test_sandbox, test_gating]
try:
    for fn in tests:
        fn()
    rc = c.close()
    t.eq(rc, 0, "execd exits 0 on EOF")
finally:
    c.kill()
    subprocess.run(["umount", P("tmpfs")], stderr=subprocess.DEVNULL)
    subprocess.run(["rm", "-rf", ROOT])
t.done()
