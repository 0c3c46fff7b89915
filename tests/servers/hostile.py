"""An upstream that misbehaves on purpose, for the connector tests' hostile
cases: redirects anywhere, answers slowly or never, sends an endless body,
and echoes the headers it received. Binds 127.0.0.1 on a free port and
prints that port on its first line of output (the tests' readiness signal).

`/echo` answers `{"path", "headers"}` (what it received) and repeats each
request header as an `x-echo-NAME` response header; `?chunk=N` sends the
body in chunks of N bytes (chunked transfer coding), so that a value is
split across the frames a client reads.
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if url.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", query["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif url.path == "/echo":
            headers = {k.lower(): v for k, v in self.headers.items()}
            body = json.dumps({"path": self.path, "headers": headers}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            for name, value in headers.items():
                self.send_header(f"x-echo-{name}", value)
            size = int(query.get("chunk", ["0"])[0])
            if size <= 0:
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for start in range(0, len(body), size):
                piece = body[start : start + size]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        elif url.path == "/silent":
            time.sleep(60)
        elif url.path == "/slow":
            # Headers at once, then one byte a second: a slow loris.
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            for _ in range(1000):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(1)
        elif url.path == "/endless":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"y" * 65536
            try:
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                pass
        else:
            self.reply(b'{"error": "no such path"}', 404)

    def reply(self, body, status=200):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
sys.stdout.close()
server.serve_forever()
