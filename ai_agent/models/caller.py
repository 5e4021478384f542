"""Calling the chat model for a draft: `ChatModelCaller`.

Streamed or not, retried by level, behind a circuit breaker, with every broken reply (cut
stream, no choices, bad tool-call JSON, oversized) turned into a typed error.

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
import copy
import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from ai_agent.context import CallerBase, ModelCall, ModelEvents, ModelReply
from ai_agent.datafiles import MAX_DEPTH, nested_past, unstorable_at
from ai_agent.errors import (
    BudgetExceededError,
    CircuitOpenError,
    EmptyResponseError,
    MalformedToolCallError,
    ModelError,
    ModelUnavailableError,
    ResponseTooLargeError,
)
from ai_agent.events import ModelCallEvent, ModelRetry
from ai_agent.models.errors import (
    classify_model_error,
    malformed_again,
    malformed_call,
    repair_request,
    stream_cut,
    timed_out,
)
from ai_agent.models.messages import from_langchain, text_of, to_langchain, usage_of
from ai_agent.models.resilience import CircuitBreaker, RetryPolicy, with_kinds
from ai_agent.models.streamed_reply import MAX_CALLS_PER_REPLY, StreamedReply, too_many_calls
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.redaction import SecretValues
from ai_agent.observability.scopes import request_headers

if TYPE_CHECKING:
    from tenacity import RetryCallState

__all__ = ["DEFAULT_MAX_RESPONSE_CHARS", "ChatModelCaller"]

log = engine_logger("ai_agent.models")

# A reply longer than this is a runaway generation or a broken server, not an answer.
DEFAULT_MAX_RESPONSE_CHARS = 1_000_000


def shown_url(url: str) -> str:
    """``url`` with the password of its user info replaced by ``***``.

    Examples:
        >>> shown_url("http://agent:pw@127.0.0.1:8080/v1"), shown_url("http://127.0.0.1/v1")
        ('http://agent:***@127.0.0.1:8080/v1', 'http://127.0.0.1/v1')
    """
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL after all (an unbalanced "[" in the host)
        return url
    if password is None:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _is_blank(message: AIMessageChunk) -> bool:
    """Nothing at all: no text, no tool call, no finish reason (a stream of empty choices)."""
    return not (
        text_of(message.content)
        or message.tool_call_chunks
        or message.response_metadata.get("finish_reason")
    )


MAX_ARGUMENT_DEPTH = MAX_DEPTH
"""How deeply a tool call's arguments may nest (lists and objects): as deep as any data the
engine reads (`ai_agent.datafiles.MAX_DEPTH`), well below Python's recursion limit, which
reading, checking and storing them use several frames of per level."""

_TOO_DEEP = f"nested more than {MAX_ARGUMENT_DEPTH} levels deep"


def _check_calls(message: BaseMessage) -> None:
    """A tool call whose arguments are not a JSON object is a typed error, never a crash.

    Nor are arguments nested past `MAX_ARGUMENT_DEPTH`: every later step (their size, the
    schema check, the checkpoint) would run out of stack on them; nor numbers no store keeps:
    Python's parser (LangChain's too) reads NaN, Infinity and 1e999, which JSON has no numbers
    for (a tool's own guard, ``if amount > limit``, is false for NaN), and a whole number past
    64 bits fails the checkpoint's write. A streamed reply's calls were read strictly as they
    were assembled (`StreamedReply`): a cut ``{"x": 1``, which LangChain's lenient parser
    passes, is among the invalid ones. One cut short by the token limit says so.
    """
    at_limit = message.response_metadata.get("finish_reason") == "length"
    for bad in getattr(message, "invalid_tool_calls", None) or []:
        raw = str(bad.get("args") or "")
        name = str(bad.get("name") or "?")
        raise malformed_call(name, raw, _parse_error(raw), at_limit=at_limit)
    for call in getattr(message, "tool_calls", None) or []:
        if nested_past(call.get("args"), MAX_ARGUMENT_DEPTH):
            raise malformed_call(call["name"], _shown(call.get("args")), _TOO_DEEP)
        # Not its text: a lone surrogate in a reply is replaced where it enters the run.
        found = unstorable_at(call.get("args"), texts=False)
        if found is not None:
            where, problem = found
            raise malformed_call(call["name"], _shown(call.get("args")), f"{where} {problem}")


def _shown(args: Any) -> str:
    """Arguments as JSON text for a message, when they can be written at all."""
    try:
        return json.dumps(args)
    except (ValueError, RecursionError):
        return "(too deeply nested to show)"


def _parse_error(raw: str) -> str:
    """What the JSON parser says about ``raw`` (for the model and the person reading)."""
    try:
        value = json.loads(raw)
    except RecursionError:
        return _TOO_DEEP
    except ValueError as exc:  # JSONDecodeError, or a number too long to read
        return str(exc)
    return f"a JSON {type(value).__name__}, not an object"


Sleep = Callable[[float], Awaitable[None]]


class ChatModelCaller(CallerBase):
    """Calls a LangChain chat model for a draft: streamed, retried, behind a circuit breaker.

    A caller bound to a run's `ai_agent.context.ModelEvents` (`reporting`) reports each retry
    to them as a ``model_retry`` event, and streams when ``stream`` is on and the events take
    token deltas: text deltas go to them as ``model_delta`` events and the assembled reply is
    returned, so wrappers of the ModelCaller seam see one reply. An unbound caller reports
    nothing and does not stream.

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
        stream: Stream replies when the bound events take token deltas.
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
        repair_malformed_calls: Send a tool call's JSON parse error back to the model once and
            ask again before failing (the spec's one repair retry).
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
        repair_malformed_calls: bool = True,
    ) -> None:
        self.model = model
        # How messages name the server: without the password a URL may carry, whatever its
        # length (a short one is too short for the secret values' mask).
        self.base_url = shown_url(base_url or str(getattr(model, "openai_api_base", "") or ""))
        self.base_url = self.base_url or "the model"
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
        self.repair_malformed_calls = repair_malformed_calls
        # langchain-openai's models pass extra_headers through to the OpenAI client per request.
        self._takes_headers = any(
            kind.__module__.startswith("langchain_openai") for kind in type(model).__mro__
        )
        self._events = ModelEvents()  # nobody listens until a run binds its own (reporting)

    def reporting(self, events: ModelEvents) -> ChatModelCaller:
        """This caller, reporting to one run's ``events``: same model, retries and breaker.

        A shallow copy, so runs sharing the Agent's caller each report to their own events.
        """
        bound = copy.copy(self)
        bound._events = events
        return bound

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

    async def answer(self, call: ModelCall) -> ModelReply:
        """Call the model with retries, the breaker and streaming; return the reply.

        A reply whose tool-call arguments do not parse is sent back once: the model is told the
        parser's complaint (`ai_agent.models.errors.repair_request`) and asked again. A second
        malformed reply is the error (MalformedToolCallError, a MODEL_ERROR issue at the gate).
        ``response_format`` goes into the request as it is (a typed run's final answer).
        """
        runnable: Any = self.model.bind_tools(call.tools) if call.tools else self.model
        lc_messages = to_langchain(call.messages)
        turn = sum(1 for m in call.messages if m["role"] == "assistant")
        events = self._events
        sink = events if events.streaming and self.stream else None
        headers = request_headers() if self._takes_headers else {}
        options: dict[str, Any] = {"extra_headers": headers} if headers else {}
        if call.response_format is not None:
            options["response_format"] = call.response_format
        started = time.perf_counter()
        retries: list[dict[str, Any]] = []
        try:
            reply, streamed = await self._retried(runnable, lc_messages, sink, options, retries)
        except MalformedToolCallError as exc:
            if not self.repair_malformed_calls:
                raise
            self._note_repair(exc, retries)
            repaired = [*lc_messages, HumanMessage(content=repair_request(exc))]
            try:
                reply, streamed = await self._retried(runnable, repaired, sink, options, retries)
            except MalformedToolCallError as again:
                raise malformed_again(again) from None
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

    def _note_repair(self, exc: MalformedToolCallError, retries: list[dict[str, Any]]) -> None:
        """Say that a malformed call goes back to the model (the log, the events, the reply)."""
        retries.append({"error": type(exc).__name__, "wait": 0.0, "sent_back": True})
        log.warning(
            "the model's tool call had arguments that do not parse (%s); sending the parse "
            "error back to it once",
            exc,
            fields={"event": "model_retry", "error": type(exc).__name__, "sent_back": True},
            secrets=self._secrets.values(),
        )
        self._events(ModelRetry(str(exc), 0.0, 0))  # the draft's ModelEvents sets the iteration

    async def _retried(
        self,
        runnable: Any,
        lc_messages: list[BaseMessage],
        sink: Callable[[ModelCallEvent], None] | None,
        options: Mapping[str, Any],
        retries: list[dict[str, Any]],
    ) -> tuple[BaseMessage, bool]:
        """One request, retried by the policy behind the breaker; retries noted in ``retries``."""
        events = self._events  # retries are reported to every run, streamed or not

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
            events(ModelRetry(str(exc), wait, 0))

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retry.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(self._should_retry),
            reraise=True,
            sleep=self._sleep,
            before_sleep=before_sleep,
        )
        async for attempt in retrying:
            with attempt:
                self.breaker.before_call()
                try:
                    reply, streamed = await self._attempt(runnable, lc_messages, sink, options)
                except ModelError as exc:
                    self.breaker.record_failure(exc)
                    raise
                except BaseException:  # cancelled (the run stopped): no verdict on the server
                    self.breaker.abandon()
                    raise
                self.breaker.record_success()
        return reply, streamed

    async def _attempt(
        self,
        runnable: Any,
        messages: list[BaseMessage],
        sink: Callable[[ModelCallEvent], None] | None,
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
        return timed_out(
            f"the model call to {self.base_url} did not finish within {self.total_timeout:g} s; "
            "raise MAMBA_MODEL_BACKEND__TOTAL_TIMEOUT for long replies, or lower max_tokens"
        )

    async def _attempt_once(
        self,
        runnable: Any,
        messages: list[BaseMessage],
        sink: Callable[[ModelCallEvent], None] | None,
        options: Mapping[str, Any],
        ends: float | None,
    ) -> tuple[BaseMessage, bool]:
        if sink is not None:
            return await self._streamed(runnable, messages, sink, options, ends), True
        try:
            reply: BaseMessage = await runnable.ainvoke(messages, **options)
        except Exception as exc:
            raise classify_model_error(exc, base_url=self.base_url, secrets=self._secrets) from None
        if len(getattr(reply, "tool_calls", None) or []) > MAX_CALLS_PER_REPLY:
            raise too_many_calls()
        _check_calls(reply)  # first: the size below dumps the arguments
        size = len(text_of(reply.content)) + sum(
            len(json.dumps(c.get("args"))) for c in getattr(reply, "tool_calls", None) or []
        )
        if size > self.max_response_chars:
            raise ResponseTooLargeError(
                f"the reply from {self.base_url} has {size} characters, over the size cap of "
                f"{self.max_response_chars}; lower max_tokens or raise "
                "MAMBA_MODEL_BACKEND__MAX_RESPONSE_CHARS"
            )
        return reply, False

    async def _streamed(
        self,
        runnable: Any,
        messages: list[BaseMessage],
        sink: Callable[[ModelCallEvent], None],
        options: Mapping[str, Any],
        ends: float | None,
    ) -> BaseMessage:
        stream = StreamedReply(sink, self.max_response_chars)
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
            partial = stream.partial() if stream.chunks else None
            raise classify_model_error(
                exc, base_url=self.base_url, secrets=self._secrets, partial_text=partial
            ) from None
        reply = stream.merged()
        if reply is None or _is_blank(reply):
            raise with_kinds(
                EmptyResponseError(f"the model server at {self.base_url} sent an empty stream"),
                "EmptyResponse",
            )
        if stream.openai_protocol and not reply.response_metadata.get("finish_reason"):
            # The server closed the stream cleanly but never said the reply was complete.
            raise stream_cut(
                ConnectionResetError("the stream ended without a finish reason"),
                self.base_url,
                "no finish reason",
                stream.partial(),
            )
        _check_calls(reply)
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
        raise timed_out(
            f"the model server at {self.base_url} sent no part of its streamed reply for "
            f"{self.idle_timeout:g} s; it looks stalled (raise "
            "MAMBA_MODEL_BACKEND__IDLE_TIMEOUT if it is only slow)"
        )
