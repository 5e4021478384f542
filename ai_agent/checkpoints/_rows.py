"""Reading back the JSON the run store keeps in text columns: checked, never trusted blindly.

A row can be damaged, or written by hand: text that is not JSON, JSON nested deeper than the
parser goes, or valid JSON of the wrong shape (a list where an object belongs). Read through
`stored_json`, each becomes a CorruptRunError that names the run, the row and what to do,
instead of a traceback somewhere later; what the caller does with it (report it, or treat the
row as missing) is its own decision, so the rest of the store goes on working.
"""

from __future__ import annotations

import json
from typing import Any

from ai_agent.errors import CorruptRunError

__all__ = ["corrupt_row", "stored_json"]

_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}


def stored_json(
    text: str | bytes | None,
    *,
    what: str,
    thread_id: str,
    hint: str,
    shape: type = dict,
    optional: bool = False,
) -> Any:
    """The value a JSON column holds, checked to be of ``shape``.

    Args:
        text: The column's text (None or empty: no value, allowed with ``optional``).
        what: The row and column, as a person would name them.
        thread_id: The run it belongs to.
        hint: What to do about it.
        shape: The JSON type the value must have.
        optional: Whether the column may be empty.

    Raises:
        CorruptRunError: it is not JSON, is nested too deeply to read, or has another shape.
    """
    if not text:
        if optional:
            return None
        raise corrupt_row(what, thread_id, "it is empty", hint)
    try:
        value = json.loads(text)
    except RecursionError:
        raise corrupt_row(what, thread_id, "it is nested too deeply to read", hint) from None
    except ValueError:
        raise corrupt_row(what, thread_id, "it is not JSON", hint) from None
    if not isinstance(value, shape):
        found = _NAMES.get(type(value), "null" if value is None else type(value).__name__)
        raise corrupt_row(
            what,
            thread_id,
            f"it holds {found} where {_NAMES.get(shape, shape.__name__)} belongs",
            hint,
        )
    return value


def corrupt_row(what: str, thread_id: str, reason: str, hint: str) -> CorruptRunError:
    """The error of one unreadable stored row of a run."""
    return CorruptRunError(
        f"{what} of thread {thread_id} cannot be read back: {reason} (the database was damaged "
        f"or changed outside ai-agent); {hint}",
        thread_id=thread_id,
    )
