#!/usr/bin/env python3
"""A tiny MCP server over streamable HTTP (stdlib only) for
end2end/tests/mcp_login.rs: one read-only tool, `secure_echo`, that needs a
bearer token.

    python3 mcp_secure.py [--reject-first-token]

Prints `mcp listening on http://127.0.0.1:PORT/mcp` (any free port).
`initialize` and `tools/list` answer without a token; `tools/call` answers
401 (WWW-Authenticate: Bearer) unless the request carries
`Authorization: Bearer <JWT>`. With --reject-first-token, the first token
seen is refused (401) on every request, as a server does with a token it
no longer accepts; a token from a later sign-in works. `secure_echo`
answers `secure_echo: <text> (for <sub>)`.
"""

import base64
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REJECT_FIRST = "--reject-first-token" in sys.argv
LOCK = threading.Lock()
REJECTED = set()
SEEN = []

TOOL = {
    "name": "secure_echo",
    "description": "Echoes a text; needs a signed-in user.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    "annotations": {"readOnlyHint": True},
}


def jwt_subject(token):
    try:
        part = token.split(".")[1]
        part += "=" * (-len(part) % 4)
        return json.loads(base64.urlsafe_b64decode(part)).get("sub")
    except Exception:  # not a JWT
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("mcp_secure: " + (fmt % args) + "\n")

    def send(self, status, body=None, headers=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def unauthorized(self):
        self.send(
            401,
            {"error": "unauthorized"},
            {"WWW-Authenticate": 'Bearer realm="mcp-secure"'},
        )

    def token(self):
        value = self.headers.get("Authorization", "")
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return token.strip()

    def do_GET(self):
        self.send(405, None, {"Allow": "POST, DELETE"})

    def do_DELETE(self):
        self.send(200)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            message = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            self.send(400, {"error": "not JSON"})
            return
        token = self.token()
        if token is not None:
            with LOCK:
                if REJECT_FIRST and not SEEN:
                    REJECTED.add(token)
                if token not in SEEN:
                    SEEN.append(token)
                refused = token in REJECTED
            if refused:
                sys.stderr.write("mcp_secure: refused a rejected token\n")
                self.unauthorized()
                return
        if not isinstance(message, dict) or "id" not in message:
            self.send(202)  # a notification or a response
            return
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-03-26"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcp-secure", "version": "1.0.0"},
            }
            headers = {"Mcp-Session-Id": uuid.uuid4().hex}
        elif method == "tools/list":
            result, headers = {"tools": [TOOL]}, {}
        elif method == "tools/call":
            subject = jwt_subject(token) if token else None
            if subject is None:
                sys.stderr.write("mcp_secure: tools/call without a JWT: 401\n")
                self.unauthorized()
                return
            text = (params.get("arguments") or {}).get("text", "")
            result = {
                "content": [
                    {"type": "text", "text": f"secure_echo: {text} (for {subject})"}
                ],
                "isError": False,
            }
            headers = {}
        elif method == "ping":
            result, headers = {}, {}
        else:
            self.send(
                200,
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": f"no method {method}"},
                },
            )
            return
        self.send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result}, headers)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"mcp listening on http://127.0.0.1:{server.server_port}/mcp", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
