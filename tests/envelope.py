"""The JSON-RPC envelope: serde_json's error texts and positions, message kinds,
ids, NUL bytes, big numbers, blank and non-UTF-8 input (stdio and WebSocket).

Every expected text below is what the reference answered (tests/reference-notes.md
and live probes of `codex exec-server`)."""
import asyncio
import json
import time

import websockets

from execd_client import Execd, tap
from wsclient import Listener

t = tap(timeout=120)
FP = "failed to parse JSON-RPC message from exec-server stdio: "

# line sent before initialize -> message of the id -1 error (after FP)
MALFORMED = [
    # syntax, as serde_json words and places it
    (b"not json", "expected ident at line 1 column 2"),
    (b"{", "EOF while parsing an object at line 1 column 1"),
    (b"   {", "EOF while parsing an object at line 1 column 4"),
    (b'{"id":1', "EOF while parsing an object at line 1 column 7"),
    (b'{"id":1\r\r', "EOF while parsing an object at line 1 column 8"),
    (b'  {"id":1,', "EOF while parsing a value at line 1 column 10"),
    (b'{"a":"abc', "EOF while parsing a string at line 1 column 9"),
    (b'{"a":[1,2', "EOF while parsing a list at line 1 column 9"),
    (b'{"a":nul', "EOF while parsing a value at line 1 column 8"),
    (b'{"a":tru}', "expected ident at line 1 column 9"),
    (b'{"id":.5,"method":"x"}', "expected value at line 1 column 7"),
    (b'\xc2\xa0{"id":1,"method":"nope"}', "expected value at line 1 column 1"),
    (b'\xef\xbb\xbf{"id":1,"method":"nope"}', "expected value at line 1 column 1"),
    (b'{"id":1,"method":"x"} x', "trailing characters at line 1 column 23"),
    (b'{"id":1,"method":"nope"}\x0c', "trailing characters at line 1 column 25"),
    (b'{"id":1,"method":"x"} {"id":2,"method":"y"}', "trailing characters at line 1 column 23"),
    (b'{1:2}', "key must be a string at line 1 column 2"),
    (b'{"a" 1}', "expected `:` at line 1 column 6"),
    (b'{"a":1 "b":2}', "expected `,` or `}` at line 1 column 8"),
    (b'[1 2]', "expected `,` or `]` at line 1 column 4"),
    (b'{"a":1,}', "trailing comma at line 1 column 8"),
    (b'[1,]', "trailing comma at line 1 column 4"),
    (b'{"a":"\\x"}', "invalid escape at line 1 column 8"),
    (b'{"a":"\\u12"}', "invalid escape at line 1 column 12"),
    (b'{"a":"\\u12', "EOF while parsing a string at line 1 column 10"),
    (b'{"id":3,"method":"nope\\ud800"}', "unexpected end of hex escape at line 1 column 29"),
    (b'{"a":"\\ud800\\n"}', "unexpected end of hex escape at line 1 column 14"),
    (b'{"a":"\\ud800\\u0041"}', "lone leading surrogate in hex escape at line 1 column 18"),
    (b'{"a":"\\udc00"}', "lone leading surrogate in hex escape at line 1 column 12"),
    (b'{"a":"\\ud800', "EOF while parsing a string at line 1 column 12"),
    (b'{"id":1,"method":"x\x01"}', "control character (\\u0000-\\u001F) found while parsing a string"
     " at line 1 column 20"),
    (b'{"id":01,"method":"nope"}', "invalid number at line 1 column 8"),
    (b'{"id":-,"method":"nope"}', "invalid number at line 1 column 8"),
    (b'{"id":1.,"method":"nope"}', "invalid number at line 1 column 9"),
    (b'{"id":1e+,"method":"nope"}', "invalid number at line 1 column 10"),
    (b'{"id":1,"method":"nope","params":1.', "EOF while parsing a value at line 1 column 35"),
    (b'{"id":1,"method":"nope","params":-', "EOF while parsing a value at line 1 column 34"),
    (b'{"id":1,"method":"nope","params":' + b"[" * 127 + b"]" * 127 + b"}",
     "recursion limit exceeded at line 1 column 160"),
    # duplicate keys, at any depth, compared decoded
    (b'{"id":1,"method":"x","id":2}', "duplicate JSON object key `id` at line 1 column 25"),
    (b'{"a":1,"a"', "duplicate JSON object key `a` at line 1 column 10"),
    (b'{"\\u0069d":1,"id":2,"method":"nope"}', "duplicate JSON object key `id` at line 1 column 17"),
    (b'{"id":1,"method":"nope","params":{"a":{"b":1,"b":2}}}',
     "duplicate JSON object key `b` at line 1 column 48"),
    (b'{"id":1,"method":"nope","\xc3\xa9":1,"\xc3\xa9":2}',
     "duplicate JSON object key `\u00e9` at line 1 column 35"),
    (b'{"id":1,"method":"nope","params":{"a\\u0000":1,"a\\u0000":2}}',
     "duplicate JSON object key `a\u0000` at line 1 column 55"),
    # shapes: decoded before trailing characters are looked for
    (b"[]", "expected a JSON-RPC object"), (b"[1]", "expected a JSON-RPC object"),
    (b'"str"', "expected a JSON-RPC object"), (b"123", "expected a JSON-RPC object"),
    (b"null", "expected a JSON-RPC object"), (b"1 x", "expected a JSON-RPC object"),
    (b"{}", "missing field `error`"), (b'{"id":1}', "missing field `error`"),
    (b'{"id":1} x', "missing field `error`"), (b'{"result":5}', "missing field `id`"),
    (b'{"error":{"code":1,"message":"x"}}', "missing field `id`"),
    (b'{"id":1,"error":{}}', "missing field `code`"),
    (b'{"id":1,"error":{"code":1}}', "missing field `message`"),
    (b'{"id":1,"error":5}', "invalid type: number, expected struct JSONRPCErrorError"),
    (b'{"id":1,"error":{"code":1.5,"message":"x"}}', "invalid number"),
    (b'{"id":1,"error":{"code":"x"}}', 'invalid type: string "x", expected i64'),
    (b'{"id":1,"error":[1]}', "invalid length 2, expected struct JSONRPCErrorError with 3 elements"),
    (b'{"id":1.5,"method":"x"}', "data did not match any variant of untagged enum RequestId"),
    (b'{"id":null,"method":"x"}', "data did not match any variant of untagged enum RequestId"),
    (b'{"id":true,"method":"x"}', "data did not match any variant of untagged enum RequestId"),
    (b'{"id":1e3,"method":"x"}', "data did not match any variant of untagged enum RequestId"),
    (b'{"id":[],"method":"x"}', "data did not match any variant of untagged enum RequestId"),
    (b'{"id":9223372036854775808,"method":"x"}',
     "data did not match any variant of untagged enum RequestId"),
    (b'{"method":"x","id":18446744073709551616}',
     "invalid type: integer `18446744073709551616` as u128, expected any value"),
    (b'{"method":"x","id":-9223372036854775809}',
     "invalid type: integer `-9223372036854775809` as i128, expected any value"),
    (b'{"method":"x","id":[1.5,{"a":-9223372036854775809}]}',
     "invalid type: integer `-9223372036854775809` as i128, expected any value"),
    (b'{"method":"x","id":1e400}', "data did not match any variant of untagged enum RequestId"),
    (b'{"method":5}', "invalid type: number, expected a string"),
    (b'{"method":null}', "invalid type: null, expected a string"),
    (b'{"method":true}', "invalid type: boolean `true`, expected a string"),
    (b'{"id":1,"method":[]}', "invalid type: sequence, expected a string"),
    (b'{"method":5,"id":1.5}', "invalid type: number, expected a string"),
    (b'{"id":1.5,"method":5}', "data did not match any variant of untagged enum RequestId"),
    (b'{"id":4,"method":"environment/status","trace":"x"}',
     'invalid type: string "x", expected struct W3cTraceContext'),
    (b'{"id":4,"method":"x","trace":"a\\"b\\n\\u0000\\u00e9\\u007f\\t"}',
     'invalid type: string "a\\"b\\n\\0\u00e9\\u{7f}\\t", expected struct W3cTraceContext'),
    (b'{"method":"x","id":1,"trace":{"traceparent":5}}', "invalid type: number, expected a string"),
    (b'{"method":"x","id":1,"trace":[null,null,null]}',
     "invalid length 3, expected fewer elements in array"),
]

# line sent before initialize -> the whole answer
ANSWERED = [
    (b'{"id":2,"method":"a\\u0000b"}',
     {"error": {"code": -32601, "message": "exec-server stub does not implement `a\u0000b` yet"},
      "id": 2}),
    (b'{"id":2,"method":"initialize\\u0000"}',
     {"error": {"code": -32601,
                "message": "exec-server stub does not implement `initialize\u0000` yet"}, "id": 2}),
    (b'{"id":"a\\u0000","method":"nope"}',
     {"error": {"code": -32601, "message": "exec-server stub does not implement `nope` yet"},
      "id": "a\u0000"}),
    (b'{"id":-9223372036854775808,"method":"nope"}',
     {"error": {"code": -32601, "message": "exec-server stub does not implement `nope` yet"},
      "id": -9223372036854775808}),
    (b'{"id":-0,"method":"nope"}',
     {"error": {"code": -32601, "message": "exec-server stub does not implement `nope` yet"},
      "id": 0}),
    (b'{"id":5,"method":"nope","result":{}}',
     {"error": {"code": -32601, "message": "exec-server stub does not implement `nope` yet"},
      "id": 5}),
    (b'{"id":6,"method":"nope","jsonrpc":5,"trace":{"foo":1,"tracestate":null}}',
     {"error": {"code": -32601, "message": "exec-server stub does not implement `nope` yet"},
      "id": 6}),
    (b'{"id":7,"method":"nope","trace":["00-ab"],"params":{"a":1e400,"b":123456789012345678901234567890,'
     b'"c\\u0000":1}}\r',
     {"error": {"code": -32601, "message": "exec-server stub does not implement `nope` yet"},
      "id": 7}),
]


def answer(c, line, id):
    c.send_raw(line + b"\n")
    try:
        return c.wait_response(id, timeout=5)
    except TimeoutError as e:
        return str(e)


c = Execd(init=False)
for line, want in MALFORMED:
    r = answer(c, line, -1)
    t.eq(r, {"error": {"code": -32600, "message": FP + want}, "id": -1}, "%r" % line[:60])
for line, want in ANSWERED:
    t.eq(answer(c, line, want["id"]), want, "%r" % line[:60])

# blank lines (Rust's notion of whitespace) are skipped on stdio
c.send_raw(b"   \n\t\n\r\n\x0b\n\x0c\n\xc2\xa0\n\xe2\x80\xa8\n\xe3\x80\x80\n")
r = answer(c, b'{"id":8,"method":"nope"}', 8)
t.ok(r.get("id") == 8 and not c.responses, "blank lines are skipped", (r, c.responses))

# integers beyond i64 in params: u64 values are read as "very large"
t.ok("result" in c.call("initialize", {"clientName": "envelope"}), "initialize")
c.notify("initialized")
c.start("p", ["/bin/sh", "-c", "printf abc"])
c.collect("p")
U64_MAX = 18446744073709551615
r = c.call("process/read", {"processId": "p", "afterSeq": U64_MAX})
t.eq((r.get("result") or {}).get("chunks"), [], "afterSeq u64::MAX is valid and past every chunk")
r = c.call("process/read", {"processId": "p", "afterSeq": 0, "maxBytes": U64_MAX,
                            "waitMs": U64_MAX})
t.ok(len((r.get("result") or {}).get("chunks", [])) >= 1, "maxBytes and waitMs u64::MAX", r)
r = c.call("process/read", {"processId": "p", "afterSeq": U64_MAX + 1})
t.eq(r.get("error"), {"code": -32602, "message": "invalid number"}, "afterSeq above u64::MAX")
t.eq(c.close(), 0, "EOF ends execd")

# invalid UTF-8 on stdio: the connection ends at once, without an answer
c = Execd(init=False)
c.send_raw(b'{"id":2,"method":"\xff\xfe"}\n')
try:
    rc = c.p.wait(5)
except Exception:
    c.kill()
    rc = None
c.drain(0.2)
t.ok(rc == 0 and not c.responses, "invalid UTF-8 on stdio closes silently", (rc, c.responses))

# a response object from the client ends the connection
c = Execd(init=False)
c.send_raw(b'{"id":7,"result":{}}\n{"id":8,"method":"nope"}\n')
# execd ends the connection (and exits) without reading on: wait for that, not for a
# while, then read everything it wrote
try:
    rc = c.p.wait(5)
except Exception:
    c.kill()
    rc = None
c.drain(0.2)
t.ok(rc == 0 and 8 not in c.responses, "a client response is a protocol violation",
     (rc, c.responses))
c.close()

# over WebSocket, non-UTF-8 and blank messages are parse errors; the connection stays
WS_CASES = [
    (b"\xff\xfe", "expected value at line 1 column 1"),
    (b'{"id":2,"method":"\xff\xfe"}', "invalid unicode code point at line 1 column 21"),
    (b'{"id":1,"method":"nope\xed\xa0\x80"}', "invalid unicode code point at line 1 column 26"),
    (b'{\xff', "key must be a string at line 1 column 2"),
    (b'1\xff', "expected a JSON-RPC object"),
    (b'{"id":2,"method":"nope"}\xff', "trailing characters at line 1 column 25"),
    (b"", "EOF while parsing a value at line 1 column 0"),
    (b"  ", "EOF while parsing a value at line 1 column 2"),
    (b"\n", "EOF while parsing a value at line 2 column 0"),
    (b'{\n"id":1', "EOF while parsing an object at line 2 column 6"),
    (b'{\n"id":1,\n\n  "x":1,"x":2}', "duplicate JSON object key `x` at line 4 column 11"),
]


async def ws_session(url):
    got = []
    async with websockets.connect(url, ping_interval=None) as ws:
        for payload, _ in WS_CASES:
            await ws.send(payload)     # bytes: a binary frame
            got.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
        await ws.send('{"id":9,"method":"nope"}')
        got.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
    return got

# stdio on descriptors epoll cannot watch (/dev/null, regular files): always ready
import os
import subprocess
import tempfile

from execd_client import EXECD

with tempfile.TemporaryDirectory() as d:
    mark = os.path.join(d, "mark")
    reqs = os.path.join(d, "requests")
    with open(reqs, "w") as f:
        f.write('{"id":1,"method":"initialize","params":{"clientName":"t"}}\n'
                '{"method":"initialized"}\n'
                '{"id":2,"method":"process/start","params":{"processId":"a","argv":["sh","-c",'
                '"echo hi > %s"],"cwd":"file:///","env":{"PATH":"/usr/bin:/bin"},"tty":false}}\n'
                '{"id":3,"method":"nope"}\n' % mark)
    for name, stdin, stdout in (("pipe in, /dev/null out", "pipe", "null"),
                                ("file in, /dev/null out", "file", "null"),
                                ("file in, file out", "file", "file"),
                                ("/dev/null in and out", "null", "null")):
        if os.path.exists(mark):
            os.unlink(mark)
        out = os.path.join(d, "out")
        fin = {"pipe": subprocess.PIPE, "file": open(reqs, "rb"),
               "null": subprocess.DEVNULL}[stdin]
        fout = open(out, "wb") if stdout == "file" else subprocess.DEVNULL
        p = subprocess.Popen([EXECD, "--stdio"], stdin=fin, stdout=fout,
                             stderr=subprocess.PIPE)
        if stdin == "pipe":
            p.stdin.write(open(reqs, "rb").read())
            p.stdin.flush()
            # EOF kills the process: close once it has written its mark (or
            # 30 s have passed), however long a loaded machine takes to start it
            until = time.time() + 30
            while not os.path.exists(mark) and time.time() < until:
                time.sleep(0.05)
            p.stdin.close()
        try:
            rc = p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        t.ok(rc == 0 and "epoll_ctl" not in err, "stdio %s: runs and exits 0" % name, (rc, err))
        if stdin == "pipe":     # from a file, EOF comes at once and ends the process
            t.ok(os.path.exists(mark), "stdio %s: the request was served" % name)
        if stdout == "file":
            # answers only: the process may also finish (exited, closed) before EOF
            msgs = [json.loads(x) for x in open(out, "rb").read().splitlines()]
            ids = [m_["id"] for m_ in msgs if "id" in m_]
            t.eq(ids, [1, 2, 3], "stdio %s: every answer written" % name)

L = Listener()
try:
    got = asyncio.run(asyncio.wait_for(ws_session(L.url), 30))
finally:
    L.stop()
prefix = "failed to parse websocket JSON-RPC message from exec-server websocket 127.0.0.1:"
for (payload, want), r in zip(WS_CASES, got):
    msg = r.get("error", {}).get("message", "")
    t.ok(r.get("id") == -1 and msg.startswith(prefix) and msg.endswith(": " + want),
         "websocket %r" % payload, r)
t.eq(got[-1].get("id"), 9, "the websocket connection stays open")
t.done()
