#!/usr/bin/python3
"""Generated differential test of the WebSocket listener with
`--ws-auth signed-bearer-token`: random JWTs (headers, claims, signatures,
encodings, sizes) in random HTTP request heads (methods, paths, the upgrade
headers in their spellings, Origin, several Authorization headers, many or
big headers), each sent to execd and to the reference.  The status line, the
headers and the body must be the same, but for what README names as
deliberate: execd answers one request per connection (`connection: close`,
where the reference keeps it alive), says `www-authenticate: Bearer` with a
401, and sends no `date`.  The cases of REGRESSIONS always run.

Seeded and repeatable:
  GEN_CASES  generated cases (default 300; 60 in a sanitizer build)
  GEN_SEED   the seed (default 34); GEN_ONLY=n runs case n alone
  EXECD, CODEX_REF as in tests/jwt-auth.py; without the reference: SKIP
"""
import base64
import hashlib
import hmac
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from execd_client import find_ref

TOP = os.environ.get("top_builddir", ".")
EXECD = os.path.abspath(os.environ.get("EXECD", os.path.join(TOP, "src", "execd")))
SAN = bool(os.environ.get("EXECD_SANITIZERS", "").strip())
NCASES = int(os.environ.get("GEN_CASES") or (60 if SAN else 300))
SEED = int(os.environ.get("GEN_SEED") or 34)
ONLY = os.environ.get("GEN_ONLY")
SECRET = b"k3y-for-the-jwt-generated-differential-0123456789"
ISS, AUD = "gen-issuer", "gen-audience"
KEY = "dGhlIHNhbXBsZSBub25jZQ=="
DELIBERATE = ("date", "connection", "www-authenticate")


def b64(x):
    return base64.urlsafe_b64encode(x).rstrip(b"=").decode()


def seg(o):
    return b64(o.encode() if isinstance(o, str) else
               json.dumps(o, separators=(",", ":")).encode())


def mac(si, key=SECRET, alg=hashlib.sha256):
    return b64(hmac.new(key, si.encode(), alg).digest())


# --- the generator ---------------------------------------------------------

def pick_time(rng, now):
    # far from the edges of a 30 s (or 5 s) skew: the two servers read their
    # clocks a moment apart
    return now + rng.choice([-100000, -3600, -120, -18, 18, 120, 3600, 100000])


def gen_claims(rng, now):
    c = {}
    for k in ("iss", "aud", "exp", "nbf", "iat", "sub", "pad"):
        r = rng.random()
        if k == "iss":
            v = rng.choice([ISS, ISS, ISS, "other", "", [ISS], None, 5, ISS.upper()])
        elif k == "aud":
            v = rng.choice([AUD, AUD, [AUD], ["x", AUD], [], ["x"], None, 7, [1], "other", AUD + " "])
        elif k in ("exp", "nbf", "iat"):
            v = rng.choice([pick_time(rng, now)] * 4 +
                           [None, "1", 1.5, pick_time(rng, now) + 0.5, -1, 0, 2**63, 2**64,
                            True, [1]])
        elif k == "sub":
            v = rng.choice(["u", 1, None, {"a": 1}, [1], True, 2**70])
        else:
            v = "x" * rng.choice([1, 100, 3000, 9000, 30000])
        if (k == "exp" and r < 0.85) or (k in ("iss", "aud") and r < 0.85) or r < 0.25:
            c[k] = v
    return c


def gen_token(rng, now):
    head = rng.choice([{"alg": "HS256", "typ": "JWT"}] * 6 + [
        {"alg": "HS256"}, {"alg": "none"}, {"alg": "HS512"}, {"alg": "RS256"}, {"alg": "hs256"},
        {"typ": "JWT"}, {"alg": 256}, '{"alg":"HS256","alg":"HS256"}', '["HS256"]',
        {"alg": "HS256", "kid": "k", "crit": ["x"], "typ": "foo"}, "not json"])
    claims = gen_claims(rng, now)
    body = claims
    r = rng.random()
    if r < 0.05:
        body = rng.choice(["[1]", "not json", "null", '{"exp":1,"exp":2}'])
    elif r < 0.1:
        d = json.dumps(claims, separators=(",", ":"))
        body = d[:-1] + (',"exp":%d}' % pick_time(rng, now) if len(d) > 2 else '"exp":1}')
    h, b = seg(head), seg(body)
    r = rng.random()
    if r < 0.03:
        h += "="
    elif r < 0.06:
        b = b.replace("-", "+").replace("_", "/")
    si = h + "." + b
    r = rng.random()
    if r < 0.75:
        sig = mac(si)
    elif r < 0.8:
        sig = mac(si, b"another-secret-another-secret-another")
    elif r < 0.85:
        sig = mac(si, alg=hashlib.sha512)
    elif r < 0.9:
        sig = ""
    elif r < 0.95:
        s = mac(si)
        sig = s[:-2] + ("A" if s[-2] != "A" else "B") + s[-1]
    else:
        sig = mac(si) + rng.choice(["=", "A", "!", "\u00e9"])
    tok = si + "." + sig
    r = rng.random()
    if r < 0.03:
        tok = si
    elif r < 0.06:
        tok += ".x"
    elif r < 0.08:
        tok = rng.choice(["", "..", "abc", "a.b.c"])
    return tok


def gen_auth(rng, now):
    tok = gen_token(rng, now)
    scheme = rng.choice(["Bearer "] * 6 + ["bearer ", "BEARER ", "Bearer  ", "Bearer\t",
                                            "Bearer", "Basic ", "Bearerx ", " Bearer "])
    tail = rng.choice([""] * 8 + [" ", " junk", "\t"])
    return scheme + tok + tail


def spell(rng, canon):
    return rng.choice([canon, canon.lower(), canon.upper()])


def gen_case(seed, n):
    rng = random.Random("%d/%d" % (seed, n))
    now = int(time.time())
    method = rng.choice(["GET"] * 12 + ["POST", "HEAD", "PUT", "OPTIONS", "get"])
    version = rng.choice(["1.1"] * 30 + ["1.0"])
    path = rng.choice(["/"] * 10 + ["/readyz", "/readyz?x=1", "/healthz", "/foo", "/readyz/",
                                    "/?a=b", "//", "/%2F"])
    hs = [("Host", "127.0.0.1")]
    r = rng.random()
    if r < 0.9:
        hs.append((spell(rng, "Upgrade"), rng.choice(["websocket"] * 6 + [
            "WebSocket", "websocket, h2c", "h2c", "", " websocket "])))
    if rng.random() < 0.92:
        hs.append((spell(rng, "Connection"), rng.choice(["Upgrade"] * 6 + [
            "keep-alive, Upgrade", "upgrade", "close", "", "Upgrade,", "keep-alive"])))
    if rng.random() < 0.92:
        hs.append(("Sec-WebSocket-Key", rng.choice([KEY] * 8 + ["short", "", "x" * 30])))
    if rng.random() < 0.92:
        hs.append(("Sec-WebSocket-Version", rng.choice(["13"] * 8 + ["8", "", " 13", "13, 8"])))
    for _ in range(rng.choice([1] * 8 + [0, 2, 3])):
        hs.append((spell(rng, "Authorization"), gen_auth(rng, now)))
    if rng.random() < 0.08:
        hs.append(("Origin", rng.choice(["http://127.0.0.1", "null", ""])))
    if rng.random() < 0.05:
        hs += [("X-H%d" % i, "v") for i in range(rng.choice([80, 94, 95, 120]))]
    if rng.random() < 0.04:
        hs.append(("X-Pad", "p" * rng.choice([9000, 60000, 300000, 600000])))
    if rng.random() < 0.1:
        rng.shuffle(hs)
    if rng.random() < 0.02:
        hs.append(rng.choice([("Bad Name", "x"), ("X-Ctl", "a\x01b"), ("", "x")]))
    return {"method": method, "path": path, "version": version, "headers": hs}


# Differences earlier runs found, fixed since: each stays a case of its own.
def regressions(now):
    good = lambda extra=None: (lambda si: si + "." + mac(si))(
        seg({"alg": "HS256", "typ": "JWT"}) + "." +
        seg(dict({"iss": ISS, "aud": AUD, "exp": now + 600}, **(extra or {}))))
    up = [("Host", "x"), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
          ("Sec-WebSocket-Key", KEY), ("Sec-WebSocket-Version", "13")]
    return [
        ("an empty 200 (GET /readyz) has no content-type",
         {"method": "GET", "path": "/readyz", "headers": [("Host", "x")]}),
        ("an empty 403 (Origin) has no content-type",
         {"method": "GET", "path": "/", "headers": up + [("Origin", "http://x"),
                                                         ("Authorization", "Bearer " + good())]}),
        ("an 8 KiB bearer token is accepted",
         {"method": "GET", "path": "/", "headers": up + [
             ("Authorization", "Bearer " + good({"pad": "x" * 8192}))]}),
        ("a 300 KiB head is accepted",
         {"method": "GET", "path": "/", "headers": up + [
             ("Authorization", "Bearer " + good({"pad": "x" * 300000}))]}),
        ("a head over 540 KiB gets an empty 431",
         {"method": "GET", "path": "/", "headers": up + [("X-Pad", "p" * 560000)]}),
        ("101 headers get an empty 431",
         {"method": "GET", "path": "/", "headers": up + [("X-H%d" % i, "v") for i in range(96)]}),
        ("another path is 404, before the upgrade and the token",
         {"method": "GET", "path": "/healthz", "headers": up}),
        ("POST / is 405, before the upgrade headers",
         {"method": "POST", "path": "/", "headers": [("Host", "x")]}),
        ("POST /readyz is 405 with allow",
         {"method": "POST", "path": "/readyz", "headers": [("Host", "x")]}),
        ("HEAD /readyz is 200",
         {"method": "HEAD", "path": "/readyz", "headers": [("Host", "x")]}),
        ("Origin on POST /readyz: 403 with allow",
         {"method": "POST", "path": "/readyz", "headers": [("Host", "x"), ("Origin", "x")]}),
        ("HEAD to no route: no content-length",
         {"method": "HEAD", "path": "/foo", "headers": [("Host", "x")]}),
        ("without key and version, the key is missing first",
         {"method": "GET", "path": "/", "headers": up[:3]}),
        ("an iat past int64 is no fault",
         {"method": "GET", "path": "/", "headers": up + [
             ("Authorization", "Bearer " + good({"iat": 2**64}))]}),
        ("an iat past int64 after a string ending in an escaped quote",
         {"method": "GET", "path": "/", "headers": up + [
             ("Authorization", "Bearer " + good({"x": "a\\\"", "iat": 2**64}))]}),
        ("a sub that is an object is",
         {"method": "GET", "path": "/", "headers": up + [
             ("Authorization", "Bearer " + good({"sub": {"a": 1}}))]}),
        ("a short Sec-WebSocket-Key is taken",
         {"method": "GET", "path": "/", "headers": up[:3] + [
             ("Sec-WebSocket-Key", "short"), up[4], ("Authorization", "Bearer " + good())]}),
        ("the first Upgrade header counts",
         {"method": "GET", "path": "/", "headers": [("Upgrade", "h2c")] + up + [
             ("Authorization", "Bearer " + good())]}),
        ("HTTP/1.0: 426",
         {"method": "GET", "path": "/", "version": "1.0", "headers": up + [
             ("Authorization", "Bearer " + good())]}),
        ("a lower-case method is HTTP",
         {"method": "get", "path": "/", "headers": up}),
        ("a field name with a space: empty 400",
         {"method": "GET", "path": "/readyz", "headers": [("Bad Name", "x")]}),
        ("a bad field past the 100th: 431, not 400",
         {"method": "GET", "path": "/readyz", "headers": [("X-H%d" % i, "v") for i in range(100)] +
          [("Bad Name", "x")]}),
        ("a bad 100th field: 400",
         {"method": "GET", "path": "/readyz", "headers": [("X-H%d" % i, "v") for i in range(99)] +
          [("Bad Name", "x")]}),
    ]


# --- running cases ----------------------------------------------------------

def encode(c):
    lines = ["%s %s HTTP/%s" % (c["method"], c["path"], c.get("version", "1.1"))]
    lines += ["%s: %s" % kv for kv in c["headers"]]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def exchange(port, data, head_only):
    """The answer's head and body (as its content-length says), or what came."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    got = b""
    try:
        s.sendall(data)
    except OSError:
        pass        # refused before all was sent: the answer is still there
    try:
        while b"\r\n\r\n" not in got:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        head, sep, body = got.partition(b"\r\n\r\n")
        m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        if sep and not head_only and not head.startswith(b"HTTP/1.1 101") and m:
            while len(body) < int(m.group(1)):
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        return head, body
    except OSError as e:
        return got, ("<%s>" % e.__class__.__name__).encode()
    finally:
        s.close()


def one(tag, c, eport, rport):
    """(tag, case, execd's, reference's) when they differ, else None."""
    data = encode(c)
    head_only = c["method"] == "HEAD"
    a = normalise(*exchange(eport, data, head_only))
    b = normalise(*exchange(rport, data, head_only))
    return (tag, c, a, b) if a != b else None


def normalise(head, body):
    lines = head.decode("utf-8", "replace").split("\r\n")
    hs = sorted("%s: %s" % (l.split(":", 1)[0].lower(), l.split(":", 1)[1].strip())
                for l in lines[1:] if ":" in l and l.split(":", 1)[0].lower() not in DELIBERATE)
    return [lines[0]] + hs + [body.decode("utf-8", "replace")]


def start(argv, env):
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, start_new_session=True)
    line = p.stdout.readline().decode().strip()
    m = re.match(r"ws://127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        raise SystemExit("Bail out! %s did not start: %r" % (argv[0], line))
    return p, int(m.group(1))


def main():
    signal.alarm(int(os.environ.get("GEN_ALARM") or max(240, NCASES // 10)))
    ref = find_ref()
    now = int(time.time())
    regs = regressions(now)
    print("1..%d" % (len(regs) + 2))
    if ref is None:
        for i in range(1, len(regs) + 3):
            print("ok %d # SKIP no reference" % i)
        return 0
    work = tempfile.mkdtemp(prefix="jwt-gen.", dir="/var/tmp")
    os.makedirs(os.path.join(work, "home"))
    with open(os.path.join(work, "secret"), "wb") as f:
        f.write(SECRET + b"\n")
    env = dict(os.environ, CODEX_HOME=os.path.join(work, "home"), RUST_LOG="off")
    args = ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file",
            os.path.join(work, "secret"), "--ws-issuer", ISS, "--ws-audience", AUD]
    procs = []
    failed = 0
    try:
        rp, rport = start([ref, "exec-server", "--listen", "ws://127.0.0.1:0"] + args, env)
        procs.append(rp)
        ep, eport = start([EXECD, "--listen", "ws://127.0.0.1:0", "--log", "none"] + args, env)
        procs.append(ep)
        nums = [int(ONLY)] if ONLY else range(NCASES)
        cases = [("r%d" % i, c) for i, (_, c) in enumerate(regs)]
        cases += [("g%d" % n, gen_case(SEED, n)) for n in nums]
        diffs = [d for d in (one(tag, c, eport, rport) for tag, c in cases) if d]
        # a difference that does not come again is reported, not counted
        flaky = [d for d in diffs if not one(d[0], d[1], eport, rport)]
        diffs = [d for d in diffs if d not in flaky]
        for tag, c, a, b in flaky:
            print("# case %s differed once, not again: not counted" % tag)
            print("#   execd:     %s\n#   reference: %s" % (json.dumps(a)[:300], json.dumps(b)[:300]))
        bad = {d[0] for d in diffs}
        for i, (d, _) in enumerate(regs, 1):
            ok = "r%d" % (i - 1) not in bad
            failed += not ok
            print("%s %d - %s" % ("ok" if ok else "not ok", i, d))
        gd = [d for d in diffs if d[0].startswith("g")]
        print("%s %d - %d generated cases (seed %d), %d differ" % (
            "not ok" if gd else "ok", len(regs) + 1, len(nums), SEED, len(gd)))
        failed += bool(gd)
        for tag, c, a, b in diffs[:int(os.environ.get("GEN_SHOW") or 5)]:
            short = dict(c, headers=[(k, v if len(v) < 200 else v[:60] + "...(%d)" % len(v))
                                     for k, v in c["headers"]][:12])
            print("# case %s (GEN_SEED=%d GEN_ONLY=%s): %s" % (tag, SEED, tag[1:],
                                                                json.dumps(short)))
            print("#   execd:     %s" % json.dumps(a)[:600])
            print("#   reference: %s" % json.dumps(b)[:600])
        alive = ep.poll() is None
        print("%s %d - execd still listens" % ("ok" if alive else "not ok", len(regs) + 2))
        failed += not alive
        sys.stderr.write("jwt-gen: %d cases, %d regression, %d differ, %d differed once\n" %
                         (len(cases), len(regs), len(diffs), len(flaky)))
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
