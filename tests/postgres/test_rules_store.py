"""Always-allow rules in the run store, the same assertions on SQLite and PostgreSQL.

Stored once per gate and call (the same plan applied again adds nothing), listed newest first,
revoked with the time kept, and a row changed behind the engine's back read as what it is: a
rule that carries its problem and that act never uses.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ai_agent.checkpoints import RunStoreProtocol, open_run_store
from ai_agent.errors import RunError
from ai_agent.tools.rules import rule_problem
from tests.postgres.cluster import execute_behind
from tests.postgres.test_store_conformance import location  # noqa: F401 - the fixture

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
async def store(location: str | Path) -> AsyncIterator[RunStoreProtocol]:  # noqa: F811
    opened = open_run_store(location)
    yield opened
    opened.close()


def rule(key: str, **fields: Any) -> dict[str, Any]:
    made: dict[str, Any] = {
        "tool": "write_file",
        "scope": "run",
        "thread_id": "t1",
        "args_hash": None,
        "args": None,
        "category": "modification",
        "confirmed": False,
        "source": "run t1, cycle 1, call c1.0",
        "key": key,
    }
    return {**made, **fields}


async def test_rules_are_stored_once_listed_and_revoked(store: RunStoreProtocol) -> None:
    first = await store.add_rule(rule("k1"))
    again = await store.add_rule(rule("k1"))  # a worker applying the same plan again
    assert again["id"] == first["id"]
    digest = "0" * 32
    second = await store.add_rule(
        rule("k2", scope="args", thread_id=None, args_hash=digest, args={"path": "a"})
    )
    assert (second["args"], second["args_hash"], second["problem"]) == ({"path": "a"}, digest, None)
    assert [r["id"] for r in await store.list_rules()] == [second["id"], first["id"]]
    assert [r["id"] for r in await store.rules_for("write_file")] == [first["id"], second["id"]]
    revoked = await store.revoke_rule(first["id"])
    assert revoked["revoked_at"] is not None
    assert [r["id"] for r in await store.rules_for("write_file")] == [second["id"]]
    assert [r["id"] for r in await store.list_rules()] == [second["id"]]
    assert len(await store.list_rules(revoked=True)) == 2
    with pytest.raises(RunError, match="revoked already"):
        await store.revoke_rule(first["id"])
    with pytest.raises(RunError, match="there is no rule 99"):
        await store.revoke_rule(99)


async def test_a_tampered_row_is_read_with_its_problem_and_never_used(
    store: RunStoreProtocol,
    location: str | Path,  # noqa: F811
) -> None:
    made = await store.add_rule(rule("k1", scope="tool", thread_id=None, confirmed=True))
    tampered = [
        ("scope = 'everything'", "has an unknown scope 'everything'"),
        ("confirmed = 7", "cannot be read (its confirmation is neither 0 nor 1)"),
        ("args = '{'", "cannot be read (its arguments are not a JSON object)"),
        ("confirmed = 0", "lets every call of write_file (a modification tool) run in every run"),
        ("category = 'root'", "names an unknown category 'root'"),
    ]
    for change, problem in tampered:
        execute_behind(location, f"UPDATE agent_rules SET {change} WHERE id = {made['id']}")
        (read,) = await store.rules_for("write_file")
        assert problem in str(rule_problem(read, "modification")), change
        execute_behind(
            location,
            "UPDATE agent_rules SET scope = 'tool', confirmed = 1, args = NULL, "
            f"category = 'modification' WHERE id = {made['id']}",
        )


def test_an_older_store_gets_the_rules_table_when_opened(tmp_path: Path) -> None:
    copy = tmp_path / "store-v5.sqlite"
    shutil.copy(FIXTURES / "store-v5.sqlite", copy)
    with sqlite3.connect(copy) as conn:
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'agent_rules'").fetchone()
    opened = open_run_store(copy)
    try:
        with sqlite3.connect(copy) as conn:
            columns = [r[1] for r in conn.execute("PRAGMA table_info(agent_rules)")]
    finally:
        opened.close()
    assert columns[:3] == ["id", "tool", "scope"] and "revoked_at" in columns
