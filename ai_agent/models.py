"""The model backend: any OpenAI-compatible ``/v1/chat/completions`` server through ChatOpenAI.

This module turns settings into a LangChain chat model, converts between the run's JSON messages
and LangChain messages at the call boundary, maps client exceptions onto the engine's error tree
(with messages that say what to do, and never a secret), and calls the model through
`ChatModelCaller`: streamed or not, retried by level, behind a circuit breaker, with every
broken reply (cut stream, no choices, bad tool-call JSON, oversized) turned into a typed error.

Examples:
    >>> from ai_agent.testing import ScriptedModel
    >>> import asyncio
    >>> caller = ChatModelCaller(ScriptedModel(["hello"]), max_retries=0)
    >>> reply = asyncio.run(caller([{"role": "user", "content": "hi"}], []))
    >>> reply["message"]
    {'role': 'assistant', 'content': 'hello'}
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from ai_agent.context import Event, ModelReply, model_sink
from ai_agent.errors import (
    BudgetExceededError,
    CircuitOpenError,
    EmptyResponseError,
    MalformedToolCallError,
    ModelAuthError,
    ModelError,
    ModelRateLimitError,
    ModelResponseError,
    ModelUnavailableError,
    ResponseTooLargeError,
    StreamInterruptedError,
)
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.redaction import SecretValues
from ai_agent.observability.scopes import request_headers
from ai_agent.resilience import CircuitBreaker, RetryPolicy, parse_retry_after, with_kinds
from ai_agent.state import Message, ToolCall

if TYPE_CHECKING:
    from tenacity import RetryCallState

    from ai_agent.config import ModelBackendSettings
    from ai_agent.observability.httplog import HttpLog

__all__ = [
    "DEFAULT_MAX_RESPONSE_CHARS",
    "ChatModelCaller",
    "classify_model_error",
    "from_langchain",
    "make_chat_model",
    "request_hash",
    "to_langchain",
    "usage_of",
    "wire_messages",
]

log = engine_logger("ai_agent.models")

# A reply longer than this is a runaway generation or a broken server, not an answer.
DEFAULT_MAX_RESPONSE_CHARS = 1_000_000
_SHOWN_ARGUMENTS = 200


def make_chat_model(
    backend: ModelBackendSettings, *, http_log: HttpLog | None = None
) -> BaseChatModel:
    """A ChatOpenAI for the configured OpenAI-compatible server.

    Retries are ours (``ChatModelCaller``), so the client's own are off; usage is requested when
    streaming because langchain-openai turns it off whenever ``base_url`` is set. The model gets
    its own HTTP clients (langchain-openai otherwise shares one process-wide client, whose pooled
    connections outlive the event loop they were made on); ``ChatModelCaller.aclose`` closes them.

    Args:
        backend: The server, model and generation settings.
        http_log: Event hooks that log each request (method, URL, status; headers and bodies at
            DEBUG). See `ai_agent.observability.httplog.HttpLog`.
    """
    import httpx
    from langchain_openai import ChatOpenAI

    key = backend.api_key.get_secret_value() if backend.api_key is not None else "not-needed"
    # No pooled keep-alive connections: an Agent may drive runs on several event loops
    # (run_sync, stream), and a pooled connection belongs to the loop that opened it. A local
    # server answers in seconds; one TCP handshake per call costs nothing next to that.
    limits = httpx.Limits(max_keepalive_connections=0)
    params: dict[str, Any] = {
        "base_url": backend.base_url,
        "api_key": key,
        "model": backend.model,
        "timeout": backend.timeout,
        "max_retries": 0,
        "use_responses_api": False,
        "stream_usage": True,
        # ChatModelCaller's limits (total_timeout, idle_timeout) govern a streamed reply, with
        # retryable errors; the client's own per-part limit would be a second, fixed one.
        "stream_chunk_timeout": None,
        "http_client": httpx.Client(
            limits=limits,
            timeout=backend.timeout,
            event_hooks=http_log.sync_event_hooks() if http_log else None,
        ),
        "http_async_client": httpx.AsyncClient(
            limits=limits,
            timeout=backend.timeout,
            event_hooks=http_log.event_hooks() if http_log else None,
        ),
    }
    for name in ("temperature", "max_tokens", "top_p", "seed"):
        value = getattr(backend, name, None)
        if value is not None:
            params[name] = value
    return ChatOpenAI(**params)


# Conversion ----------------------------------------------------------------------------------


def _distinct(wanted: Sequence[str], taken: set[str]) -> list[str]:
    """The ids, each made unique against ``taken`` (and added to it): ``call_1``, ``call_1_2``."""
    out: list[str] = []
    for first in wanted:
        name, n = first, 1
        while name in taken:
            n += 1
            name = f"{first}_{n}"
        taken.add(name)
        out.append(name)
    return out


def _sent_calls(
    calls: Sequence[ToolCall], taken: set[str]
) -> tuple[list[ToolCall], dict[str, str]]:
    """A reply's calls under the ids the model gets, and each call's engine id -> that id."""
    if not any("model_id" in c for c in calls):  # a run from before engine ids: as they are
        taken.update(c["id"] for c in calls)
        return list(calls), {}
    ids = _distinct([c.get("model_id") or c["id"] for c in calls], taken)
    sent = [
        ToolCall(id=wire, name=c["name"], args=c["args"])
        for c, wire in zip(calls, ids, strict=True)
    ]
    return sent, {c["id"]: wire for c, wire in zip(calls, ids, strict=True)}


def wire_messages(messages: Iterable[Message]) -> list[Message]:
    """The conversation as the model sees it: its own call ids, each answered exactly once.

    In state a tool call is known by the engine's id and the model's id is kept beside it
    (``model_id``; see `ai_agent.state.ToolCall`). The model gets its own ids back, so it reads
    the conversation it wrote, and each tool message is sent under the id of the call it
    answers. An id the model gave twice (in one reply, or again in a later one) goes out with a
    suffix the second time: servers pair calls and tool messages by id, OpenAI refuses a
    repeated id and others (Mistral) count calls and answers over the whole conversation, so a
    repeat would answer the wrong call or break the request. Calls of runs from before engine
    ids (no ``model_id``) go out as they are.

    Examples:
        >>> calls = [{"id": "c1.0", "model_id": "call_1", "name": "t", "args": {}},
        ...          {"id": "c1.1", "model_id": "call_1", "name": "t", "args": {}}]
        >>> sent = wire_messages([{"role": "assistant", "content": "", "tool_calls": calls},
        ...                       {"role": "tool", "content": "b", "tool_call_id": "c1.1"}])
        >>> [c["id"] for c in sent[0]["tool_calls"]], sent[1]["tool_call_id"]
        (['call_1', 'call_1_2'], 'call_1_2')
    """
    out: list[Message] = []
    taken: set[str] = set()
    wire_of: dict[str, str] = {}  # engine id -> the id sent, for the calls of the latest reply
    for message in messages:
        sent = Message(**message)
        if message["role"] == "assistant":
            calls, wire_of = _sent_calls(message.get("tool_calls") or [], taken)
            if calls:
                sent["tool_calls"] = calls
        elif message["role"] == "tool" and message.get("tool_call_id") in wire_of:
            sent["tool_call_id"] = wire_of[message["tool_call_id"]]
        out.append(sent)
    return out


def to_langchain(messages: Iterable[Message]) -> list[BaseMessage]:
    """The run's JSON messages as LangChain messages, as the model sees them (`wire_messages`)."""
    out: list[BaseMessage] = []
    for m in wire_messages(messages):
        role, content = m["role"], m["content"]
        if role == "system":
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "assistant":
            calls = [
                {"id": c["id"], "name": c["name"], "args": c["args"], "type": "tool_call"}
                for c in m.get("tool_calls", [])
            ]
            out.append(AIMessage(content, tool_calls=calls))
        else:
            out.append(ToolMessage(content, tool_call_id=m.get("tool_call_id", "")))
    return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "".join(parts)


def from_langchain(message: BaseMessage, *, turn: int) -> Message:
    """An assistant reply as a JSON message. Calls without an id get a stable one."""
    out = Message(role="assistant", content=_text_of(message.content))
    calls: list[ToolCall] = []
    for i, call in enumerate(getattr(message, "tool_calls", None) or []):
        calls.append(
            ToolCall(
                id=call.get("id") or f"call_{turn}_{i}",
                name=call["name"],
                args=dict(call.get("args") or {}),
            )
        )
    if calls:
        out["tool_calls"] = calls
    return out


def usage_of(message: BaseMessage) -> dict[str, Any]:
    """Token usage reported by the server, in OpenAI's names; empty when it reported none."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return {}
    details = meta.get("input_token_details") or {}
    return {
        "prompt_tokens": meta.get("input_tokens", 0),
        "completion_tokens": meta.get("output_tokens", 0),
        "total_tokens": meta.get("total_tokens", 0),
        "cached_tokens": details.get("cache_read", 0) or 0,
    }


def request_hash(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    params: Mapping[str, Any] | None = None,
) -> str:
    """A stable hash of a model request: what decides the reply, nothing else.

    The messages are hashed as the model sees them (`wire_messages`): the engine's own call ids
    never reach the model, so they do not change the hash (and a run recorded before they
    existed still matches). ``params`` are the generation parameters (model, temperature,
    seed...), never credentials.

    Examples:
        >>> a = request_hash([{"role": "user", "content": "hi"}], [], {"temperature": 0})
        >>> a == request_hash([{"content": "hi", "role": "user"}], [], {"temperature": 0})
        True
        >>> a == request_hash([{"role": "user", "content": "hi"}], [], {"temperature": 1})
        False
    """
    request: dict[str, Any] = {"messages": wire_messages(messages), "tools": tools}
    if params:
        request["params"] = dict(params)
    blob = json.dumps(request, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


# Errors --------------------------------------------------------------------------------------


def _scrub(text: str, secrets: Sequence[str] | SecretValues) -> str:
    values = secrets if isinstance(secrets, SecretValues) else SecretValues(secrets)
    return values.text(text)


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

    if isinstance(exc, ModelError):
        return exc
    detail = _scrub(str(exc), secrets)
    if isinstance(exc, openai.RateLimitError):
        err: ModelError = ModelRateLimitError(
            f"the model server at {base_url} is rate limiting (429): {detail}",
            retry_after=_retry_after(exc),
        )
        return _tag(err, "RateLimitError", status=429)
    if isinstance(exc, openai.APIStatusError):
        return _status_error(int(exc.status_code or 0), base_url, detail)
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
        return _cut(exc, base_url, detail, partial_text)
    cut = _cause(exc, httpx.RemoteProtocolError | httpx.ReadError)
    if isinstance(exc, openai.APIConnectionError) and isinstance(cut, Exception):
        # Connected, then the body stopped short: a cut reply, not an unreachable server.
        return _cut(cut, base_url, str(cut), "")
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


def _cut(exc: Exception, base_url: str, detail: str, partial: str) -> ModelError:
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


# The caller ----------------------------------------------------------------------------------


class _Stream:
    """Assembles one streamed reply: deltas out to the sink, size cap, raw tool arguments."""

    def __init__(self, sink: Callable[[Event], None], cap: int) -> None:
        self.sink, self.cap = sink, cap
        self.message: AIMessageChunk | None = None
        self.text: list[str] = []
        self.size = 0
        self.raw_args: dict[int, list[str]] = {}
        self.openai_protocol = False

    def add(self, chunk: AIMessageChunk) -> None:
        self.message = chunk if self.message is None else self.message + chunk
        self.openai_protocol |= chunk.response_metadata.get("model_provider") == "openai"
        text = _text_of(chunk.content)
        self.size += len(text)
        for part in chunk.tool_call_chunks:
            args = part.get("args") or ""
            self.size += len(args)
            self.raw_args.setdefault(part.get("index") or 0, []).append(args)
            if part.get("name"):
                self.sink({"type": "model_tool_call", "tool": str(part["name"])})
        if self.size > self.cap:
            raise ResponseTooLargeError(
                f"the reply passed the size cap of {self.cap} characters; the model is "
                "probably looping. Lower max_tokens or raise "
                "MAMBA_MODEL_BACKEND__MAX_RESPONSE_CHARS."
            )
        if text:
            self.text.append(text)
            self.sink({"type": "model_delta", "detail": text})

    def partial(self) -> str:
        return "".join(self.text)


def _timed_out(message: str) -> ModelUnavailableError:
    """A deadline of ours ran out: a timeout like the client's own (retried, counted)."""
    err = ModelUnavailableError(message)
    with_kinds(err, "Timeout", "TimeoutError")
    return err


def _is_blank(message: AIMessageChunk) -> bool:
    """Nothing at all: no text, no tool call, no finish reason (a stream of empty choices)."""
    return not (
        _text_of(message.content)
        or message.tool_call_chunks
        or message.response_metadata.get("finish_reason")
    )


def _check_calls(message: BaseMessage, raw_args: dict[int, list[str]]) -> None:
    """A tool call whose arguments are not a JSON object is a typed error, never a crash."""
    for bad in getattr(message, "invalid_tool_calls", None) or []:
        raw = str(bad.get("args") or "")
        raise _malformed(str(bad.get("name") or "?"), raw)
    names = [c["name"] for c in getattr(message, "tool_calls", None) or []]
    for index, parts in sorted(raw_args.items()):
        raw = "".join(parts)
        # langchain parses streamed arguments leniently (a cut '{"x": 1' passes): be strict.
        try:
            value = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            raise _malformed(names[index] if index < len(names) else "?", raw)


def _malformed(tool: str, raw: str) -> MalformedToolCallError:
    shown = raw if len(raw) <= _SHOWN_ARGUMENTS else raw[:_SHOWN_ARGUMENTS] + "..."
    err = MalformedToolCallError(
        f"the model called {tool!r} with arguments that are not a JSON object: {shown!r}",
        tool=tool,
        raw_arguments=shown,
    )
    with_kinds(err, "MalformedToolCall")
    return err


Sleep = Callable[[float], Awaitable[None]]


class ChatModelCaller:
    """Calls a LangChain chat model for a draft: streamed, retried, behind a circuit breaker.

    Streaming happens when ``stream`` is on and a sink is listening (see
    `ai_agent.context.streaming_to`): text deltas go to the sink as ``model_delta`` events
    and the assembled reply is returned, so wrappers of the ModelCaller seam see one reply.

    Inside an observed model call (an Agent's run) the request carries the call's
    ``X-Request-ID``, ``traceparent`` and ``tracestate`` headers, on every attempt, when the model
    is an OpenAI client (ChatOpenAI and its kin take per-request headers; other models have no
    HTTP request to put them on).

    Args:
        model: Any LangChain chat model that supports ``bind_tools``.
        base_url: Where the model lives, named in error messages and the breaker.
        max_retries: Retries after the first attempt (used when ``retry`` is not given).
        initial_backoff: Seconds before the first retry (when ``retry`` is not given).
        max_backoff: Upper bound of any wait (when ``retry`` is not given).
        multiplier: Growth of the wait between retries (when ``retry`` is not given).
        retry: The full retry policy; see `ai_agent.resilience.RetryPolicy`.
        breaker: The circuit breaker of this backend (default: one that never opens).
        stream: Stream replies when someone listens.
        max_response_chars: Size cap of a reply (text plus tool-call arguments).
        secrets: Values to scrub from any error text (the API key, or the Agent's
            `SecretValues`).
        sleep: How to wait between retries (tests pass a recorder).
        model_name: The model id, recorded with the usage.
        total_timeout: Seconds one attempt may take in all, a streamed reply included (None:
            no limit). A server can keep every read timeout from firing by sending a byte now
            and then; this deadline still ends the attempt.
        idle_timeout: Seconds to wait for the next part of a streamed reply (None: no limit).
            Either limit makes the attempt a retryable timeout (``Timeout``), which counts
            against the breaker like any other.
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        base_url: str = "",
        max_retries: int = 3,
        initial_backoff: float = 1.0,
        max_backoff: float = 60.0,
        multiplier: float = 1.5,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        stream: bool = True,
        max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS,
        secrets: Sequence[str] | SecretValues = (),
        sleep: Sleep | None = None,
        model_name: str | None = None,
        total_timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url or str(getattr(model, "openai_api_base", "") or "the model")
        self.retry = retry or RetryPolicy(
            max_retries=max_retries,
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            multiplier=multiplier,
        )
        self.breaker = breaker or CircuitBreaker(self.base_url, threshold=2**31)
        self.stream = stream
        self.max_response_chars = max_response_chars
        self.model_name = model_name or str(
            getattr(model, "model_name", None) or getattr(model, "_llm_type", "model")
        )
        # The Agent passes its SecretValues (shared, so keys it learns later are masked too).
        self._secrets = secrets if isinstance(secrets, SecretValues) else SecretValues(secrets)
        self._sleep: Sleep = sleep or asyncio.sleep
        self.total_timeout = total_timeout
        self.idle_timeout = idle_timeout
        # langchain-openai's models pass extra_headers through to the OpenAI client per request.
        self._takes_headers = type(model).__module__.startswith("langchain_openai")

    @property
    def max_retries(self) -> int:
        """Retries after the first attempt."""
        return self.retry.max_retries

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return self.retry.wait(state.attempt_number, exc)

    def _should_retry(self, exc: BaseException) -> bool:
        if isinstance(exc, CircuitOpenError | BudgetExceededError):
            return False
        return self.retry.should_retry(exc)

    async def aclose(self) -> None:
        """Close the model's own HTTP clients, if it has them."""
        client = getattr(self.model, "http_async_client", None)
        if client is not None:
            await client.aclose()
        sync_client = getattr(self.model, "http_client", None)
        if sync_client is not None:
            sync_client.close()

    async def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> ModelReply:
        """Call the model with retries, the breaker and streaming; return the reply."""
        runnable: Any = self.model.bind_tools(tools) if tools else self.model
        lc_messages = to_langchain(messages)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        sink = model_sink()
        headers = request_headers() if self._takes_headers else {}
        options: dict[str, Any] = {"extra_headers": headers} if headers else {}
        started = time.perf_counter()
        retries: list[dict[str, Any]] = []

        async def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            wait = state.upcoming_sleep
            retries.append({"error": type(exc).__name__, "wait": round(wait, 3)})
            log.warning(
                "model call to %s failed (%s); retry %d of %d in %.2fs",
                self.base_url,
                exc,
                state.attempt_number,
                self.retry.max_retries,
                wait,
                fields={
                    "event": "model_retry",
                    "error": type(exc).__name__,
                    "retry": state.attempt_number,
                    "backoff_seconds": round(wait, 3),
                },
                secrets=self._secrets.values(),
            )
            if sink is not None:
                sink({"type": "model_retry", "detail": str(exc), "duration_ms": wait * 1000})

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retry.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(self._should_retry),
            reraise=True,
            sleep=self._sleep,
            before_sleep=before_sleep,
        )
        streamed = False
        async for attempt in retrying:
            with attempt:
                self.breaker.before_call()
                try:
                    reply, streamed = await self._attempt(runnable, lc_messages, sink, options)
                except ModelError as exc:
                    self.breaker.record_failure(exc)
                    raise
                self.breaker.record_success()
        return ModelReply(
            message=from_langchain(reply, turn=turn),
            usage=usage_of(reply),
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
            model=self.model_name,
            streamed=streamed,
            attempts=len(retries) + 1,
            retries=retries,
            finish_reason=str(reply.response_metadata.get("finish_reason") or ""),
        )

    async def _attempt(
        self,
        runnable: Any,
        messages: list[BaseMessage],
        sink: Callable[[Event], None] | None,
        options: Mapping[str, Any],
    ) -> tuple[BaseMessage, bool]:
        """One attempt, ended by the total deadline if it runs past it."""
        total = self.total_timeout
        ends = None if total is None else asyncio.get_running_loop().time() + total
        deadline = asyncio.timeout_at(ends)
        try:
            async with deadline:
                return await self._attempt_once(runnable, messages, sink, options, ends)
        except TimeoutError:
            if deadline.expired():
                raise self._past_deadline() from None
            raise  # pragma: no cover - an attempt turns every other timeout into a ModelError

    def _past_deadline(self) -> ModelUnavailableError:
        return _timed_out(
            f"the model call to {self.base_url} did not finish within {self.total_timeout:g} s; "
            "raise MAMBA_MODEL_BACKEND__TOTAL_TIMEOUT for long replies, or lower max_tokens"
        )

    async def _attempt_once(
        self,
        runnable: Any,
        messages: list[BaseMessage],
        sink: Callable[[Event], None] | None,
        options: Mapping[str, Any],
        ends: float | None,
    ) -> tuple[BaseMessage, bool]:
        if sink is not None and self.stream:
            return await self._streamed(runnable, messages, sink, options, ends), True
        try:
            reply: BaseMessage = await runnable.ainvoke(messages, **options)
        except Exception as exc:
            raise classify_model_error(exc, base_url=self.base_url, secrets=self._secrets) from None
        size = len(_text_of(reply.content)) + sum(
            len(json.dumps(c.get("args"))) for c in getattr(reply, "tool_calls", None) or []
        )
        if size > self.max_response_chars:
            raise ResponseTooLargeError(
                f"the reply from {self.base_url} has {size} characters, over the size cap of "
                f"{self.max_response_chars}; lower max_tokens or raise "
                "MAMBA_MODEL_BACKEND__MAX_RESPONSE_CHARS"
            )
        _check_calls(reply, {})
        return reply, False

    async def _streamed(
        self,
        runnable: Any,
        messages: list[BaseMessage],
        sink: Callable[[Event], None],
        options: Mapping[str, Any],
        ends: float | None,
    ) -> BaseMessage:
        stream = _Stream(sink, self.max_response_chars)
        chunks = aiter(runnable.astream(messages, **options))
        clock = asyncio.get_running_loop().time
        try:
            while (chunk := await self._next_part(chunks)) is not None:
                if isinstance(chunk, AIMessageChunk):
                    stream.add(chunk)
                # Parts that are already buffered come without the loop ever waiting, so the
                # deadline's timer may never get to run while a server floods: look at the clock.
                if ends is not None and clock() >= ends:
                    raise self._past_deadline()
        except ModelError:
            raise
        except Exception as exc:
            partial = stream.partial() if stream.message is not None else None
            raise classify_model_error(
                exc, base_url=self.base_url, secrets=self._secrets, partial_text=partial
            ) from None
        reply = stream.message
        if reply is None or _is_blank(reply):
            raise with_kinds(
                EmptyResponseError(f"the model server at {self.base_url} sent an empty stream"),
                "EmptyResponse",
            )
        if stream.openai_protocol and not reply.response_metadata.get("finish_reason"):
            # The server closed the stream cleanly but never said the reply was complete.
            raise _cut(
                ConnectionResetError("the stream ended without a finish reason"),
                self.base_url,
                "no finish reason",
                stream.partial(),
            )
        _check_calls(reply, stream.raw_args)
        return reply

    async def _next_part(self, chunks: AsyncIterator[Any]) -> Any:
        """The next part of a streamed reply (None at its end), within the idle limit."""
        limit = asyncio.timeout(self.idle_timeout)
        try:
            async with limit:
                return await anext(chunks, None)
        except TimeoutError:
            if not limit.expired():
                raise
        raise _timed_out(
            f"the model server at {self.base_url} sent no part of its streamed reply for "
            f"{self.idle_timeout:g} s; it looks stalled (raise "
            "MAMBA_MODEL_BACKEND__IDLE_TIMEOUT if it is only slow)"
        )
