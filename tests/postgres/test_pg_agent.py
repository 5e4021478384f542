"""The Agent and the CLI on PostgreSQL, in one process: run, pause, resume, busy, history, fork,
replay, prune, the plan queue; selection by setting; and the password nowhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pydantic import SecretStr

from ai_agent import ToolCategory, UserPlan
from ai_agent.cli import EXIT, main
from ai_agent.config import AgentSettings
from ai_agent.errors import ConfigError, ThreadBusyError, UnknownThreadError
from ai_agent.graph import Agent, Worker
from tests.graph.conftest import call, recorder, text
from tests.graph.test_leases import TAKE_OVER, lost_while_asked
from tests.postgres.conftest import MakePgAgent


def gated(make_pg_agent: MakePgAgent, log: list[dict[str, Any]]) -> Agent:
    tool = recorder(log, category=ToolCategory.MODIFICATION)
    return make_pg_agent([call("note", text="x"), text("noted")], tools=[tool])


async def test_run_pause_resume_and_busy(make_pg_agent: MakePgAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_pg_agent, log)
    async with agent:
        paused = await agent.run("note it", thread_id="t1")
        assert paused.status == "paused" and log == []
        lease = await agent.store.acquire("t1")  # another worker is on it
        with pytest.raises(ThreadBusyError):
            await agent.resume("t1", UserPlan(approve=["*"]))
        await agent.store.release(lease)
        done = await agent.resume("t1", UserPlan(approve=["*"]))
    assert (done.status, done.final_text, len(log)) == ("completed", "noted", 1)
    with pytest.raises(UnknownThreadError, match=r"in postgresql://postgres@127\.0\.0\.1"):
        await gated(make_pg_agent, log).resume("nope")


async def test_history_fork_replay_and_prune(make_pg_agent: MakePgAgent) -> None:
    agent = make_pg_agent([call("calculator", expression="6*7"), text("42")], tools=["calculator"])
    async with agent:
        result = await agent.run("multiply")
        history = await agent.ahistory(result.thread_id)
        assert [e.stage for e in history][:3] == ["input", "start", "recall"]
        middle = next(e for e in history if e.stage == "act")
        fork = await agent.afork(result.thread_id, middle.checkpoint_id)
        resumed = await agent.resume(fork)
        assert resumed.final_text == "42"
        replay = await agent.replay(result.thread_id)
        assert (replay.status, replay.final_text, replay.divergence) == ("completed", "42", None)
        report = await agent.prune(result.thread_id)
        assert report.pruned == [result.thread_id] and report.checkpoints_deleted > 0
        assert report.bytes_before == 0  # the server manages its files
    assert len(agent.history(result.thread_id)) == 1  # the latest checkpoint is kept


async def test_the_setting_selects_postgres(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MAMBA_CHECKPOINT_URL", pg_url)
    settings = AgentSettings()
    assert isinstance(settings.checkpoint_url, SecretStr)
    agent = Agent(model=None, settings=settings, memory_path=None)
    assert agent.database == pg_url
    assert not (tmp_path / "work" / ".agents").exists()
    with pytest.raises(ConfigError, match="not both"):
        Agent(checkpoint_path="a.sqlite", checkpoint_url=pg_url, memory_path=None)
    assert Agent(checkpoint_url=SecretStr(pg_url), memory_path=None).database == pg_url
    assert Agent(checkpoint_path=pg_url, memory_path=None).database == pg_url


def test_the_cli_takes_a_url_for_every_db_option(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], canary: str
) -> None:
    model_file = tmp_path / "script.json"
    model_file.write_text(json.dumps([call("calculator", expression="6*7"), text("42")]))
    model = f"scripted:{model_file}"
    db = ["--db", pg_url]
    assert main(["run", "multiply", "--model", model, "--thread-id", "c1", *db]) == EXIT["paused"]
    assert main(["resume", "c1", "--activate", "calculator", "--queue", *db]) == 0
    assert main(["worker", "--once", "--model", model, *db]) == 0
    assert main(["runs", *db]) == 0
    assert main(["show", "c1", *db]) == 0
    assert main(["history", "c1", *db]) == 0
    assert main(["plans", *db]) == 0
    out = capsys.readouterr()
    assert "c1  completed  multiply" in out.out
    assert "serving postgresql://postgres@127.0.0.1:" in out.err
    assert canary not in out.out + out.err
    # Wrong password: one line, exit 1, the password nowhere.
    wrong = pg_url.replace(canary, f"{canary}-x")
    for argv in (["runs", "--db", wrong], ["show", "c1", "--db", wrong]):
        assert main(argv) == EXIT["failed"]
        err = capsys.readouterr().err
        assert err.startswith("error: cannot connect to PostgreSQL at postgresql://postgres@")
        assert "password authentication failed" in err
        assert canary not in err and err.count("\n") == 1


async def test_nothing_stored_holds_the_password(
    make_pg_agent: MakePgAgent, pg_url: str, canary: str
) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_pg_agent, log)
    async with agent:
        paused = await agent.run("note it")
        await agent.submit_plan(paused.thread_id, {"approve": ["*"]})
        await Worker(agent).run(once=True)
    with psycopg.connect(pg_url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        ]
        assert {"agent_runs", "agent_plans", "checkpoints", "checkpoint_writes"} <= set(tables)
        for table in tables:
            dump = conn.execute(
                f"SELECT coalesce(string_agg(t::text, ''), '') FROM {table} AS t"
            ).fetchone()
            assert dump is not None and canary not in dump[0], table


async def test_a_lease_lost_while_the_model_is_asked_is_named_as_such(
    make_pg_agent: MakePgAgent, pg_url: str
) -> None:
    """On PostgreSQL the heartbeat's cancel reaches the runner as such (SQLite's saver turns it
    into the fencing's error on closing): its listeners hear the lost lease all the same."""

    def take_over() -> None:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(TAKE_OVER)

    await lost_while_asked(make_pg_agent, take_over)
