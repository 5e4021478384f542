"""A hand-written MCP stdio server for the tests: it sends exactly what its script says.

A real SDK server validates what it sends; a broken or hostile one does not. This one answers
``initialize``, ``tools/list`` and ``tools/call`` with raw JSON-RPC lines taken from a script (a
JSON file given as the only argument), so a test can make it send what no SDK would::

    {
      "server_info": {"name": "raw", "version": "1"},   # optional
      "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
      "results": {"echo": {"content": [{"type": "text", "text": "hi"}]}},
      "stdout_bytes": "base64 of bytes written to stdout once initialized",    # optional
      "list_changed": 0,     # how many tools/list_changed notifications to send once initialized
      "stderr_lines": 0,     # how many lines to write to stderr once initialized
      "call_list_changed": 0,  # ... sent before answering each tools/call
      "count_tool": "lists",   # a tool answering how many tools/list requests came so far
      "silent": ["tools/list"],  # methods never answered
      "reread_tools": false  # true: each tools/list reads "tools" from the script file anew
    }

In ``tools`` and ``server_info``, ``{env:NAME}`` in a string is replaced by that environment
variable of the server (a server that gives its key away).

A tool missing from ``results`` answers ``{"content": []}``. The process reads stdin line by line
and writes each reply as one line, flushed, on stdout.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
from typing import Any


def _send(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def _expand(value: Any) -> Any:
    if isinstance(value, str):
        return re.sub(r"\{env:(\w+)\}", lambda m: os.environ.get(m.group(1), ""), value)
    if isinstance(value, list):
        return [_expand(v) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v) for k, v in value.items()}
    return value


def _initialized(script: dict[str, Any]) -> None:
    if "stdout_bytes" in script:
        sys.stdout.buffer.write(base64.b64decode(script["stdout_bytes"]))
        sys.stdout.buffer.flush()
    for n in range(script.get("stderr_lines", 0)):
        sys.stderr.write(f"noise {n}\n")
    sys.stderr.flush()
    for _ in range(script.get("list_changed", 0)):
        _send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


class _Server:
    def __init__(self, script: dict[str, Any], path: str) -> None:
        self.script = script
        self.path = path
        self.lists = 0  # tools/list requests answered

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The result of a request (None: a method it does not know)."""
        script = self.script
        if method == "initialize":
            return {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": script.get("server_info", {"name": "raw", "version": "1"}),
            }
        if method == "tools/list":
            self.lists += 1
            if script.get("reread_tools"):  # a server whose tools change while it runs
                with open(self.path, encoding="utf-8") as handle:
                    return {"tools": _expand(json.load(handle)).get("tools", [])}
            return {"tools": script.get("tools", [])}
        if method == "tools/call":
            for _ in range(script.get("call_list_changed", 0)):
                _send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            if params["name"] == script.get("count_tool"):
                return {"content": [{"type": "text", "text": str(self.lists)}]}
            result: dict[str, Any] = script.get("results", {}).get(params["name"], {"content": []})
            return result
        return {} if method == "ping" else None


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        script: dict[str, Any] = _expand(json.load(handle))
    server = _Server(script, sys.argv[1])
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if ident is None:  # a notification
            if method == "notifications/initialized":
                _initialized(script)
            continue
        if method in script.get("silent", []):
            continue
        result = server.answer(method, request.get("params") or {})
        if result is None:
            _send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": method}})
        else:
            _send({"jsonrpc": "2.0", "id": ident, "result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
