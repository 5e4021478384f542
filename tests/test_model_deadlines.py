"""A model call has a total deadline and an idle limit between streamed chunks.

A server that drips a byte every so often keeps every HTTP read timeout from firing, so without
a deadline a call to it never ends. These tests play such servers over real HTTP (the mock
server's ``Fault.drip``) with small limits, and check that hitting one is a retryable timeout
that goes through the same retry and breaker path as any other.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from ai_agent.config import AgentSettings, ModelBackendSettings
from ai_agent.context import Event
from ai_agent.errors import CircuitOpenError, ModelUnavailableError
from ai_agent.models import ChatModelCaller, classify_model_error, make_chat_model
from ai_agent.models.resolve import caller_for
from ai_agent.observability.redaction import SecretValues
from ai_agent.resilience import CircuitBreaker, RetryPolicy, error_names
from ai_agent.state import Message
from ai_agent.testing import Fault, MockOpenAIServer
from tests.test_models_http import listening

ASK: list[Message] = [Message(role="user", content="What is 2 + 2?")]


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer() as mock:
        yield mock


Make = Callable[..., ChatModelCaller]


async def no_sleep(seconds: float) -> None:
    """The backoff between retries is not what these tests are about: no waiting."""


@pytest.fixture
async def caller(server: MockOpenAIServer) -> AsyncIterator[Make]:
    """Callers of the server with the limits given; their HTTP clients are closed at the end
    (a reply cut short leaves its connection to them)."""
    made: list[ChatModelCaller] = []

    def make(
        *,
        total: float = 30.0,
        idle: float | None = None,
        retries: int = 0,
        breaker: CircuitBreaker | None = None,
        stream: bool = True,
    ) -> ChatModelCaller:
        backend = ModelBackendSettings(base_url=server.base_url, model="m", timeout=30)
        model = ChatModelCaller(
            make_chat_model(backend),
            base_url=backend.base_url,
            retry=RetryPolicy(max_retries=retries, initial_backoff=0.5),
            breaker=breaker,
            stream=stream,
            sleep=no_sleep,
            total_timeout=total,
            idle_timeout=idle,
        )
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


async def call(model: ChatModelCaller) -> Any:
    events: list[Event] = []
    with listening(model, events) as reporting:
        return await reporting(list(ASK), [])


async def test_a_stream_that_drips_bytes_hits_the_idle_limit_and_is_retried(
    server: MockOpenAIServer, caller: Make
) -> None:
    # One byte every 0.1 s: no chunk completes for many seconds, though bytes keep coming.
    server.add(*[Fault.drip(0.1)] * 3)
    with pytest.raises(ModelUnavailableError) as caught:
        await call(caller(idle=0.5, retries=2))
    assert str(caught.value) == (
        f"the model server at {server.base_url} sent no part of its streamed reply for 0.5 s; "
        "it looks stalled (raise MAMBA_MODEL_BACKEND__IDLE_TIMEOUT if it is only slow)"
    )
    assert {"Timeout", "TimeoutError"} <= error_names(caught.value)
    assert len(server.requests) == 3  # the first attempt and both retries


async def test_a_stream_that_never_ends_hits_the_total_deadline(
    server: MockOpenAIServer, caller: Make
) -> None:
    # Whole chunks keep arriving (never idle), but the reply never finishes.
    server.add(Fault.drip(0.05, size=512), "2 + 2 is 4.")
    model = caller(total=1.0, idle=10.0, retries=1)
    reply = await call(model)
    assert reply["message"]["content"] == "2 + 2 is 4."
    assert reply["retries"] == [{"error": "ModelUnavailableError", "wait": 0.5}]
    server.add(Fault.drip(0.05, size=512))
    with pytest.raises(ModelUnavailableError) as caught:
        await call(caller(total=1.0, idle=10.0))
    assert str(caught.value) == (
        f"the model call to {server.base_url} did not finish within 1 s; raise "
        "MAMBA_MODEL_BACKEND__TOTAL_TIMEOUT for long replies, or lower max_tokens"
    )
    assert "Timeout" in error_names(caught.value)


class Flood(BaseChatModel):
    """A model whose stream never waits: part after part, already there, forever.

    A server that floods the connection does this to the client (no read ever has to wait), so
    the deadline's timer never gets to run; ``fail_after`` parts it raises TimeoutError instead,
    as a client's own per-part limit (langchain-openai's ``stream_chunk_timeout``) does.
    """

    fail_after: int | None = None

    @property
    def _llm_type(self) -> str:
        return "flood"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        raise NotImplementedError

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        for count in itertools.count():
            if count == self.fail_after:
                raise TimeoutError("No streaming chunk received for 1.0s")
            yield ChatGenerationChunk(message=AIMessageChunk(content="x"))


async def test_a_flooding_stream_hits_the_total_deadline_too() -> None:
    model = ChatModelCaller(Flood(), max_retries=0, total_timeout=0.5)
    with pytest.raises(ModelUnavailableError, match=r"did not finish within 0\.5 s"):
        await call(model)


async def test_a_clients_own_limit_mid_stream_is_a_retryable_timeout() -> None:
    model = ChatModelCaller(Flood(fail_after=3), max_retries=0, idle_timeout=5)
    with pytest.raises(ModelUnavailableError, match="did not answer in time") as caught:
        await call(model)
    assert "Timeout" in error_names(caught.value)


async def test_a_reply_that_is_not_streamed_has_the_total_deadline_too(
    server: MockOpenAIServer, caller: Make
) -> None:
    server.add(Fault.drip(0.1))
    with pytest.raises(ModelUnavailableError, match="did not finish within 1 s"):
        await call(caller(total=1.0, stream=False))


async def test_repeated_timeouts_open_the_breaker(server: MockOpenAIServer, caller: Make) -> None:
    now = [0.0]
    breaker = CircuitBreaker(server.base_url, threshold=2, cooldown=30, clock=lambda: now[0])
    server.add(*[Fault.drip(0.1)] * 2)
    model = caller(idle=0.3, retries=5, breaker=breaker)
    with pytest.raises(CircuitOpenError, match="circuit breaker"):
        await call(model)
    assert len(server.requests) == 2  # the third attempt failed fast, without a request
    assert breaker.state == "open"


def _agents_caller(settings: AgentSettings) -> ChatModelCaller:
    """The caller an Agent with these settings makes for its configured server."""
    backend = settings.model_backend
    model = make_chat_model(backend)
    return caller_for(model, backend, settings, SecretValues(), base_url=backend.base_url)


def test_the_limits_come_from_the_backend_settings(server: MockOpenAIServer) -> None:
    backend = ModelBackendSettings()
    assert (backend.total_timeout, backend.idle_timeout) == (600.0, None)
    settings = AgentSettings(
        model_backend={"base_url": server.base_url, "total_timeout": 90, "idle_timeout": 7}
    )
    model = _agents_caller(settings)
    assert (model.total_timeout, model.idle_timeout) == (90.0, 7.0)
    plain = AgentSettings(model_backend={"base_url": server.base_url, "timeout": 12})
    model = _agents_caller(plain)
    assert (model.total_timeout, model.idle_timeout) == (600.0, 12.0)  # idle: the read timeout


def test_a_clients_own_timeout_is_a_retryable_timeout_too() -> None:
    """langchain-openai's stream_chunk_timeout raises a TimeoutError of its own."""
    err = classify_model_error(TimeoutError("No streaming chunk received"), base_url="http://m/v1")
    assert isinstance(err, ModelUnavailableError)
    assert "did not answer in time" in str(err)
    assert "Timeout" in error_names(err)
