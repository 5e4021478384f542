"""A mock OpenAI-compatible server: real HTTP on 127.0.0.1, scripted replies and scripted faults.

It speaks enough of ``/v1/chat/completions`` for any OpenAI client (ChatOpenAI included): plain and
streamed (server-sent events) replies, tool calls, usage (with ``stream_options.include_usage``),
and OpenAI-style errors. Every request is recorded, so a test can check what the client sent.

Each request takes the next item of the script:

- a `Reply` (or a string, or a dict of Reply fields): text, tool calls, usage, delays;
- a `Fault`: ``Fault.rate_limit(retry_after=2)`` (429), ``Fault.server_error()`` (500),
  ``Fault.unavailable()`` (503), ``Fault.status_code(400)``, ``Fault.hang()`` (never answers),
  ``Fault.cut(...)`` (the stream stops mid-reply), ``Fault.malformed_tool_args(...)``,
  ``Fault.empty_choices()``, ``Fault.giant(...)``, ``Fault.slow(...)`` and ``Fault.drip(...)``
  (a reply that never ends, a few bytes at a time), ``Fault.context_overflow(...)`` (the
  request is longer than the model's window, worded as OpenAI or llama.cpp word it).

When the script runs out, ``responder(request)`` answers if given, else the server answers 500
naming the problem.

Like the real API, it refuses what the real API refuses: a request body of the wrong shape (no
``messages``, an unknown role, a tool result that answers no call, a malformed tool or
``tool_choice``, ``stream_options`` without ``stream``...) gets a 400 before any script item is
used (see `ai_agent.testing._requests`). Every chunk of a streamed reply carries the one id of
its completion, and error bodies are OpenAI's: ``{"error": {"message", "type", "param",
"code"}}`` with ``code`` a string (``"rate_limit_exceeded"``, ``"context_length_exceeded"``...)
or null.

Examples:
    >>> from langchain_openai import ChatOpenAI
    >>> with MockOpenAIServer(["Hello!"]) as server:
    ...     model = ChatOpenAI(base_url=server.base_url, api_key="k", model="m", max_retries=0)
    ...     model.invoke("hi").content
    'Hello!'
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from ai_agent.testing._requests import invalid_request
from ai_agent.testing._script import Fault, Reply

__all__ = ["Fault", "MockOpenAIServer", "RecordedRequest", "Reply"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received. ``headers`` keys are lower case."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed reply."""
        return bool(self.body.get("stream"))


ScriptItem = Reply | Fault | str | dict[str, Any]
Responder = Callable[[RecordedRequest], Reply | Fault | str]


def _item(value: ScriptItem) -> Reply | Fault:
    if isinstance(value, Reply | Fault):
        return value
    if isinstance(value, str):
        return Reply(text=value)
    return Reply(**value)


def _estimate(text: str) -> int:
    return max(1, (len(text) + 3) // 4) if text else 0


def _usage(reply: Reply, body: dict[str, Any]) -> dict[str, Any] | None:
    if reply.usage is not None and not reply.usage:
        return None
    given = reply.usage or {}
    prompt = given.get(
        "prompt_tokens",
        sum(_estimate(str(m.get("content") or "")) + 4 for m in body.get("messages", [])),
    )
    args = "".join(_arguments(c) for c in reply.tool_calls)
    completion = given.get("completion_tokens", _estimate(reply.text + args))
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if "cached_tokens" in given:
        usage["prompt_tokens_details"] = {"cached_tokens": given["cached_tokens"]}
    return usage


def _arguments(call: dict[str, Any]) -> str:
    if "arguments" in call:
        return str(call["arguments"])
    return json.dumps(call.get("args") or {})


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": c.get("id") or f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": c["name"], "arguments": _arguments(c)},
        }
        for c in reply.tool_calls
    ]


# The error "code" OpenAI sends with a status when nothing more specific applies.
_STATUS_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}


def _error_type(status: int) -> str:
    """The error "type" OpenAI sends with a status."""
    if status == 429:
        return "requests"
    return "server_error" if status >= 500 else "invalid_request_error"


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    _completion_id = ""

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib signature
        """Quiet: tests read ``requests`` instead of a log on stderr."""

    def do_GET(self) -> None:
        mock = self.server.mock
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": mock.model, "object": "model"}]})
        elif self.path.rstrip("/") in ("/health", "/v1/health"):
            self._json(200, {"status": "ok"})
        else:
            self._error(404, f"no route {self.path}", code="unknown_url")

    def do_POST(self) -> None:
        mock = self.server.mock
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._error(400, "We could not parse the JSON body of your request.")
            return
        request = RecordedRequest(
            "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        mock.record(request)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._error(404, f"no route {self.path}", code="unknown_url")
            return
        if mock.api_key is not None and request.headers.get("authorization") != (
            f"Bearer {mock.api_key}"
        ):
            self._error(401, "Incorrect API key provided.", code="invalid_api_key")
            return
        problem = invalid_request(body)
        if problem is not None:
            # Refused before any script item is used, as the real API refuses it before any
            # model runs.
            self._error(400, problem.message, code=problem.code, param=problem.param)
            return
        self._answer(mock.next_item(request), request)

    # Answers ---------------------------------------------------------------------------------
    def _answer(self, item: Reply | Fault, request: RecordedRequest) -> None:
        # One id per completion: every chunk of a streamed reply carries it, as a real server's
        # chunks do (a connection kept alive serves several requests, hence set per answer).
        self._completion_id = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        if isinstance(item, Reply):
            self._reply(item, request)
        elif item.kind == "hang":
            self.server.mock.stopping.wait()
            self.close_connection = True
        elif item.kind == "cut":
            self._cut(item, request)
        elif item.kind == "empty_choices":
            self._empty(request)
        elif item.kind == "no_finish":
            self._no_finish(item.reply, request)
        elif item.kind == "drip":
            self._drip(item, request)
        elif item.status == 200:
            self._reply(item.reply, request)
        else:
            self._fault_error(item)

    def _reply(self, reply: Reply, request: RecordedRequest) -> None:
        if reply.delay:
            self.server.mock.stopping.wait(reply.delay)
        if request.stream:
            self._stream(reply, request)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = _calls(reply)
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        payload = self._envelope(
            request, [{"index": 0, "message": message, "finish_reason": finish}]
        )
        usage = _usage(reply, request.body)
        if usage is not None:
            payload["usage"] = usage
        self._json(200, payload)

    def _empty(self, request: RecordedRequest) -> None:
        kind = "chat.completion.chunk" if request.stream else "chat.completion"
        payload = self._envelope(request, [], kind=kind)
        payload["usage"] = _usage(Reply(), request.body)
        if not request.stream:
            self._json(200, payload)
            return
        self._start_stream()
        self._event(payload)
        self._send_chunk(b"data: [DONE]\n\n")
        self._send_chunk(b"")

    def _no_finish(self, reply: Reply, request: RecordedRequest) -> None:
        if request.stream:
            self._stream(reply, request, finish=False)
            return
        message = {"role": "assistant", "content": reply.text}
        choice = {"index": 0, "message": message, "finish_reason": None}
        self._json(200, self._envelope(request, [choice]))

    def _stream(self, reply: Reply, request: RecordedRequest, *, finish: bool = True) -> None:
        self._start_stream()
        for chunk in self._chunks(reply, request, finish=finish):
            self._event(chunk)
            if reply.chunk_delay:
                self.server.mock.stopping.wait(reply.chunk_delay)
        self._send_chunk(b"data: [DONE]\n\n")
        self._send_chunk(b"")

    def _cut(self, fault: Fault, request: RecordedRequest) -> None:
        if not request.stream:
            body = b'{"id": "cut", "object": "chat.completion", "choices": [{"ind'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) + 100))
            self.end_headers()
            self.wfile.write(body)
        else:
            self._start_stream()
            for i, chunk in enumerate(self._chunks(fault.reply, request, finish=False)):
                if i >= fault.status:
                    break
                self._event(chunk)
        self.wfile.flush()
        # Leave the chunked body unterminated: the client sees an incomplete read.
        self.close_connection = True

    def _drip(self, fault: Fault, request: RecordedRequest) -> None:
        if request.stream:
            self._start_stream()
            body = self._endless_events(request)
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(1 << 30))
            self.end_headers()
            body = itertools.chain([b'{"id": "drip", '], itertools.repeat(b" " * 64))
        pending = b""
        stopping = self.server.mock.stopping
        while not stopping.is_set():
            while len(pending) < fault.status:
                pending += next(body)
            piece, pending = pending[: fault.status], pending[fault.status :]
            if request.stream:
                self._send_chunk(piece)
            else:
                self.wfile.write(piece)
                self.wfile.flush()
            stopping.wait(fault.every)
        self.close_connection = True

    def _endless_events(self, request: RecordedRequest) -> Iterator[bytes]:
        """The bytes of a streamed reply that never finishes: "x", "x", "x", ..."""
        for delta in itertools.chain(
            [{"role": "assistant", "content": ""}], itertools.repeat({"content": "x"})
        ):
            choice = {"index": 0, "delta": delta, "finish_reason": None}
            payload = self._envelope(request, [choice], kind="chat.completion.chunk")
            yield b"data: " + json.dumps(payload).encode() + b"\n\n"

    def _chunks(
        self, reply: Reply, request: RecordedRequest, *, finish: bool
    ) -> Iterator[dict[str, Any]]:
        def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
            return self._envelope(
                request,
                [{"index": 0, "delta": delta, "finish_reason": reason}],
                kind="chat.completion.chunk",
            )

        yield chunk({"role": "assistant", "content": ""})
        step = max(1, reply.chunk_chars)
        for i in range(0, len(reply.text), step):
            yield chunk({"content": reply.text[i : i + step]})
        for index, call in enumerate(_calls(reply)):
            head = {"index": index, "id": call["id"], "type": "function"}
            head["function"] = {"name": call["function"]["name"], "arguments": ""}
            yield chunk({"tool_calls": [head]})
            args = call["function"]["arguments"]
            for i in range(0, len(args), step):
                part = {"index": index, "function": {"arguments": args[i : i + step]}}
                yield chunk({"tool_calls": [part]})
        if finish:
            yield chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"))
        usage = _usage(reply, request.body)
        wants_usage = (request.body.get("stream_options") or {}).get("include_usage")
        if wants_usage and usage is not None:
            payload = self._envelope(request, [], kind="chat.completion.chunk")
            payload["usage"] = usage
            yield payload

    # HTTP plumbing ---------------------------------------------------------------------------
    def _envelope(
        self,
        request: RecordedRequest,
        choices: list[dict[str, Any]],
        *,
        kind: str = "chat.completion",
    ) -> dict[str, Any]:
        return {
            "id": self._completion_id,
            "object": kind,
            "created": int(time.time()),
            "model": str(request.body.get("model") or self.server.mock.model),
            "choices": choices,
        }

    def _json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        kind: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """OpenAI's error body: ``code`` is a string or null, never the HTTP status."""
        error = {"message": message, "type": kind or _error_type(status), "param": param}
        body = {"error": {**error, "code": code, **(extra or {})}}
        self._json(status, body, headers)

    def _fault_error(self, fault: Fault) -> None:
        code = fault.code if fault.code is not None else _STATUS_CODES.get(fault.status)
        extra = dict(fault.extra)
        param = extra.pop("param", None)
        self._error(
            fault.status,
            fault.message,
            code=code,
            param=param,
            kind=fault.error_type,
            headers=fault.headers,
            extra=extra,
        )

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _event(self, payload: dict[str, Any]) -> None:
        self._send_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # The listen backlog: socketserver's default of 5 refuses connections when many clients
    # (concurrent runs, several worker processes) connect at once, which a real server would not.
    request_queue_size = 128
    mock: MockOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout, cut) is expected here, not worth a traceback."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class MockOpenAIServer:
    """An OpenAI-compatible server for tests and demos, on 127.0.0.1 and a free port.

    Use it as a context manager (sync or async); ``base_url`` ends in ``/v1``.

    Args:
        script: Replies and faults, one per request, in order.
        responder: Answers requests once the script is used up: ``responder(request)``.
        api_key: When set, requests without ``Authorization: Bearer <api_key>`` get a 401.
        model: The model id reported by ``/v1/models`` and in replies.

    Attributes:
        requests: Every request received, in order.

    Examples:
        >>> server = MockOpenAIServer([Fault.rate_limit(retry_after=1), "ok"])
        >>> with server:
        ...     server.base_url.startswith("http://127.0.0.1:")
        True
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        responder: Responder | None = None,
        api_key: str | None = None,
        model: str = "mock-model",
    ) -> None:
        self._script: deque[Reply | Fault] = deque(_item(i) for i in script)
        self.responder = responder
        self.api_key = api_key
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # Script ----------------------------------------------------------------------------------
    def add(self, *items: ScriptItem) -> Self:
        """Append replies or faults to the script."""
        with self._lock:
            self._script.extend(_item(i) for i in items)
        return self

    @property
    def remaining(self) -> int:
        """Script items not used yet."""
        with self._lock:
            return len(self._script)

    def record(self, request: RecordedRequest) -> None:
        """Keep a received request (called by the handler threads)."""
        with self._lock:
            self.requests.append(request)

    def next_item(self, request: RecordedRequest) -> Reply | Fault:
        """The answer for a request: the next script item, the responder's, or a 500."""
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return _item(self.responder(request))
        return Fault.status_code(
            500, "the mock server's script is used up; add replies with server.add(...)"
        )

    # Lifecycle -------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port it listens on (after start)."""
        if self._server is None:
            raise RuntimeError("the mock server is not running; use it in a `with` block")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: pass it as the client's base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve in a background thread."""
        if self._server is not None:
            return self
        self.stopping.clear()
        server = _HTTPServer(("127.0.0.1", 0), _Handler)
        server.mock = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; hanging requests are released."""
        server, self._server = self._server, None
        if server is None:
            return
        self.stopping.set()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
