"""An OAuth2 token endpoint for the client-credentials grant (RFC 6749
section 4.4), for the connector tests. Usage: oauth.py CLIENT_ID
CLIENT_SECRET ACCESS_TOKEN. POST /token with HTTP basic client
authentication and grant_type=client_credentials answers ACCESS_TOKEN,
valid for ?expires_in=N seconds (default 3600); N is any JSON value, sent
as is (`18446744073709551615`, `-1`, `1.5`, `"60"`, `null`), and `none`
leaves `expires_in` out. Anything else is 401 or 400. GET /issued says how many tokens it gave. Binds 127.0.0.1 on a free
port and prints that port on its first line of output.
"""

import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

CLIENT_ID, CLIENT_SECRET, ACCESS_TOKEN = sys.argv[1:4]
issued = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, document):
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply(200, {"issued": issued})

    def do_POST(self):
        global issued
        url = urlparse(self.path)
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
        expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if url.path != "/token" or self.headers.get("Authorization") != expected:
            return self.reply(401, {"error": "invalid_client"})
        if form.get("grant_type") != ["client_credentials"]:
            return self.reply(400, {"error": "unsupported_grant_type"})
        issued += 1
        answer = {"access_token": ACCESS_TOKEN, "token_type": "Bearer"}
        expires_in = parse_qs(url.query).get("expires_in", ["3600"])[0]
        if expires_in != "none":
            answer["expires_in"] = json.loads(expires_in)
        self.reply(200, answer)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
sys.stdout.close()
server.serve_forever()
