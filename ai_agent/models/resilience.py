"""Retries by level and a circuit breaker: how model and tool calls survive flaky backends.

`RetryPolicy` turns `ErrorRecoveryConfig` into tenacity settings:

=====  ============  =============  ==================
level  tool retries  model retries  backoff multiplier
=====  ============  =============  ==================
1      1             2              2.0 (aggressive)
2      2             3              1.5 (standard)
3      3             5              1.2 (gentle)
=====  ============  =============  ==================

The wait before retry ``n`` is ``initial_backoff * multiplier ** (n - 1)``, capped at
``max_backoff``. A server's ``Retry-After`` is honoured: when sent, it is the wait (the server
knows when it will have capacity), and when it asks for longer than ``max_backoff`` the call is
not retried at all (the error goes to the gate, which can wait as long as it takes).

What is retried is decided by name: an error matches an entry of ``retryable_model_errors`` /
``retryable_tool_errors`` when the entry names the error's class, a base class, the class of the
client exception behind it, or one of its *kinds* (``RateLimitError``, ``ServiceUnavailable``,
``Timeout``, ``ConnectionError``...; see `error_names`). Client mistakes are never retried,
whatever the lists say: a 400, 401, 403, 404 or 422 will fail the same way again.

`CircuitBreaker` watches one backend. After ``threshold`` failed attempts in a row it opens,
and calls fail fast with `CircuitOpenError` (which the gate shows as a
``CIRCUIT_OPEN`` issue) instead of waiting on a dead server. After ``cooldown`` seconds one trial
call is let through (half-open): success closes the breaker, failure opens it again.

Examples:
    >>> from ai_agent.config import ErrorRecoveryConfig
    >>> policy = RetryPolicy.for_models(ErrorRecoveryConfig(retry_level=1))
    >>> policy.max_retries, [policy.backoff(n) for n in (1, 2, 3)]
    (2, [1.0, 2.0, 4.0])
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ai_agent.errors import (
    CircuitOpenError,
    EmptyResponseError,
    ModelRateLimitError,
    ModelUnavailableError,
    StreamInterruptedError,
)
from ai_agent.observability.logs import engine_logger
from ai_agent.state import ToolResult

if TYPE_CHECKING:
    from ai_agent.config import ErrorRecoveryConfig

__all__ = [
    "NEVER_RETRIED_STATUSES",
    "BreakerState",
    "CircuitBreaker",
    "RetryPolicy",
    "error_names",
    "parse_retry_after",
    "retry_tool",
    "tool_error_names",
    "with_kinds",
]

log = engine_logger("ai_agent.tools")
log_breaker = engine_logger("ai_agent.models")

# 4xx answers that say "your request is wrong": sending it again cannot help.
NEVER_RETRIED_STATUSES = frozenset({400, 401, 402, 403, 404, 405, 406, 410, 413, 415, 422})

BreakerState = Literal["closed", "open", "half_open"]


def with_kinds(exc: BaseException, *kinds: str, status: int | None = None) -> BaseException:
    """Tag an error with the kinds it counts as, and the HTTP status behind it (if any).

    The engine's errors are raised ``from None`` (client exceptions can carry request details), so
    what the original was is kept here, as names.

    Examples:
        >>> err = with_kinds(ValueError("x"), "Timeout")
        >>> "Timeout" in error_names(err)
        True
    """
    known: tuple[str, ...] = getattr(exc, "kinds", ())
    exc.kinds = (*known, *kinds)  # type: ignore[attr-defined]
    if status is not None:
        exc.status = status  # type: ignore[attr-defined]
    return exc


def error_names(exc: BaseException) -> set[str]:
    """Every name an error answers to: its classes, its kinds, and its cause's classes.

    Examples:
        >>> sorted(error_names(TimeoutError("slow")))
        ['BaseException', 'Exception', 'OSError', 'Timeout', 'TimeoutError']
    """
    names = {cls.__name__ for cls in type(exc).__mro__ if cls is not object}
    names.update(getattr(exc, "kinds", ()))
    if isinstance(exc, TimeoutError):
        names.add("Timeout")
    cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    if cause is not None and cause is not exc:
        names.update(cls.__name__ for cls in type(cause).__mro__ if cls is not object)
    return names


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date.

    Examples:
        >>> parse_retry_after("2.5"), parse_retry_after("soon")
        (2.5, None)
        >>> parse_retry_after("Mon, 01 Jan 99999999999999999999 00:00:00 GMT") is None
        True
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, OverflowError):  # a year no datetime holds: overflow
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times, how long between, and which errors to retry.

    Args:
        max_retries: Retries after the first attempt.
        initial_backoff: Seconds before the first retry.
        max_backoff: Upper bound of any wait; a longer ``Retry-After`` ends the retries.
        multiplier: Growth of the wait between retries.
        retryable: Names of retryable errors (see `error_names`).

    Examples:
        >>> policy = RetryPolicy(max_retries=3, retryable=("Timeout",))
        >>> policy.should_retry(TimeoutError("slow")), policy.should_retry(ValueError("bad"))
        (True, False)
    """

    max_retries: int = 3
    initial_backoff: float = 1.0
    max_backoff: float = 60.0
    multiplier: float = 1.5
    retryable: Collection[str] = ("RateLimitError", "ServiceUnavailable", "Timeout")

    @classmethod
    def for_models(cls, config: ErrorRecoveryConfig) -> RetryPolicy:
        """The model-call policy of a config: 2/3/5 retries by level, or the override."""
        return cls._of(config, config.model_retries, config.retryable_model_errors)

    @classmethod
    def for_tools(cls, config: ErrorRecoveryConfig) -> RetryPolicy:
        """The tool-call policy of a config: 1/2/3 retries by level, or the override."""
        return cls._of(config, config.tool_retries, config.retryable_tool_errors)

    @classmethod
    def _of(
        cls, config: ErrorRecoveryConfig, retries: int, retryable: Collection[str]
    ) -> RetryPolicy:
        # Models and tools share the backoff; they differ in how often and on what.
        return cls(
            max_retries=retries,
            initial_backoff=config.initial_backoff_seconds,
            max_backoff=config.max_backoff_seconds,
            multiplier=config.backoff_multiplier,
            retryable=tuple(retryable),
        )

    def backoff(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1-based), without any Retry-After."""
        return float(min(self.initial_backoff * self.multiplier ** (retry - 1), self.max_backoff))

    def should_retry(self, exc: BaseException) -> bool:
        """Whether this error may be retried at all (the count is the caller's business)."""
        status = getattr(exc, "status", None)
        if status in NEVER_RETRIED_STATUSES:
            return False
        hinted = getattr(exc, "retry_after", None)
        if hinted is not None and hinted > self.max_backoff:
            # The server asked for a longer pause than we are allowed to sleep: retrying early
            # would be refused again. Hand it to the gate instead.
            return False
        return not error_names(exc).isdisjoint(self.retryable)

    def wait(self, retry: int, exc: BaseException | None) -> float:
        """The wait before retry number ``retry``.

        The server's Retry-After when it sent one (it knows when it will have capacity), else
        the backoff; never more than ``max_backoff``.
        """
        hinted = getattr(exc, "retry_after", None)
        wait = float(hinted) if hinted is not None else self.backoff(retry)
        return float(min(wait, self.max_backoff))


def _is_backend_failure(exc: BaseException) -> bool:
    """Failures that say the backend is unhealthy (not that our request was wrong)."""
    return isinstance(
        exc,
        ModelUnavailableError | ModelRateLimitError | StreamInterruptedError | EmptyResponseError,
    )


@dataclass
class CircuitBreaker:
    """A breaker for one backend: closed -> open after ``threshold`` failures -> half-open.

    Args:
        name: What it guards (the base URL), named in the error.
        threshold: Failed attempts in a row that open it.
        cooldown: Seconds it stays open before one trial call is let through.
        clock: A monotonic clock (tests pass a fake one).
        counts: Which errors count as backend failures (default: unavailable, timeouts, rate
            limits, cut streams, empty replies).

    Examples:
        >>> now = [0.0]
        >>> breaker = CircuitBreaker("srv", threshold=2, cooldown=10, clock=lambda: now[0])
        >>> for _ in range(2):
        ...     breaker.record_failure(ModelUnavailableError("down"))
        >>> breaker.state
        'open'
        >>> now[0] = 11.0
        >>> breaker.state
        'half_open'
    """

    name: str
    threshold: int = 5
    cooldown: float = 30.0
    clock: Callable[[], float] = time.monotonic
    counts: Callable[[BaseException], bool] = _is_backend_failure
    failures: int = field(default=0, init=False)
    opened_at: float | None = field(default=None, init=False)
    _trial: bool = field(default=False, init=False, repr=False)
    history: list[dict[str, Any]] = field(default_factory=list, init=False, repr=False)

    @property
    def state(self) -> BreakerState:
        """``closed`` (calls go through), ``open`` (fail fast) or ``half_open`` (one trial)."""
        if self.opened_at is None:
            return "closed"
        if self.clock() - self.opened_at >= self.cooldown:
            return "half_open"
        return "open"

    def before_call(self) -> None:
        """Let a call through, or raise CircuitOpenError while the breaker is open.

        In the half-open state one trial call passes; others fail fast until it reports back.
        """
        state = self.state
        if state == "closed":
            return
        if state == "half_open" and not self._trial:
            self._trial = True
            return
        assert self.opened_at is not None
        retry_in = max(0.0, self.cooldown - (self.clock() - self.opened_at))
        raise CircuitOpenError(
            f"the circuit breaker for {self.name} is open after {self.failures} failed "
            f"call(s) in a row; calls fail fast for another {retry_in:.0f}s. Check the server, "
            "then resume the run.",
            retry_in=retry_in,
        )

    def record_success(self) -> None:
        """A call got an answer: the backend is healthy, close the breaker."""
        if self.opened_at is not None:
            self._note("closed")
        self.failures, self.opened_at, self._trial = 0, None, False

    def abandon(self) -> None:
        """A call let through ended with neither an answer nor a failure (it was cancelled).

        A trial call that ends so leaves its place to the next call, which becomes the trial:
        otherwise the breaker would stay half-open with its trial taken, failing every call
        fast for ever.
        """
        self._trial = False

    def record_failure(self, exc: BaseException) -> None:
        """A call failed; a backend failure counts toward opening the breaker."""
        if not self.counts(exc):
            self._trial = False
            return
        self.failures += 1
        trial_failed = self._trial
        self._trial = False
        if trial_failed or (self.opened_at is None and self.failures >= self.threshold):
            self.opened_at = self.clock()
            self._note("open")

    def _note(self, state: str) -> None:
        self.history.append({"state": state, "at": self.clock(), "failures": self.failures})
        if state == "open":
            log_breaker.warning(
                "circuit breaker for %s opened after %d failed call(s) in a row; calls fail fast "
                "for %.0fs",
                self.name,
                self.failures,
                self.cooldown,
                fields={"event": "circuit_open", "failures": self.failures},
            )
        else:
            log_breaker.info("circuit breaker for %s closed: the backend answers again", self.name)


# Tools -------------------------------------------------------------------------------------------

# Categories whose calls have no side effects, so running one again cannot do harm twice.
_REPEATABLE_CATEGORIES = frozenset({"read_only", "note_taking"})
_TEMPORARY_CODES = frozenset({"TemporaryFailure", "TEMPORARY_FAILURE", "TEMPORARY"})


def tool_error_names(result: ToolResult) -> set[str]:
    """The names a failed tool result answers to: its code, its exception's classes, kinds.

    Examples:
        >>> sorted(tool_error_names({"status": "error", "meta": {"code": "TIMEOUT"}}))
        ['TIMEOUT', 'Timeout', 'TimeoutError']
    """
    meta = result.get("meta") or {}
    names = {str(meta.get("code") or "")} | set(meta.get("exception_types") or ())
    if meta.get("code") == "TIMEOUT":
        names |= {"TimeoutError", "Timeout"}
    if meta.get("retryable") is True or meta.get("code") in _TEMPORARY_CODES:
        names.add("TemporaryFailure")
    names.discard("")
    return names


async def retry_tool(
    run: Callable[[], Awaitable[ToolResult]],
    policy: RetryPolicy,
    *,
    category: str,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> ToolResult:
    """Run a tool call, retrying failed results that the policy calls retryable.

    A tool with side effects (modification, external) is retried only when its result says the
    failure was temporary (``meta.code == "TemporaryFailure"`` or ``meta.retryable``): a timeout
    of a write may have written, and running it again could do it twice. The result's
    ``meta.attempts`` says how many runs it took.
    """
    wait = sleep or asyncio.sleep
    attempts = 0
    while True:
        attempts += 1
        result = await run()
        if result.get("status") != "error" or attempts > policy.max_retries:
            break
        names = tool_error_names(result)
        if category not in _REPEATABLE_CATEGORIES and "TemporaryFailure" not in names:
            break
        if names.isdisjoint(policy.retryable):
            break
        backoff = policy.backoff(attempts)
        log.warning(
            "tool call failed (%s); retry %d of %d in %.2fs",
            ", ".join(sorted(names)) or "error",
            attempts,
            policy.max_retries,
            backoff,
            fields={"event": "tool_retry", "retry": attempts, "backoff_seconds": backoff},
        )
        await wait(backoff)
    if attempts > 1:
        result["meta"] = {**(result.get("meta") or {}), "attempts": attempts}
    return result
