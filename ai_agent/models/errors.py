"""How a model call fails, in the engine's error tree: what the client raised, mapped.

`classify_model_error` turns a client exception into a `ai_agent.errors.ModelError` with a
message that says what to do (and never a secret), tagged with the kinds the retry lists and the
breaker know (`ai_agent.models.resilience.with_kinds`). The caller's own failures (a deadline
passed, a cut stream, tool-call arguments that are not JSON) are made here too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ai_agent.context import MAX_REPORTED_TOKENS
from ai_agent.errors import (
    ContextOverflowError,
    EmptyResponseError,
    MalformedToolCallError,
    ModelAuthError,
    ModelError,
    ModelRateLimitError,
    ModelResponseError,
    ModelUnavailableError,
    StreamInterruptedError,
)
from ai_agent.models.resilience import parse_retry_after, with_kinds
from ai_agent.observability.redaction import SecretValues

__all__ = [
    "classify_model_error",
    "context_overflow",
    "malformed_again",
    "malformed_call",
    "repair_request",
    "stream_cut",
    "timed_out",
]

_SHOWN_ARGUMENTS = 200


def _scrub(text: str, secrets: Sequence[str] | SecretValues) -> str:
    values = secrets if isinstance(secrets, SecretValues) else SecretValues(secrets)
    return values.text(text)


# How much of what the server or the client said an error quotes. An error body can be as large
# as any reply (a proxy's HTML page, a runaway server's megabytes), and the message is logged at
# every retry, sent to every listener, stored with the failed step and printed.
MAX_DETAIL_CHARS = 2_000


def _shortened(text: str) -> str:
    """``text`` (already scrubbed), cut to `MAX_DETAIL_CHARS`, saying how much was left out.

    Examples:
        >>> _shortened("x" * 2_010)[-40:]
        'xxxxxxxxxxxxxxx... (10 more characters)'
    """
    if len(text) <= MAX_DETAIL_CHARS:
        return text
    return f"{text[:MAX_DETAIL_CHARS]}... ({len(text) - MAX_DETAIL_CHARS} more characters)"


# The longest wait a server's Retry-After is taken at. A server that asks for more (10**9 s is 31
# years) is broken or means "not today": the call goes to the gate either way (no retry sleeps
# past ``max_backoff_seconds``), and a day is long enough for whoever reads the hint (the person
# at the gate, a scheduler resuming the run) while no figure of the server's passes through.
MAX_RETRY_AFTER = 86_400.0


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        seconds = parse_retry_after(millis)
        if seconds is not None:
            return seconds / 1000
    return parse_retry_after(headers.get("retry-after"))


def _rate_limited(detail: str, base_url: str, asked: float | None) -> ModelRateLimitError:
    """A 429, with the server's Retry-After bounded by `MAX_RETRY_AFTER`, saying what it asked.

    Examples:
        >>> error = _rate_limited("slow down", "http://srv", 1e9)
        >>> error.retry_after
        86400.0
        >>> "asked to wait 1000000000 s" in str(error), "taken as a day" in str(error)
        (True, True)
    """
    message = f"the model server at {base_url} is rate limiting (429): {detail}"
    if asked is None:
        return ModelRateLimitError(message)
    if asked <= MAX_RETRY_AFTER:
        return ModelRateLimitError(
            f"{message}. It asked to wait {asked:g} s (Retry-After).", retry_after=asked
        )
    shown = f"{asked:.0f}" if asked < 1e12 else f"{asked:.3g}"  # 1e+300, not 301 digits
    return ModelRateLimitError(
        f"{message}. It asked to wait {shown} s (Retry-After), more than a day: the wait is "
        f"taken as a day ({MAX_RETRY_AFTER:.0f} s). Try again later, or ask the server's "
        "operator about its quota.",
        retry_after=MAX_RETRY_AFTER,
    )


# Kinds by HTTP status, for the retryable-error lists of ErrorRecoveryConfig.
_STATUS_KINDS = {
    408: ("Timeout",),
    500: ("InternalServerError",),
    502: ("BadGateway",),
    503: ("ServiceUnavailable",),
    504: ("GatewayTimeout", "Timeout"),
}


def classify_model_error(
    exc: Exception,
    *,
    base_url: str,
    secrets: Sequence[str] | SecretValues = (),
    partial_text: str | None = None,
) -> ModelError:
    """Map a client exception to the engine's error tree, with an actionable message.

    Args:
        exc: What the client raised.
        base_url: The server, named in the message.
        secrets: Values to scrub from the message (the API key).
        partial_text: The text streamed before the failure, when it happened mid-stream: the
            failure is then a `StreamInterruptedError`.
    """
    import openai

    # Ours already, or a limit of ours raised inside the client (a body past its size) that the
    # client wrapped as a connection error: it says what happened, the wrapper does not.
    ours = exc if isinstance(exc, ModelError) else _cause(exc, ModelError)
    if isinstance(ours, ModelError):
        return ours
    detail = _shortened(_scrub(str(exc), secrets))  # masked whole first, then cut
    if isinstance(exc, openai.RateLimitError):
        return _tag(
            _rate_limited(detail, base_url, _retry_after(exc)), "RateLimitError", status=429
        )
    if isinstance(exc, openai.APIStatusError):
        return (
            context_overflow(exc, base_url)
            or _redirect(exc, base_url, secrets)
            or _status_error(int(exc.status_code or 0), base_url, detail)
        )
    transport = _transport_error(exc, base_url, detail, partial_text)
    if transport is not None:
        return transport
    if isinstance(exc, IndexError) or "No generation chunks" in str(exc):
        # langchain reads choices[0]: a reply without choices surfaces as an IndexError (or,
        # streamed, as "No generation chunks were returned").
        return _tag(
            EmptyResponseError(f"the model server at {base_url} sent a reply with no choices"),
            "EmptyResponse",
        )
    return ModelResponseError(
        f"the reply from {base_url} could not be used ({type(exc).__name__}): {detail}"
    )


def _transport_error(
    exc: Exception, base_url: str, detail: str, partial_text: str | None
) -> ModelError | None:
    """Timeouts, refused connections and cut streams; None for anything else."""
    import httpx
    import openai

    hint = "pass --base-url or set MAMBA_MODEL_BACKEND__BASE_URL"
    if partial_text is not None and isinstance(exc, httpx.TransportError | openai.APIError):
        return stream_cut(exc, base_url, detail, partial_text)
    cut = _cause(exc, httpx.RemoteProtocolError | httpx.ReadError)
    if isinstance(exc, openai.APIConnectionError) and isinstance(cut, Exception):
        # Connected, then the body stopped short: a cut reply, not an unreachable server.
        return stream_cut(cut, base_url, str(cut), "")
    # TimeoutError: a client's own limit, such as langchain-openai's stream_chunk_timeout.
    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException | TimeoutError):
        err = ModelUnavailableError(
            f"the model server at {base_url} did not answer in time; check that it is running "
            f"and not overloaded, raise MAMBA_MODEL_BACKEND__TIMEOUT, or {hint}"
        )
        return _tag(err, "Timeout", "TimeoutError")
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        err = ModelUnavailableError(
            f"cannot reach the model server at {base_url}; start it, or {hint}"
        )
        return _tag(err, "ConnectionError", "ServiceUnavailable")
    return None


def _cause(exc: BaseException, kind: Any) -> BaseException | None:
    """The first exception of ``kind`` in the chain behind ``exc`` (clients wrap each other)."""
    seen: BaseException | None = exc
    for _ in range(8):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None or isinstance(seen, kind):
            return seen
    return None


def _tag(err: ModelError, *kinds: str, status: int | None = None) -> ModelError:
    with_kinds(err, *kinds, status=status)
    return err


def stream_cut(exc: Exception, base_url: str, detail: str, partial: str) -> ModelError:
    """A reply that stopped short after ``partial``: retryable, and counted by the breaker."""
    import httpx

    err = StreamInterruptedError(
        f"the stream from {base_url} stopped before the reply was complete "
        f"({type(exc).__name__}: {detail}) after {len(partial)} character(s); "
        "the call can be retried",
        partial_text=partial,
    )
    kinds = ["StreamInterrupted", "ConnectionError", "ServiceUnavailable"]
    if isinstance(exc, httpx.TimeoutException):
        kinds.append("Timeout")
    return _tag(err, *kinds)


def _redirect(
    exc: Any, base_url: str, secrets: Sequence[str] | SecretValues
) -> ModelResponseError | None:
    """A 3xx answer: where it led, and why it is not followed; None for any other status.

    The clients follow no redirect: the request, API key and all, would go wherever the server
    says. What to change is the base URL.
    """
    status = int(getattr(exc, "status_code", 0) or 0)
    if not 300 <= status < 400:
        return None
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    location = _shortened(_scrub(str(headers.get("location") or "nowhere"), secrets))
    err = ModelResponseError(
        f"the model server at {base_url} answered {status}, a redirect to {location!r}, which "
        "is not followed (the API key would go with it); set MAMBA_MODEL_BACKEND__BASE_URL to "
        "the server's own address"
    )
    return _tag(err, status=status)  # type: ignore[return-value]


def _status_error(status: int, base_url: str, detail: str) -> ModelError:
    where = f"the model server at {base_url}"
    if status in (401, 403):
        return _tag(
            ModelAuthError(
                f"{where} refused the API key ({status}): {detail}. "
                "Set MAMBA_MODEL_BACKEND__API_KEY and resume."
            ),
            status=status,
        )
    if status == 404:
        return _tag(
            ModelResponseError(
                f"{where} answered 404: {detail}. Check the model id "
                "(--model or MAMBA_MODEL_BACKEND__MODEL) and that the URL ends in /v1."
            ),
            status=status,
        )
    if status >= 500:
        kinds = (*_STATUS_KINDS.get(status, ()), "ServiceUnavailable")
        return _tag(ModelUnavailableError(f"{where} answered {status}: {detail}"), *kinds)
    kinds = _STATUS_KINDS.get(status, ())
    return _tag(ModelResponseError(f"{where} answered {status}: {detail}"), *kinds, status=status)


# How servers say a request is longer than the model's window: OpenAI's code, llama.cpp's error
# type, and the wordings of OpenAI, llama.cpp, vLLM and others, for servers that send neither.
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_OVERFLOW_WORDS = re.compile(
    r"context[ _]length[ _]exceeded|maximum context length|exceeds the available context size"
    r"|context window|prompt is too long|too many tokens",
    re.IGNORECASE,
)
# (what was counted, the window), as OpenAI and llama.cpp word them.
_PROMPT_SIZE = re.compile(r"resulted in (\d+) tokens|request \((\d+) tokens\)")
_WINDOW_SIZE = re.compile(r"maximum context length is (\d+)|context size \((\d+) tokens\)")
_MAX_DIGITS = len(str(MAX_REPORTED_TOKENS))


def context_overflow(exc: Any, base_url: str) -> ContextOverflowError | None:
    """The server's "the request is too long for the model" answer (a 400 or 413), else None.

    Measured on llama.cpp's server: 400, ``type`` ``exceed_context_size_error``, "request (6030
    tokens) exceeds the available context size (2048 tokens), try increasing it", with
    ``n_prompt_tokens`` and ``n_ctx``. OpenAI: 400, ``code`` ``context_length_exceeded``.
    """
    if getattr(exc, "status_code", None) not in (400, 413):
        return None
    body: Mapping[str, Any] = exc.body if isinstance(exc.body, Mapping) else {}
    text = str(body.get("message") or getattr(exc, "message", "") or "")
    named = {str(getattr(exc, "code", None) or ""), str(getattr(exc, "type", None) or "")}
    if named.isdisjoint(_OVERFLOW_CODES) and not _OVERFLOW_WORDS.search(text):
        return None
    prompt = _number(body.get("n_prompt_tokens")) or _first_number(_PROMPT_SIZE, text)
    window = _number(body.get("n_ctx")) or _first_number(_WINDOW_SIZE, text)
    counted = f" ({prompt} tokens)" if prompt else ""
    limit = f" ({window} tokens)" if window else ""
    err = ContextOverflowError(
        f"the request{counted} is longer than the model's context window{limit} at {base_url}",
        prompt_tokens=prompt,
        window=window,
    )
    return _tag(err, "ContextOverflow", status=int(exc.status_code))  # type: ignore[return-value]


def _number(value: Any) -> int | None:
    """A count of tokens as the server wrote it, if it is one any server could have counted.

    A count past `MAX_REPORTED_TOKENS` (a window of ``10**400``) is no figure at all: compaction
    divides by it, and it would scale the conversation to nothing or to more than it is.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value <= MAX_REPORTED_TOKENS else None


def _first_number(pattern: re.Pattern[str], text: str) -> int | None:
    """The figure ``pattern`` finds in the server's message; None when it is none to count by.

    Examples:
        >>> _first_number(_WINDOW_SIZE, "context size (2048 tokens)")
        2048
        >>> _first_number(_WINDOW_SIZE, "context size (" + "9" * 5000 + " tokens)") is None
        True
    """
    found = pattern.search(text)
    if found is None:
        return None
    digits = next(group for group in found.groups() if group)
    # More digits than any count has (5,000 of them are past what int() reads at all).
    return _number(int(digits)) if len(digits) <= _MAX_DIGITS else None


def timed_out(message: str) -> ModelUnavailableError:
    """A deadline of ours ran out: a timeout like the client's own (retried, counted)."""
    err = ModelUnavailableError(message)
    with_kinds(err, "Timeout", "TimeoutError")
    return err


def malformed_call(
    tool: str, raw: str, reason: str = "", *, at_limit: bool = False
) -> MalformedToolCallError:
    """A tool call whose arguments ``raw`` are not a JSON object (shown shortened).

    ``reason`` is the parser's complaint (``Expecting value: line 1 column 16``), when there is
    one; the model is shown it (`repair_request`). ``at_limit``: the reply stopped at the
    server's token limit (finish reason ``length``), which is then what cut the arguments short
    and what to change, and the message says so.
    """
    shown = raw if len(raw) <= _SHOWN_ARGUMENTS else raw[:_SHOWN_ARGUMENTS] + "..."
    why = f" ({reason})" if reason else ""
    limit = (
        "; the reply stopped at the server's token limit (finish reason 'length'): raise "
        "max_tokens (MAMBA_MODEL_BACKEND__MAX_TOKENS)"
        if at_limit
        else ""
    )
    err = MalformedToolCallError(
        f"the model called {tool!r} with arguments that are not a JSON object{why}: "
        f"{shown!r}{limit}",
        tool=tool,
        raw_arguments=shown,
    )
    err.reason = reason  # type: ignore[attr-defined]
    with_kinds(err, "MalformedToolCall")
    return err


def repair_request(err: MalformedToolCallError) -> str:
    """What the model is told when its tool call's arguments do not parse: its one repair chance.

    The same words whatever the server: a plain user turn, since a call that does not parse has
    no arguments to replay and an unanswered call id would make the next request invalid.
    """
    reason = getattr(err, "reason", "") or "not a JSON object"
    return (
        f"Your call to the tool {err.tool!r} could not be run: its arguments are not valid JSON "
        f"({reason}). You sent: {err.raw_arguments}\n"
        "Call the tool again with arguments that are one JSON object matching its parameters, "
        "or answer in plain text."
    )


def malformed_again(err: MalformedToolCallError) -> MalformedToolCallError:
    """The error once the repair chance is used up: the gate sees that it was tried."""
    again = MalformedToolCallError(
        f"{err} (again after the parse error was sent back to it once; the call was not run)",
        tool=err.tool,
        raw_arguments=err.raw_arguments,
    )
    with_kinds(again, "MalformedToolCall")
    return again
