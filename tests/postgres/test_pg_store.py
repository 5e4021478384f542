"""What only PostgreSQL has to show: leases across machines, concurrent set-up, the schema
version, and errors that never show the password."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from ai_agent.checkpoints import (
    SCHEMA_VERSION,
    describe_location,
    open_checkpointer,
    open_run_store,
)
from ai_agent.checkpoints import postgres as pg
from ai_agent.checkpoints.postgres import PostgresRunStore, scrub
from ai_agent.checkpoints.store import is_postgres_url, resolve_location
from ai_agent.checkpoints.store_memory import open_store_memory
from ai_agent.errors import ConfigError, LeaseLostError, StoreError, ThreadBusyError
from tests.postgres.cluster import Cluster
from tests.postgres.test_store_conformance import dead_pid


def test_many_machines_acquiring_one_thread_at_once_have_one_winner(pg_url: str) -> None:
    stores = [PostgresRunStore(pg_url, host=f"machine-{i}") for i in range(8)]
    for trial in range(5):
        barrier = threading.Barrier(len(stores))
        outcomes: list[str] = []

        def take(
            store: PostgresRunStore,
            thread: str = f"t{trial}",
            barrier: threading.Barrier = barrier,
            outcomes: list[str] = outcomes,
        ) -> None:
            barrier.wait()
            try:
                asyncio.run(store.acquire(thread))
                outcomes.append("won")
            except ThreadBusyError:
                outcomes.append("busy")

        workers = [threading.Thread(target=take, args=(s,)) for s in stores]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert sorted(outcomes) == ["busy"] * 7 + ["won"], outcomes
    for store in stores:
        store.close()


async def test_another_machine_takes_a_lease_over_only_when_it_expires(pg_url: str) -> None:
    a = PostgresRunStore(pg_url, host="machine-a")
    b = PostgresRunStore(pg_url, host="machine-b")
    try:
        held = await a.acquire("t", seconds=1.0)
        # A pid means nothing on another machine: even a dead one does not free the lease.
        with psycopg.connect(pg_url) as conn:
            conn.execute("UPDATE agent_leases SET pid = %s", (dead_pid(),))
        with pytest.raises(ThreadBusyError, match=r"on machine-a; .* runs out in [01]s"):
            await b.acquire("t")
        await asyncio.sleep(max(0.0, held.expires_at - time.time()) + 0.3)
        taken = await b.acquire("t")
        await a.release(held)  # the old holder's release does not undo the takeover
        with pytest.raises(ThreadBusyError, match="on machine-b"):
            await a.acquire("t")
        assert (await b.renew(taken)).expires_at > taken.expires_at
        await b.release(taken)
        with pytest.raises(LeaseLostError, match="no process holds it now"):
            await a.renew(held)  # a lost lease is not renewed into existence
        await a.acquire("t")
    finally:
        a.close()
        b.close()


def test_processes_opening_a_new_database_at_once_set_it_up_once(pg_url: str) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def open_both() -> None:
        barrier.wait()
        try:
            PostgresRunStore(pg_url).close()

            async def saver() -> None:
                async with open_checkpointer(pg_url):
                    pass

            asyncio.run(saver())
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    threads = [threading.Thread(target=open_both) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT value FROM agent_meta WHERE key = 'schema_version'").fetchone()
    assert row == (str(SCHEMA_VERSION),)


def test_the_schema_version_is_kept_and_a_newer_one_refused(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    PostgresRunStore(pg_url).close()
    again = PostgresRunStore(pg_url)
    assert again.migrated_from == SCHEMA_VERSION
    again.close()
    with psycopg.connect(pg_url) as conn:  # as if written at an older version
        conn.execute("UPDATE agent_meta SET value = %s", (str(SCHEMA_VERSION - 1),))
    monkeypatch.setitem(
        pg.PG_MIGRATIONS,
        SCHEMA_VERSION - 1,
        ("ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS migrated BOOLEAN",),
    )
    migrated = PostgresRunStore(pg_url)
    assert migrated.migrated_from == SCHEMA_VERSION - 1
    migrated.close()
    with psycopg.connect(pg_url) as conn:
        conn.execute("SELECT migrated FROM agent_runs")
        conn.execute("UPDATE agent_meta SET value = %s", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match="newer than this ai-agent understands"):
        PostgresRunStore(pg_url)


def a_version_4_database(pg_url: str) -> None:
    """The tables as an ai-agent of version 4 left them, with three recorded tool calls.

    c1's journal entry holds its outcome; c2's entry is gone (prune deleted a finished run's
    journal, keeping its recorded calls); c3's entry is an intent (its outcome is unknown).
    """
    recorded = (
        "INSERT INTO agent_tool_calls (thread_id, step, stage, checkpoint_id, iteration, call_id, "
        "tool, args_hash, args, result, duration_ms, replayed, created_at) "
        "VALUES ('t', 5, 'act', NULL, 1, %s, 'note', 'h', %s, %s, 2.5, 0, 1.0)"
    )
    journal = (
        "INSERT INTO agent_journal (thread_id, iteration, call_id, tool, args, status, result, "
        "intent_at, outcome_at) VALUES ('t', 1, %s, 'note', '{}', %s, %s, 1.0, NULL)"
    )
    with psycopg.connect(pg_url) as conn:
        for statement in (*pg._TABLES, *pg.PG_MIGRATIONS[3]):
            conn.execute(statement)
        conn.execute("INSERT INTO agent_meta VALUES ('schema_version', '4')")
        for call_id in ("c1", "c2", "c3"):
            result = f'{{"status": "ok", "content": "{call_id} done"}}'
            conn.execute(recorded, (call_id, f'{{"n": "{call_id}"}}', result))
        conn.execute(journal, ("c1", "done", '{"status": "ok", "content": "c1 done"}'))
        conn.execute(journal, ("c3", "intent", None))


async def test_a_version_4_database_is_upgraded_in_place(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_version_4_database(pg_url)
    store = PostgresRunStore(pg_url)
    assert store.migrated_from == 4
    tools = await store.tool_calls("t")
    assert [(t["call"]["id"], t["result"]["content"]) for t in tools] == [
        ("c1", "c1 done"),
        ("c2", "c2 done"),  # moved into the journal
    ]
    assert tools[1]["call"] == {"id": "c2", "name": "note", "args": {"n": "c2"}}
    assert (tools[1]["step"], tools[1]["duration_ms"], tools[1]["args_hash"]) == (5, 2.5, "h")
    unknown = await store.lookup("t", 1, "c3")
    assert unknown is not None and (unknown["status"], unknown["result"]) == ("intent", None)
    store.close()
    with psycopg.connect(pg_url) as conn:
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'agent_tool_calls'"
        ).fetchall()
        assert {"tool", "args", "result"}.isdisjoint(c[0] for c in columns)
    # An ai-agent of version 4 refuses the upgraded database.
    monkeypatch.setattr(pg, "SCHEMA_VERSION", 4)
    with pytest.raises(
        StoreError, match=rf"schema version {SCHEMA_VERSION}, newer than .* understands \(4\)"
    ):
        PostgresRunStore(pg_url)


def test_a_user_without_rights_gets_a_clear_set_up_error(pg_url: str, pg_cluster: Cluster) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE ROLE reader LOGIN PASSWORD 'reader-canary'")
    url = pg_url.replace(f"{pg_cluster.user}:{pg_cluster.password}", "reader:reader-canary")
    with pytest.raises(StoreError) as caught:
        PostgresRunStore(url)
    text = str(caught.value)
    assert text.startswith("cannot set up the run store at postgresql://reader@127.0.0.1:")
    assert "permission denied" in text and "reader-canary" not in text


def test_an_unreachable_server_is_one_line_naming_the_host_without_the_password(
    pg_cluster: Cluster, canary: str
) -> None:
    url = f"postgresql://postgres:{canary}@127.0.0.1:9/agents"
    with pytest.raises(StoreError) as caught:
        open_run_store(url)
    text = str(caught.value)
    assert text.startswith(
        "cannot connect to PostgreSQL at postgresql://postgres@127.0.0.1:9/agents"
    )
    assert "Connection refused" in text and "MAMBA_CHECKPOINT_URL" in text
    assert "\n" not in text and canary not in text


async def test_a_wrong_password_is_named_but_never_shown(pg_cluster: Cluster, canary: str) -> None:
    wrong = f"{canary}-wrong"
    url = pg_cluster.url(password=wrong)
    with pytest.raises(StoreError, match="password authentication failed") as caught:
        PostgresRunStore(url)
    assert canary not in str(caught.value)
    with pytest.raises(StoreError, match="password authentication failed") as caught:
        async with open_checkpointer(url):
            pass  # pragma: no cover - never opened
    assert canary not in str(caught.value)


def test_a_malformed_url_is_refused_without_echoing_it(canary: str) -> None:
    url = f"postgresql://postgres:{canary}@127.0.0.1:54x/agents"
    with pytest.raises(StoreError) as caught:
        open_run_store(url)
    assert canary not in str(caught.value)
    assert describe_location(url) == "postgresql://(a malformed URL)"


def test_locations() -> None:
    assert is_postgres_url("postgres://h/db") and is_postgres_url("POSTGRESQL://h/db")
    assert not is_postgres_url(Path("postgresql://h/db")) and not is_postgres_url("c.sqlite")
    assert resolve_location("postgresql://h/db") == "postgresql://h/db"
    assert resolve_location("runs/c.sqlite") == Path("runs/c.sqlite")
    assert describe_location("postgresql://h/db") == "postgresql://h/db"
    assert describe_location("postgresql://u:p%40ss@h:5/db") == "postgresql://u@h:5/db"
    assert scrub("pw p@ss and p%40ss", "postgresql://u:p%40ss@h/db") == "pw *** and ***"
    assert scrub("nothing", "postgresql://h/db") == "nothing"
    assert scrub("a s3cret b", "postgresql://h/db?sslmode=require&password=s3cret") == "a *** b"
    assert describe_location("postgresql://h/db?password=s3cret") == "postgresql://h/db"
    assert scrub("x", "postgresql://u:p@[bad/db") == "x"


def test_without_the_extra_a_url_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import ai_agent.checkpoints

    monkeypatch.delitem(sys.modules, "ai_agent.checkpoints.postgres")
    monkeypatch.delattr(ai_agent.checkpoints, "postgres")
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ConfigError, match=r"pip install 'ai-agent\[postgres\]'"):
        open_run_store("postgresql://h/db")


async def test_without_the_extra_a_checkpointer_url_says_so_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ai_agent.checkpoints

    for module in ("postgres", "postgres_saver"):
        monkeypatch.delitem(sys.modules, f"ai_agent.checkpoints.{module}", raising=False)
        monkeypatch.delattr(ai_agent.checkpoints, module, raising=False)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ConfigError, match=r"psycopg is missing\): pip install"):
        async with open_checkpointer("postgresql://h/db"):
            pass  # pragma: no cover - never opened


def test_importing_ai_agent_does_not_import_psycopg() -> None:
    code = "import sys, ai_agent, ai_agent.cli; print('psycopg' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_workers_opening_a_new_postgres_memory_store_at_once_all_open_it(pg_url: str) -> None:
    # LangGraph's set-up raced on PostgreSQL: 20 of 60 opens failed, four workers at a time.
    from tests.graph.test_store_memory_setup import open_at_once

    assert open_at_once(pg_url, processes=4) == ["ok"] * 4
    memory = open_store_memory(pg_url)
    assert sorted(r["thread_id"] for r in memory.search("crates")) == ["t0", "t1", "t2", "t3"]
    memory.close()


def test_opening_an_up_to_date_store_writes_nothing(pg_url: str) -> None:
    # A new row version (its xmin) would show a write: before, each open stored the schema
    # version again under the set-up lock.
    PostgresRunStore(pg_url).close()
    query = "SELECT xmin::text FROM agent_meta WHERE key = 'schema_version'"
    with psycopg.connect(pg_url) as conn:
        before = conn.execute(query).fetchone()
    store = PostgresRunStore(pg_url)
    assert store.migrated_from == SCHEMA_VERSION
    store.close()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(query).fetchone() == before


def test_an_up_to_date_store_opens_while_another_process_sets_up(pg_url: str) -> None:
    # Another process holding the set-up lock (a migration, a first open) does not hold up a
    # command that only reads: it answers, where it used to wait for the lock.
    PostgresRunStore(pg_url).close()
    with psycopg.connect(pg_url) as holder, holder.transaction():
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (pg._SCHEMA_LOCK,))
        opened = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from ai_agent.checkpoints.postgres import PostgresRunStore; "
                "PostgresRunStore(sys.argv[1]).close(); print('opened')",
                pg_url,
            ],
            capture_output=True,
            text=True,
            timeout=60,  # a wait for the lock would last as long as the holder: this fails
            check=False,
        )
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout.strip() == "opened"


def test_a_schema_version_changed_by_hand_is_refused_with_what_to_do(pg_url: str) -> None:
    PostgresRunStore(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE agent_meta SET value = 'six' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match=r"schema version 'six', not a number.*by hand"):
        PostgresRunStore(pg_url)
