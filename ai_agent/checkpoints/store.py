"""Where runs are kept: the run-store interface, database locations and thread ids.

The low module both storage engines build on; it imports neither of them.

A *location* is either a SQLite file path (one machine; the default) or a ``postgresql://`` URL
(several machines sharing one database). ``ai_agent.checkpoints.backends`` opens the matching
engine for one (`open_run_store`, `open_checkpointer`), so the engine itself never asks which one
it has: it talks to `RunStoreProtocol` and LangGraph's ``BaseCheckpointSaver``.

A PostgreSQL URL may hold a password. It is kept only in memory, for connecting: every message
names the database through `describe_location`, which drops the password (and any other
user info) so it never reaches a log line, an exception or the terminal.

Examples:
    >>> describe_location("postgresql://app:s3cret@db.internal:5432/agents")
    'postgresql://app@db.internal:5432/agents'
    >>> is_postgres_url("runs/checkpoints.sqlite")
    False
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from ai_agent.errors import ConfigError, InvalidThreadIdError
from ai_agent.journal import Journal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ai_agent.checkpoints.pins import PinnedDefinition, PinVerdict, ToolPin
    from ai_agent.checkpoints.plans import FinishedPlan, PlanRecord
    from ai_agent.checkpoints.recorded import (
        CallPosition,
        ModelCallRecord,
        ModelRequest,
        ToolCallRecord,
    )
    from ai_agent.checkpoints.runstore import Lease, OutputRecord, RunOrigin, RunRecord
    from ai_agent.checkpoints.summaries import RunSummary
    from ai_agent.context import AllowRule
    from ai_agent.state import Message, ToolCall

__all__ = [
    "MAX_THREAD_ID_CHARS",
    "POSTGRES_SCHEMES",
    "THREAD_ID_RULE",
    "Location",
    "RunStoreProtocol",
    "check_thread_id",
    "describe_location",
    "is_postgres_url",
    "new_thread_id",
    "resolve_location",
]

POSTGRES_SCHEMES = ("postgresql", "postgres")

Location = str | Path
"""A SQLite file path, or a ``postgresql://`` URL (a ``str``: a Path would fold its ``//``)."""


MAX_THREAD_ID_CHARS = 128
THREAD_ID_RULE = (
    f"1 to {MAX_THREAD_ID_CHARS} characters of letters, digits, '.', '_', ':' and '-', "
    "starting with a letter or a digit"
)
_THREAD_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:-]{{0,{MAX_THREAD_ID_CHARS - 1}}}")
_ID_CHAR = re.compile(r"[A-Za-z0-9._:-]")
_SHOWN_ID_CHARS = 40


def check_thread_id(thread_id: object) -> str:
    """``thread_id`` when it follows the grammar of thread ids, else InvalidThreadIdError.

    A thread id names a run in the database, on the command line, in file names, URLs and log
    lines: the grammar (`THREAD_ID_RULE`) keeps out what breaks any of them (slashes, newlines
    and other control characters, spaces, an empty or a huge id). Every id the engine makes
    (`new_thread_id`, forks, replays) fits it. The message shows at most the start of a bad id,
    escaped, so it cannot itself flood or rewrite the terminal.

    Examples:
        >>> check_thread_id("order-42")
        'order-42'
        >>> check_thread_id("a/b")
        Traceback (most recent call last):
        ...
        ai_agent.errors.InvalidThreadIdError: invalid thread id 'a/b': '/' is not allowed; ...
    """
    if isinstance(thread_id, str) and _THREAD_ID.fullmatch(thread_id):
        return thread_id
    raise InvalidThreadIdError(
        f"invalid thread id {_shown(thread_id)}: {_id_problem(thread_id)}; a thread id is "
        f"{THREAD_ID_RULE}"
    )


def _id_problem(thread_id: object) -> str:
    if not isinstance(thread_id, str):
        return f"it is not text ({type(thread_id).__name__})"
    if not thread_id:
        return "it is empty"
    if len(thread_id) > MAX_THREAD_ID_CHARS:
        return f"it is {len(thread_id):,} characters long"
    bad = next((c for c in thread_id if not _ID_CHAR.fullmatch(c)), None)
    if bad is not None:
        return f"{bad!r} is not allowed"
    return f"it starts with {thread_id[0]!r}"


def _shown(thread_id: object) -> str:
    if not isinstance(thread_id, str):
        return f"of type {type(thread_id).__name__}"
    shown = repr(thread_id[:_SHOWN_ID_CHARS])
    return shown + ("..." if len(thread_id) > _SHOWN_ID_CHARS else "")


def new_thread_id() -> str:
    """A fresh thread id: 32 hex digits of a random UUID.

    Examples:
        >>> len(new_thread_id()), check_thread_id(new_thread_id()) is not None
        (32, True)
    """
    import uuid  # a new run's; reading runs makes none (uuid loads platform with it)

    return uuid.uuid4().hex


def is_postgres_url(location: Location) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    if isinstance(location, Path):
        return False
    scheme, sep, _ = location.partition("://")
    return bool(sep) and scheme.lower() in POSTGRES_SCHEMES


def resolve_location(location: Location) -> Location:
    """A PostgreSQL URL as given (``str``), a SQLite file as a ``Path``; nothing else.

    ``sqlite:///path`` is accepted too, for symmetry with database URLs. Any other URL
    (``mysql://...``) is refused rather than taken for a file name: that file would be created,
    with the URL's password in its name.

    Raises:
        ConfigError: the location is empty, or a URL of a scheme the engine does not support.

    Examples:
        >>> resolve_location("sqlite:///tmp/c.sqlite")
        PosixPath('/tmp/c.sqlite')
        >>> resolve_location("mysql://app:s3cret@db/agents")
        Traceback (most recent call last):
        ...
        ai_agent.errors.ConfigError: unsupported database URL scheme 'mysql': give a SQLite ...
    """
    if is_postgres_url(location):
        return str(location)
    text = str(location)
    if not text.strip():
        raise ConfigError("the database location is empty; give a SQLite file path or a URL")
    scheme = _url_scheme(text)
    if scheme == "sqlite":
        return Path(text[len("sqlite://") :])
    if scheme is not None:
        # Only the scheme is named: the rest of the URL may hold a password.
        raise ConfigError(
            f"unsupported database URL scheme {scheme!r}: give a SQLite file path, "
            "sqlite:///path/to/file.sqlite, or a postgresql:// URL"
        )
    return Path(text)


# RFC 3986: a scheme is a letter, then letters, digits, "+", "-" or ".".
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://")


def _url_scheme(text: str) -> str | None:
    """The lower-cased scheme of ``text`` when it is written as a URL (``scheme://``)."""
    found = _SCHEME.match(text)
    return found.group(1).lower() if found else None


def describe_location(location: Location) -> str:
    """The location as it may be shown: a URL without its password, a path as it is."""
    if not is_postgres_url(location):
        return str(location)
    scheme = str(location).partition("://")[0]
    try:
        parts = urlsplit(str(location))
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a malformed host or port: never echo the URL (it may hold a password)
        return f"{scheme}://(a malformed URL)"
    user = f"{parts.username}@" if parts.username else ""
    return f"{scheme}://{user}{host}{port}{parts.path}"


class RunStoreProtocol(Journal, Protocol):
    """What the engine needs from a run store.

    SQLite's ``RunStore`` and ``PostgresRunStore`` both provide it.

    Runs (task, status, outcome), per-thread leases, the act journal, the recorded model and tool
    calls, the full text of clipped tool outputs, and the queue of plans waiting for a worker.
    Every method but ``close`` is async. ``migrated_from`` is the schema version the database had
    when it was opened (None: new).
    """

    migrated_from: int | None
    lease_seconds: float
    """How long a lease lasts unless renewed."""

    def close(self) -> None:
        """Close the connection."""

    # Runs
    async def create_run(
        self,
        thread_id: str,
        task: str,
        *,
        parent_thread_id: str | None = None,
        origin: RunOrigin = "run",
        fork_checkpoint_id: str | None = None,
        status: str = "running",
        parent_iteration: int | None = None,
        parent_call_id: str | None = None,
    ) -> None:
        """Record a new run (by default as running)."""

    async def update_run(
        self,
        thread_id: str,
        *,
        status: str,
        final_text: str | None = None,
        gate: dict[str, Any] | None = None,
        error: str | None = None,
        summary: RunSummary | None = None,
        finishing: FinishedPlan | None = None,
    ) -> None:
        """Set a run's status and outcome (and what a list of runs shows about it).

        With ``finishing``, the claimed plan that drove the run is recorded as done, with the
        run's status as its outcome, in the same transaction.
        """

    async def run_summaries(self, thread_ids: Sequence[str]) -> dict[str, RunSummary]:
        """The current summaries of these runs (none for a run whose row changed since)."""

    async def get_run(self, thread_id: str) -> RunRecord | None:
        """The run with this thread id, or None."""

    async def list_runs(
        self,
        *,
        limit: int | None = 50,
        status: str | None = None,
        parent_thread_id: str | None = None,
    ) -> list[RunRecord]:
        """Runs, most recently updated first (all of them with ``limit=None``)."""

    # Leases (every write this store makes for a thread whose lease it holds is fenced by it:
    # see ai_agent.checkpoints.fencing)
    async def acquire(self, thread_id: str, *, seconds: float | None = ...) -> Lease:
        """Take the thread's lease, or raise ThreadBusyError when another live process holds it."""

    async def renew(self, lease: Lease, *, seconds: float | None = ...) -> Lease:
        """Extend a lease this process holds; LeaseLostError when it was taken over."""

    async def release(self, lease: Lease) -> None:
        """Give the lease back (only if this holder still has it)."""

    def held(self, thread_id: str) -> str | None:
        """The owner (fencing token) of this store's lease on the thread, or None."""

    async def working(self, thread_id: str) -> bool:
        """Whether some process holds the thread's lease now (a live run, not a crashed one)."""

    # Journal: lookup, intent, outcome, forget (`ai_agent.journal.Journal`), and
    async def delete_journal(self, thread_id: str) -> int:
        """Delete a finished run's journal, but the entries a recorded call still names."""

    # Recorded calls
    async def record_model_call(
        self,
        thread_id: str,
        position: CallPosition,
        request_hash: str,
        request: ModelRequest,
        *,
        message: Message | None,
        usage: dict[str, Any],
        error: dict[str, str] | None,
        latency_ms: float,
        replayed: bool = False,
    ) -> int:
        """Record one model call: its reply, or the model error it ended with. Returns its seq."""

    async def record_tool_call(
        self,
        thread_id: str,
        position: CallPosition,
        call: ToolCall,
        args_hash: str,
        *,
        iteration: int,
        duration_ms: float,
        replayed: bool = False,
    ) -> int:
        """Record a tool call by its journal key (its outcome is the journal's); returns its seq."""

    async def model_calls(self, thread_id: str) -> list[ModelCallRecord]:
        """The thread's recorded model calls, in the order they were made."""

    async def model_request(self, seq: int) -> ModelRequest:
        """The full request of one recorded model call."""

    async def tool_calls(self, thread_id: str) -> list[ToolCallRecord]:
        """The thread's recorded tool calls with their outcomes (the journal's), in order."""

    async def delete_calls(self, thread_id: str) -> int:
        """Delete a thread's recorded calls (and bodies nothing else uses); returns how many."""

    # Kept full text of clipped tool outputs
    async def save_output(self, thread_id: str, iteration: int, call: ToolCall, text: str) -> str:
        """Keep the full text of a clipped output; returns its reference (``out-<iter>-<id>``)."""

    async def get_output(self, thread_id: str, ref: str) -> OutputRecord | None:
        """A kept output by its reference, or None."""

    async def list_outputs(self, thread_id: str) -> list[str]:
        """References of the outputs kept for a run, oldest first."""

    # The plan queue
    async def submit_plan(
        self, thread_id: str, plan: dict[str, Any], *, gate_checkpoint_id: str | None
    ) -> PlanRecord:
        """Queue a plan for a paused run."""

    async def get_plan(self, plan_id: int) -> PlanRecord | None:
        """The plan with this id, or None."""

    async def list_plans(
        self, *, status: str | None = None, thread_id: str | None = None, limit: int | None = 50
    ) -> list[PlanRecord]:
        """Plans, oldest first (the order workers take them in)."""

    async def claim_plan(self, plan_id: int, worker: str, *, reclaim: bool = False) -> bool:
        """Mark a queued plan as taken by ``worker``; False when it is no longer queued."""

    async def finish_plan(
        self, plan_id: int, *, status: str, outcome: str | None = None, error: str | None = None
    ) -> None:
        """Record how applying a plan went: ``done`` (with the run's status) or ``failed``."""

    # Always-allow rules (ai_agent.checkpoints.rules)
    async def add_rule(self, rule: dict[str, Any]) -> AllowRule:
        """Store a rule a plan asked for; the same rule again is the stored one."""

    async def list_rules(self, *, revoked: bool = False) -> list[AllowRule]:
        """The rules, newest first; with ``revoked``, the revoked ones too."""

    async def rules_for(self, tool: str) -> list[AllowRule]:
        """The rules of ``tool`` that are not revoked (unreadable ones carry their problem)."""

    async def revoke_rule(self, rule_id: int) -> AllowRule:
        """Revoke a rule; RunError when there is none with this id or it is revoked already."""

    # Pinned MCP tool definitions (ai_agent.checkpoints.pins)
    async def check_pins(
        self, server: str, tools: Sequence[PinnedDefinition]
    ) -> dict[str, PinVerdict]:
        """The tools of ``server`` to withhold, each with why; first use pins them all."""

    async def list_pins(self, server: str | None = None) -> list[ToolPin]:
        """The pins, by server and tool (unreadable ones carry their problem)."""

    async def accept_pins(self, server: str, tools: Sequence[str] | None = None) -> list[ToolPin]:
        """Accept pending definitions (None: all of the server's); RunError when none can be."""

    # Maintenance
    async def vacuum(self) -> None:
        """Reclaim the space of deleted rows: fold the WAL into the file, then rebuild it."""
