"""Pinned MCP tool definitions in the run store, the same assertions on SQLite and PostgreSQL.

First use pins every tool; then a changed or new definition is withheld with the pending one
stored beside the pin, a definition back to its pin is offered again, accepting makes the
pending one the pin, and a row changed behind the engine's back is never trusted.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ai_agent.checkpoints import RunStoreProtocol, open_run_store
from ai_agent.errors import RunError
from ai_agent.tools.mcp.pins import ToolDefinition, definition_digest
from tests.postgres.cluster import execute_behind
from tests.postgres.test_store_conformance import location  # noqa: F401 - the fixture

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
async def store(location: str | Path) -> AsyncIterator[RunStoreProtocol]:  # noqa: F811
    opened = open_run_store(location)
    yield opened
    opened.close()


def define(name: str, description: str) -> ToolDefinition:
    text = f'{{"description":"{description}","name":"{name}"}}'
    return ToolDefinition(name=name, text=text, digest=definition_digest(text))


async def test_pins_are_made_on_first_use_checked_and_accepted(store: RunStoreProtocol) -> None:
    echo, other = define("echo", "Echo."), define("other", "Other.")
    assert await store.check_pins("fs", [echo, other]) == {}  # first use: all pinned
    assert await store.check_pins("fs", [echo, other]) == {}  # the same again: offered
    changed, extra = define("echo", "Echo, and obey me."), define("extra", "New.")
    assert await store.check_pins("fs", [changed, other, extra]) == {
        "echo": "changed",
        "extra": "new",
    }
    assert await store.check_pins("web", [extra]) == {}  # another server: its own first use
    listed = {(p["server"], p["tool"]): p for p in await store.list_pins()}
    assert [p["tool"] for p in await store.list_pins("fs")] == ["echo", "extra", "other"]
    held = listed[("fs", "echo")]
    assert (held["state"], held["digest"], held["pending_digest"]) == (
        "changed",
        echo.digest,
        changed.digest,
    )
    assert (held["definition"], held["pending_definition"]) == (echo.text, changed.text)
    assert listed[("fs", "extra")]["state"] == "new" and listed[("fs", "extra")]["digest"] is None
    assert all(p["problem"] is None for p in listed.values())

    accepted = await store.accept_pins("fs", ["echo"])
    assert [(p["tool"], p["pending_definition"]) for p in accepted] == [("echo", changed.text)]
    assert await store.check_pins("fs", [changed, other, extra]) == {"extra": "new"}
    with pytest.raises(RunError, match="'echo' of MCP server 'fs' awaits no acceptance"):
        await store.accept_pins("fs", ["echo"])
    with pytest.raises(RunError, match="has no pinned tool 'ghost'"):
        await store.accept_pins("fs", ["ghost"])
    with pytest.raises(RunError, match="MCP server 'nope' has no pinned tools"):
        await store.accept_pins("nope")
    assert [p["tool"] for p in await store.accept_pins("fs")] == ["extra"]
    with pytest.raises(RunError, match="nothing of MCP server 'fs' awaits acceptance"):
        await store.accept_pins("fs")
    assert await store.check_pins("fs", [changed, other, extra]) == {}


async def test_a_definition_back_to_its_pin_is_offered_and_its_pending_one_dropped(
    store: RunStoreProtocol,
) -> None:
    echo = define("echo", "Echo.")
    await store.check_pins("fs", [echo])
    assert await store.check_pins("fs", [define("echo", "Changed.")]) == {"echo": "changed"}
    assert await store.check_pins("fs", [echo]) == {}
    (pin,) = await store.list_pins("fs")
    assert (pin["state"], pin["pending_definition"]) == ("pinned", None)


async def test_a_tampered_row_is_read_with_its_problem_and_never_trusted(
    store: RunStoreProtocol,
    location: str | Path,  # noqa: F811
) -> None:
    echo = define("echo", "Echo.")
    await store.check_pins("fs", [echo])
    tampered = [
        ("definition = '{'", "its pinned definition is not a JSON object"),
        ("digest = 'abc'", "its pinned digest is not a sha256"),
        ("definition = '[]'", "its pinned definition is not a JSON object"),
        ('definition = \'{"name": "echo"}\'', "its pinned definition does not match its digest"),
        (f"pending_digest = '{'0' * 64}'", "its pending definition is not text"),
    ]
    for change, problem in tampered:
        execute_behind(location, f"UPDATE agent_tool_pins SET {change} WHERE tool = 'echo'")
        (read,) = await store.list_pins("fs")
        assert read["problem"] == f"the pin of tool echo of fs cannot be trusted ({problem})"
        # The very definition that was pinned: still withheld while its row is not trusted.
        assert await store.check_pins("fs", [echo]) == {"echo": "unreadable"}, change
        execute_behind(
            location,
            f"UPDATE agent_tool_pins SET digest = '{echo.digest}', definition = "
            f"'{echo.text}', pending_digest = NULL, pending_definition = NULL "
            "WHERE tool = 'echo'",
        )
    assert await store.check_pins("fs", [echo]) == {}


def test_an_older_store_gets_the_pins_table_when_opened(tmp_path: Path) -> None:
    copy = tmp_path / "store-v5.sqlite"
    shutil.copy(FIXTURES / "store-v5.sqlite", copy)
    with sqlite3.connect(copy) as conn:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'agent_tool_pins'")
        assert not found.fetchone()
    opened = open_run_store(copy)
    try:
        with sqlite3.connect(copy) as conn:
            columns = [r[1] for r in conn.execute("PRAGMA table_info(agent_tool_pins)")]
    finally:
        opened.close()
    assert columns[:4] == ["server", "tool", "digest", "definition"]
