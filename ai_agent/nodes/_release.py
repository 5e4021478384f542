"""Letting go of a subagent that waits at its gate when its parent's call will not go on.

A parent's call of a child tool is held (``SUBAGENT_PAUSED``) while the child waits at its own
gate; the parent's gate shows it, and the person's plan answers both. When that plan denies the
call, or stops the parent, the child would otherwise stay paused in the inbox, where a person
could still answer it and have it spend and act for a parent that no longer waits. So it is
cancelled, and what it spent counts as the parent's (the parent's budget covers its tree).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ai_agent.context import RunContext
from ai_agent.observability.logs import engine_logger
from ai_agent.state import PendingCall

__all__ = ["let_go"]

log = engine_logger("ai_agent.nodes")


async def let_go(context: RunContext, pending: PendingCall) -> dict[str, Any] | None:
    """Cancel the child a held call waits on; what the child spent, for the parent to count.

    The child's final usage when it was cancelled, else what it had spent when it paused (the
    call's ``spent``). None for a call that holds no child. A child that cannot be cancelled
    (its store fails, another process holds it) stays paused: the parent's decision stands,
    and a warning says how to stop the child by hand.
    """
    if "spent" not in pending:
        return None
    call = pending["call"]
    released = None
    if context.release_child is not None:
        try:
            released = await context.release_child(call["name"], call["id"])
        except Exception as exc:
            log.warning(
                "the subagent of call %s of run %s stays paused at its gate (%s: %s); stop it "
                "with `ai-agent resume CHILD_THREAD --deny`",
                call["id"],
                context.thread_id,
                type(exc).__name__,
                exc,
            )
    meta = released.get("meta") if released is not None else None
    usage = (meta or {}).get("child_usage")
    return dict(usage) if isinstance(usage, Mapping) and usage else dict(pending["spent"])
