"""Slowloris on the --listen listener: heads trickled in, silent sockets, oversized heads.

Every connection that has not completed its HTTP request head within
--header-timeout-ms is closed, however it trickles; a head over 400 KiB is
answered 431; a normal client is served all the while.
"""
import select
import socket
import time

from execd_client import tap
from faultlib import FaultListener, PidDir, RawWS, descendants, no_resume_args, pss_kb, wait_dead
from wsclient import upgrade_request, status_of

t = tap(timeout=240)
pd = PidDir()
# Above execd's default (10 s): were the option ignored, the slow clients would
# be cut too early, which no load can cause (load only makes cuts later).  And
# long enough that a normal client is served before the first slow one is cut
# even on a loaded machine, where 100 sanitizer instances starting at once kept
# one waiting 4 s
TIMEOUT_MS = 15000
DEFAULT_MS = 10000
# how late a loaded machine may cut them (up to 4 s seen); never cut fails anyway
LATE_SLACK = 10.0
N = 100
L = FaultListener(["--header-timeout-ms", str(TIMEOUT_MS)] + no_resume_args(pd.path))
head = upgrade_request("/" + L.token).encode()

try:
    # N clients each sending one byte a second, and a few that send nothing
    socks = []
    for i in range(N):
        s = socket.create_connection((L.host, L.port))
        s.setblocking(False)
        socks.append({"s": s, "t0": time.time(), "sent": 0, "closed": None, "silent": i % 10 == 0})
    served, served_before_cuts = None, False
    peak_rss = 0
    next_tick = time.time()
    deadline = time.time() + TIMEOUT_MS / 1000.0 + LATE_SLACK + 2
    while time.time() < deadline and any(c["closed"] is None for c in socks):
        now = time.time()
        if now >= next_tick:
            for c in socks:
                if c["closed"] is None and not c["silent"]:
                    try:
                        c["s"].send(head[c["sent"]:c["sent"] + 1])
                        c["sent"] += 1
                    except OSError:
                        pass
            next_tick = now + 1.0
            peak_rss = max(peak_rss, sum(pss_kb(p) for p in [L.p.pid] + descendants(L.p.pid)))
        if served is None and now - socks[0]["t0"] > 0.5:
            # a normal client in the middle of the attack
            t1 = time.time()
            try:
                ws = RawWS(L.host, L.port, L.token, timeout=10)
                ws.initialize()
                ok = ws.call("environment/status").get("result") == {"status": "ready"}
                ws.close()
                served = time.time() - t1 if ok else False
                # were the slow clients all still held when it was served?  One
                # execd has cut (closed, or answered) is readable
                held = [c["s"] for c in socks if c["closed"] is None]
                served_before_cuts = (len(held) == N
                                      and not select.select(held, [], [], 0)[0])
            except (OSError, TimeoutError, ConnectionError):
                served = False
        live = [c for c in socks if c["closed"] is None]
        r, _, _ = select.select([c["s"] for c in live], [], [], 0.05)
        for c in live:
            if c["s"] in r:
                try:
                    data = c["s"].recv(4096)
                except OSError:
                    data = b""
                if not data:
                    c["closed"] = time.time() - c["t0"]
    times = sorted(c["closed"] for c in socks if c["closed"] is not None)
    t.eq(len(times), N, "all %d slow clients are cut off" % N)
    lim = TIMEOUT_MS / 1000.0
    assert lim - 0.1 > DEFAULT_MS / 1000.0
    t.ok(times and times[0] >= lim - 0.1 and times[-1] <= lim + LATE_SLACK,
         "each after --header-timeout-ms (%.2f..%.2f s, limit %.1f s)" %
         (times[0] if times else -1, times[-1] if times else -1, lim))
    # a timer that each byte restarts would never cut a trickling client: they must
    # have sent more than one byte each for the bound above to say anything
    t.ok(min(c["sent"] for c in socks if not c["silent"]) >= 2,
         "the trickling clients were still sending when cut off",
         sorted(set(c["sent"] for c in socks if not c["silent"])))
    # served while the slow clients all still held their connections: a listener
    # blocked by them would serve it only once they are cut
    t.ok(served not in (None, False) and served_before_cuts,
         "a normal client is served during the attack (in %.3f s)" % (served or -1))
    print("# peak PSS of the listener and its %d instances during the attack: %d kB" %
          (N, peak_rss))
    for c in socks:
        c["s"].close()
    time.sleep(0.3)
    # 100 instances exiting at once (a sanitizer build checks each for leaks)
    t.ok(wait_dead(descendants(L.p.pid), 30), "no instance is left behind")

    # a head trickled past the size bound: 431, well before the timeout
    s = socket.create_connection((L.host, L.port), timeout=5)
    t0 = time.time()
    got = b""
    # exactly 400 KiB and no more: bytes still unread when it answers would turn its
    # close into a reset that can take the answer with it
    trickle = b"GET /" + L.token.encode() + b" HTTP/1.1\r\n"
    i = 0
    while len(trickle) < 400 * 1024:
        trickle += b"X-Pad-%d: %s\r\n" % (i, b"a" * 1000)
        i += 1
    trickle = trickle[:400 * 1024]
    try:
        for i in range(0, len(trickle), 10240):
            s.send(trickle[i:i + 10240])
            time.sleep(0.005)
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    s.close()
    t.ok(status_of(got) == 431 and time.time() - t0 < lim,
         "a head trickled past 400 KiB is answered 431 at once", got[:80])

    # a head completed just in time is served
    s = socket.create_connection((L.host, L.port), timeout=5)
    for i in range(0, len(head), 40):
        s.send(head[i:i + 40])
        time.sleep(lim / 3 / (len(head) / 40 + 1))
    r = s.recv(4096)
    s.close()
    t.eq(status_of(r), 101, "a slow head that completes within the timeout is upgraded")
finally:
    L.stop()
    pd.cleanup()
t.done()
