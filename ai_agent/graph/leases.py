"""A run's lease while it runs, and the words its row and listeners get for what stopped it.

`LeaseKeeper.holding` keeps a thread's lease for a block (a run, a resume, a worker's plan):
a heartbeat renews it, its loss cancels the block at once (LeaseLostError), and it is given
back after. `stop_reason` is how a run that ended by an exception is named to a person: a
sentence for a cancelled run and for a lost lease, the masked message for the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, cast

from ai_agent.errors import AgentError, LeaseLostError, StorageFullError
from ai_agent.observability.logs import engine_logger

if TYPE_CHECKING:
    from ai_agent.checkpoints.runstore import Lease
    from ai_agent.checkpoints.store import RunStoreProtocol
    from ai_agent.observability.redaction import SecretValues

__all__ = ["LeaseKeeper", "stop_reason"]

log = engine_logger("ai_agent.agent")

_UNEXPECTED_CHARS = 500
"""The most of an unexpected error's message a run's row keeps."""
# A run's row after its caller cancelled it ("CancelledError" alone told a person nothing).
_CANCELLED = (
    "the run was cancelled by its caller (a stream left early, a cancelled task or timeout, "
    "Ctrl-C, or the Agent closing): it stopped at its last checkpoint, and "
    "`ai-agent resume {thread_id}` (or Agent.resume) continues it (a subagent's: its parent's)"
)


class LeaseKeeper:
    """Keeps the leases of the runs in flight, and knows which of them were lost.

    Args:
        store: The run store the leases are in (opened on first use, hence a callable).
        lease_seconds: How long a lease lasts; the heartbeat renews it every fifth of it.
    """

    def __init__(self, store: Callable[[], RunStoreProtocol], lease_seconds: float) -> None:
        self._store = store
        self._seconds = lease_seconds
        # Why each thread's block was cancelled, while it winds down: its lease was lost.
        self._lost: dict[str, LeaseLostError] = {}

    def lost(self, thread_id: str) -> LeaseLostError | None:
        """The loss of the thread's lease, while the block that held it is being stopped."""
        return self._lost.get(thread_id)

    @contextlib.asynccontextmanager
    async def holding(self, lease: Lease) -> AsyncIterator[None]:
        """Keep the lease while the block runs, and give it back after.

        A heartbeat renews it every fifth of ``lease_seconds``. If the lease was lost anyway
        (this process stalled past it and another took the thread over), the block is
        cancelled at once and ends with LeaseLostError; its writes would be refused by the
        fencing regardless, but a tool still running must not start anything more.
        """
        runner = cast(asyncio.Task[Any], asyncio.current_task())
        heartbeat = asyncio.create_task(self._heartbeat(lease, runner))
        try:
            yield
        except asyncio.CancelledError:
            lost = self._lost.get(lease.thread_id)
            if lost is None:
                raise
            runner.uncancel()
            raise lost from None
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            self._lost.pop(lease.thread_id, None)
            await self.release(lease)

    async def _heartbeat(self, lease: Lease, runner: asyncio.Task[Any]) -> None:
        while True:
            await asyncio.sleep(self._seconds / 5)
            try:
                lease = await self._store().renew(lease)
            except LeaseLostError as exc:
                self._lost[lease.thread_id] = exc
                runner.cancel()
                return

    async def release(self, lease: Lease) -> None:
        """Give the lease back; on a full disk it is left to run out (its holder is done)."""
        try:
            await self._store().release(lease)
        except StorageFullError:
            log.warning(
                "could not release the lease of thread %s (the database is full); another "
                "process can take the thread over once this one has exited or the lease ran out",
                lease.thread_id,
            )


def stop_reason(
    exc: BaseException, thread_id: str, secrets: SecretValues, keeper: LeaseKeeper
) -> str:
    """How a run's row and its listeners name the exception that ended it.

    A run its caller cancelled gets a sentence (`_CANCELLED`), not "CancelledError"; one
    cancelled because its lease was lost, or ended by an error of the engine's own (a lost
    lease, a full disk), gets that error's message; anything else its type and message (the
    type alone, "TypeError", told a person nothing). Masked and cut short.
    """
    if isinstance(exc, asyncio.CancelledError):
        lost = keeper.lost(thread_id)
        if lost is None:
            return _CANCELLED.format(thread_id=thread_id)
        exc = lost
    try:
        text = str(exc)
    except Exception:  # an exception whose message cannot be made
        text = ""
    text = secrets.text(" ".join(text.split()))
    if len(text) > _UNEXPECTED_CHARS:
        text = text[: _UNEXPECTED_CHARS - 3] + "..."
    if isinstance(exc, AgentError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
