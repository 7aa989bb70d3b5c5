#!/usr/bin/env python3
"""An MCP server (stdio, newline-delimited JSON-RPC) that leaves a mark.

usage: marker_mcp.py MARKER

It creates MARKER as soon as it runs, so a test sees whether anything started
it, then offers one tool, `mark`, that answers "marked".
"""
import json
import sys

with open(sys.argv[1], "a") as f:
    f.write("started\n")

for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "marker", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "mark", "description": "Leaves a mark",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "marked"}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}),
              flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
