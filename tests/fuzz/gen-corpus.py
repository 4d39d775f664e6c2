#!/usr/bin/python3
"""Write the seed corpora of tests/fuzz/corpus/<target>/ (run from anywhere).

The seeds are small, valid (or nearly valid) inputs of each target's input
format, as described at the top of each tests/fuzz/fuzz_*.c.  Re-running
rewrites the files; libFuzzer only reads them.
"""
import base64
import hashlib
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
TOKEN = "0123456789abcdef0123456789abcdef"      # fuzz_http_upgrade.c's conf.token
CRED_ID, CRED_SECRET = "x0123456789abcde", "0123456789abcdef0123456789abcdef"


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def upgrade(path="/", extra=None, key="dGhlIHNhbXBsZSBub25jZQ==", version="13", lf="\r\n"):
    h = [("Host", "127.0.0.1"), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
         ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", version)]
    h += list((extra or {}).items())
    return "GET %s HTTP/1.1%s" % (path, lf) + "".join(
        "%s: %s%s" % (k, v, lf) for k, v in h if v is not None) + lf


def frame(payload, opcode=1, mask=True, fin=True, rsv=0, key=b"\x01\x02\x03\x04"):
    if isinstance(payload, str):
        payload = payload.encode()
    b0 = (0x80 if fin else 0) | rsv << 4 | opcode
    n = len(payload)
    m = 0x80 if mask else 0
    if n < 126:
        hdr = struct.pack("!BB", b0, m | n)
    elif n < 65536:
        hdr = struct.pack("!BBH", b0, m | 126, n)
    else:
        hdr = struct.pack("!BBQ", b0, m | 127, n)
    if not mask:
        return hdr + payload
    return hdr + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def msg(id, method, params=None):
    m = {"id": id, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m, separators=(",", ":"))


INIT = msg(1, "initialize", {"clientName": "fuzz"})
INITED = '{"method":"initialized"}'

# one valid call of every method (execd's tables, in their order)
START = {"processId": "p1", "argv": ["sh", "-c", "echo hi"], "cwd": "file:///tmp/execd-fuzz",
         "env": {"PATH": "/bin"}, "tty": False}
CALLS = [
    ("initialize", {"clientName": "fuzz"}),
    ("environment/info", None),
    ("environment/status", None),
    ("process/start", START),
    ("process/read", {"processId": "p1", "afterSeq": 0, "maxBytes": 65536, "waitMs": 10}),
    ("process/write", {"processId": "p1", "chunk": base64.b64encode(b"input\n").decode(),
                       "writeId": "w1"}),
    ("process/signal", {"processId": "p1", "signal": "interrupt"}),
    ("process/terminate", {"processId": "p1"}),
    ("fs/readFile", {"path": "file:///tmp/execd-fuzz/a"}),
    ("fs/writeFile", {"path": "file:///tmp/execd-fuzz/a", "dataBase64": base64.b64encode(b"hello").decode()}),
    ("fs/createDirectory", {"path": "file:///tmp/execd-fuzz/d/e", "recursive": True}),
    ("fs/getMetadata", {"path": "file:///tmp/execd-fuzz/a"}),
    ("fs/readDirectory", {"path": "file:///tmp/execd-fuzz"}),
    ("fs/remove", {"path": "file:///tmp/execd-fuzz/d", "recursive": True, "force": True}),
    ("fs/copy", {"sourcePath": "file:///tmp/execd-fuzz/a", "destinationPath": "file:///tmp/execd-fuzz/b",
                 "recursive": False}),
    ("fs/canonicalize", {"path": "file:///tmp/execd-fuzz/../tmp/./a"}),
    ("fs/walk", {"path": "file:///tmp/execd-fuzz", "options": {"maxDepth": 3, "maxDirectories": 10,
                 "maxEntries": 100, "followDirectorySymlinks": False}}),
    ("fs/open", {"handleId": "h1", "path": "file:///tmp/execd-fuzz/a", "mode": "read"}),
    ("fs/readBlock", {"handleId": "h1", "offset": 0, "len": 4}),
    ("fs/writeBlock", {"handleId": "h2", "offset": 3, "chunk": base64.b64encode(b"xyz").decode()}),
    ("fs/close", {"handleId": "h1"}),
    ("http/request", {"method": "GET", "url": "http://127.0.0.1:9/x", "requestId": "r1",
                      "headers": [{"name": "x-a", "value": "b"}], "timeoutMs": 100}),
]


def gen_rpc():
    t = "rpc"
    for i, (m, p) in enumerate(CALLS):
        put(t, "raw-%02d-%s" % (i, m.replace("/", "_")), msg(100 + i, m, p))
        # the structured form: byte 0 = 0x80 | table index, then the params
        put(t, "st-%02d-%s" % (i, m.replace("/", "_")),
            bytes([0x80 | i]) + (json.dumps(p).encode() if p is not None else b""))
    put(t, "raw-tty", msg(200, "process/start", dict(START, processId="t1", tty=True)))
    put(t, "raw-stdin", msg(201, "process/start", dict(START, processId="s1", pipeStdin=True,
                                                         arg0="zz", argv=["/bin/cat"])))
    put(t, "raw-envpolicy", msg(202, "process/start", dict(START, processId="e1", envPolicy={
        "inherit": "core", "ignoreDefaultExcludes": False, "exclude": ["*KEY*"],
        "set": {"A": "1"}, "includeOnly": []})))
    put(t, "raw-sandbox", msg(203, "process/start", dict(START, processId="x1", sandbox={
        "permissions": {"type": "disabled"}})))
    put(t, "raw-stream", msg(204, "http/request", {"method": "POST", "url": "https://localhost/",
        "requestId": "r2", "bodyBase64": "aGk=", "streamResponse": True,
        "redirectPolicy": "stop"}))
    put(t, "raw-notif", INITED)
    put(t, "raw-response", '{"id":5,"result":{}}')
    put(t, "raw-badjson", '{"id":1,"method":')
    put(t, "raw-trace", '{"id":"s","method":"environment/status","trace":{"traceparent":"00"}}')
    put(t, "raw-unknown", msg(9, "fs/watchMissing", {"watchId": 1, "missing": ["file:///tmp/execd-fuzz/q"]}))
    put(t, "disconnect", b"\xff" + msg(7, "process/read", {"processId": "p1"}).encode())


def gen_http_upgrade():
    t = "http_upgrade"
    # byte 0: bit 0 = a token is required, bit 1 = also parse a prefix
    put(t, "token-path", b"\x01" + upgrade("/" + TOKEN).encode())
    put(t, "token-bearer", b"\x03" + upgrade("/", {"Authorization": "Bearer " + TOKEN}).encode())
    put(t, "noauth", b"\x00" + upgrade("/").encode())
    put(t, "readyz", b"\x01GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    put(t, "notfound", b"\x00" + upgrade("/nope?x=1").encode())
    put(t, "origin", b"\x01" + upgrade("/" + TOKEN, {"Origin": "http://a"}).encode())
    put(t, "version", b"\x01" + upgrade("/" + TOKEN, version="8").encode())
    put(t, "nokey", b"\x01" + upgrade("/" + TOKEN, key=None).encode())
    put(t, "post", b"\x01" + upgrade("/" + TOKEN).replace("GET", "POST", 1).encode())
    put(t, "lf-only", b"\x00" + upgrade("/", lf="\n").encode())
    put(t, "plain-get", b"\x01GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    put(t, "incomplete", b"\x01GET / HTTP/1.1\r\nHost: x\r\n")
    put(t, "tokens-list", b"\x00" + upgrade("/", {"Connection": "keep-alive, Upgrade",
                                                  "Upgrade": "h2c, WebSocket"}).encode())
    put(t, "pipelined", b"\x01" + upgrade("/" + TOKEN).encode() + frame(INIT))


def gen_jsonl():
    t = "jsonl"
    # byte 0: knobs (bits 0-2) | cap index << 4; byte 1: piece size - 1
    lines = (INIT + "\n" + INITED + "\n" + msg(2, "environment/status") + "\n").encode()
    put(t, "session", b"\x00\x0f" + lines)
    put(t, "session-reply-pause", b"\x23\x00" + lines * 3)
    put(t, "crlf-blank", b"\x21\x03" + lines.replace(b"\n", b"\r\n") + b"\n \t\r\n\n" + lines)
    put(t, "no-final-newline", b"\x20\xff" + lines + INIT.encode())
    put(t, "overlong", b"\x00\x07" + b'{"id":1,"method":"' + b"x" * 100 + b'"}\n' + lines)
    put(t, "close", b"\x24\x10" + lines * 2)


def gen_ws():
    t = "ws"
    put(t, "text", b"\x20\x0f" + frame(INIT) + frame(INITED))
    put(t, "binary", b"\x21\x03" + frame(INIT, opcode=2))
    put(t, "fragmented", b"\x20\x02" + frame(INIT[:10], fin=False) + frame(INIT[10:20], opcode=0,
        fin=False) + frame(b"\x05", opcode=9) + frame(INIT[20:], opcode=0))
    put(t, "ping-pong", b"\x20\x01" + frame(b"hello", opcode=9) + frame(b"", opcode=10) +
        frame(INIT))
    put(t, "close", b"\x21\x05" + frame(INIT) + frame(b"\x03\xe8bye", opcode=8))
    put(t, "close-bad-code", b"\x20\x05" + frame(b"\x00\x01", opcode=8))
    put(t, "unmasked", b"\x20\x0f" + frame(INIT, mask=False))
    put(t, "len16", b"\x30\x7f" + frame(msg(3, "x", {"pad": "a" * 300})))
    put(t, "len64", b"\x30\xff" + frame(msg(3, "x", {"pad": "b" * 70000})))
    put(t, "rsv", b"\x20\x0f" + frame(INIT, rsv=4))
    put(t, "ctl-fragmented", b"\x20\x0f" + frame(b"x", opcode=9, fin=False))
    put(t, "bad-utf8", b"\x20\x0f" + frame(b'{"id":1,"method":"\xff\xfe"}'))
    put(t, "oversize", b"\x00\x0f" + frame("a" * 40))
    put(t, "pause-reply", b"\x23\x07" + frame(INIT) * 7)


def basic(user, pw):
    return base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()


def gen_proxy_http():
    t = "proxy_http"
    auth = "Proxy-Authorization: Basic %s\r\n" % basic(CRED_ID, CRED_SECRET)
    # byte 0: piece size / 4
    put(t, "connect", "\xff" + "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n" +
        auth + "\r\n")
    put(t, "connect-early-data", "\x03" + "CONNECT a.example.com:443 HTTP/1.1\r\n" + auth +
        "\r\n\x16\x03\x01\x00\x05hello")
    put(t, "get", "\xff" + "GET http://a.example.com/x?y=1 HTTP/1.1\r\nHost: a.example.com\r\n" +
        auth + "Connection: keep-alive\r\n\r\n")
    put(t, "post-body", "\x10" + "POST http://example.org:8080/p HTTP/1.1\r\nHost: example.org\r\n"
        + auth + "Content-Length: 5\r\n\r\nhello")
    put(t, "noauth", "\xff" + "GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n")
    put(t, "badauth", "\xff" + "CONNECT example.org:443 HTTP/1.1\r\n"
        "Proxy-Authorization: Basic %s\r\n\r\n" % basic(CRED_ID, "nope"))
    put(t, "denied", "\xff" + "CONNECT blocked.example.com:443 HTTP/1.1\r\n" + auth + "\r\n")
    put(t, "not-allowed", "\xff" + "CONNECT evil.test:443 HTTP/1.1\r\n" + auth + "\r\n")
    put(t, "local", "\xff" + "CONNECT 127.0.0.1:1 HTTP/1.1\r\n" + auth + "\r\n")
    put(t, "ipv6", "\xff" + "CONNECT [::1]:22 HTTP/1.1\r\n" + auth + "\r\n")
    put(t, "upgrade", "\xff" + "GET http://example.org/ws HTTP/1.1\r\nHost: example.org\r\n" +
        auth + "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
    put(t, "origin-form", "\xff" + "GET / HTTP/1.1\r\nHost: example.org\r\n" + auth + "\r\n")
    put(t, "malformed", "\x00" + "GET\r\n\r\n")
    put(t, "hop-headers", "\xff" + "GET http://example.org/ HTTP/1.0\r\n" + auth +
        "Proxy-Connection: close\r\nTE: trailers\r\nKeep-Alive: 5\r\n\r\n")


def gen_proxy_socks5():
    t = "proxy_socks5"
    greet = b"\x05\x01\x02"
    auth = b"\x01" + bytes([len(CRED_ID)]) + CRED_ID.encode() + bytes([len(CRED_SECRET)]) + \
        CRED_SECRET.encode()
    def req(cmd, atyp, addr, port):
        return b"\x05" + bytes([cmd, 0, atyp]) + addr + struct.pack("!H", port)
    put(t, "connect-name", b"\x3f" + greet + auth + req(1, 3, b"\x0bexample.org", 443))
    put(t, "connect-v4", b"\x01" + greet + auth + req(1, 1, b"\x7f\x00\x00\x01", 1))
    put(t, "connect-v6", b"\x3f" + greet + auth + req(1, 4, b"\x00" * 15 + b"\x01", 22))
    put(t, "connect-early", b"\x3f" + greet + auth + req(1, 3, b"\x0da.example.com", 80) +
        b"GET / HTTP/1.0\r\n\r\n")
    put(t, "udp", b"\x3f" + greet + auth + req(3, 1, b"\x00\x00\x00\x00", 0))
    put(t, "bind", b"\x3f" + greet + auth + req(2, 1, b"\x00\x00\x00\x00", 0))
    put(t, "noauth-method", b"\x3f\x05\x01\x00")
    put(t, "badcreds", b"\x3f" + greet + b"\x01\x01a\x01b")
    put(t, "atyp-bad", b"\x3f" + greet + auth + b"\x05\x01\x00\x07")
    put(t, "denied", b"\x3f" + greet + auth + req(1, 3, b"\x13blocked.example.com", 443))
    put(t, "many-methods", b"\x3f\x05\x04\x00\x01\x02\x80" + auth + req(1, 3, b"\x01a", 1))


def gen_policy():
    t = "policy"
    put(t, "full.conf", """# execd-proxy.conf
listen http 127.0.0.1:3128
listen socks5 [::1]:1080
control /run/execd-proxy/control.sock
dns-server 127.0.0.1 127.0.0.2:5353
dns-timeout 2s
allow example.com *.example.com **.example.org api-*.test *
deny evil.example.com
ports 80 443 8000-8999
allow-local no
mode limited
socks5-udp yes
upstream http://user:pw@127.0.0.1:8080
max-connections 100
max-connections-per-client 10
max-pending 50
header-timeout 500ms
connect-timeout 10
idle-timeout 300
audit file /var/log/execd-proxy.audit
ca-bundle /etc/ssl/certs/ca-certificates.crt
""")
    put(t, "minimal.conf", "listen http 127.0.0.1:0\n")
    put(t, "bad.conf", "listen http 10.0.0.1:3128\nbogus keyword\n")
    put(t, "policy.json", json.dumps({"allow": ["example.com", "*.a.test"], "deny": ["b.a.test"],
                                       "ports": [443, "8000-8100"], "allow_local": False,
                                       "mode": "full", "enabled": True, "socks5": True,
                                       "socks5_udp": False}))


def gen_toml():
    t = "toml"
    put(t, "config.toml", """# a Codex config.toml
model = "gpt-5"
approval_policy = 'on-request'
project_root_markers = [".git", "ROOT"]

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-server"]
env = { TOKEN = "x", "quoted key" = 1 }
startup_timeout_sec = 1.5e1

[projects."/home/u/src/p"]
trust_level = "trusted"

[[profiles.list]]
name = "a"
""")
    put(t, "values.toml", """s1 = "esc \\t \\u00e9 \\U0001F600 \\e \\x41"
s2 = 'lit\\path'
s3 = \"\"\"
multi \\
  line\"\"\"
s4 = '''raw
 text'''
i = [0x1F, 0o17, 0b11, -1_000, +9223372036854775807]
f = [6.626e-34, -0.0, inf, -nan, 1_0.5_0]
d = [1979-05-27T07:32:00.999999-07:00, 1979-05-27 07:32:00Z, 1979-05-27, 07:32:00.5]
a.b.c = { d = [ {}, { e = 1 } ], f = true }
""")
    put(t, "errors.toml", "a = 1\n[t]\nb = [1,\n2\n[t]\n")


def gen_skill_meta():
    t = "skill_meta"
    put(t, "full.yaml", """interface:
  display_name: "Docs"
  short_description: Look things up
  icon_small: ./assets/small.svg
  brand_color: "#10A37F"
dependencies:
  tools:
    - type: mcp
      value: docs
      description: |
        The docs
        server
      transport: streamable_http
      url: https://example.com/mcp
    - {type: env_var, value: TOKEN}
policy:
  allow_implicit_invocation: True
  products: [codex, !chatgpt , !<!atlas> ~]
""")
    put(t, "aliases.yaml", """%YAML 1.1
%TAG !e! !
---
t: &t {type: a, value: "b\\u00a0c"}
p: &p codex
policy: !x
  products: [*p, !e!atlas ]
dependencies:
  tools: [*t, *t, -]
...
""")
    put(t, "spoiled.yaml", "policy:\n  allow_implicit_invocation: 'true'\n  products: ~\n"
        "dependencies:\n  tools: {type: a}\n? [k]\n: v\n")


NONE = 0xFFFFFFFF


def w_u32(v):
    return struct.pack("<I", v)


def w_str(s):
    if s is None:
        return w_u32(NONE)
    b = s.encode() if isinstance(s, str) else s
    return w_u32(len(b)) + b + b"\0"


def spawn_body(argv, env, tty=False, plan=None, prog="/usr/bin/true", fds=(0, 1, 2, 3)):
    """A spawn request after its op, as spawner.c writes it (little-endian)."""
    b = w_str(prog) + w_str("/tmp") + w_str(None) + w_str("/dev/pts/0" if tty else None)
    b += w_u32(1 if tty else 0)
    b += w_u32(len(argv)) + b"".join(w_str(a) for a in argv)
    b += w_u32(len(env)) + b"".join(w_str(e) for e in env)
    b += b"".join(w_u32(NONE if (tty and i < 3) else f) for i, f in enumerate(fds))
    if plan is None:
        return b + w_u32(0)
    return b + w_u32(1) + plan


def plan_body(net=1, mounts=(), routes=()):
    b = w_u32(1) + w_u32(net) + w_u32(1) + w_u32(40) + w_u32(NONE) + w_u32(NONE)
    b += w_str("0 0 1") + w_str("0 0 1") + w_str("/tmp") + w_str("landlock+seccomp")
    b += w_u32(len(mounts)) + b"".join(w_u32(op) + w_str(p) for op, p in mounts)
    b += w_u32(len(routes)) + b"".join(w_str(r) for r in routes)
    return b


def gen_spawn_wire():
    t = "spawn_wire"
    put(t, "plain", spawn_body(["true"], ["PATH=/usr/bin:/bin"]))
    put(t, "tty", spawn_body(["sh", "-c", "echo hi"], [], tty=True))
    put(t, "sandboxed", spawn_body(["true"], [], plan=plan_body(net=1)))
    put(t, "mounts", spawn_body(["true"], [], plan=plan_body(
        net=2, mounts=[(2, "/tmp/w"), (3, "/tmp/w/.git"), (4, "/tmp/w/key")],
        routes=[struct.pack("<H", 2) + struct.pack(">H", 3128) + bytes([127, 0, 0, 1]) +
                bytes(8)])))


for g in (gen_rpc, gen_http_upgrade, gen_jsonl, gen_ws, gen_proxy_http, gen_proxy_socks5,
          gen_policy, gen_spawn_wire, gen_toml, gen_skill_meta):
    g()
