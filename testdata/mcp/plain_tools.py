#!/usr/bin/env python3
"""A minimal MCP server over stdio, written for the scenario tests.

It speaks JSON-RPC 2.0 line by line with nothing but the standard
library, the way a third-party server may: `note_write` carries no
annotations at all (the MCP specification then means "destructive"),
`slow_echo` is read-only and sleeps before answering, each call on its own
thread so several can be in flight at once. Written notes are appended to
the file named by PLAIN_TOOLS_LOG (one line per executed call), so a test
can count executions.
"""
import json
import os
import sys
import threading
import time

LOCK = threading.Lock()

TOOLS = [
    {
        "name": "note_write",
        "description": "Write a note.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "slow_echo",
        "description": "Echo a text after some seconds.",
        "inputSchema": {
            "type": "object",
            "properties": {"seconds": {"type": "string"}, "text": {"type": "string"}},
            "required": ["seconds", "text"],
        },
        "annotations": {"readOnlyHint": True},
    },
]


def send(message):
    with LOCK:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def record(line):
    path = os.environ.get("PLAIN_TOOLS_LOG")
    if path:
        with LOCK, open(path, "a", encoding="utf-8") as log:
            log.write(line + "\n")


def call(request_id, params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "note_write":
        record("note_write " + str(args.get("text")))
        text = "noted: " + str(args.get("text"))
    elif name == "slow_echo":
        time.sleep(float(args.get("seconds", "0")))
        record("slow_echo " + str(args.get("text")))
        text = "echo: " + str(args.get("text"))
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32602, "message": "unknown tool " + str(name)}})
        return
    send({"jsonrpc": "2.0", "id": request_id,
          "result": {"content": [{"type": "text", "text": text}], "isError": False}})


def handle(message):
    method = message.get("method")
    request_id = message.get("id")
    if request_id is None:
        return  # a notification
    if method == "initialize":
        version = message.get("params", {}).get("protocolVersion", "2025-03-26")
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "plain-tools", "version": "1.0"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        threading.Thread(target=call, args=(request_id, message.get("params", {})),
                         daemon=True).start()
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": "method not found: " + str(method)}})


def main():
    for line in sys.stdin:
        line = line.strip()
        if line:
            handle(json.loads(line))


if __name__ == "__main__":
    main()
