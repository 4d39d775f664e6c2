"""Clients for the activation tests (tests/activation/*.sh): speak to execd as
Codex or OpenClaw would, over whatever launched it.

usage: act_client.py ws URL [--bearer TOKEN] [--expect-status N] [--many N]
       act_client.py ws-cmd [--expect-status N] -- CMD...   (WebSocket over CMD's stdio)
       act_client.py jsonl-cmd -- CMD...                    (newline JSON over CMD's stdio)
       act_client.py jsonl-tcp HOST PORT                    (print all it answers)
       act_client.py notify-recv PATH OUT TIMEOUT           (sd_notify receiver)
       act_client.py wait-port HOST PORT TIMEOUT

A session is: initialize, initialized, process/start of a shell printing 42
and its parent's pid (the execd instance), output until process/closed.
Exit status 0 when everything came back as expected, 3 when the WebSocket
upgrade was refused (its HTTP status is printed), 1 otherwise; diagnostics
are printed as TAP comments.
"""
import argparse
import asyncio
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time

import websockets

from execd_client import Execd

PROBE = ["sh", "-c", "echo $((6*7)) $PPID"]


def diag(*a):
    for line in " ".join(str(x) for x in a).splitlines():
        print("# " + line)
    sys.stdout.flush()


def check_probe(out):
    """'42 PPID\\n' -> PPID, or None."""
    words = out.split()
    if len(words) == 2 and words[0] == "42" and words[1].isdigit():
        return int(words[1])
    return None


async def ws_recv_json(ws):
    m = await ws.recv()
    return json.loads(m)


async def ws_session(ws):
    await ws.send(json.dumps({"id": 1, "method": "initialize",
                              "params": {"clientName": "activation-test"}}))
    r = await ws_recv_json(ws)
    if "sessionId" not in r.get("result", {}):
        raise RuntimeError("initialize: %r" % r)
    await ws.send(json.dumps({"method": "initialized"}))
    await ws.send(json.dumps({"id": 2, "method": "process/start", "params": {
        "processId": "probe", "argv": PROBE, "cwd": "file:///tmp",
        "env": {"PATH": "/usr/bin:/bin"}, "tty": False}}))
    out = b""
    while True:
        m = await ws_recv_json(ws)
        if m.get("id") == 2 and "error" in m:
            raise RuntimeError("process/start: %r" % m)
        if m.get("method") == "process/output":
            out += base64.b64decode(m["params"]["chunk"])
        if m.get("method") == "process/closed":
            break
    ppid = check_probe(out.decode(errors="replace"))
    if ppid is None:
        raise RuntimeError("unexpected process output %r" % out)
    return r["result"]["sessionId"], ppid


def connect_kw(args):
    kw = {"max_size": None, "ping_interval": None, "open_timeout": 10}
    if getattr(args, "bearer", None):
        kw["extra_headers"] = {"Authorization": "Bearer " + args.bearer}
    return kw


async def ws_one(url, kw, sock=None):
    if sock is not None:
        kw = dict(kw, sock=sock)
    async with websockets.connect(url, **kw) as ws:
        return await ws_session(ws)


def refused_status(e):
    return getattr(e, "status_code", None) or getattr(getattr(e, "response", None),
                                                       "status_code", None)


def run_ws(coro_factory, expect_status):
    try:
        results = asyncio.run(asyncio.wait_for(coro_factory(), 60))
    except websockets.exceptions.InvalidStatusCode as e:
        st = refused_status(e)
        print("status %s" % st)
        if expect_status is not None:
            return 0 if st == expect_status else 1
        return 3
    except Exception as e:  # noqa: BLE001 - report anything as a failure
        diag("session failed: %r" % (e,))
        return 1
    if expect_status is not None:
        diag("expected HTTP %d, got a session" % expect_status)
        return 1
    for sid, ppid in results:
        print("session %s instance %d" % (sid, ppid))
    return 0


def cmd_ws(args):
    kw = connect_kw(args)

    async def many():
        return await asyncio.gather(*[ws_one(args.url, kw) for _ in range(args.many)])

    return run_ws(many, args.expect_status)


def cmd_ws_cmd(args):
    """WebSocket through a command's stdin/stdout (ssh), as over a socket."""
    mine, theirs = socket.socketpair()
    p = subprocess.Popen(args.cmd, stdin=theirs, stdout=theirs)
    theirs.close()

    async def one():
        return [await ws_one("ws://execd.invalid/", {"max_size": None, "ping_interval": None,
                                                     "open_timeout": 10}, sock=mine)]

    rc = run_ws(one, args.expect_status)
    mine.close()
    try:
        prc = p.wait(15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        diag("the command did not end after the client closed")
        return 1
    if rc == 0 and prc != 0 and args.expect_status is None:
        diag("the command exited with %d" % prc)
        return 1
    return rc


def cmd_jsonl_cmd(args):
    c = None
    try:
        c = Execd(argv=args.cmd, init=False)
        r = c.call("initialize", {"clientName": "activation-test"}, timeout=20)
        sid = r.get("result", {}).get("sessionId")
        if sid is None:
            diag("initialize: %r" % r)
            return 1
        c.notify("initialized")
        r = c.start("probe", PROBE)
        if "result" not in r:
            diag("process/start: %r" % r)
            return 1
        out, code, _ = c.collect("probe")
        ppid = check_probe(out.get("stdout", b"").decode(errors="replace"))
        if ppid is None or code != 0:
            diag("unexpected process result %r exit %r" % (out, code))
            return 1
        rc = c.close(15)
        if rc != 0:
            diag("the command exited with %r" % rc)
            return 1
        print("session %s instance %d" % (sid, ppid))
        return 0
    except (ValueError, TimeoutError, OSError) as e:
        # a ValueError is a line on stdout that is not JSON: logs leaking into the stream
        diag("jsonl session failed: %r" % (e,))
        return 1
    finally:
        if c is not None:
            c.kill()


def cmd_jsonl_tcp(args):
    s = socket.create_connection((args.host, args.port), timeout=10)
    s.sendall(b'{"id":1,"method":"initialize","params":{"clientName":"activation-test"}}\n')
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        diag("the server did not close the connection")
    s.close()
    sys.stdout.write(data.decode(errors="replace"))
    return 0 if data else 1


def cmd_notify_recv(args):
    """Receive one sd_notify datagram; write 'PID MESSAGE' to OUT."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    s.bind(args.path)
    s.settimeout(args.timeout)
    try:
        msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    except socket.timeout:
        return 1
    pid = -1
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
            pid = struct.unpack("iII", data[:12])[0]
    with open(args.out + ".tmp", "w") as f:
        f.write("%d %s\n" % (pid, msg.decode(errors="replace")))
    os.rename(args.out + ".tmp", args.out)
    return 0


def cmd_wait_port(args):
    deadline = time.time() + args.timeout
    while time.time() < deadline:
        try:
            socket.create_connection((args.host, args.port), timeout=1).close()
            return 0
        except OSError:
            time.sleep(0.1)
    return 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("ws")
    p.add_argument("url")
    p.add_argument("--bearer")
    p.add_argument("--expect-status", type=int)
    p.add_argument("--many", type=int, default=1)
    p.set_defaults(fn=cmd_ws)
    p = sub.add_parser("ws-cmd")
    p.add_argument("--expect-status", type=int)
    p.add_argument("cmd", nargs="+")
    p.set_defaults(fn=cmd_ws_cmd)
    p = sub.add_parser("jsonl-cmd")
    p.add_argument("cmd", nargs="+")
    p.set_defaults(fn=cmd_jsonl_cmd)
    p = sub.add_parser("jsonl-tcp")
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.set_defaults(fn=cmd_jsonl_tcp)
    p = sub.add_parser("notify-recv")
    p.add_argument("path")
    p.add_argument("out")
    p.add_argument("timeout", type=float)
    p.set_defaults(fn=cmd_notify_recv)
    p = sub.add_parser("wait-port")
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("timeout", type=float)
    p.set_defaults(fn=cmd_wait_port)
    args = ap.parse_args()
    sys.exit(args.fn(args))


if __name__ == "__main__":
    main()
