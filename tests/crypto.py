#!/usr/bin/python3
"""util/crypto's SHA-1, SHA-256, HMAC-SHA256 and comparison (libcrypto's:
the digests linked from libcrypto.a, HMAC through dlopen) agree with
Python's hashlib and hmac: every length around the block and padding
boundaries, long messages, keys shorter, as long as and longer than a
block."""
import hashlib
import hmac
import os
import subprocess
import tempfile

from execd_client import tap

t = tap(timeout=120)
prog = os.path.join(os.environ.get("top_builddir", "."), "tests", "crypto_digest")


def run(args, data):
    r = subprocess.run([prog] + args, input=data, capture_output=True, check=True)
    return r.stdout.decode().strip()


lengths = list(range(0, 200)) + [447, 448, 511, 512, 1000, 4096, 65535, 1 << 20]
bad = [n for n in lengths
       for data in [os.urandom(n)]
       if run(["sha1"], data) != hashlib.sha1(data).hexdigest()]
t.ok(not bad, "SHA-1 as hashlib's at %d lengths %s" % (len(lengths), bad[:5]))
bad = [n for n in lengths
       for data in [os.urandom(n)]
       if run(["sha256"], data) != hashlib.sha256(data).hexdigest()]
t.ok(not bad, "SHA-256 as hashlib's at %d lengths %s" % (len(lengths), bad[:5]))
# RFC 6455's example: the accept key of "dGhlIHNhbXBsZSBub25jZQ=="
key = b"dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
t.ok(run(["sha1"], key) == "b37a4f2cc0624f1690f64606cf385945b2bec4ea", "RFC 6455's handshake example")

with tempfile.NamedTemporaryFile() as kf:
    bad = []
    for klen in (0, 1, 31, 32, 63, 64, 65, 100, 200):
        k = os.urandom(klen)
        kf.seek(0)
        kf.truncate()
        kf.write(k)
        kf.flush()
        for n in (0, 1, 55, 56, 64, 300, 5000):
            m = os.urandom(n)
            if run(["hmac", kf.name], m) != hmac.new(k, m, hashlib.sha256).hexdigest():
                bad.append((klen, n))
    t.ok(not bad, "HMAC-SHA256 as Python's hmac %s" % bad[:5])

    ok = True
    for a, b in ((b"", b""), (b"token", b"token"), (b"token", b"tokem"), (b"xoken", b"token"),
                 (os.urandom(48), None)):
        b = a if b is None else b
        kf.seek(0)
        kf.truncate()
        kf.write(b)
        kf.flush()
        ok &= run(["equal", kf.name], a) == ("1" if a == b else "0")
    t.ok(ok, "the comparison: equal only when every byte is")
t.done()
