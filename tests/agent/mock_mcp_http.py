#!/usr/bin/env python3
"""An MCP server on the streamable HTTP transport, for tests, on 127.0.0.1.

usage: mock_mcp_http.py [TOKEN]   prints "PORT <n>" and serves until killed.

POST /mcp takes one JSON-RPC message. initialize answers JSON and sets
Mcp-Session-Id; every later request must carry it (else 400) and, when TOKEN
is given, the header X-Token: TOKEN (else 401). tools/list answers as a
server-sent event stream; tools/call answers JSON. Tools: echo {text} ->
"echo: <text>"; broken -> HTTP 500; slow -> answers after 10 s.
"""
import json
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

SESSION = "session-7f3a"
TOKEN = sys.argv[1] if len(sys.argv) > 1 else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=None, headers=(), sse=False):
        data = b""
        if body is not None:
            text = json.dumps(body)
            data = ("event: message\ndata: %s\n\n" % text if sse else text).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        method, mid = msg.get("method"), msg.get("id")
        if TOKEN and self.headers.get("X-Token") != TOKEN:
            return self.reply(401, {"error": "bad token"})
        if method == "initialize":
            return self.reply(200, {"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "mock-http", "version": "1"}}}, [("Mcp-Session-Id", SESSION)])
        if self.headers.get("Mcp-Session-Id") != SESSION:
            return self.reply(400, {"error": "no session"})
        if mid is None:
            return self.reply(202)
        if method == "tools/list":
            tools = [{"name": "echo", "description": "echoes", "inputSchema": {
                         "type": "object", "properties": {"text": {"type": "string"}}},
                      "annotations": {"readOnlyHint": True}},
                     {"name": "broken", "description": "fails", "inputSchema": {"type": "object"},
                      "annotations": {"readOnlyHint": True}},
                     {"name": "slow", "description": "takes long", "inputSchema": {"type": "object"},
                      "annotations": {"readOnlyHint": True}}]
            return self.reply(200, {"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}}, sse=True)
        if method == "tools/call":
            name, args = msg["params"]["name"], msg["params"].get("arguments", {})
            if name == "broken":
                return self.reply(500, {"error": {"message": "the tool broke"}})
            if name == "slow":
                time.sleep(10)
            return self.reply(200, {"jsonrpc": "2.0", "id": mid, "result": {
                "content": [{"type": "text", "text": "echo: %s" % args.get("text", "")}]}})
        return self.reply(200, {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + method}})


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Handler)
    print("PORT %d" % server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()
