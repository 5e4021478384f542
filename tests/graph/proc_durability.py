"""A process that runs a graph on the delta saver with one LangGraph durability mode, and may die.

Usage: python -m tests.graph.proc_durability DB WORKDIR MODE GRAPH first|again

MODE is LangGraph's ``durability`` ("sync", "async" or "exit"). GRAPH is:

- ``plain``: a plain LangGraph graph of two nodes in a loop; ``count`` appends the step's number
  to a list channel (``operator.add``) and ``next`` moves on, for ``STEPS`` steps. With ``first``
  the process SIGKILLs itself inside ``count`` at step ``KILL_AT`` (as a power cut or the OOM
  killer would end it); ``again`` continues the thread (from its latest checkpoint, or from the
  start when the thread has none) and prints the final list as JSON.
- ``engine``: the engine's own nine-stage graph, with the run store as its tool journal and a
  side-effecting tool (``effect``, category MODIFICATION) that appends a line to
  WORKDIR/effects.txt. With ``first`` the process SIGKILLs itself right after the side effect,
  before the tool returns (its outcome is never journaled); ``again`` continues as above and
  prints the run's status and the gate's issue kinds as JSON.
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

STEPS = 10
KILL_AT = 6


def crash() -> None:
    """Die at once: nothing after this line runs, no buffer is flushed, no file is closed."""
    os.kill(os.getpid(), signal.SIGKILL)


class Counting(TypedDict):
    done: Annotated[list[int], operator.add]
    step: int


def _plain(first: bool) -> StateGraph[Any]:
    def count(state: Counting) -> dict[str, Any]:
        if first and state["step"] == KILL_AT:
            crash()
        return {"done": [state["step"]]}

    def advance(state: Counting) -> dict[str, Any]:
        return {"step": state["step"] + 1}

    builder: StateGraph[Any] = StateGraph(Counting)
    builder.add_node("count", count)
    builder.add_node("next", advance)
    builder.add_edge(START, "count")
    builder.add_edge("count", "next")
    builder.add_conditional_edges(
        "next", lambda s: END if s["step"] >= STEPS else "count", ["count", END]
    )
    return builder


def run_plain(db: str, mode: str, first: bool) -> int:
    from ai_agent.checkpoints import DeltaSaver

    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    with DeltaSaver(db) as saver:
        graph = _plain(first).compile(checkpointer=saver)
        stored = graph.get_state(config)
        start = None if stored.values else {"done": [], "step": 0}
        final = graph.invoke(start, config, durability=cast(Any, mode))
    print(json.dumps({"done": final["done"], "resumed": start is None}))
    return 0


async def run_engine(db: str, work: Path, mode: str, first: bool) -> int:
    from ai_agent.checkpoints import DeltaSaver
    from ai_agent.checkpoints.backends import open_run_store
    from ai_agent.context import ModelReply, RunContext, RunPolicy
    from ai_agent.graph.build import build_graph, recursion_limit
    from ai_agent.state import Message, ToolCall, new_run_state
    from ai_agent.tools.registry import ToolRegistry
    from ai_agent.tools.spec import ToolCategory, ToolSpec

    def effect(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        with (work / "effects.txt").open("a") as fh:
            fh.write(f"{args.get('text')} by {os.getpid()}\n")
        if first:
            crash()  # the side effect happened; its outcome is never journaled
        return {"status": "ok", "content": "written"}

    tool = ToolSpec(
        "effect", effect, description="Write a line.", category=ToolCategory.MODIFICATION
    )

    async def model(
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> ModelReply:
        # Stateless, as ScriptedModel: the reply depends on the turns already taken.
        if any(m["role"] == "assistant" for m in messages):
            text = Message(role="assistant", content="wrote it")
            return ModelReply(message=text, usage={}, latency_ms=0.0)
        call = ToolCall(id="call_1", name="effect", args={"text": "hello"})
        reply = Message(role="assistant", content="", tool_calls=[call])
        return ModelReply(message=reply, usage={}, latency_ms=0.0)

    store = open_run_store(Path(db))
    try:
        context = RunContext(
            thread_id="t",
            model=model,
            tools=ToolRegistry([tool]),
            journal=store,
            policy=RunPolicy(max_iterations=4, memory_path=None, unattended=True),
        )
        config: RunnableConfig = {
            "configurable": {"thread_id": "t"},
            "recursion_limit": recursion_limit(4),
        }
        async with DeltaSaver(db) as saver:
            graph = build_graph(saver)
            stored = await graph.aget_state(config)
            start = None if stored.values else new_run_state("write hello", ["effect"])
            await graph.ainvoke(start, config, context=context, durability=cast(Any, mode))
            after = await graph.aget_state(config)
    finally:
        store.close()
    gate = after.interrupts[0].value if after.interrupts else None
    kinds = sorted({str(issue["code"]) for issue in gate["issues"]}) if gate else []
    values = after.values
    print(json.dumps({"paused": gate is not None, "kinds": kinds, "status": values.get("status")}))
    return 0


def main(argv: list[str]) -> int:
    db, workdir, mode, graph, phase = argv
    first = phase == "first"
    if graph == "plain":
        return run_plain(db, mode, first)
    return asyncio.run(run_engine(db, Path(workdir), mode, first))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
