"""A pipeline's own types and the BaseStore memory on PostgreSQL."""

from __future__ import annotations

from typing import Any

from langgraph.store.postgres import PostgresStore

from ai_agent import ToolCategory, UserPlan
from ai_agent.checkpoints.store_memory import NAMESPACE
from ai_agent.config import AgentSettings
from tests.graph.conftest import call, recorder, text
from tests.graph.test_pipeline_serialization import Money, priced
from tests.postgres.conftest import MakePgAgent


async def test_a_registered_type_survives_a_pause_on_postgres(make_pg_agent: MakePgAgent) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="a"), text("done")]
    tools = [recorder(log, category=ToolCategory.MODIFICATION)]
    paused = await make_pg_agent(turns, tools=tools, pipeline=priced()).run("price it")
    assert paused.status == "paused"

    second = make_pg_agent(turns, tools=tools, pipeline=priced())
    done = await second.resume(paused.thread_id, UserPlan(approve=["*"]))

    assert done.status == "completed" and done.final_text == "19.99 EUR"
    state: dict[str, Any] = dict(await second.get_state(done.thread_id))
    assert isinstance(state["price"], Money)


async def test_the_memory_lives_in_a_postgres_store(
    make_pg_agent: MakePgAgent, pg_url: str, canary: str
) -> None:
    settings = AgentSettings(memory_store=pg_url)
    first = await make_pg_agent([text("The total is 42.")], settings=settings).run(
        "sum the invoices"
    )
    second = make_pg_agent([text("42 again")], settings=settings)
    later = await second.run("the invoices total?")

    recalled = (await second.get_state(later.thread_id))["recalled"]
    assert [r["thread_id"] for r in recalled] == [first.thread_id]
    with PostgresStore.from_conn_string(pg_url) as store:
        assert {item.key for item in store.search(NAMESPACE)} == {
            first.thread_id,
            later.thread_id,
        }
    assert canary not in str(later.trace)
