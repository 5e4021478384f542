"""The script of the mock OpenAI server: scripted replies (`Reply`) and failures (`Fault`).

See `ai_agent.testing.server` for how the server plays them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Fault", "FaultKind", "Reply"]

FaultKind = Literal["status", "hang", "cut", "empty_choices", "no_finish", "drip"]


@dataclass(frozen=True)
class Reply:
    """A scripted answer.

    Args:
        text: The assistant text.
        tool_calls: ``{"name", "args"}`` dicts (``"arguments"`` sends a raw string instead,
            ``"id"`` sets the call id).
        usage: ``prompt_tokens`` / ``completion_tokens`` / ``cached_tokens`` to report; None
            reports an estimate (4 characters a token), ``{}`` reports none at all.
        finish_reason: Defaults to ``tool_calls`` when there are calls, else ``stop``.
        delay: Seconds before the answer starts.
        chunk_delay: Seconds between streamed chunks.
        chunk_chars: Characters of text per streamed chunk.
    """

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    chunk_chars: int = 4


@dataclass(frozen=True)
class Fault:
    """A scripted failure; build one with the class methods."""

    kind: FaultKind
    status: int = 500
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    reply: Reply = field(default_factory=Reply)
    every: float = 0.0
    # The error body's "type" and "code" (None: what OpenAI sends for the status) and any
    # fields a server adds beside them (llama.cpp's n_prompt_tokens, n_ctx).
    error_type: str | None = None
    code: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def status_code(
        cls,
        status: int,
        message: str = "",
        *,
        code: str | None = None,
        error_type: str | None = None,
        **headers: str,
    ) -> Fault:
        """An HTTP error with an OpenAI-style body.

        ``code`` and ``error_type`` replace the ones OpenAI sends for ``status``; keyword
        arguments besides them are response headers.
        """
        return cls(
            "status",
            status=status,
            message=message or f"mock error {status}",
            headers=headers,
            code=code,
            error_type=error_type,
        )

    @classmethod
    def context_overflow(
        cls,
        prompt_tokens: int = 9000,
        window: int = 8192,
        *,
        style: Literal["openai", "llama.cpp"] = "openai",
    ) -> Fault:
        """400: the request is longer than the model's context window.

        ``style="openai"`` words it as OpenAI does (code ``context_length_exceeded``);
        ``style="llama.cpp"`` as llama.cpp's server does (type ``exceed_context_size_error``,
        with ``n_prompt_tokens`` and ``n_ctx``), as measured on the real server.
        """
        if style == "llama.cpp":
            return cls(
                "status",
                status=400,
                message=(
                    f"request ({prompt_tokens} tokens) exceeds the available context size "
                    f"({window} tokens), try increasing it"
                ),
                error_type="exceed_context_size_error",
                extra={"n_prompt_tokens": prompt_tokens, "n_ctx": window},
            )
        return cls(
            "status",
            status=400,
            message=(
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {prompt_tokens} tokens. Please reduce the length of the "
                "messages."
            ),
            code="context_length_exceeded",
            error_type="invalid_request_error",
            extra={"param": "messages"},
        )

    @classmethod
    def rate_limit(cls, retry_after: float | None = 1.0, message: str = "rate limited") -> Fault:
        """429 Too Many Requests, with ``Retry-After`` when given."""
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        return cls("status", status=429, message=message, headers=headers)

    @classmethod
    def server_error(cls, message: str = "internal error") -> Fault:
        """500 Internal Server Error."""
        return cls("status", status=500, message=message)

    @classmethod
    def unavailable(cls, retry_after: float | None = None) -> Fault:
        """503 Service Unavailable (a loading model, an overloaded server)."""
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        return cls("status", status=503, message="model is loading", headers=headers)

    @classmethod
    def hang(cls) -> Fault:
        """Accept the request and never answer (until the client gives up or the server stops)."""
        return cls("hang")

    @classmethod
    def cut(cls, text: str = "The answer is", after_chunks: int = 2) -> Fault:
        """Stream ``after_chunks`` chunks of ``text``, then drop the connection mid-body.

        Without streaming, the body is cut short the same way.
        """
        return cls("cut", status=after_chunks, reply=Reply(text=text))

    @classmethod
    def no_finish(cls, text: str = "The answer is") -> Fault:
        """A stream that ends cleanly (``[DONE]``) without ever sending a finish reason."""
        return cls("no_finish", reply=Reply(text=text))

    @classmethod
    def malformed_tool_args(cls, name: str = "calculator", arguments: str = '{"x": ') -> Fault:
        """A tool call whose ``arguments`` are not valid JSON."""
        return cls(
            "status", status=200, reply=Reply(tool_calls=[{"name": name, "arguments": arguments}])
        )

    @classmethod
    def empty_choices(cls) -> Fault:
        """A 200 answer with ``"choices": []``."""
        return cls("empty_choices")

    @classmethod
    def giant(cls, chars: int = 2_000_000, chunk_chars: int = 65_536) -> Fault:
        """A reply of ``chars`` characters (a runaway generation)."""
        return cls("status", status=200, reply=Reply(text="x" * chars, chunk_chars=chunk_chars))

    @classmethod
    def drip(cls, every: float, size: int = 1) -> Fault:
        """A reply that never ends: ``size`` bytes of it every ``every`` seconds.

        Streamed, the bytes are those of an endless run of text chunks (with ``size`` of a few
        hundred, whole chunks keep arriving; with 1, not even the first one completes for a
        long while). Not streamed, they are the start of a body that never completes. Each
        byte keeps an HTTP client's read timeout from firing: only a deadline stops it.
        """
        return cls("drip", status=size, every=every)

    @classmethod
    def slow(cls, delay: float, reply: Reply | str = "slow answer") -> Fault:
        """A correct answer that starts after ``delay`` seconds."""
        base = Reply(text=reply) if isinstance(reply, str) else reply
        return cls("status", status=200, reply=Reply(**{**base.__dict__, "delay": delay}))
