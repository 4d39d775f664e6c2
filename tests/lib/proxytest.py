"""Helpers for the execd-proxy tests: the proxy itself, dnsmasq as the test
resolver, loopback origin servers, curl, and TAP output.

Everything listens on 127.0.0.1 only and every process started here is
killed by cleanup() (registered with atexit)."""

import os
import sys

# tests/http.py would shadow the standard "http" package for scripts in tests/
_tests_dir = os.path.dirname(os.path.abspath(sys.argv[0] or "."))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _tests_dir]

import atexit
import http.server
import json
import shutil
import signal
import socket
import socketserver
import subprocess
import tempfile
import threading
import time

from tap import Tap  # noqa: F401 (the tests import it from here)

TOP_BUILDDIR = os.environ.get("top_builddir", os.path.join(os.path.dirname(__file__), "..", ".."))
PROXY_BIN = os.environ.get("EXECD_PROXY", os.path.join(TOP_BUILDDIR, "proxy", "execd-proxy"))

_procs = []
_tmpdirs = []


def cleanup():
    for p in _procs:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
    for d in _tmpdirs:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(cleanup)


def deadline(seconds):
    """Kill the whole test (and, through atexit, its children) after seconds."""
    def expire(signo, frame):
        print("Bail out! test timed out after %d s" % seconds, flush=True)
        cleanup()
        os._exit(1)
    signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)


def tmpdir():
    d = tempfile.mkdtemp(prefix="proxytest.")
    _tmpdirs.append(d)
    return d


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def clean_env():
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return env


class Dnsmasq:
    """dnsmasq answering fixed names on a loopback port, nothing else."""

    def __init__(self, addresses, extra=()):
        """extra: more dnsmasq options (--cname=..., --host-record=...)."""
        # the free port may be taken again before dnsmasq binds it (tests run
        # in parallel): try a few
        for attempt in range(5):
            self.port = free_port(socket.SOCK_DGRAM)
            args = ["dnsmasq", "--no-daemon", "--conf-file=/dev/null", "--pid-file=",
                    "--port=%d" % self.port, "--listen-address=127.0.0.1", "--bind-interfaces",
                    "--no-resolv", "--no-hosts", "--log-facility=-"]
            for name, addr in addresses.items():
                args.append("--address=/%s/%s" % (name, addr))
            args += list(extra)
            self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _procs.append(self.proc)
            if self._wait_ready(next(iter(addresses)), raise_=attempt == 4):
                return
            self.proc.kill()
            self.proc.wait()

    def _wait_ready(self, name, raise_=True):
        query = self._query(name)
        end = time.time() + 10
        while time.time() < end and self.proc.poll() is None:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(0.2)
            try:
                s.sendto(query, ("127.0.0.1", self.port))
                s.recvfrom(512)
                return True
            except OSError:
                time.sleep(0.05)
            finally:
                s.close()
        if raise_:
            raise RuntimeError("dnsmasq did not come up")
        return False

    @staticmethod
    def _query(name):
        q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
        for label in name.split("."):
            q += bytes([len(label)]) + label.encode()
        return q + b"\x00\x00\x01\x00\x01"

    @property
    def server(self):
        return "127.0.0.1:%d" % self.port


class Proxy:
    """An execd-proxy with a throw-away configuration and a control client."""

    def __init__(self, conf, audit=True, args=None, wait=True, dir=None, prefix=()):
        """dir: reuse another proxy's directory (control socket, audit, log): a restart.
        prefix: run execd-proxy through it (setpriv ...)."""
        self.dir = dir or tmpdir()
        self.ctl_path = os.path.join(self.dir, "control.sock")
        self.conf_path = os.path.join(self.dir, "proxy.conf")
        self.audit_path = os.path.join(self.dir, "audit.log")
        self.log_path = os.path.join(self.dir, "proxy.log")
        self.write_conf(conf, audit)
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(list(prefix) + [PROXY_BIN, "-v", "-f", self.conf_path] +
                                     (args or []),
                                     stdout=self.log, stderr=self.log, env=clean_env())
        _procs.append(self.proc)
        self.ctl = None
        self._id = 0
        if wait:
            self._connect()
            st = self.call("status")
            self.http = st["http"]
            self.socks = st["socks5"]

    def write_conf(self, conf, audit=True):
        # the inspection CA and its bundle stay in this proxy's directory
        text = "control %s\nstate-directory %s\n" % (self.ctl_path, self.dir)
        if audit is True:
            text += "audit file %s\n" % self.audit_path
        elif audit:
            text += "audit %s\n" % audit
        text += conf
        with open(self.conf_path, "w") as f:
            f.write(text)

    def _connect(self):
        end = time.time() + 10
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("execd-proxy exited: %s" % self.logtext())
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.ctl_path)
                s.settimeout(10)
                self.ctl = s
                self.ctl_file = s.makefile("rwb")
                r = self.call("auth", key=self.key())
                if not r.get("ok"):
                    raise RuntimeError("control auth failed: %r" % r)
                return
            except OSError:
                s.close()
                time.sleep(0.02)
        raise RuntimeError("control socket did not appear")

    def key(self):
        """The key execd-proxy wrote beside its control socket."""
        with open(self.ctl_path + ".key") as f:
            return f.read().strip()

    def call(self, op, **kw):
        self._id += 1
        req = dict(kw, op=op, id=self._id)
        self.ctl_file.write((json.dumps(req) + "\n").encode())
        self.ctl_file.flush()
        line = self.ctl_file.readline()
        if not line:
            raise RuntimeError("control connection closed")
        return json.loads(line)

    def register(self, tags=None, policy=None, **kw):
        r = self.call("register", tags=tags or {}, policy=policy, **kw)
        if not r.get("ok"):
            raise RuntimeError("register failed: %r" % r)
        return Creds(self, r)

    def logtext(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def audit(self):
        try:
            with open(self.audit_path) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def wait_audit(self, pred, timeout=5):
        end = time.time() + timeout
        while True:
            for ev in self.audit():
                if pred(ev):
                    return ev
            if time.time() > end:
                return None
            time.sleep(0.02)

    def signal(self, signo):
        self.proc.send_signal(signo)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class Creds:
    def __init__(self, proxy, reply):
        self.proxy = proxy
        self.reply = reply
        self.id = reply["credentials"]["id"]
        self.secret = reply["credentials"]["secret"]

    @property
    def http_url(self):
        return "http://%s:%s@%s" % (self.id, self.secret, self.proxy.http)

    @property
    def socks_url(self):
        return "socks5h://%s:%s@%s" % (self.id, self.secret, self.proxy.socks)


def curl(*args, timeout=10):
    """Run the curl CLI; returns (exit status, HTTP code or 0, body, stderr, headers)."""
    cmd = ["curl", "-sS", "-m", str(timeout), "-o", "-", "-D", "/dev/stderr",
           "-w", "\n%{http_code} %{http_connect}"] + list(args)
    c = subprocess.run(cmd, capture_output=True, env=clean_env(), timeout=timeout + 5)
    out = c.stdout.decode(errors="replace")
    body, _, codes = out.rpartition("\n")
    code, _, connect = codes.partition(" ")
    return CurlResult(c.returncode, int(code or 0), int(connect or 0), body,
                      c.stderr.decode(errors="replace"))


class CurlResult:
    def __init__(self, rc, code, connect_code, body, stderr):
        self.rc = rc
        self.code = code
        self.connect_code = connect_code
        self.body = body
        self.stderr = stderr

    def header(self, name):
        for line in self.stderr.splitlines():
            k, sep, v = line.partition(":")
            if sep and k.strip().lower() == name.lower():
                return v.strip()
        return None

    def __repr__(self):
        return "curl rc=%d code=%d connect=%d body=%r stderr=%r" % (
            self.rc, self.code, self.connect_code, self.body[:200], self.stderr[-400:])


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body_in = self.rfile.read(length) if length else b""
        self.server.requests.append({"method": self.command, "path": self.path,
                                     "headers": dict(self.headers.items()), "body": body_in})
        body = ("%s %s from origin %d\n" % (self.command, self.path,
                                             self.server.server_address[1])).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Keep-Alive", "timeout=5")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = do_OPTIONS = _answer

    def log_message(self, *a):
        pass


class Origin:
    """A threaded HTTP/1.1 origin server on 127.0.0.1 that records requests."""

    def __init__(self):
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.srv.daemon_threads = True
        self.srv.requests = []
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    @property
    def requests(self):
        return self.srv.requests


class _Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            try:
                data = self.request.recv(65536)
            except OSError:
                return
            if not data:
                return
            self.request.sendall(data)


class EchoServer:
    """A threaded TCP echo server on 127.0.0.1."""

    def __init__(self):
        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
        self.srv.daemon_threads = True
        self.srv.request_queue_size = 4096
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


def host_address():
    """A non-loopback IPv4 address of this host (the one a route out would
    use; nothing is sent), or None: what a sandbox must not reach directly."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        a = s.getsockname()[0]
        return None if a.startswith("127.") else a
    except OSError:
        return None
    finally:
        s.close()


class FakeConnectProxy:
    """An HTTP CONNECT proxy on 127.0.0.1 that records each request head (as
    it came) and, after its 200, echoes what comes with "UP:" in front; it
    never dials anything.  The upstream of --tcp-upstream-proxy tests."""

    def __init__(self):
        self.heads = []
        self.lock = threading.Lock()
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(c,), daemon=True).start()

    def one(self, c):
        c.settimeout(20)
        data = b""
        try:
            while b"\r\n\r\n" not in data and len(data) < 8192:
                d = c.recv(4096)
                if not d:
                    break
                data += d
            with self.lock:
                self.heads.append(data.decode(errors="replace"))
            if data.startswith(b"CONNECT "):
                c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                while True:
                    d = c.recv(4096)
                    if not d:
                        break
                    c.sendall(b"UP:" + d)
        except OSError:
            pass
        c.close()

    def targets(self):
        with self.lock:
            return sorted(h.split(" ")[1] for h in self.heads if h.startswith("CONNECT "))


def auth_header(creds):
    """The Proxy-Authorization line (with its CRLF) for a registration's credentials."""
    import base64
    tok = base64.b64encode(("%s:%s" % (creds.id, creds.secret)).encode()).decode()
    return "Proxy-Authorization: Basic %s\r\n" % tok


def start_tinyproxy(extra="", prefix=(), timeout=60, loglevel="Info"):
    """tinyproxy on loopback (an upstream proxy, or a bench's baseline) with
    extra configuration lines; (process, port, log path), or None when it is
    not installed or does not listen within 10 s.  Killed at exit."""
    if shutil.which("tinyproxy") is None:
        return None
    d = tmpdir()
    port = free_port()
    conf, log = os.path.join(d, "tp.conf"), os.path.join(d, "tp.log")
    with open(conf, "w") as f:
        f.write("Port %d\nListen 127.0.0.1\nTimeout %d\nAllow 127.0.0.1\nLogLevel %s\n"
                "LogFile \"%s\"\nDisableViaHeader Yes\n%s" % (port, timeout, loglevel, log, extra))
    p = subprocess.Popen(list(prefix) + ["tinyproxy", "-d", "-c", conf],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _procs.append(p)
    if wait_listening(port):
        return p, port, log
    p.kill()
    p.wait()
    return None


def wait_listening(port, seconds=10):
    """Whether something accepts on 127.0.0.1:port within seconds."""
    end = time.time() + seconds
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def socks_open(proxy, creds, req, timeout=10):
    """A SOCKS5 connection that logs in with the registration's id and
    secret (RFC 1929) and sends req (VER CMD RSV ATYP ADDR PORT): (socket,
    up to 10 bytes of the reply), the reply b"" when the greeting or the
    login was refused.  The caller closes the socket."""
    h, p = proxy.socks.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=timeout)
    s.sendall(b"\x05\x01\x02")
    if s.recv(2) != b"\x05\x02":
        return s, b""
    u, pw = creds.id.encode(), creds.secret.encode()
    s.sendall(b"\x01" + bytes([len(u)]) + u + bytes([len(pw)]) + pw)
    if s.recv(2) != b"\x01\x00":
        return s, b""
    s.sendall(req)
    return s, s.recv(10)


def raw_http(proxy, creds, head, timeout=5, more=None, wait=0.0):
    """One request head (bytes, its first line then the rest) sent with the
    registration's credentials after the request line, and more bytes (or
    a list of pieces) each after wait seconds; the reply is read until the
    proxy closes, the timeout, a reset, or (CONNECT) a 200 head.  Returns
    (status, whole reply); status 0 when there is none."""
    h, p = proxy.http.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=timeout)
    first, _, rest = head.partition(b"\r\n")
    s.sendall(first + b"\r\n" + auth_header(creds).encode() + rest)
    for piece in [more] if isinstance(more, bytes) else more or []:
        time.sleep(wait)
        try:
            s.sendall(piece)
        except OSError:
            pass
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if (first.startswith(b"CONNECT") and data.startswith(b"HTTP/1.1 200") and
                    b"\r\n\r\n" in data):
                break
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    try:
        return int(data.split(b" ", 2)[1]), data
    except (IndexError, ValueError):
        return 0, data


def connect_via_http(proxy_addr, target, creds=None, timeout=10):
    """Open a CONNECT tunnel; returns (socket, status line, head bytes)."""
    host, port = proxy_addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=timeout)
    req = "CONNECT %s HTTP/1.1\r\nHost: %s\r\n" % (target, target)
    if creds is not None:
        req += auth_header(creds)
    s.sendall((req + "\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    status = head.split(b"\r\n", 1)[0].decode(errors="replace")
    return s, status, head
