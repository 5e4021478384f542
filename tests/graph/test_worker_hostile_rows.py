"""The plan queue and the leases with rows edited as an attacker (or a broken disk) would edit them.

SQLite keeps whatever is written into a column, text in a number column included; each row here
is changed with plain SQL on the real file, then a real Worker (or the store) reads it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent.checkpoints import RunStore
from ai_agent.graph import Worker
from tests.graph.conftest import MakeAgent
from tests.graph.test_worker import APPROVE, gated


def edit(db: Path, sql: str, *params: Any) -> None:
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(sql, params)


@pytest.mark.parametrize(
    ("column", "value"),
    [("attempts", "many"), ("submitted_at", "yesterday"), ("claimed_at", "soon")],
)
async def test_a_plan_row_with_text_in_a_number_column_fails_alone(
    make_agent: MakeAgent, db: Path, column: str, value: str
) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_agent, log)
    damaged, sound = await agent.run("note it"), await agent.run("note it")
    bad = await agent.submit_plan(damaged.thread_id, APPROVE)
    await agent.submit_plan(sound.thread_id, APPROVE)
    edit(db, f"UPDATE agent_plans SET {column} = ? WHERE id = ?", value, bad["id"])
    # One damaged row must not stop the queue: the sound plan is served, the damaged one failed.
    outcomes = await Worker(gated(make_agent, log)).run(once=True)
    assert [(o.thread_id, o.run_status) for o in outcomes] == [(sound.thread_id, "completed")]
    assert len(log) == 1
    (row,) = await agent.list_plans(thread_id=damaged.thread_id)
    assert row["status"] == "failed"
    assert column in str(row["error"]) and "cannot be read back" in str(row["error"])
    assert (await agent.get_result(damaged.thread_id)).status == "paused"


@pytest.mark.parametrize(
    "damage",
    ['{"approve": [], "approve": ["*"], "gate_token": TOKEN}', '{"approve": ["*"], '
     '"gate_token": TOKEN, "instructions": NaN}'],
    ids=["key-twice", "nan"],
)  # fmt: skip
async def test_a_plan_row_that_is_not_strict_json_is_not_applied(
    make_agent: MakeAgent, db: Path, damage: str
) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_agent, log)
    paused = await agent.run("note it")
    queued = await agent.submit_plan(paused.thread_id, {"approve": []})
    token = queued["plan"]["gate_token"]
    # The queued row edited in place: its token is the gate's, so only its JSON can stop it.
    # Read as Python reads JSON, the last "approve" wins over the one a person reviewed.
    edit(
        db,
        "UPDATE agent_plans SET plan = ? WHERE id = ?",
        damage.replace("TOKEN", f'"{token}"'),
        queued["id"],
    )
    outcomes = await Worker(gated(make_agent, log)).run(once=True)
    assert outcomes == [] and log == []  # the gated call did not run
    (row,) = await agent.list_plans()
    assert row["status"] == "failed" and "cannot be read back" in str(row["error"])
    assert (await agent.get_result(paused.thread_id)).status == "paused"


@pytest.mark.parametrize(
    ("column", "value", "host"),
    [
        ("pid", "abc", "here"),
        ("pid", 0, "here"),
        ("pid", -1, "here"),
        ("expires_at", "never", "elsewhere"),
        ("expires_at", 1e999, "elsewhere"),
    ],
    ids=["pid-text", "pid-0", "pid-minus-1", "expiry-text", "expiry-infinite"],
)
async def test_a_lease_row_edited_by_hand_does_not_lock_its_run_forever(
    tmp_path: Path, column: str, value: Any, host: str
) -> None:
    db = tmp_path / "runs.db"
    store = RunStore(db)
    try:
        lease = await store.acquire("t1")
        # A lease on this host with no process behind it, or one that could never run out.
        held_by = store.host if host == "here" else "elsewhere"
        edit(db, "UPDATE agent_leases SET host = ?, owner = 'someone'", held_by)
        edit(db, f"UPDATE agent_leases SET {column} = ?", value)
        assert not await store.working("t1")  # nobody works on it, as the worker sees it
        taken = await store.acquire("t1")  # and so it can be taken over
        assert taken.owner != lease.owner
    finally:
        store.close()
