"""The scale-out bench's model: an OpenAI-compatible server that answers every request in 50 ms.

A "50 ms model" means each reply takes 50 ms however many requests arrive at once, as a model
server with spare capacity behaves. So this is an asyncio server in a process of its own: each
request waits ``asyncio.sleep(delay)`` and nothing else, so a thousand requests at once all
answer after 50 ms, and its CPU is its own (``/proc/PID/stat``), not mixed into the bench's.
(The test suite's ``MockOpenAIServer`` runs a thread per connection inside the caller's
process, with HTTP/1.0: a new connection per request and the caller's GIL.)

It speaks just what the bench's runs need: ``POST /v1/chat/completions`` without streaming,
HTTP/1.1 with keep-alive; ``GET /v1/stats`` says how long its replies took, measured inside
the server (from the request read to the reply sent), which a loaded client cannot blur. The
reply: a ``ship`` call for the order the task names; once the conversation holds the tool's
answer, the text ``done``.

Run it with ``python -m bench.scale_model [--delay 0.05]``: it prints its port on the first
line of its output and serves until it is terminated.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import sys
import time
from typing import Any

__all__ = ["Stats", "answer", "main", "serve"]

_ids = itertools.count(1)


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for a chat request: ship the task's order, or say it is done."""
    messages = body.get("messages", [])
    if any(m.get("role") == "tool" for m in messages):
        return {"role": "assistant", "content": "done"}
    task = next((m.get("content") for m in messages if m.get("role") == "user"), "") or ""
    order = str(task).rsplit(" ", 1)[-1]
    call = {
        "id": f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": "ship", "arguments": json.dumps({"order": order})},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _completion(body: dict[str, Any]) -> bytes:
    message = answer(body)
    reason = "tool_calls" if message.get("tool_calls") else "stop"
    return json.dumps(
        {
            "id": f"chatcmpl-{next(_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or "bench-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        }
    ).encode()


class Stats:
    """How long the server took per reply, from the request read to the reply sent."""

    def __init__(self) -> None:
        self.replies = 0
        self.total_s = 0.0
        self.max_s = 0.0

    def add(self, seconds: float) -> None:
        """Count one reply."""
        self.replies += 1
        self.total_s += seconds
        self.max_s = max(self.max_s, seconds)

    def to_json(self) -> bytes:
        """``GET /stats``: replies, mean and longest seconds per reply."""
        mean = self.total_s / self.replies if self.replies else 0.0
        return json.dumps({"replies": self.replies, "mean_s": mean, "max_s": self.max_s}).encode()


async def _handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float, stats: Stats
) -> None:
    try:
        while True:  # keep-alive: one connection carries many requests
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = json.loads(await reader.readexactly(length)) if length else {}
            started = time.perf_counter()
            path = lines[0].split(" ")[1].rstrip("/")
            if path.endswith("/stats"):
                status, payload = "200 OK", stats.to_json()
            elif path.endswith("/chat/completions"):
                await asyncio.sleep(delay)
                status, payload = "200 OK", _completion(body)
            else:
                status, payload = "404 Not Found", b'{"error": {"message": "not found"}}'
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
            if path.endswith("/chat/completions"):
                stats.add(time.perf_counter() - started)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the client closed the connection
    finally:
        writer.close()


async def serve(delay: float, port: int = 0) -> None:
    """Serve on 127.0.0.1 until cancelled; print the port first."""
    stats = Stats()
    server = await asyncio.start_server(
        lambda r, w: _handle(r, w, delay, stats), "127.0.0.1", port, backlog=1024
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.scale_model``."""
    parser = argparse.ArgumentParser(prog="python -m bench.scale_model", description=__doc__)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds per reply (0.05)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.delay, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
