#!/usr/bin/python3
"""networkProxy.proxy.credentialMasking and .credentialProviders: execd decodes
them as the reference does (the same -32602 texts for the same bad params,
checked against the reference when it is installed); a sandboxed `bash -c`
gets dummies for GITHUB_TOKEN, OPENAI_API_KEY and a custom provider's variable,
and the reference's two marker variables; a TLS origin on the provider's
prefix gets the real credential through execd-proxy's inspection, a host off
the prefixes gets the dummies; a login shell or an unsandboxed command runs
unmasked, as in the reference; no real value in the proxy's files.  Which
custom providers mask is checked case by case against the reference (a
destination the child would reach past the proxy with allowLocalBinding,
url_prefix_from_env, destination syntax, the provider's other checks, Rust
pattern syntax); a provider named by url_prefix_from_env with basic gets
the real value inside Authorization: Basic at the origin it names."""
import base64
import glob
import http.server
import json
import os
import shutil
import socket
import tempfile
import threading

import proxytest
from proxytest import Dnsmasq, Origin, Proxy, Tap, deadline, free_port, tmpdir
from execd_client import Execd, find_ref, network_proxy, unb64
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


class V6Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


def v6_origin():
    """an Origin on [::1]"""
    o = Origin.__new__(Origin)
    o.srv = V6Server(("::1", 0), proxytest._Handler)
    o.srv.daemon_threads = True
    o.srv.requests = []
    o.port = o.srv.server_address[1]
    threading.Thread(target=o.srv.serve_forever, daemon=True).start()
    return o


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

# url_prefix_from_env names the destination, and the provider authenticates with basic:
# the TLS origin there gets the real value inside Authorization: Basic, re-encoded
NP_M1 = NP
NP = network_proxy({"api.test": "allow", "127.0.0.1": "allow"})
NP["proxy"].update({"credentialMasking": True, "credentialProviders": {"mine": {
    "env": ["MY_KEY"], "patterns": ["mk-[a-z0-9]{11}"], "url_prefix_from_env": "MY_API",
    "auth": ["bearer", "basic"]}}})
ENV_M1 = ENV
ENV = dict(ENV_M1, MY_API="https://api.test:%d/v2/" % tls.port)
n_tls = len(tls.requests)
r, env, text = run2("m5", ["/bin/bash", "-c",
                           "env; for u in v2/a v1/b; do curl -sS -m 10 --noproxy '' -o /dev/null "
                           "-w 'basic=%%{http_code}\\n' -u \"user:$MY_KEY\" "
                           "https://api.test:%d/$u; done" % tls.port])
basics = [q["headers"].get("Authorization") for q in tls.requests[n_tls:]]
t.ok(env.get("MY_KEY", REAL_MINE) != REAL_MINE and REAL_MINE not in text and
     basics == ["Basic " + base64.b64encode(("user:" + REAL_MINE).encode()).decode(),
                "Basic " + base64.b64encode(("user:" + env.get("MY_KEY", "")).encode()).decode()],
     "url_prefix_from_env and basic: the origin it names gets user:real in Basic, "
     "another path the dummy", (env.get("MY_KEY"), basics, text[-400:]))
NP, ENV = NP_M1, ENV_M1
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
# the same to an IPv6 literal: the prefix [::1] is brokered as the reference does
v6 = v6_origin()
NP = network_proxy({"::1": "allow"}, allow_local=False)
NP["proxy"].update({"credentialMasking": True, "credentialProviders": {"mine": {
    "env": ["MY_KEY"], "patterns": ["mk-[a-z0-9]{11}"],
    "url_prefixes": ["http://[::1]:%d/v1/" % v6.port]}}})
r, env, text = run2("e2", ["/bin/bash", "-c", "env; curl -sS -m 10 -o /dev/null "
                          "-w 'v6=%%{http_code}\\n' -H \"Authorization: Bearer $MY_KEY\" "
                          "http://[::1]:%d/v1/e" % v6.port])
hdrs = v6.requests[-1]["headers"] if v6.requests else {}
t.ok(REAL_MINE not in text and env.get("MY_KEY", REAL_MINE) != REAL_MINE and "v6=200" in text and
     hdrs.get("Authorization") == "Bearer " + REAL_MINE,
     "an IPv6 literal prefix: the child holds a dummy, the origin at [::1] gets the real value",
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

# ------------------------------------------------ which providers mask (against the reference)
# (description, provider fields over BASE, extra env, allowLocalBinding, "masked"/"real").
# The reference's verdicts were probed on 0.169.0; execd must give the same.
KEY = "mk-r3alsecret9"
BASE = {"env": ["MY_KEY"], "patterns": ["mk-[a-z0-9]{11}"],
        "url_prefixes": ["https://api.example.com/v1/"]}
URL = "https://api.other.com/v2/"
MASK_CASES = [
    # (a) a destination the child would reach past the proxy (NO_PROXY) with allowLocalBinding
    ("https public", {}, {}, True, "masked"),
    ("https 127.0.0.1, allowLocalBinding", {"url_prefixes": ["https://127.0.0.1:8443/v1/"]}, {},
     True, "real"),
    ("http 127.0.0.1, allowLocalBinding", {"url_prefixes": ["http://127.0.0.1:8080/"]}, {}, True,
     "real"),
    ("localhost", {"url_prefixes": ["https://localhost/v1/"]}, {}, True, "real"),
    ("a name under localhost", {"url_prefixes": ["https://a.localhost/"]}, {}, True, "real"),
    ("[::1]", {"url_prefixes": ["https://[::1]/v1/"]}, {}, True, "real"),
    ("10.1.2.3", {"url_prefixes": ["https://10.1.2.3/v1/"]}, {}, True, "real"),
    ("172.20.0.1", {"url_prefixes": ["https://172.20.0.1/"]}, {}, True, "real"),
    ("192.168.1.1", {"url_prefixes": ["https://192.168.1.1/v1/"]}, {}, True, "real"),
    ("127.0.0.2 (not in NO_PROXY)", {"url_prefixes": ["https://127.0.0.2/v1/"]}, {}, True,
     "masked"),
    ("a public IP", {"url_prefixes": ["https://93.184.216.34/v1/"]}, {}, True, "masked"),
    ("one loopback prefix among others", {"url_prefixes": [
        "https://127.0.0.1/v1/", "https://api.example.com/"]}, {}, True, "real"),
    ("https 127.0.0.1 without allowLocalBinding", {"url_prefixes": ["https://127.0.0.1:8443/"]},
     {}, False, "masked"),
    ("http 127.0.0.1 without allowLocalBinding", {"url_prefixes": ["http://127.0.0.1:8080/"]},
     {}, False, "masked"),
    ("10.1.2.3 without allowLocalBinding", {"url_prefixes": ["https://10.1.2.3/"]}, {}, False,
     "masked"),
    # IPv6 literals: brokered like any address; only ::1 is in NO_PROXY
    ("[::1] without allowLocalBinding", {"url_prefixes": ["https://[::1]:8443/"]}, {}, False,
     "masked"),
    ("http [::1] without allowLocalBinding", {"url_prefixes": ["http://[::1]:8080/"]}, {}, False,
     "masked"),
    ("[0:0:0:0:0:0:0:1] is ::1", {"url_prefixes": ["https://[0:0:0:0:0:0:0:1]/"]}, {}, True,
     "real"),
    ("[2001:db8::1]", {"url_prefixes": ["https://[2001:DB8::1]/v1/"]}, {}, True, "masked"),
    ("[::1]:8443 without a scheme", {"url_prefixes": ["[::1]:8443/x"]}, {}, False, "masked"),
    ("[::ffff:127.0.0.1] (not in NO_PROXY)", {"url_prefixes": ["https://[::ffff:127.0.0.1]/"]},
     {}, True, "masked"),
    ("[fd00::1] (not in NO_PROXY)", {"url_prefixes": ["https://[fd00::1]/"]}, {}, True, "masked"),
    ("http to a public IPv6 address", {"url_prefixes": ["http://[2001:db8::1]/"]}, {}, True,
     "real"),
    ("an IPv6 zone", {"url_prefixes": ["https://[fe80::1%25eth0]/"]}, {}, True, "real"),
    ("*. before an IPv6 literal", {"url_prefixes": ["https://*.[::1]/"]}, {}, False, "real"),
    ("an unbracketed IPv6 literal", {"url_prefixes": ["https://::1/"]}, {}, False, "real"),
    # destinations as the reference parses them
    ("http to a public host", {"url_prefixes": ["http://api.example.com/v1/"]}, {}, True, "real"),
    ("http to a private address", {"url_prefixes": ["http://10.1.2.3/"]}, {}, False, "real"),
    ("http 127.0.0.2", {"url_prefixes": ["http://127.0.0.2:8080/"]}, {}, True, "masked"),
    ("no scheme", {"url_prefixes": ["api.example.com/v1/"]}, {}, True, "masked"),
    ("a *. wildcard", {"url_prefixes": ["*.example.com"]}, {}, True, "masked"),
    ("https *. wildcard", {"url_prefixes": ["https://*.example.com/v1"]}, {}, True, "masked"),
    ("user information", {"url_prefixes": ["https://u@api.example.com/"]}, {}, True, "real"),
    ("a query", {"url_prefixes": ["https://api.example.com/?a=1"]}, {}, True, "real"),
    ("a fragment", {"url_prefixes": ["https://api.example.com/#x"]}, {}, True, "real"),
    ("ftp", {"url_prefixes": ["ftp://api.example.com/"]}, {}, True, "real"),
    ("upper case", {"url_prefixes": ["HTTPS://API.EXAMPLE.COM/V1"]}, {}, True, "masked"),
    ("blanks around", {"url_prefixes": ["  https://api.example.com/v1  "]}, {}, True, "masked"),
    ("an empty prefix", {"url_prefixes": [""]}, {}, True, "real"),
    ("a bare *", {"url_prefixes": ["*"]}, {}, True, "real"),
    ("no url_prefixes", {"url_prefixes": []}, {}, True, "real"),
    # (b) url_prefix_from_env
    ("from env only", {"url_prefixes": [], "url_prefix_from_env": "MY_URL"}, {"MY_URL": URL}, True,
     "masked"),
    ("from env, unset", {"url_prefixes": [], "url_prefix_from_env": "MY_URL"}, {}, True, "real"),
    ("from env, empty", {"url_prefixes": [], "url_prefix_from_env": "MY_URL"}, {"MY_URL": ""},
     True, "real"),
    ("from env, no scheme", {"url_prefixes": [], "url_prefix_from_env": "MY_URL"},
     {"MY_URL": "api.other.com"}, True, "masked"),
    ("from env, invalid, static kept", {"url_prefix_from_env": "MY_URL"},
     {"MY_URL": "http://api.other.com/"}, True, "masked"),
    ("from env only, invalid", {"url_prefixes": [], "url_prefix_from_env": "MY_URL"},
     {"MY_URL": "http://api.other.com/"}, True, "real"),
    ("from env only, a wildcard", {"url_prefixes": [], "url_prefix_from_env": "MY_URL"},
     {"MY_URL": "https://*.other.com/"}, True, "real"),
    ("from env, loopback with allowLocalBinding", {"url_prefix_from_env": "MY_URL"},
     {"MY_URL": "https://127.0.0.1/v1/"}, True, "real"),
    ("from env, loopback without allowLocalBinding", {"url_prefix_from_env": "MY_URL"},
     {"MY_URL": "https://127.0.0.1/v1/"}, False, "masked"),
    ("from env, IPv6", {"url_prefixes": [], "url_prefix_from_env": "MY_URL"},
     {"MY_URL": "https://[2001:db8::1]:444/v2/"}, True, "masked"),
    ("from env, [::1] without allowLocalBinding", {"url_prefixes": [],
     "url_prefix_from_env": "MY_URL"}, {"MY_URL": "https://[::1]/"}, False, "masked"),
    ("from env, an invalid key", {"url_prefix_from_env": "1BAD"}, {}, True, "real"),
    ("from env, the credential's own key", {"url_prefix_from_env": "MY_KEY"}, {}, True, "real"),
    ("from env, set in another case", {"url_prefixes": [], "url_prefix_from_env": "MY_URL"},
     {"my_url": URL}, True, "real"),
    # the provider's other checks
    ("env in another case", {"env": ["my_key"]}, {}, True, "real"),
    ("env overlaps a built-in", {"env": ["MY_KEY", "GITHUB_TOKEN"]}, {}, True, "real"),
    ("header without auth header", {"header": "x-api-key"}, {}, True, "real"),
    ("auth header without header", {"auth": ["header"]}, {}, True, "real"),
    ("auth header with header", {"auth": ["header"], "header": "x-api-key"}, {}, True, "masked"),
    ("prefix without header", {"prefix": "Key "}, {}, True, "real"),
    ("a bad header name", {"auth": ["header"], "header": "bad header"}, {}, True, "real"),
    ("auth basic", {"auth": ["basic"]}, {}, True, "masked"),
    # a start file the shell reads first (BASH_ENV, or ENV), whatever its value: unmasked
    ("BASH_ENV set", {}, {"BASH_ENV": "/nonexistent/start"}, True, "real"),
    ("BASH_ENV empty", {}, {"BASH_ENV": ""}, True, "real"),
    ("ENV set", {}, {"ENV": "/nonexistent/start"}, True, "real"),
    ("bash_env in another case", {}, {"bash_env": "/nonexistent/start"}, True, "masked"),
    ("other shell variables (SHELLOPTS, BASHOPTS, ZDOTDIR)", {}, {
        "SHELLOPTS": "braceexpand", "BASHOPTS": "extglob", "ZDOTDIR": "/nonexistent"}, True,
     "masked"),
    # (d) patterns: Rust syntax
    ("a pattern matching the empty value", {"patterns": ["mk-[a-z0-9]{11}|x*"]}, {}, True, "real"),
    ("an invalid pattern", {"patterns": ["mk-[a-z"]}, {}, True, "real"),
    ("\\d", {"patterns": ["mk-\\w\\d[a-z]{8}\\d"]}, {}, True, "masked"),
    ("(?i)", {"patterns": ["(?i)MK-[A-Z0-9]{11}"]}, {}, True, "masked"),
    ("lazy \\w+?", {"patterns": ["mk-\\w+?"]}, {}, True, "masked"),
    ("(?:) and [[:alnum:]]", {"patterns": ["(?:mk|xk)-[[:alnum:]]{11}"]}, {}, True, "masked"),
    ("escapes in a class", {"patterns": ["mk-[\\w\\-]{11}"]}, {}, True, "masked"),
    ("\\b and \\A", {"patterns": ["\\A\\bmk-[a-z0-9]{11}\\b"]}, {}, True, "masked"),
    ("named group", {"patterns": ["(?P<kind>mk)-[a-z0-9]{11}"]}, {}, True, "masked"),
    ("the second pattern fits", {"patterns": ["zz-[0-9]+", "mk-[a-z0-9]{11}"]}, {}, True,
     "masked"),
    ("no pattern fits", {"patterns": ["zz-[0-9]+"]}, {}, True, "real"),
    ("(?s) mid-pattern flags", {"patterns": ["mk-(?s)[a-z0-9]{11}"]}, {}, True, "masked"),
]
# Where execd refuses Rust syntax it does not translate (the variable then runs unmasked)
# and the reference, which reads all of it, masks: a documented difference.
EXECD_REFUSES = {"(?s) mid-pattern flags"}


def mask_case(srv, i, case, workdir):
    desc, fields, extra, local, _ = case
    env = {"PATH": "/usr/bin:/bin", "MY_KEY": KEY}
    env.update(extra)
    np = network_proxy({"api.example.com": "allow"}, allow_local=local)
    np["proxy"].update({"credentialMasking": True, "credentialProviders": {
        "mine": dict(BASE, **fields)}})
    sb = json.loads(json.dumps(SB).replace("file://" + work, "file://" + workdir))
    pid = "k%d" % i
    r = srv.call("process/start", {"processId": pid, "argv": ["/bin/bash", "-c",
                 "echo \"MY_KEY=$MY_KEY\""], "cwd": "file://" + workdir, "env": env,
                 "tty": False, "networkProxy": np, "sandbox": sb})
    if "error" in r:
        return r["error"]
    out, _, _ = srv.collect(pid, timeout=60)
    val = [l[7:] for l in out.get("stdout", b"").decode().splitlines() if l.startswith("MY_KEY=")]
    if not val or not val[0]:
        return "absent"
    return "real" if val[0] == env["MY_KEY"] else "masked"


# dummies drawn at random from the pattern the real value fits, as the reference draws
# them: any branch, any count, either case; never the real value's shape every time
DRAW = "(?:mk|xk)-[[:alnum:]]{8,20}"
DRAW_REALS = ["mk-r3alsecret%d" % i for i in range(6)]


def shape(v):
    return "".join("a" if c.islower() else "A" if c.isupper() else "9" if c.isdigit() else c
                   for c in v)


def draws(srv, workdir, tag):
    out = []
    for i, real in enumerate(DRAW_REALS):
        env = {"PATH": "/usr/bin:/bin", "MY_KEY": real}
        np = network_proxy({"api.example.com": "allow"})
        np["proxy"].update({"credentialMasking": True, "credentialProviders": {
            "mine": dict(BASE, patterns=[DRAW])}})
        sb = json.loads(json.dumps(SB).replace("file://" + work, "file://" + workdir))
        pid = "%s%d" % (tag, i)
        r = srv.call("process/start", {"processId": pid, "argv": ["/bin/bash", "-c",
                     "echo \"MY_KEY=$MY_KEY\""], "cwd": "file://" + workdir, "env": env,
                     "tty": False, "networkProxy": np, "sandbox": sb})
        o, _, _ = srv.collect(pid, timeout=60) if "result" in r else ({}, 0, 0)
        val = [l[7:] for l in o.get("stdout", b"").decode().splitlines() if l.startswith("MY_KEY=")]
        out.append((real, val[0] if val else None))
    return out


def drawn_from_pattern(pairs):
    import re as rx
    fit = all(d and rx.fullmatch("(?:mk|xk)-[0-9A-Za-z]{8,20}", d) and real not in d and
              d not in real for real, d in pairs)
    return fit and any(shape(d) != shape(real) for real, d in pairs)


c2 = Execd([])
mine_draws = draws(c2, work, "d")
t.ok(drawn_from_pattern(mine_draws),
     "a custom provider's dummies are drawn from its pattern, not the real value's shape")
# the reference keeps a real value's dummy for its life under the same settings: a dummy a
# command saved (a credential store) is swapped again for a later command
t.eq(draws(c2, work, "e"), mine_draws,
     "a later start with the same settings gets the same dummies")
c2.close()
c2 = Execd([])
mine_got = {}
for i, case in enumerate(MASK_CASES):
    mine_got[case[0]] = mask_case(c2, i, case, work)
c2.close()
want = {c[0]: ("real" if c[0] in EXECD_REFUSES else c[4]) for c in MASK_CASES}
t.eq({k: v for k, v in mine_got.items() if v != want[k]}, {},
     "%d provider cases mask or not as the reference does (loopback, url_prefix_from_env, "
     "destinations, checks, Rust patterns)" % len(MASK_CASES))

refs = [r for r in [find_ref()] if r]
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
    t.eq(diffs, [], "the reference answers every case as execd does")
    rwork = tempfile.mkdtemp(prefix="credmask-work-", dir=home)
    ref_draws = draws(ref, rwork, "d")
    t.ok(drawn_from_pattern(ref_draws), "so are the reference's", ref_draws)
    t.eq(draws(ref, rwork, "e"), ref_draws, "and the reference keeps them too")
    ref_got = {}
    for i, case in enumerate(MASK_CASES):
        ref_got[case[0]] = mask_case(ref, i, case, rwork)
    ref.close()
    shutil.rmtree(home, ignore_errors=True)
    t.eq({k: (mine_got[k], v) for k, v in ref_got.items()
          if v != mine_got[k] and k not in EXECD_REFUSES}, {},
         "the reference masks or not in every provider case as execd does")
    t.eq({k: ref_got[k] for k in EXECD_REFUSES}, {k: "masked" for k in EXECD_REFUSES},
         "the reference masks where execd refuses untranslated Rust syntax (a known difference)")
t.done()
