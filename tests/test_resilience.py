"""Retry policies by level, Retry-After, error names, the circuit breaker, and tool retries."""

from __future__ import annotations

import email.utils
from typing import Any

import pytest

from ai_agent.config import ErrorRecoveryConfig
from ai_agent.errors import (
    CircuitOpenError,
    MalformedToolCallError,
    ModelAuthError,
    ModelRateLimitError,
    ModelUnavailableError,
)
from ai_agent.resilience import (
    CircuitBreaker,
    RetryPolicy,
    error_names,
    parse_retry_after,
    retry_tool,
    tool_error_names,
    with_kinds,
)
from ai_agent.state import ToolResult


@pytest.mark.parametrize(
    ("level", "tool", "model", "multiplier"),
    [(1, 1, 2, 2.0), (2, 2, 3, 1.5), (3, 3, 5, 1.2)],
)
def test_levels_follow_the_spec_table(level: int, tool: int, model: int, multiplier: float) -> None:
    config = ErrorRecoveryConfig(retry_level=level)
    models, tools = RetryPolicy.for_models(config), RetryPolicy.for_tools(config)
    assert (tools.max_retries, models.max_retries) == (tool, model)
    assert models.multiplier == tools.multiplier == multiplier
    assert models.retryable == ("RateLimitError", "ServiceUnavailable", "Timeout")
    assert tools.retryable == ("TimeoutError", "ConnectionError", "TemporaryFailure")


def test_per_field_overrides_and_backoff_bounds() -> None:
    config = ErrorRecoveryConfig(
        retry_level=1,
        tool_max_retries=0,
        model_max_retries=7,
        initial_backoff_seconds=0.5,
        max_backoff_seconds=3.0,
        retryable_model_errors=["MalformedToolCall"],
    )
    policy = RetryPolicy.for_models(config)
    assert policy.max_retries == 7
    assert RetryPolicy.for_tools(config).max_retries == 0
    # 0.5, 1, 2, then capped at 3.
    assert [policy.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.should_retry(MalformedToolCallError("bad", tool="t"))
    assert not policy.should_retry(ModelUnavailableError("down"))


def test_retry_after_replaces_the_backoff_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_backoff=1.0, max_backoff=10.0, multiplier=2.0)
    hinted = ModelRateLimitError("429", retry_after=4.0)
    with_kinds(hinted, "RateLimitError")
    assert policy.wait(1, hinted) == 4.0  # the server's wait, not the 1 s backoff
    assert policy.wait(4, hinted) == 4.0  # ... nor the 8 s one
    assert policy.wait(4, None) == 8.0
    assert policy.should_retry(hinted)
    too_long = with_kinds(ModelRateLimitError("429", retry_after=30.0), "RateLimitError")
    assert not policy.should_retry(too_long)  # longer than max_backoff: hand it to the gate


def test_client_errors_are_never_retried_whatever_the_list_says() -> None:
    policy = RetryPolicy(retryable=("ModelAuthError", "ModelError", "HTTP400"))
    assert not policy.should_retry(with_kinds(ModelAuthError("401"), status=401))
    assert not policy.should_retry(with_kinds(ModelAuthError("400"), status=400))
    assert policy.should_retry(with_kinds(ModelAuthError("odd"), status=409))


def test_error_names_cover_classes_kinds_and_causes() -> None:
    try:
        try:
            raise ConnectionResetError("peer")
        except ConnectionResetError as inner:
            raise ModelUnavailableError("down") from inner
    except ModelUnavailableError as exc:
        names = error_names(with_kinds(exc, "ServiceUnavailable"))
    assert {"ModelUnavailableError", "ModelError", "ServiceUnavailable"} <= names
    assert {"ConnectionResetError", "ConnectionError"} <= names
    assert "Timeout" in error_names(TimeoutError())


@pytest.mark.parametrize(
    ("header", "expected"),
    [("3", 3.0), ("0.25", 0.25), ("-5", 0.0), ("", None), (None, None), ("nan", None)],
)
def test_parse_retry_after_seconds(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header) == expected


def test_parse_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    header = email.utils.formatdate(now + 7, usegmt=True)
    assert parse_retry_after(header, now=now) == pytest.approx(7.0, abs=1.0)
    assert parse_retry_after("Wed, 99 Foo 2024", now=now) is None


def state(breaker: CircuitBreaker) -> str:
    """The state, read fresh (a property mypy would otherwise narrow across calls)."""
    return breaker.state


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_after_threshold_fails_fast_then_half_opens_and_closes() -> None:
    clock = Clock()
    breaker = CircuitBreaker("http://srv/v1", threshold=3, cooldown=30.0, clock=clock)
    for _ in range(2):
        breaker.before_call()
        breaker.record_failure(ModelUnavailableError("down"))
    assert state(breaker) == "closed"
    breaker.record_failure(ModelRateLimitError("slow down"))
    assert state(breaker) == "open"
    with pytest.raises(CircuitOpenError, match=r"http://srv/v1 is open after 3 failed") as info:
        breaker.before_call()
    assert info.value.retry_in == pytest.approx(30.0)
    clock.now += 30.0
    assert state(breaker) == "half_open"
    breaker.before_call()  # the one trial call
    with pytest.raises(CircuitOpenError):
        breaker.before_call()  # others still fail fast while the trial runs
    breaker.record_success()
    assert state(breaker) == "closed"
    assert [h["state"] for h in breaker.history] == ["open", "closed"]


def test_a_failed_trial_reopens_the_breaker_for_another_cooldown() -> None:
    clock = Clock()
    breaker = CircuitBreaker("srv", threshold=1, cooldown=10.0, clock=clock)
    breaker.record_failure(ModelUnavailableError("down"))
    clock.now += 10.0
    breaker.before_call()
    breaker.record_failure(ModelUnavailableError("still down"))
    assert state(breaker) == "open"
    clock.now += 9.0
    assert state(breaker) == "open"


def test_client_errors_do_not_count_toward_the_breaker() -> None:
    breaker = CircuitBreaker("srv", threshold=1, cooldown=10.0, clock=Clock())
    breaker.record_failure(ModelAuthError("401"))
    breaker.record_failure(MalformedToolCallError("bad", tool="t"))
    assert state(breaker) == "closed"
    assert breaker.failures == 0


def test_success_resets_the_failure_count() -> None:
    breaker = CircuitBreaker("srv", threshold=2, cooldown=10.0, clock=Clock())
    breaker.record_failure(ModelUnavailableError("down"))
    breaker.record_success()
    breaker.record_failure(ModelUnavailableError("down"))
    assert state(breaker) == "closed"


# Tools -----------------------------------------------------------------------------------------


def _failing(results: list[ToolResult]) -> Any:
    calls: list[int] = []

    async def run() -> ToolResult:
        calls.append(1)
        return ToolResult(**results[min(len(calls), len(results)) - 1])

    run.calls = calls  # type: ignore[attr-defined]
    return run


async def test_read_only_tool_timeouts_are_retried_with_backoff() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    run = _failing(
        [
            ToolResult(status="error", error="slow", meta={"code": "TIMEOUT"}),
            ToolResult(status="error", error="slow", meta={"code": "TIMEOUT"}),
            ToolResult(status="ok", content="done"),
        ]
    )
    policy = RetryPolicy.for_tools(ErrorRecoveryConfig(retry_level=2, initial_backoff_seconds=0.5))
    result = await retry_tool(run, policy, category="read_only", sleep=sleep)
    assert result == {"status": "ok", "content": "done", "meta": {"attempts": 3}}
    assert waits == [0.5, 0.75]


async def test_tool_retries_stop_at_the_level_count() -> None:
    run = _failing([ToolResult(status="error", meta={"exception_types": ["ConnectionError"]})])
    policy = RetryPolicy.for_tools(ErrorRecoveryConfig(retry_level=1, initial_backoff_seconds=0))
    result = await retry_tool(run, policy, category="read_only")
    assert result["status"] == "error"
    assert len(run.calls) == 2  # one try, one retry at level 1
    assert result["meta"]["attempts"] == 2


async def test_side_effecting_tools_are_retried_only_when_they_say_it_was_temporary() -> None:
    policy = RetryPolicy.for_tools(ErrorRecoveryConfig(initial_backoff_seconds=0))
    timeout = _failing([ToolResult(status="error", meta={"code": "TIMEOUT"})])
    result = await retry_tool(timeout, policy, category="modification")
    assert len(timeout.calls) == 1  # a write that timed out may have written: never again
    assert "attempts" not in result.get("meta", {})
    temporary = _failing(
        [
            ToolResult(status="error", meta={"code": "TemporaryFailure"}),
            ToolResult(status="ok", content="sent"),
        ]
    )
    result = await retry_tool(temporary, policy, category="external")
    assert result["status"] == "ok"
    assert len(temporary.calls) == 2


async def test_non_retryable_tool_errors_run_once() -> None:
    run = _failing([ToolResult(status="error", meta={"code": "NOT_FOUND"})])
    policy = RetryPolicy.for_tools(ErrorRecoveryConfig(initial_backoff_seconds=0))
    await retry_tool(run, policy, category="read_only")
    assert len(run.calls) == 1


def test_tool_error_names() -> None:
    names = tool_error_names(
        ToolResult(status="error", meta={"code": "TOOL_EXCEPTION", "exception_types": ["OSError"]})
    )
    assert names == {"TOOL_EXCEPTION", "OSError"}
    flagged = tool_error_names(ToolResult(status="error", meta={"retryable": True}))
    assert flagged == {"TemporaryFailure"}
