"""Reading back the values the run store keeps: checked, never trusted blindly.

A row can be damaged, or written by hand: text that is not JSON, JSON nested deeper than the
parser goes, or valid JSON of the wrong shape (a list where an object belongs). Read through
`stored_json`, each becomes a CorruptRunError that names the run, the row and what to do,
instead of a traceback somewhere later; what the caller does with it (report it, or treat the
row as missing) is its own decision, so the rest of the store goes on working.

A number column is no safer: SQLite keeps text written into a REAL or INTEGER column as text
(``'2026-01-01'``), and a page that subtracts two times would fail on it. `checked_run` reads a
run row's JSON and numbers this way, each value that cannot be read becoming None (unknown);
and text bound as bytes (`stored_text`) reads as text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ai_agent.datafiles import strict_loads
from ai_agent.errors import CorruptRunError

__all__ = ["checked_run", "corrupt_row", "stored_json", "stored_text"]

_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}


def stored_json(
    text: str | bytes | None,
    *,
    what: str,
    thread_id: str,
    hint: str,
    shape: type = dict,
    optional: bool = False,
    strict: bool = False,
) -> Any:
    """The value a JSON column holds, checked to be of ``shape``.

    Args:
        text: The column's text (None or empty: no value, allowed with ``optional``).
        what: The row and column, as a person would name them.
        thread_id: The run it belongs to.
        hint: What to do about it.
        shape: The JSON type the value must have.
        optional: Whether the column may be empty.
        strict: Read it as strictly as a file a person wrote (`ai_agent.datafiles.strict_loads`:
            no key given twice, no NaN): a row edited to repeat ``"approve"`` must not be
            applied as its last key.

    Raises:
        CorruptRunError: it is not JSON, is nested too deeply to read, or has another shape.
    """
    if not text:
        if optional:
            return None
        raise corrupt_row(what, thread_id, "it is empty", hint)
    try:
        value = strict_loads(text) if strict else json.loads(text)
    except RecursionError:
        raise corrupt_row(what, thread_id, "it is nested too deeply to read", hint) from None
    except json.JSONDecodeError:
        raise corrupt_row(what, thread_id, "it is not JSON", hint) from None
    except ValueError as exc:  # strict: a key given twice, NaN (bytes that are not UTF-8 too)
        reason = str(exc) if strict else "it is not JSON"
        raise corrupt_row(what, thread_id, reason, hint) from None
    if not isinstance(value, shape):
        found = _NAMES.get(type(value), "null" if value is None else type(value).__name__)
        raise corrupt_row(
            what,
            thread_id,
            f"it holds {found} where {_NAMES.get(shape, shape.__name__)} belongs",
            hint,
        )
    return value


def stored_text(value: Any, *, what: str, thread_id: str) -> tuple[Any, CorruptRunError | None]:
    """A TEXT column's value as text, and what was wrong with it (None: nothing).

    SQLite keeps bytes bound to a TEXT column (by another program) as bytes, which a page that
    formats the value as text fails on. UTF-8 bytes are that text; other bytes are shown with
    U+FFFD where a character cannot be read, and the error says so.
    """
    if type(value) is not bytes:
        return value, None
    try:
        return value.decode(), None
    except UnicodeDecodeError:
        reason = "it holds binary data that is not UTF-8 text"
        hint = "it is shown with \ufffd where a character cannot be read"
        return value.decode(errors="replace"), corrupt_row(what, thread_id, reason, hint)


def corrupt_row(what: str, thread_id: str, reason: str, hint: str) -> CorruptRunError:
    """The error of one unreadable stored row of a run."""
    return CorruptRunError(
        f"{what} of thread {thread_id} cannot be read back: {reason} (the database was damaged "
        f"or changed outside ai-agent); {hint}",
        thread_id=thread_id,
    )


def checked_run(run: dict[str, Any]) -> list[CorruptRunError]:
    """Check a run row's gate, numbers and texts in place; return what was wrong, one error each.

    A value that cannot be read is set to None (no gate; an unknown time or cycle), so the run
    still lists and shows; the caller logs the errors and names them in the run's ``error``.
    """
    problems = _required_texts(run)
    thread = run["thread_id"]
    try:
        run["gate"] = stored_json(
            run["gate"],
            what="the gate stored with the run (agent_runs.gate)",
            thread_id=thread,
            hint="it is a copy of the gate in the run's checkpoints, which still hold it, and "
            "the run's next status update rewrites it",
            optional=True,
        )
    except CorruptRunError as exc:
        problems.append(exc)
        run["gate"] = None
    for column, (check, wanted, what, hint) in _NUMBERS.items():
        value = run[column]
        if not check(value):
            reason = f"it holds {_found(value)} where {wanted} belongs"
            problems.append(corrupt_row(what, thread, reason, hint))
            run[column] = None
    for column in _TEXTS:
        # Pages format these as text (a `runs` line): bytes would take the listing down.
        what = f"the {column} of the run (agent_runs.{column})"
        run[column], problem = stored_text(run[column], what=what, thread_id=thread)
        if problem is not None:
            problems.append(problem)
    return problems


def _required_texts(run: dict[str, Any]) -> list[CorruptRunError]:
    """Read the thread id, task and status as text, whatever the row holds; what was wrong.

    ``thread_id TEXT PRIMARY KEY`` takes NULL in SQLite (only an INTEGER key refuses it), and a
    table made by another program may lack its NOT NULL: a listing formats each as text.
    """
    problems: list[CorruptRunError] = []
    what = "the thread id of a run (agent_runs.thread_id)"
    raw = run["thread_id"]
    if raw is None:
        run["thread_id"] = ""
        hint = "the run is listed without one; no command can name it to show or resume it"
        problems.append(corrupt_row(what, "?", "it holds nothing", hint))
    elif type(raw) is bytes:
        # Even UTF-8: a command naming the thread looks for text, which bytes never equal.
        run["thread_id"] = raw.decode(errors="replace")
        reason = "it is stored as binary data, not text"
        hint = "it is listed as text; no command can name it to show or resume it until the "
        hint += "row holds it as text"
        problems.append(corrupt_row(what, run["thread_id"], reason, hint))
    for column in _REQUIRED:
        if run[column] is None:
            what = f"the {column} of the run (agent_runs.{column})"
            reason = "it holds nothing"
            problems.append(corrupt_row(what, run["thread_id"], reason, "it is shown as empty"))
            run[column] = ""
    return problems


_REQUIRED = ("task", "status")
"""The text columns of a run row every reader formats as text (NOT NULL in ai-agent's table)."""


_TEXTS = (
    "task",
    "status",
    "final_text",
    "error",
    "origin",
    "parent_thread_id",
    "fork_checkpoint_id",
    "parent_call_id",
)
"""The text columns of a run row (`stored_text`)."""


_LAST_TIME = 253402300799.0  # 9999-12-31: a later time cannot be shown as a date


def _time(value: Any) -> bool:
    """Seconds since 1970 that a date can show."""
    return isinstance(value, int | float) and 0 <= value <= _LAST_TIME  # NaN and inf fail too


def _cycle(value: Any) -> bool:
    """A parent's cycle number, or none (a run that is not a child)."""
    return value is None or (isinstance(value, int) and value >= 0)


def _found(value: Any) -> str:
    """A stored value as a person would name it in an error (a text clipped)."""
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, bytes):
        return "binary data"
    return "nothing" if value is None else repr(value)


_UNKNOWN = "it is shown as unknown"
_SECONDS = "a time (seconds since 1970)"
# The number columns of a run row: the check each value must pass, what it must be, the
# column as a person names it, and what to do about a value that fails (it reads as None).
_NUMBERS: dict[str, tuple[Callable[[Any], bool], str, str, str]] = {
    "created_at": (
        _time,
        _SECONDS,
        "the time the run started (agent_runs.created_at)",
        f"{_UNKNOWN}; set it to seconds since 1970 to show it again",
    ),
    "updated_at": (
        _time,
        _SECONDS,
        "the time the run last changed (agent_runs.updated_at)",
        f"{_UNKNOWN} until the run's next status update rewrites it",
    ),
    "parent_iteration": (
        _cycle,
        "a cycle number (0 or more)",
        "the parent's cycle that started this run (agent_runs.parent_iteration)",
        f"{_UNKNOWN}; the parent run's history still shows the call that started it",
    ),
}
