#!/usr/bin/python3
"""networkProxy.proxy.credentialMasking and .credentialProviders: execd decodes
them as the reference does (the same -32602 texts for the same bad params,
checked against the reference when it is installed); a sandboxed `bash -c`
gets dummies for GITHUB_TOKEN, OPENAI_API_KEY and a custom provider's variable,
and the reference's two marker variables; a TLS origin on the provider's
prefix gets the real credential through execd-proxy's inspection, a host off
the prefixes gets the dummies; a login shell or an unsandboxed command runs
unmasked, as in the reference; no real value in the proxy's files."""
import glob
import json
import os
import shutil
import tempfile

from proxytest import Dnsmasq, Origin, Proxy, Tap, deadline, free_port, tmpdir
from execd_client import Execd, network_proxy, unb64
from tlstest import TestCA, TLSOrigin

deadline(150)
t = Tap()
hport = free_port()
P = Proxy("listen http 127.0.0.1:%d\nallow 127.0.0.1\n" % hport)
c = Execd(["--proxy-control", P.ctl_path])
caps = c.init_result["environmentInfo"]["capabilities"]
t.ok(caps.get("credentialMasking") is True and caps.get("credentialMaskingCustomProviders") is True,
     "credential masking is advertised with a proxy, as by the reference",
     {k: caps.get(k) for k in ("credentialMasking", "credentialMaskingCustomProviders")})
nc = Execd(["--no-embedded-proxy"])
ncaps = nc.init_result["environmentInfo"]["capabilities"]
t.ok(ncaps.get("credentialMasking") is False and
     ncaps.get("credentialMaskingCustomProviders") is False,
     "and not without one (--no-embedded-proxy)", ncaps)
nc.close()

SECRET = "mk-s3cr3tvalue"
GOOD = {"mine": {"env": ["MY_KEY"], "patterns": ["mk-[a-z0-9]{11}"],
                 "url_prefixes": ["https://api.example.com/v1/"], "url_prefix_from_env": None,
                 "auth": ["bearer", {"token": None}], "header": "x-api-key", "prefix": None}}
# (description, proxy fields, error text or None for accepted)
CASES = [
    ("masking on", {"credentialMasking": True}, None),
    ("masking off", {"credentialMasking": False}, None),
    ("masking null", {"credentialMasking": None}, "invalid type: null, expected a boolean"),
    ("masking an integer", {"credentialMasking": 1},
     "invalid type: integer `1`, expected a boolean"),
    ("masking a string", {"credentialMasking": "yes"},
     'invalid type: string "yes", expected a boolean'),
    ("providers empty", {"credentialProviders": {}}, None),
    ("a full provider", {"credentialMasking": True, "credentialProviders": GOOD}, None),
    ("an empty provider", {"credentialProviders": {"x": {}}}, None),
    ("an empty provider name", {"credentialProviders": {"": {}}}, None),
    ("providers a sequence", {"credentialProviders": []},
     "invalid type: sequence, expected a map"),
    ("providers null", {"credentialProviders": None}, "invalid type: null, expected a map"),
    ("provider null", {"credentialProviders": {"x": None}},
     "invalid type: null, expected struct CredentialProviderConfig"),
    ("provider integer", {"credentialProviders": {"x": 5}},
     "invalid type: integer `5`, expected struct CredentialProviderConfig"),
    ("env a string", {"credentialProviders": {"x": {"env": "A"}}},
     'invalid type: string "A", expected a sequence'),
    ("env null", {"credentialProviders": {"x": {"env": None}}},
     "invalid type: null, expected a sequence"),
    ("env item integer", {"credentialProviders": {"x": {"env": [1]}}},
     "invalid type: integer `1`, expected a string"),
    ("patterns item null", {"credentialProviders": {"x": {"patterns": [None]}}},
     "invalid type: null, expected a string"),
    ("url_prefixes a string", {"credentialProviders": {"x": {"url_prefixes": "a"}}},
     'invalid type: string "a", expected a sequence'),
    ("header integer", {"credentialProviders": {"x": {"header": 1}}},
     "invalid type: integer `1`, expected a string"),
    ("prefix integer", {"credentialProviders": {"x": {"prefix": 1}}},
     "invalid type: integer `1`, expected a string"),
    ("url_prefix_from_env integer", {"credentialProviders": {"x": {"url_prefix_from_env": 1}}},
     "invalid type: integer `1`, expected a string"),
    ("auth a string", {"credentialProviders": {"x": {"auth": "bearer"}}},
     'invalid type: string "bearer", expected a sequence'),
    ("auth unknown variant", {"credentialProviders": {"x": {"auth": ["zzz"]}}},
     "unknown variant `zzz`, expected one of `bearer`, `token`, `basic`, `header`"),
    ("auth empty map", {"credentialProviders": {"x": {"auth": [{}]}}},
     "invalid value: map, expected map with a single key"),
    ("auth map with data", {"credentialProviders": {"x": {"auth": [{"header": "x"}]}}},
     'invalid type: string "x", expected unit'),
    ("auth integer", {"credentialProviders": {"x": {"auth": [5]}}},
     "invalid type: integer `5`, expected string or map"),
    ("unknown field", {"credentialProviders": {"x": {"env": ["A"], "bogus": 1}}},
     "unknown field `bogus`, expected one of `env`, `patterns`, `url_prefixes`, "
     "`url_prefix_from_env`, `auth`, `header`, `prefix`"),
    ("unknown field first", {"credentialProviders": {"x": {"bogus": 1, "env": 5}}},
     "unknown field `bogus`, expected one of `env`, `patterns`, `url_prefixes`, "
     "`url_prefix_from_env`, `auth`, `header`, `prefix`"),
    ("type error first", {"credentialProviders": {"x": {"env": 5, "bogus": 1}}},
     "invalid type: integer `5`, expected a sequence"),
]


def params(i, fields):
    np = network_proxy({"127.0.0.1": "allow"})
    np["proxy"].update(fields)
    return {"processId": "c%d" % i, "argv": ["/bin/true"], "cwd": "file:///",
            "env": {"PATH": "/usr/bin:/bin"}, "tty": False, "networkProxy": np}


def answer(srv, i, fields):
    r = srv.call("process/start", params(i, fields))
    if "error" in r:
        return r["error"]
    srv.collect("c%d" % i)
    return None


got = {}
for i, (desc, fields, want) in enumerate(CASES):
    err = answer(c, i, fields)
    got[desc] = err
    if want is None:
        t.ok(err is None, "execd accepts: %s" % desc, err)
    else:
        t.eq(err, {"code": -32602, "message": want}, "execd refuses: %s" % desc)

# the secret stays in the child's environment: not in the proxy's audit or log
c.start("env", ["/bin/sh", "-c", "echo $MY_KEY"], env={"PATH": "/usr/bin:/bin", "MY_KEY": SECRET},
        networkProxy=params(0, {"credentialMasking": True, "credentialProviders": GOOD})
        ["networkProxy"])
out, code, _ = c.collect("env")
t.eq(out.get("stdout"), (SECRET + "\n").encode(),
     "without brokerage the child gets its environment as given (the reference's unmasked case)")
c.close()
P.stop()
leaked = []
for root, _, files in os.walk(P.dir):
    for f in files:
        try:
            with open(os.path.join(root, f), "rb") as fh:
                if SECRET.encode() in fh.read():
                    leaked.append(f)
        except OSError:
            pass
t.eq(leaked, [], "no provider secret in the proxy's audit log or files")

# ------------------------------------------------ masking end to end (sandboxed bash -c)
REAL_MINE = "mk-r3alsecret9"
REAL_GH = "ghp_REALgithubTOKENreal0123456789abcdefgh"
REAL_OAI = "sk-proj-REALopenaiKEYreal0123456789"
origin = Origin()
tca = TestCA()
tls = TLSOrigin(*tca.server_cert("api.test", ["DNS:api.test"]))
dns = Dnsmasq({"api.test": "127.0.0.1"})
P2 = Proxy("listen http 127.0.0.1:0\ndns-server %s\nupstream-ca %s\nallow api.test 127.0.0.1\n"
           "allow-local yes\n" % (dns.server, tca.cert))
work = tmpdir()
c2 = Execd(["--proxy-control", P2.ctl_path])
SB = {"permissions": {"type": "managed", "network": "restricted", "file_system": {
    "type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
        {"path": {"type": "path", "path": "file://" + work}, "access": "write"}]}},
    "windowsSandboxLevel": "disabled", "cwd": "file://" + work}
NP = network_proxy({"api.test": "allow", "127.0.0.1": "allow"})
NP["proxy"].update({"credentialMasking": True, "credentialProviders": {"mine": {
    "env": ["MY_KEY"], "patterns": ["mk-[a-z0-9]{11}"],
    "url_prefixes": ["https://api.test:%d/v1/" % tls.port], "auth": ["bearer"]}}})
ENV = {"PATH": "/usr/bin:/bin", "MY_KEY": REAL_MINE, "GITHUB_TOKEN": REAL_GH,
       "OPENAI_API_KEY": REAL_OAI, "OTHER": "kept"}
SCRIPT = ("env; curl -sS -m 10 --noproxy '' -o /dev/null -w 'tls=%%{http_code}\\n' "
          "-H \"Authorization: Bearer $MY_KEY\" https://api.test:%d/v1/x; "
          "curl -sS -m 10 --noproxy '' -o /dev/null -w 'off=%%{http_code}\\n' "
          "-H \"Authorization: Bearer $MY_KEY\" -H \"X-Gh: $GITHUB_TOKEN\" "
          "http://127.0.0.1:%d/v1/x" % (tls.port, origin.port))


def run2(pid, argv, sandbox=SB):
    extra = {"sandbox": sandbox} if sandbox else {}
    r = c2.call("process/start", {"processId": pid, "argv": argv, "cwd": "file://" + work,
                                  "env": ENV, "tty": False, "networkProxy": NP, **extra})
    if "error" in r:
        return r, {}, ""
    out, code, _ = c2.collect(pid, timeout=60)
    text = (out.get("stdout", b"") + out.get("stderr", b"")).decode(errors="replace")
    env = dict(l.split("=", 1) for l in text.splitlines() if "=" in l and l[0].isupper())
    return r, env, text


r, env, text = run2("m1", ["/bin/bash", "-c", SCRIPT])
t.ok("result" in r, "a sandboxed bash -c with credentialMasking starts", r)
t.ok(not any(v in text for v in (REAL_MINE, REAL_GH, REAL_OAI)),
     "the child never sees a real credential", text[:2000])
t.ok(env.get("GITHUB_TOKEN", "").startswith("ghp_masked") and
     len(env["GITHUB_TOKEN"]) == len(REAL_GH), "GITHUB_TOKEN: ghp_masked..., as long as the token",
     env.get("GITHUB_TOKEN"))
t.ok(env.get("OPENAI_API_KEY", "").startswith("sk-proj-masked") and
     len(env["OPENAI_API_KEY"]) == 51, "OPENAI_API_KEY: sk-proj-masked..., 51 long",
     env.get("OPENAI_API_KEY"))
mine = env.get("MY_KEY", "")
t.ok(mine != REAL_MINE and len(mine) == len(REAL_MINE) and mine.startswith("mk-"),
     "a custom provider's variable: a dummy of the same shape", mine)
t.eq((env.get("OTHER"), env.get("CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE")), ("kept", "1"),
     "other variables kept, the broker marker set")
listed = json.loads(env.get("CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS", "[]"))
t.eq(listed, [["@alias:" + k, env[k]] for k in sorted(["GITHUB_TOKEN", "MY_KEY", "OPENAI_API_KEY"])] +
     [[k, env[k]] for k in sorted(["GITHUB_TOKEN", "MY_KEY", "OPENAI_API_KEY"])],
     "CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS lists the aliases, then the names")
t.ok("tls=200" in text, "the TLS origin answers through the inspecting proxy", text[-600:])
auths = [q["headers"].get("Authorization") for q in tls.requests]
t.eq(auths, ["Bearer " + REAL_MINE], "the TLS origin on the prefix gets the real credential")
hdrs = origin.requests[-1]["headers"] if origin.requests else {}
t.ok("off=200" in text and hdrs.get("Authorization") == "Bearer " + mine and
     hdrs.get("X-Gh") == env.get("GITHUB_TOKEN"),
     "a host off every prefix gets the dummies", (hdrs, text[-300:]))

r, env, text = run2("m2", ["/bin/bash", "-lc", "env"])
t.eq(env.get("GITHUB_TOKEN"), REAL_GH, "a login shell runs unmasked, as in the reference")
# the same through execd's own proxy (plain HTTP: it trusts only the system's CAs)
c2.close()
c2 = Execd([])
# a loopback prefix with allowLocalBinding: the child would reach it past the
# proxy (NO_PROXY), so the reference leaves the variable unmasked; so does execd
NP = network_proxy({"127.0.0.1": "allow"})
NP["proxy"].update({"credentialMasking": True, "credentialProviders": {"mine": {
    "env": ["MY_KEY"], "patterns": ["mk-[a-z0-9]{11}"],
    "url_prefixes": ["http://127.0.0.1:%d/v1/" % origin.port]}}})
r, env, text = run2("e0", ["/bin/bash", "-c", "env"])
t.eq(env.get("MY_KEY"), REAL_MINE,
     "a loopback prefix with allowLocalBinding: unmasked, as in the reference")
NP = network_proxy({"127.0.0.1": "allow"}, allow_local=False)
NP["proxy"].update({"credentialMasking": True, "credentialProviders": {"mine": {
    "env": ["MY_KEY"], "patterns": ["mk-[a-z0-9]{11}"],
    "url_prefixes": ["http://127.0.0.1:%d/v1/" % origin.port]}}})
r, env, text = run2("e1", ["/bin/bash", "-c", "env; curl -sS -m 10 --noproxy '' -o /dev/null "
                          "-w 'emb=%%{http_code}\\n' -H \"Authorization: Bearer $MY_KEY\" "
                          "http://127.0.0.1:%d/v1/e" % origin.port])
hdrs = origin.requests[-1]["headers"] if origin.requests else {}
t.ok(REAL_MINE not in text and env.get("MY_KEY", REAL_MINE) != REAL_MINE and "emb=200" in text and
     hdrs.get("Authorization") == "Bearer " + REAL_MINE,
     "execd's own proxy: the child holds a dummy, the origin gets the real value",
     (env.get("MY_KEY"), hdrs, text[-300:]))
c2.close()
c2 = Execd(["--proxy-control", P2.ctl_path])
NP = network_proxy({"api.test": "allow", "127.0.0.1": "allow"})
NP["proxy"].update({"credentialMasking": True})
r, env, text = run2("m3", ["/bin/bash", "-c", "env"], sandbox=None)
t.eq(env.get("GITHUB_TOKEN"), REAL_GH, "without a sandbox: unmasked, as in the reference")
c2.close()
P2.stop()
# a proxy that does not inspect TLS could not put the real values back: unmasked
P3 = Proxy("listen http 127.0.0.1:0\nallow api.test 127.0.0.1\ninspect no\n")
c2 = Execd(["--proxy-control", P3.ctl_path])
r, env, text = run2("m4", ["/bin/bash", "-c", "env"])
t.eq((env.get("GITHUB_TOKEN"), env.get("CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE")),
     (REAL_GH, None), "a proxy without TLS inspection: unmasked, no marker")
c2.close()
P3.stop()
logs = ""
for root, _, files in os.walk(P2.dir):
    for f in files:
        with open(os.path.join(root, f), "rb") as fh:
            logs += fh.read().decode(errors="replace")
t.ok(not any(v in logs for v in (REAL_MINE, REAL_GH, REAL_OAI)),
     "no real credential in the proxy's audit log or log")

refs = sorted(glob.glob(os.environ.get(
    "CODEX_REF", "/opt/codex-ref/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex")))
if not refs:
    t.skip("the same answers from the reference", "reference codex not installed")
else:
    home = tempfile.mkdtemp(prefix="credmask-ref-", dir=os.environ.get("TMPDIR_REF", "/var/tmp"))
    ref = Execd(argv=[refs[0], "exec-server", "--listen", "stdio"],
                env=dict(os.environ, CODEX_HOME=home, RUST_LOG="off"))
    diffs = []
    for i, (desc, fields, _) in enumerate(CASES):
        r = answer(ref, i, fields)
        if r != got[desc]:
            diffs.append((desc, got[desc], r))
    ref.close()
    shutil.rmtree(home, ignore_errors=True)
    t.eq(diffs, [], "the reference answers every case as execd does")
t.done()
