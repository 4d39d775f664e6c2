"""WebSocket helpers for tests: a listener under test and raw HTTP/frame access."""
import asyncio
import atexit
import json
import os
import re
import select
import socket
import struct
import subprocess
import time

from execd_client import EXECD


class Listener:
    """execd --listen ws://127.0.0.1:0 ...; .url is what it printed."""

    def __init__(self, extra=None):
        self.p = subprocess.Popen([EXECD, "--listen", "ws://127.0.0.1:0"] + list(extra or []),
                                  stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        r, _, _ = select.select([self.p.stdout], [], [], 10)
        line = self.p.stdout.readline().decode().strip() if r else ""
        m = re.match(r"ws://([0-9.]+):(\d+)/(.*)$", line)
        if not m:
            self.stop()
            raise RuntimeError("no URL from execd --listen: %r" % line)
        self.url = line
        self.host, self.port, self.token = m.group(1), int(m.group(2)), m.group(3)
        self.printed_token = self.token
        extra = list(extra or [])
        if not self.token and "--token-file" in extra:
            # a token from a file is not printed: the test knows it
            with open(extra[extra.index("--token-file") + 1]) as f:
                self.token = f.readline().strip()
        # a test that dies half-way still ends its listener
        atexit.register(self.stop)

    def base(self):
        return "ws://%s:%d" % (self.host, self.port)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


def http_raw(host, port, request, timeout=5):
    """Send raw bytes, return everything the server sends until it closes."""
    s = socket.create_connection((host, port), timeout=timeout)
    s.sendall(request if isinstance(request, bytes) else request.encode())
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    s.close()
    return data


def status_of(resp):
    m = re.match(rb"HTTP/1\.1 (\d+)", resp)
    return int(m.group(1)) if m else None


def upgrade_request(path="/", headers=None):
    h = {"Host": "127.0.0.1", "Upgrade": "websocket", "Connection": "Upgrade",
         "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"}
    h.update(headers or {})
    return "GET %s HTTP/1.1\r\n" % path + "".join(
        "%s: %s\r\n" % (k, v) for k, v in h.items() if v is not None) + "\r\n"


def frame(payload, opcode=1, mask=True, fin=True):
    """One client frame (masked, as RFC 6455 requires of clients)."""
    if isinstance(payload, str):
        payload = payload.encode()
    b0 = (0x80 if fin else 0) | opcode
    n = len(payload)
    if n < 126:
        hdr = struct.pack("!BB", b0, (0x80 if mask else 0) | n)
    elif n < 65536:
        hdr = struct.pack("!BBH", b0, (0x80 if mask else 0) | 126, n)
    else:
        hdr = struct.pack("!BBQ", b0, (0x80 if mask else 0) | 127, n)
    if not mask:
        return hdr + payload
    key = os.urandom(4)
    return hdr + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def parse_frames(data):
    """Server frames in data -> list of (opcode, payload), rest."""
    out = []
    while len(data) >= 2:
        b0, b1 = data[0], data[1]
        n = b1 & 0x7F
        off = 2
        if n == 126:
            if len(data) < 4:
                break
            n = struct.unpack("!H", data[2:4])[0]
            off = 4
        elif n == 127:
            if len(data) < 10:
                break
            n = struct.unpack("!Q", data[2:10])[0]
            off = 10
        if len(data) < off + n:
            break
        out.append((b0 & 0x0F, data[off:off + n]))
        data = data[off + n:]
    return out, data


def run(coro, timeout=30):
    return asyncio.get_event_loop().run_until_complete(asyncio.wait_for(coro, timeout))


async def ws_call(ws, id, method, params=None):
    msg = {"id": id, "method": method}
    if params is not None:
        msg["params"] = params
    await ws.send(json.dumps(msg))
    while True:
        m = json.loads(await ws.recv())
        if m.get("id") == id and "method" not in m:
            return m
