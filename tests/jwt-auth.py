#!/usr/bin/env python3
"""Differential test: signed bearer tokens (`--ws-auth signed-bearer-token`).

execd and the reference `codex exec-server` are started with the same
shared secret, issuer and audience; each case sends one WebSocket upgrade
request (raw HTTP, so odd headers survive) to both and compares the HTTP
status and the body.  A second table compares start-up flag handling: exit
status and the error message (without each program's prefix).

Environment: EXECD (default $top_builddir/src/execd), CODEX_REF (default the
installed reference).  Skipped (TAP SKIP) when the reference is missing.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from execd_client import find_ref

TOP = os.environ.get("top_builddir", ".")
EXECD = os.path.abspath(os.environ.get("EXECD", os.path.join(TOP, "src", "execd")))
SECRET = b"k3y-for-the-jwt-differential-test-0123456789"
START_WAIT = 60     # seconds a server may take to listen or to refuse its flags
ISS, AUD = "execd-test-issuer", "execd-test-audience"


def b64(x):
    return base64.urlsafe_b64encode(x).rstrip(b"=").decode()


def js(o):
    return b64(json.dumps(o, separators=(",", ":")).encode()) if not isinstance(o, str) \
        else b64(o.encode())


def sign(signing_input, key=SECRET, alg=hashlib.sha256):
    return b64(hmac.new(key, signing_input.encode(), alg).digest())


def token(claims, header=None, key=SECRET, sig=None):
    head = js(header if header is not None else {"alg": "HS256", "typ": "JWT"})
    body = js(claims)
    si = head + "." + body
    return si + "." + (sig if sig is not None else sign(si, key))


def claims(**kw):
    now = int(time.time())
    c = {"iss": ISS, "aud": AUD, "exp": now + 600, "iat": now}
    for k, v in kw.items():
        if v is DROP:
            c.pop(k, None)
        else:
            c[k] = v
    return c


DROP = object()


def cases():
    now = int(time.time())
    good = token(claims())
    h = "Bearer "
    si = js({"alg": "HS256"}) + "." + js(claims())
    t = [
        ("valid", [h + good]),
        ("valid, lower-case bearer", ["bearer " + good]),
        ("valid, upper-case BEARER", ["BEARER " + good]),
        ("valid, two spaces", ["Bearer  " + good]),
        ("valid, aud array", [h + token(claims(aud=["x", AUD]))]),
        ("valid, typ kid crit ignored", [h + token(claims(), {"alg": "HS256", "typ": "foo", "kid": "k", "crit": ["x"]})]),
        ("valid, no typ", [h + token(claims(), {"alg": "HS256"})]),
        ("wrong signature", [h + token(claims(), key=b"another-secret-another-secret-another")]),
        ("signature flipped bit", [h + good[:-2] + ("A" if good[-2] != "A" else "B") + good[-1]]),
        ("empty signature", [h + si + "."]),
        ("alg none", [h + js({"alg": "none"}) + "." + js(claims()) + "."]),
        ("alg none signed", [h + token(claims(), {"alg": "none"})]),
        ("alg HS512", [h + token(claims(), {"alg": "HS512"})]),
        ("alg HS512 signed 512", [h + (lambda s: s + "." + sign(s, alg=hashlib.sha512))(js({"alg": "HS512"}) + "." + js(claims()))]),
        ("alg RS256", [h + token(claims(), {"alg": "RS256"})]),
        ("alg hs256 lower", [h + token(claims(), {"alg": "hs256"})]),
        ("alg missing", [h + token(claims(), {"typ": "JWT"})]),
        ("alg number", [h + token(claims(), {"alg": 256})]),
        ("header duplicate alg", [h + token(claims(), '{"alg":"HS256","alg":"HS256"}')]),
        ("header array", [h + token(claims(), '["HS256"]')]),
        ("expired", [h + token(claims(exp=now - 3600))]),
        ("expired within skew", [h + token(claims(exp=now - 10))]),
        ("expired beyond skew", [h + token(claims(exp=now - 60))]),
        ("exp missing", [h + token(claims(exp=DROP))]),
        ("exp float", [h + token(claims(exp=now + 600.5))]),
        ("exp null", [h + token(claims(exp=None))]),
        ("exp string", [h + token(claims(exp=str(now + 600)))]),
        ("exp negative", [h + token(claims(exp=-1))]),
        ("exp huge", [h + token(claims(exp=2**63))]),
        ("nbf future", [h + token(claims(nbf=now + 3600))]),
        ("nbf within skew", [h + token(claims(nbf=now + 10))]),
        ("nbf beyond skew", [h + token(claims(nbf=now + 60))]),
        ("nbf past", [h + token(claims(nbf=now - 60))]),
        ("nbf after exp", [h + token(claims(nbf=now + 20, exp=now + 10))]),
        ("nbf after exp, both past", [h + token(claims(nbf=now - 10, exp=now - 20))]),
        ("nbf after exp, beyond skew", [h + token(claims(nbf=now + 3600, exp=now + 600))]),
        ("exp zero", [h + token(claims(exp=0))]),
        ("nbf negative", [h + token(claims(nbf=-5))]),
        ("nbf null", [h + token(claims(nbf=None))]),
        ("nbf string", [h + token(claims(nbf="0"))]),
        ("nbf float", [h + token(claims(nbf=now - 0.5))]),
        ("iss missing", [h + token(claims(iss=DROP))]),
        ("iss wrong", [h + token(claims(iss="someone-else"))]),
        ("iss array", [h + token(claims(iss=[ISS]))]),
        ("iss null", [h + token(claims(iss=None))]),
        ("iss number", [h + token(claims(iss=5))]),
        ("aud missing", [h + token(claims(aud=DROP))]),
        ("aud wrong", [h + token(claims(aud="other"))]),
        ("aud empty array", [h + token(claims(aud=[]))]),
        ("aud array without", [h + token(claims(aud=["a", "b"]))]),
        ("aud array of numbers", [h + token(claims(aud=[1]))]),
        ("aud null", [h + token(claims(aud=None))]),
        ("aud number", [h + token(claims(aud=7))]),
        ("claims duplicate exp", [h + token('{"iss":"%s","aud":"%s","exp":%d,"exp":%d}' % (ISS, AUD, now + 600, now + 600))]),
        ("claims array", [h + token("[1]")]),
        ("claims not json", [h + token("not json")]),
        ("header padded base64", [h + (lambda hd: hd + "=." + js(claims()) + "." + sign(hd + "=." + js(claims())))(js({"alg": "HS256"}))]),
        ("claims standard base64 chars", [h + good.replace("-", "+").replace("_", "/")] if ("-" in good or "_" in good) else [h + good[:5] + "+" + good[6:]]),
        ("base64 bad char", [h + "*" + good[1:]]),
        ("base64 len 4n+1", [h + (lambda s: s + "." + sign(s))(js({"alg": "HS256"}) + "." + js(claims()) + "A")]),
        ("base64 trailing bits", [h + (lambda p: (lambda s: s + "." + sign(s))(p[0] + "." + p[1][:-1] + chr(ord(p[1][-1]) + 1)))(si.split("."))]),
        ("two segments", [h + si]),
        ("four segments", [h + good + ".x"]),
        ("one segment", [h + "abc"]),
        ("empty segments", [h + ".."]),
        ("missing header", []),
        ("Basic scheme", ["Basic dXNlcjpwYXNz"]),
        ("Bearer only", ["Bearer"]),
        ("Bearer space only", ["Bearer "]),
        ("Bearer tab", ["Bearer\t" + good]),
        ("Bearer no space", ["Bearer" + good]),
        ("Bearerx", ["Bearerx " + good]),
        ("token then junk", [h + good + " junk"]),
        ("non-ascii", [h + good + "\u00e9"]),
        ("two headers, good first", [h + good, h + "bad"]),
        ("two headers, bad first", [h + "bad", h + good]),
        ("origin with good token", [h + good], {"Origin": "http://127.0.0.1"}),
        ("origin without token", [], {"Origin": "http://example.com"}),
    ]
    return t


def cases_open():
    """A server without --ws-issuer/--ws-audience and a 5 s skew."""
    now = int(time.time())
    h = "Bearer "
    return [
        ("open: no iss, no aud", [h + token({"exp": now + 600})]),
        ("open: aud string", [h + token({"exp": now + 600, "aud": "x"})]),
        ("open: aud array", [h + token({"exp": now + 600, "aud": ["x", "y"]})]),
        ("open: aud empty array", [h + token({"exp": now + 600, "aud": []})]),
        ("open: aud number", [h + token({"exp": now + 600, "aud": 1})]),
        ("open: iss string", [h + token({"exp": now + 600, "iss": "anyone"})]),
        ("open: iss array", [h + token({"exp": now + 600, "iss": ["a"]})]),
        ("open: expired 3 s (skew 5)", [h + token({"exp": now - 3})]),
        ("open: expired 20 s (skew 5)", [h + token({"exp": now - 20})]),
        ("open: nbf in 20 s (skew 5)", [h + token({"exp": now + 600, "nbf": now + 20})]),
        ("open: exp missing", [h + token({"iss": "x"})]),
    ]


def request(port, authz, extra):
    lines = ["GET / HTTP/1.1", "Host: 127.0.0.1:%d" % port, "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
             "Sec-WebSocket-Version: 13"]
    lines += ["Authorization: " + a for a in authz]
    lines += ["%s: %s" % kv for kv in extra.items()]
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(raw)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    if status != 101 and m:
        want = int(m.group(1))
        while len(body) < want:
            chunk = s.recv(4096)
            if not chunk:
                break
            body += chunk
    s.close()
    return status, body.decode("utf-8", "replace") if status != 101 else ""


def start(argv, env):
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    line = p.stdout.readline().decode().strip()
    m = re.match(r"ws://127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        raise SystemExit("Bail out! %s did not start: %r %r" % (argv[0], line, p.stderr.read()))
    return p, int(m.group(1))


def strip_prefix(msg):
    """The error line of a server's stderr, without its program prefix.  The
    reference may warn first (with CODEX_HOME under /tmp: "WARNING: proceeding,
    even though we could not create PATH aliases..."): such lines are not its
    answer."""
    lines = [ln for ln in msg.strip().splitlines()
             if ln.strip() and not ln.startswith("WARNING: ")]
    msg = lines[0] if lines else ""
    for pre in ("Error: ", "error: "):
        if msg.startswith(pre):
            msg = msg[len(pre):]
    return re.sub(r"^execd(\[\d+\])?: ", "", msg)


def outcome(argv, env, cwd):
    """(exit status, first stderr line) of a server refusing its flags, or
    ("running", "") once it prints the address it listens on.  Decided by what
    the server does, not by a time: on a loaded machine the reference alone can
    take seconds to start."""
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        # the address, or "" at exit; a server doing neither for START_WAIT hangs
        if not select.select([p.stdout], [], [], START_WAIT)[0]:
            return ("neither listening nor exited after %d s" % START_WAIT, "")
        line = p.stdout.readline()
        if line.startswith(b"ws://"):
            return ("running", "")
        se = p.communicate(timeout=START_WAIT)[1]
        return (p.returncode, strip_prefix(se.decode("utf-8", "replace")))
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def run_flags(ref, env, work):
    secret = os.path.join(work, "secret")
    short = os.path.join(work, "short")
    rel = "secret"
    table = [
        ["--ws-auth", "signed-bearer-token"],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", short],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", "short"],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", os.path.join(work, "nonexistent")],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", work],
        ["--ws-issuer", ISS],
        ["--ws-audience", AUD],
        ["--ws-shared-secret-file", secret],
        ["--ws-max-clock-skew-seconds", "5"],
        ["--ws-auth", "capability-token", "--ws-shared-secret-file", secret],
        ["--ws-auth", "capability-token", "--ws-issuer", ISS],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret, "--ws-token-file", secret],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret, "--ws-token-sha256", "00"],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret, "--ws-max-clock-skew-seconds", "abc"],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret, "--ws-max-clock-skew-seconds", "99999999999999999999"],
        ["--ws-auth", "bogus"],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret, "--ws-max-clock-skew-seconds", ""],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", rel],
        ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret, "--ws-issuer", "", "--ws-audience", AUD, "--ws-max-clock-skew-seconds", "0"],
    ]
    results = []
    for args in table:
        out = []
        for argv in ([ref, "exec-server", "--listen", "ws://127.0.0.1:0"],
                     [EXECD, "--listen", "ws://127.0.0.1:0", "--log", "stderr"]):
            out.append(outcome(argv + args, env, work))
        results.append((" ".join(args), out[0], out[1]))
    return results


def main():
    ref = find_ref()
    print("1..2")
    if ref is None or not os.access(ref, os.X_OK):
        print("ok 1 # SKIP reference codex not installed")
        print("ok 2 # SKIP reference codex not installed")
        return 0
    base = os.path.join(os.getcwd(), "jwt-auth.tmp")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(os.path.join(base, "home"))
    work = base
    with open(os.path.join(work, "secret"), "wb") as f:
        f.write(b"  \n" + SECRET + b"\n\n")
    with open(os.path.join(work, "short"), "wb") as f:
        f.write(b"  0123456789abcdef0123456789abcde\n")   # 31 bytes once trimmed
    env = dict(os.environ, CODEX_HOME=os.path.join(base, "home"), RUST_LOG="off")
    common = ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file",
              os.path.join(work, "secret"), "--ws-issuer", ISS, "--ws-audience", AUD]
    open_args = ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file",
                 os.path.join(work, "secret"), "--ws-max-clock-skew-seconds", "5"]
    total = differ = 0
    for args, table in ((common, cases()), (open_args, cases_open())):
        procs = []
        try:
            rp, rport = start([ref, "exec-server", "--listen", "ws://127.0.0.1:0"] + args, env)
            procs.append(rp)
            ep, eport = start([EXECD, "--listen", "ws://127.0.0.1:0", "--log", "none"] + args, env)
            procs.append(ep)
            for c in table:
                name, authz = c[0], c[1]
                extra = c[2] if len(c) > 2 else {}
                r = request(rport, authz, extra)
                e = request(eport, authz, extra)
                total += 1
                differ += r != e
                print("# %-6s %-34s ref %s %-34r execd %s %r" % (
                    "same" if r == e else "DIFFER", name, r[0], r[1], e[0], e[1]))
        finally:
            for p in procs:
                p.kill()
                p.wait()
    print("# tokens: %d cases, %d differ" % (total, differ))
    print(("ok" if differ == 0 else "not ok") + " 1 - token table matches the reference")
    flags = run_flags(ref, env, work)
    fdiffer = 0
    for args, r, e in flags:
        same = r == e
        fdiffer += not same
        print("# %-6s %s\n#        ref %r\n#        execd %r" % ("same" if same else "DIFFER", args, r, e))
    print("# flags: %d cases, %d differ" % (len(flags), fdiffer))
    print(("ok" if fdiffer == 0 else "not ok") + " 2 - start-up flags match the reference")
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
