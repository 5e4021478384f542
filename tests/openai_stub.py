"""A minimal OpenAI-compatible HTTP server on 127.0.0.1 for tests that need real HTTP.

It answers ``POST /v1/chat/completions`` from a list of scripted replies (a dict: a chat completion
body, or ``{"status": 401, "body": {...}}`` for an error) and keeps every request it saw, headers
included, so tests can check what went over the wire.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(text: str = "", tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A chat completion body with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c.get("args", {}))},
            }
            for i, c in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


@dataclass
class Stub:
    """The running server: its base URL, the replies still to give, the requests it saw."""

    base_url: str
    replies: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def openai_stub(replies: list[dict[str, Any]]) -> Iterator[Stub]:
    """Serve the replies in order; the last one repeats when they run out."""
    stub = Stub(base_url="", replies=list(replies))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            stub.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            reply = stub.replies.pop(0) if len(stub.replies) > 1 else stub.replies[0]
            status = int(reply.get("status", 200))
            payload = json.dumps(reply.get("body", reply)).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
