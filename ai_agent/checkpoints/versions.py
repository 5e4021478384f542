"""The version of the run state inside checkpoints.

Every checkpoint the engine writes carries ``ai_agent_state_version`` in its metadata (LangGraph
copies a run config's ``metadata`` into each checkpoint's). A checkpoint without it was written
before the stamp existed, which is version 1. Code that continues, forks or replays a run checks
the version first, so a run written by a newer ai-agent is refused with a clear message instead of
being misread.

To change the shape of ``RunState`` incompatibly: bump `STATE_VERSION`, add a function to
``STATE_MIGRATIONS`` that turns state values of the previous version into the new shape, and keep a
fixture of the old version (``tests/fixtures/``). The stages themselves read older values as they
are (a resume continues from the checkpoint LangGraph loads), so each change must also be
readable in its old shape where the stages use it.

Versions:

1. the first.
2. approvals bound to what was shown: tool calls carry the engine's id (and ``model_id``), a
   grant names its run, its gate and its call's argument digest and is ``spent`` once used, a
   gate report carries a token, the run a ``gate_nonce``. A grant of version 1 names no run, so
   it covers nothing any more: a person is asked again. An older ai-agent must not continue a
   version-2 run: it would take a spent call grant for a live one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ai_agent.errors import StoreError

__all__ = [
    "STATE_MIGRATIONS",
    "STATE_VERSION",
    "STATE_VERSION_KEY",
    "check_state_version",
    "stamped",
    "state_version",
    "upgrade_state",
]

STATE_VERSION = 2
STATE_VERSION_KEY = "ai_agent_state_version"


def _bound_grants(values: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: grants get the binding fields; naming no run, they cover nothing."""
    if "grants" not in values:
        return values
    unbound = {"thread_id": None, "gate": None, "spent": False}
    return {**values, "grants": [{**unbound, **g} for g in values["grants"] or []]}


# STATE_MIGRATIONS[n] turns state values of version n into version n + 1.
STATE_MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _bound_grants}


def stamped(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with the state version in its metadata, so every checkpoint it writes has it.

    Examples:
        >>> stamped({"configurable": {"thread_id": "t"}})["metadata"]
        {'ai_agent_state_version': 2}
    """
    metadata = {**(config.get("metadata") or {}), STATE_VERSION_KEY: STATE_VERSION}
    return {**config, "metadata": metadata}


def state_version(metadata: Mapping[str, Any] | None) -> int:
    """The state version a checkpoint's metadata records (1 when it predates the stamp).

    A value that is no version (text that is not a number, 0 or less: `DeltaSaver` refuses such a
    checkpoint) counts as 1, as one of another type does: no version has a migration to it, and
    ``int("x")`` was a ValueError, version 0 a KeyError.
    """
    value = (metadata or {}).get(STATE_VERSION_KEY, 1)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    return value if type(value) is int and value >= 1 else 1


def check_state_version(metadata: Mapping[str, Any] | None, where: str) -> int:
    """Return the version, or raise StoreError when it is newer than this ai-agent understands."""
    version = state_version(metadata)
    if version > STATE_VERSION:
        raise StoreError(
            f"{where} was written by a newer ai-agent (state version {version}; this one "
            f"understands up to {STATE_VERSION}); upgrade ai-agent to continue it"
        )
    return version


def upgrade_state(values: Mapping[str, Any], version: int) -> dict[str, Any]:
    """State values of ``version`` brought to `STATE_VERSION` through the migrations."""
    out = dict(values)
    for step in range(version, STATE_VERSION):
        out = STATE_MIGRATIONS[step](out)
    return out
