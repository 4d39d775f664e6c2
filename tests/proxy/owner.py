#!/usr/bin/python3
"""execd-proxy's lines to a registration's owner (execd-proxy(8), CONTROL
PROTOCOL): a decision line per decision with "events", questions about
allowlist misses with "ask_timeout_ms" answered by "decide" (only by the
owner; late answers ignored; no answer: deny at the timeout + 7 s), and an
owner that stops reading never holds the proxy up."""

import json
import socket
import time

from proxytest import Origin, Proxy, Tap, curl, deadline

deadline(120)
t = Tap()
origin = Origin()
URL = "http://127.0.0.1:%d/" % origin.port
P = Proxy("listen http 127.0.0.1:0\nallow *\nallow-local yes\n")


class Owner:
    """A control connection of our own that keeps event lines apart from replies."""

    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(P.ctl_path)
        self.f = self.s.makefile("rwb")
        self.events, self.n = [], 0
        t.ok(self.call("auth", key=P.key()).get("ok"), "owner: authenticated")

    def line(self, timeout):
        self.s.settimeout(timeout)
        try:
            raw = self.f.readline()
        except socket.timeout:
            return None
        return json.loads(raw) if raw else None

    def call(self, op, **kw):
        self.n += 1
        self.f.write((json.dumps(dict(kw, op=op, id=self.n)) + "\n").encode())
        self.f.flush()
        while True:
            m = self.line(10)
            if m is None or "event" not in m:
                return m or {}
            self.events.append(m)

    def event(self, kind, timeout=10):
        end = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e["event"] == kind:
                    return self.events.pop(i)
            m = self.line(max(0.01, end - time.time()))
            if m is None:
                return None
            if "event" in m:
                self.events.append(m)


def register(owner, **kw):
    r = owner.call("register", tags={"process_id": "p"},
                   policy={"allow": ["localhost"], "allow_local": True}, **kw)
    return r["credentials"]["id"], "http://%s:%s@%s" % (r["credentials"]["id"],
                                                       r["credentials"]["secret"], P.http)


o = Owner()
cred, purl = register(o, events=True)
r = curl("-x", purl, URL)
e = o.event("decision")
t.ok(r.code == 403 and e is not None, "events: a decision line for a refused request", (r.code, e))
t.eq({k: e.get(k) for k in ("credential", "decision", "reason", "source", "protocol", "host",
                            "port", "method", "scope", "policyOverride")},
     {"credential": cred, "decision": "deny", "reason": "not_allowed", "source": "baseline_policy",
      "protocol": "http", "host": "127.0.0.1", "port": origin.port, "method": "GET",
      "scope": "domain", "policyOverride": False}, "events: the reference's fields")

# questions
cred, purl = register(o, events=True, ask_timeout_ms=60000)
res = {}


def bg_curl(key, *a):
    import threading
    th = threading.Thread(target=lambda: res.__setitem__(key, curl(*a, timeout=30)))
    th.start()
    return th


th = bg_curl("allow", "-x", purl, URL)
q = o.event("ask")
t.eq({k: q.get(k) for k in ("credential", "protocol", "host", "port")} if q else None,
     {"credential": cred, "protocol": "http", "host": "127.0.0.1", "port": origin.port},
     "ask: the owner is asked about an allowlist miss")
other = Owner()
r = other.call("decide", credential=cred, ask=q["ask"], decision="allow")
t.eq((r.get("ok"), r.get("error")), (False, "unknown credential"),
     "ask: another control connection cannot answer it")
r = o.call("decide", credential=cred, ask=q["ask"], decision="allow")
th.join()
e = o.event("decision")
t.ok(r.get("pending") is True and res["allow"].code == 200 and e["decision"] == "allow" and
     e["source"] == "decider" and e["reason"] == "not_allowed" and e["policyOverride"] is True,
     "ask: the owner's allow lets it through, recorded as the decider's override", (r, e))
r = o.call("decide", credential=cred, ask=q["ask"], decision="deny")
t.eq((r.get("ok"), r.get("pending")), (True, False), "ask: a second answer finds nobody waiting")
rec = P.wait_audit(lambda a: a.get("source") == "decider" and a.get("override") is True)
t.ok(rec is not None, "ask: the audit trail has the override", rec)

th = bg_curl("ask", "-x", purl, URL)
q = o.event("ask")
o.call("decide", credential=cred, ask=q["ask"], decision="ask", reason="a human should say")
th.join()
e = o.event("decision")
t.ok(res["ask"].code == 403 and (e["decision"], e["reason"]) == ("ask", "a human should say"),
     "ask: an \"ask\" answer refuses, with its reason", (res["ask"].code, e))
th = bg_curl("bad", "-x", purl, URL)
q = o.event("ask")
o.call("decide", credential=cred, ask=q["ask"], decision="allow", reason="bad\x01reason")
th.join()
t.eq(res["bad"].code, 403, "ask: an answer with a control character in its reason denies")
r = o.call("decide", credential=cred, ask=1, decision="maybe")
t.eq(r.get("ok"), False, "decide: an unknown decision is refused")
r = o.call("register", tags={}, ask_timeout_ms=0)
t.eq(r.get("ok"), False, "register: ask_timeout_ms 0 is refused")

# no answer: denied at ask_timeout_ms + 7 s
cred, purl = register(o, events=True, ask_timeout_ms=100)
t0 = time.time()
r = curl("-x", purl, URL, timeout=30)
took = time.time() - t0
t.ok(r.code == 403 and 6.5 < took < 12, "ask: no answer, denied at the timeout + 7 s",
     (r.code, took))
e = o.event("decision")
t.ok(e is not None and (e["decision"], e["source"], e["reason"]) ==
     ("deny", "decider", "not_allowed"), "ask: and reported so", e)

# an owner that stops reading: lines are dropped, nothing waits
stalled = Owner()
cred, purl = register(stalled, events=True)
t0 = time.time()
n = 0
while time.time() - t0 < 20 and n < 6000:
    s = socket.create_connection(("127.0.0.1", int(P.http.rsplit(":", 1)[1])))
    s.sendall(b"GET http://denied.example/ HTTP/1.1\r\nHost: denied.example\r\n"
              b"Proxy-Authorization: Basic " + __import__("base64").b64encode(
                  purl[len("http://"):].rsplit("@", 1)[0].encode()) + b"\r\n\r\n")
    s.recv(4096)
    s.close()
    n += 1
t0 = time.time()
r = curl("-x", P.register(policy={"allow": ["127.0.0.1"], "allow_local": True}).http_url, URL)
t.ok(r.code == 200 and time.time() - t0 < 2,
     "a stalled owner (%d decisions unread) holds nothing up" % n, (r.code, time.time() - t0))
t.ok("decision events dropped" in P.logtext(), "and its dropped lines are logged",
     P.logtext()[-600:])
st = stalled.call("status")
t.ok(st.get("ok") is True, "the stalled owner still gets its replies once it reads", st)
t.eq(P.stop(), 0, "proxy exits 0")
t.done()
