#!/usr/bin/python3
"""--tcp-upstream-proxy HOST:PORT values, execd beside the reference.

The option's answers to bad values are the reference's contract: the exit
status (2, a usage error, for every value it refuses) and the reason after
"invalid value '...' for '--tcp-upstream-proxy <HOST:PORT>': ".  A fixed
list of the spellings that differed once, then values generated from
pieces (names, labels with '-', '_', digits, long labels, IPv4 and IPv6
forms, brackets, zones, spaces, non-ASCII; ports with signs, zeros, hex,
out of range), seeded (CLI_SEED) and repeatable.  A value that looks like an
option is compared by its status only (clap's words name the flag it saw).  Both binaries get stdin
at EOF, so an accepted value exits 0 at once.  The reference's comparison
runs in the plain build only (the sanitizer pass skips it: slow).  TAP.
"""
import os
import random
import subprocess
import tempfile

from execd_client import find_ref, tap

t = tap(timeout=600)
BUILD = os.environ.get("top_builddir", ".")
EXECD = os.path.join(BUILD, "src", "execd")
REF = find_ref()
N = int(os.environ.get("CLI_CASES", "150"))
SEED = int(os.environ.get("CLI_SEED", "171"))

FIXED = ["foo", "127.0.0.1:0", ":80", "h:99999", "::1:80", "http://127.0.0.1:3128", "a b:1",
         "user@h:1", "[::1]:80", "h:80", "h:080", "H.Example:1", "1.2.3.4:65535",
         "[fe80::1%lo]:1", "h.:1", "-h:1", "h_x:1", "\u00e9:1", "h..x:1", ".h:1", "h-:1",
         "h..:1", "a" * 63 + ":1", "a" * 64 + ":1", "1.2.3:1", "010.1.1.1:1", "0x7f.1:1",
         "256.1.1.1:1", "h:+1", "h: 1", "h:1 ", "%41:1", "[::ffff:1.2.3.4]:1", "[::1]",
         "[::1]:", "h:65536", "h:000001", "1.2.3.4.:1", "127.1:1", "a.-h:1", "_h:1",
         "x.-:1", "[::1]:+1", "h:0x1", "h:++1", "h:-1", ":0", "::1:0", "::1:x",
         "[::1]:0", "fe80::1%lo:1", "1::2::3:1", "", "-", "[::1", "[]:1", "h:1:2",
         ".".join(["a" * 63] * 3) + "." + "a" * 61 + ":1",
         ".".join(["a" * 63] * 3) + "." + "a" * 62 + ":1",
         ".".join(["a" * 63] * 3) + "." + "a" * 61 + ".:1"]

HOSTS = ["h", "H", "example.com", "a-b", "-a", "a-", "_", "a_b", "1.2.3.4", "256.0.0.1",
         "1.2.3", "0x7f.0.0.1", "010.0.0.1", "::1", "[::1]", "[fe80::1%eth0]", "[1.2.3.4]",
         "[]", "[::1", "::1]", "x..y", ".x", "x.", "x..", "a" * 63, "a" * 64, "\u00e9", "a b",
         "a%20b", "a/b", "u@h", "h\t", "*", "xn--bcher-kva.example", "A.B.C", ""]
PORTS = ["1", "80", "0", "00", "+1", "++1", "-1", "65535", "65536", "99999", "0x50", " 1",
         "1 ", "", "08080", "1e2", "\u0661"]


def generated(rng):
    for _ in range(N):
        host = ".".join(rng.choice(HOSTS) for _ in range(rng.choice([1, 1, 1, 2, 3])))
        if rng.random() < 0.05:
            host = ".".join(["a" * rng.randint(60, 63)] * 4)
        sep = rng.choice([":", ":", ":", "::", "", ":1:"])
        yield host + sep + rng.choice(PORTS)


def answer(argv0, value):
    home = tempfile.mkdtemp(prefix="cliup.", dir="/var/tmp")
    argv = [argv0, "exec-server", "--listen", "stdio"] if argv0 == REF else [argv0, "--stdio"]
    try:
        p = subprocess.run(argv + ["--tcp-upstream-proxy", value], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=30,
                           env=dict(os.environ, CODEX_HOME=home))
    finally:
        subprocess.run(["rm", "-rf", home])
    err = p.stderr.decode(errors="replace")
    key = "for '--tcp-upstream-proxy <HOST:PORT>': "
    if key in err:
        reason = err.split(key, 1)[1].splitlines()[0]
    else:
        reason = ""
    # a value that looks like an option: clap names the short flag it saw
    # (-h is its help); both refuse it as a usage error, status 2
    if value.startswith("-") and value != "-":
        reason = "looks like an option"
    return p.returncode, reason


if REF is None or os.environ.get("EXECD_SANITIZERS"):
    t.skip("--tcp-upstream-proxy values beside the reference",
           "sanitizer pass (slow)" if REF else "no reference installed")
else:
    rng = random.Random(SEED)
    values = FIXED + list(generated(rng))
    differ = []
    for v in values:
        a, b = answer(REF, v), answer(EXECD, v)
        if a != b:
            differ.append((v, a, b))
    for v, a, b in differ[:20]:
        print("# %r: reference %r, execd %r" % (v, a, b))
    t.eq(len(differ), 0, "%d values (%d fixed, %d generated, seed %d): exit status and reason "
         "as the reference's" % (len(values), len(FIXED), len(values) - len(FIXED), SEED))
t.done()
