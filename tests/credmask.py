#!/usr/bin/python3
"""networkProxy.proxy.credentialMasking and .credentialProviders: execd decodes
them as the reference does (the same -32602 texts for the same bad params,
checked against the reference when it is installed), runs a well-formed request,
never puts a provider's secret anywhere but the child's own environment, and
does not claim the credentialMasking capabilities, since it does not broker
credentials yet (the reference masks only sandboxed `shell -c` commands)."""
import glob
import json
import os
import shutil
import tempfile

from proxytest import Proxy, Tap, deadline, free_port
from execd_client import Execd, network_proxy

deadline(90)
t = Tap()
hport = free_port()
P = Proxy("listen http 127.0.0.1:%d\nallow 127.0.0.1\n" % hport)
c = Execd(["--proxy-control", P.ctl_path])
caps = c.init_result["environmentInfo"]["capabilities"]
t.ok(not caps.get("credentialMasking") and not caps.get("credentialMaskingCustomProviders"),
     "credential masking is not advertised while execd does not broker credentials",
     {k: caps.get(k) for k in ("credentialMasking", "credentialMaskingCustomProviders")})

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
