"""Loopback HTTPS origins for the inspection tests and bench: a test CA and
server certificates made with the openssl CLI, and a threaded HTTPS server
that records requests and answers a git ls-remote."""

import http.server
import os
import ssl
import subprocess
import threading

import proxytest


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


class TestCA:
    """A throw-away CA in its own directory, signing server certificates."""

    def __init__(self, name="execd test origin CA"):
        self.dir = proxytest.tmpdir()
        self.cert = os.path.join(self.dir, "ca.pem")
        self.key = os.path.join(self.dir, "ca.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", self.key, "-out", self.cert, "-days", "2", "-subj", "/CN=" + name)

    def server_cert(self, name, sans):
        """(cert, key) for CN name with subjectAltName entries like DNS:x, IP:y."""
        base = os.path.join(self.dir, name)
        ext = base + ".ext"
        with open(ext, "w") as f:
            f.write("subjectAltName=%s\nextendedKeyUsage=serverAuth\n" % ",".join(sans))
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", base + ".key", "-out", base + ".csr", "-subj", "/CN=" + name)
        openssl("x509", "-req", "-in", base + ".csr", "-CA", self.cert, "-CAkey", self.key,
                "-CAcreateserial", "-out", base + ".pem", "-days", "2", "-extfile", ext)
        return base + ".pem", base + ".key"


GIT_SHA = "0123456789abcdef0123456789abcdef01234567"


def _pkt(s):
    return b"%04x" % (len(s) + 4) + s


def git_advertisement():
    return (_pkt(b"# service=git-upload-pack\n") + b"0000" +
            _pkt(GIT_SHA.encode() + b" HEAD\0symref=HEAD:refs/heads/main\n") +
            _pkt(GIT_SHA.encode() + b" refs/heads/main\n") + b"0000")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body_in = self.rfile.read(length) if length else b""
        self.server.requests.append({"method": self.command, "path": self.path,
                                     "headers": dict(self.headers.items()), "body": body_in})
        ctype = "text/plain"
        if self.path.startswith("/big/"):
            return self._big(int(self.path[5:]))
        if "info/refs?service=git-upload-pack" in self.path:
            body, ctype = git_advertisement(), "application/x-git-upload-pack-advertisement"
        else:
            body = ("%s %s over TLS\n" % (self.command, self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _big(self, n):
        """n bytes, written a MiB at a time (for the bench)."""
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        chunk = b"x" * (1 << 20)
        while n > 0:
            self.wfile.write(chunk[:min(n, len(chunk))])
            n -= min(n, len(chunk))

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = do_OPTIONS = _answer

    def log_message(self, *a):
        pass


class TLSOrigin:
    """A threaded HTTPS/1.1 origin on 127.0.0.1 (port 0: any) with the given certificate."""

    def __init__(self, cert, key, port=0):
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.srv.daemon_threads = True
        self.srv.requests = []
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    @property
    def requests(self):
        return self.srv.requests
