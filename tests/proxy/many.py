#!/usr/bin/python3
"""execd-proxy under load: 1,000 CONNECT tunnels open at the same time, each
carrying its own data both ways, all accounted for in status and audit."""

import asyncio
import base64
import resource
import selectors
import socket
import threading
import time

from proxytest import Proxy, Tap, deadline

N = 1000
deadline(120)
t = Tap()

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = min(hard, 4 * N + 256)
if soft < want:
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
if want < 3 * N:
    t.skip("1000 tunnels", "RLIMIT_NOFILE hard limit %d too low" % hard)
    t.done()


def echo_server():
    """An asyncio echo server in its own thread: one thread for all 1000 peers."""
    ready = threading.Event()
    box = {}

    async def handle(reader, writer):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        writer.close()

    async def main():
        srv = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        box["port"] = srv.sockets[0].getsockname()[1]
        ready.set()
        await srv.serve_forever()

    threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
    ready.wait(10)
    return box["port"]


port = echo_server()
P = Proxy("listen http 127.0.0.1:0\nallow 127.0.0.1\nmax-connections-per-client 2000\n",
          audit="none")
c = P.register(tags={"process_id": "many"})
auth = base64.b64encode(("%s:%s" % (c.id, c.secret)).encode()).decode()
host, pport = P.http.rsplit(":", 1)
req = ("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nProxy-Authorization: Basic %s"
       "\r\n\r\n" % (port, port, auth)).encode()

# open all tunnels first, non-blocking, so they really are concurrent
sel = selectors.DefaultSelector()
socks = []
states = [None] * N
t0 = time.time()
for i in range(N):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex((host, int(pport)))
    socks.append(s)
    sel.register(s, selectors.EVENT_WRITE, {"i": i, "state": "connecting", "buf": b""})
established = 0
while established < N and time.time() - t0 < 60:
    for key, ev in sel.select(timeout=1):
        s, st = key.fileobj, key.data
        if st["state"] == "connecting":
            s.send(req)
            st["state"] = "head"
            sel.modify(s, selectors.EVENT_READ, st)
        elif st["state"] == "head":
            data = s.recv(4096)
            if not data:
                st["state"] = "dead"
                sel.unregister(s)
                continue
            st["buf"] += data
            if b"\r\n\r\n" in st["buf"]:
                st["state"] = "open" if st["buf"].startswith(b"HTTP/1.1 200 ") else "refused"
                states[st["i"]] = st["state"]
                sel.unregister(s)
                established += 1
setup = time.time() - t0
t.eq(established, N, "%d CONNECT tunnels answered (%.2f s)" % (N, setup))
t.eq(states.count("open"), N, "all of them with 200 OK")
st = P.call("status")
t.eq(st["connections"], N, "status: %d connections open at once" % N)

# every tunnel echoes its own payload
for i, s in enumerate(socks):
    sel.register(s, selectors.EVENT_READ, {"want": b"tunnel %04d " % i * 8, "got": b""})
    s.setblocking(True)
    s.sendall(b"tunnel %04d " % i * 8)
    s.setblocking(False)
good = 0
end = time.time() + 60
while good < N and time.time() < end:
    for key, ev in sel.select(timeout=1):
        s, st = key.fileobj, key.data
        data = s.recv(65536)
        st["got"] += data
        if not data or len(st["got"]) >= len(st["want"]):
            sel.unregister(s)
            good += st["got"] == st["want"]
t.eq(good, N, "all %d tunnels echoed their own data" % N)

for s in socks:
    s.close()
end = time.time() + 20
while P.call("status")["connections"] > 0 and time.time() < end:
    time.sleep(0.1)
t.eq(P.call("status")["connections"], 0, "all tunnels closed and released")
t.ok(P.proc.poll() is None, "proxy still running")
t.eq(P.stop(), 0, "proxy exits 0")
t.done()
