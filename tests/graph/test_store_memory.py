"""Long-term memory in LangGraph's BaseStore: persist writes it, recall reads it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from langgraph.store.base import IndexConfig
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from ai_agent.checkpoints.store_memory import NAMESPACE, StoreMemory, open_store_memory
from ai_agent.config import AgentSettings
from ai_agent.graph.options import engine_state
from tests.graph.conftest import MakeAgent, text


async def test_a_finished_run_is_recalled_by_the_next_through_the_store(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    where = tmp_path / "memory" / "store.sqlite"
    settings = AgentSettings(memory_store=str(where))

    first = await make_agent([text("The total is 42.")], settings=settings).run(
        "sum the invoices of March"
    )
    # Another Agent (another process would do the same): the store is its memory too.
    second = make_agent([text("Still 42.")], settings=settings)
    later = await second.run("what was the invoices total?")

    recalled = (await second.get_state(later.thread_id))["recalled"]
    assert [r["thread_id"] for r in recalled] == [first.thread_id]
    assert recalled[0]["final_text"] == "The total is 42."
    with SqliteStore.from_conn_string(str(where)) as store:
        keys = sorted(item.key for item in store.search(NAMESPACE, limit=10))
    assert keys == sorted([first.thread_id, later.thread_id])
    persist = [t for t in later.trace if t["stage"] == "persist"]
    assert "memory" in persist[0]["detail"]


def test_recall_ranks_by_shared_words_and_a_thread_is_kept_once() -> None:
    memory = StoreMemory(InMemoryStore())
    memory.add({"thread_id": "a", "task": "sum the invoices", "final_text": "42"})
    memory.add({"thread_id": "b", "task": "list the invoices of march", "final_text": "3 invoices"})
    memory.add({"thread_id": "c", "task": "weather", "final_text": "sunny"})
    memory.add({"thread_id": "a", "task": "sum the invoices again", "final_text": "43"})

    found = memory.search("march invoices")
    assert [r["thread_id"] for r in found] == ["b", "a"]
    assert found[1]["final_text"] == "43"
    assert memory.search("nothing in common") == []
    # As many words in common: the newest first.
    assert [r["thread_id"] for r in memory.search("invoices", limit=1)] == ["a"]


def test_a_store_with_an_embedding_index_is_searched_by_meaning() -> None:
    def embed(texts: Sequence[str]) -> list[list[float]]:
        # Two made-up dimensions: money words, weather words.
        return [
            [float("invoice" in t or "total" in t), float("rain" in t or "sun" in t)] for t in texts
        ]

    store = InMemoryStore(index=IndexConfig(dims=2, embed=embed, fields=["task"]))
    memory = StoreMemory(store)
    memory.add({"thread_id": "money", "task": "invoice total"})
    memory.add({"thread_id": "sky", "task": "rain or sun"})
    assert [r["thread_id"] for r in memory.search("sunny day?", limit=1)] == ["sky"]


def test_the_store_file_is_the_engines_own_state(tmp_path: Path) -> None:
    where = tmp_path / "store.sqlite"
    protected = engine_state(
        AgentSettings(memory_store=str(where)),
        tmp_path / "c.sqlite",
        workdir=tmp_path,
        memory=None,
        memory_sqlite=None,
        toolsmaker_dir=tmp_path / "tm",
        audit_log=tmp_path / "tm" / "audit.jsonl",
    )
    assert protected.holding(where) is not None


def test_open_store_memory_opens_and_closes_a_sqlite_file(tmp_path: Path) -> None:
    memory = open_store_memory(str(tmp_path / "deep" / "m.sqlite"))
    memory.add({"thread_id": "t", "task": "hello world"})
    assert memory.search("hello")[0]["thread_id"] == "t"
    memory.close()
    assert (tmp_path / "deep" / "m.sqlite").exists()
