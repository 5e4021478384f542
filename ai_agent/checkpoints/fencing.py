"""Fencing: every write a lease holder makes is checked against its lease, in the same transaction.

A thread's lease names its holder by ``owner``, an id drawn afresh (uuid4) at every acquisition
and never used again: it is the holder's fencing token. Each write the holder makes -- a
checkpoint and its task writes, a journal entry, the run's status, a recorded call, a kept
output, a plan's outcome -- first reads the thread's lease row *inside the transaction that
writes*, and goes ahead only if the row still names that owner. A holder that stalled past its
lease (a stopped process, a long pause) while another process took the thread over finds
another owner there, or no row at all: its write is rolled back, it gets `LeaseLostError`, and
its run stops. On SQLite the transaction holds the file's write lock from its first statement
(``BEGIN IMMEDIATE``), and on PostgreSQL the row is read ``FOR SHARE``, so a takeover can never
slip in between the check and the write.

The check compares for equality with the current row, so the token needs no order: what it
needs is never to come back, and an id drawn afresh each time never does.

The run store knows which leases it holds (``SqlRunStore.held``); the checkpointer learns the
token from the run's config (`with_lease` puts it there, `lease_in` is the one reader), since
the config is all LangGraph hands a checkpointer. The key starts with ``__`` so LangGraph does
not copy it into checkpoint metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ai_agent.errors import LeaseLostError

__all__ = ["LEASE_KEY", "LEASE_ROW_SQL", "check_lease", "lease_in", "lease_lost", "with_lease"]

LEASE_KEY = "__ai_agent_lease"
LEASE_ROW_SQL = "SELECT owner, host, pid FROM agent_leases WHERE thread_id = ?"
"""The thread's lease row: (owner, host, pid). PostgreSQL adds ``FOR SHARE`` (see the stores)."""


def with_lease(configurable: dict[str, Any], owner: str | None) -> None:
    """Put the holder's token into a run's ``configurable`` (nothing when there is none)."""
    if owner is not None:
        configurable[LEASE_KEY] = owner


def lease_in(config: Mapping[str, Any]) -> str | None:
    """The lease token a run's config carries, or None (a write outside any leased run)."""
    owner = (config.get("configurable") or {}).get(LEASE_KEY)
    return str(owner) if owner is not None else None


def check_lease(row: Any, thread_id: str, owner: str) -> None:
    """Raise LeaseLostError unless the lease row (owner, host, pid) still names ``owner``."""
    if row is None or row[0] != owner:
        raise lease_lost(thread_id, row)


def lease_lost(thread_id: str, row: Any) -> LeaseLostError:
    """The error of a holder whose lease is gone: who has the thread now, and what happens."""
    if row is None:
        now = "no process holds it now; `ai-agent resume " + thread_id + "` continues the run"
    else:
        now = f"process {row[2]} on {row[1]} holds it now and carries the run on"
    return LeaseLostError(
        f"the lease on thread {thread_id} was taken over while this process was stalled past "
        f"it ({now}); this process stopped and wrote nothing more"
    )
