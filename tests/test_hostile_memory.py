"""Hostile memory and compaction input: rows another program wrote, runs of pasted megabytes,
and a scoring model that writes a number no parser reads.

Real runs with a function model, a real SQLite memory in tmp_path, real compaction.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.checkpoints.memory import MAX_QUERY_WORDS, SqliteMemory
from ai_agent.compaction import parse_scores
from ai_agent.config import AgentSettings
from ai_agent.nodes.recall import RECALLED_CHARS
from ai_agent.testing import FunctionModel
from ai_agent.tokens import TokenCounter


def remembering_agent(tmp_path: Path, model: FunctionModel, **kwargs: Any) -> Agent:
    """An Agent with the SQLite memory on, its files in ``tmp_path``."""
    return Agent(
        model=model,
        checkpoint_path=tmp_path / "runs.sqlite",
        memory_path=tmp_path / "memory.jsonl",
        memory_sqlite=True,
        **kwargs,
    )


def requests_seen(seen: list[list[dict[str, Any]]], answer: str = "ok") -> FunctionModel:
    """A model that answers ``answer`` and keeps every request it was sent in ``seen``."""

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> str:
        seen.append(messages)
        return answer

    return FunctionModel(reply)


# The SQLite memory --------------------------------------------------------------------------
async def test_a_memory_row_that_is_not_utf8_is_recalled_with_the_others(tmp_path: Path) -> None:
    # A row another program wrote with bytes that are not UTF-8 made SQLite's driver refuse
    # the whole search: every later run whose task shared a word with it failed, told to move
    # the whole memory aside.
    seen: list[list[dict[str, Any]]] = []
    async with remembering_agent(tmp_path, requests_seen(seen, "42")) as agent:
        first = await agent.run("sum the invoices")
    with sqlite3.connect(tmp_path / "memory.sqlite") as conn:
        conn.execute(
            "INSERT INTO memories (thread_id, task, final_text, status) VALUES "
            "('edited', CAST(X'696e766f6963657320ff' AS TEXT), 'x', 'completed')"
        )
    async with remembering_agent(tmp_path, requests_seen(seen, "43")) as agent:
        later = await agent.run("sum the invoices again")
        recalled = (await agent.get_state(later.thread_id))["recalled"]
    assert later.status == "completed", later.error
    assert sorted(r["thread_id"] for r in recalled) == sorted([first.thread_id, "edited"])
    assert {r["task"] for r in recalled} == {"sum the invoices", "invoices \ufffd"}


def test_a_long_task_searches_the_memory_by_its_first_words_only(tmp_path: Path) -> None:
    # Every distinct word of the task was OR-ed into one FTS5 query, whose time grows as their
    # square: 200,000 words (a pasted log) held the event loop for 19 s.
    memory = SqliteMemory(tmp_path / "memory.sqlite")
    memory.add({"thread_id": "t1", "task": "sum the invoices", "final_text": "42"})
    queries: list[str] = []
    memory.db.conn.set_trace_callback(queries.append)
    task = "invoices " + " ".join(f"w{i}" for i in range(20_000))

    found = memory.search(task)

    assert [r["thread_id"] for r in found] == ["t1"]
    matched = [q for q in queries if " match " in q]
    assert len(matched) == 1
    expression = re.search(r" match '([^']*)'", matched[0])
    assert expression is not None
    terms = expression.group(1).split(" OR ")
    assert len(terms) == MAX_QUERY_WORDS


async def test_an_earlier_run_of_a_pasted_megabyte_is_recalled_cut_short(tmp_path: Path) -> None:
    # The recall message held every remembered run whole: it is a system message compaction
    # keeps verbatim, so one earlier run with a pasted document rode in every later request
    # that shared a word with it, over any model's context window.
    seen: list[list[dict[str, Any]]] = []
    pasted = "invoice line: 12 units at 3.50 EUR, paid.\n" * 10_000  # 430,000 characters
    async with remembering_agent(tmp_path, requests_seen(seen, pasted)) as agent:
        await agent.run("check these invoices:\n" + pasted)
        await agent.run("how many invoices were paid?")
    recall = seen[1][0]
    assert recall["role"] == "system"
    assert "not recalled" in recall["content"]
    assert len(recall["content"]) < 3 * RECALLED_CHARS
    assert TokenCounter().count_messages(seen[1]) < 4096  # the window of a small local model


# Compaction ---------------------------------------------------------------------------------
def test_a_score_answer_with_an_integer_no_parser_reads_is_no_score() -> None:
    assert parse_scores("[" + "9" * 5000 + ", 1]", 2) == []


def _fetch_tool() -> ToolSpec:
    def fetch(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        return f"page {args.get('page')}: " + "lorem ipsum " * 120

    return ToolSpec(
        "fetch",
        fetch,
        description="Fetch a page.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"page": {"type": "integer"}}},
    )


async def test_a_scoring_model_that_answers_a_5000_digit_number_leaves_the_run_going(
    tmp_path: Path,
) -> None:
    # The model scores the messages it reads (tool results among them, which may steer it):
    # an integer past Python's 4,300 digits raised ValueError out of compaction, and the run
    # failed with a traceback. Now it is no score: the oldest go first.
    drafts: list[int] = []

    def model(messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        if messages[0]["content"].startswith("Rate how important"):
            return {"text": "[" + "9" * 5000 + "]"}
        drafts.append(1)
        if len(drafts) <= 10:
            return {"tool_calls": [{"name": "fetch", "args": {"page": len(drafts)}}]}
        return {"text": "Fetched 10 pages."}

    settings = AgentSettings(
        max_iterations=40,
        context={
            "strategy": "importance_scoring",
            "trigger_threshold_tokens": 2500,
            "target_tokens": 1500,
            "preserve_recent_turns": 2,
        },
    )
    agent = Agent(
        model=FunctionModel(model),
        tools=[_fetch_tool()],
        settings=settings,
        checkpoint_path=tmp_path / "runs.sqlite",
        memory_path=None,
        max_iterations=40,
    )
    async with agent:
        result = await agent.run("fetch 10 pages")
        state = await agent.get_context_state(result.thread_id)
    assert result.status == "completed", result.error
    assert result.final_text == "Fetched 10 pages."
    assert state["compactions"]
    assert all("no scores; oldest first" in c["detail"] for c in state["compactions"])


async def test_a_run_of_small_tool_turns_is_compacted_to_what_the_estimate_counts(
    tmp_path: Path,
) -> None:
    # Compaction counted the messages without the chat template's rendering of each tool turn,
    # which the run's own estimate (the one the trigger and the window are held to) adds: many
    # small tool turns compacted "under the target" went out at 4,093 tokens, the trigger 2,500.
    def step(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        return str(args.get("n"))

    tool = ToolSpec(
        "step",
        step,
        description="Take one step.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    turns = 90

    def model(messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        last = messages[-1]
        done = int(last["content"]) if last["role"] == "tool" else 0
        if done == turns:
            return {"text": "All steps taken."}
        return {"tool_calls": [{"name": "step", "args": {"n": done + 1}}]}

    settings = AgentSettings(
        max_iterations=turns + 5,
        context={
            "strategy": "sliding_window",
            "trigger_threshold_tokens": 2500,
            "target_tokens": 1500,
            "preserve_recent_turns": 4,
        },
    )
    agent = Agent(
        model=FunctionModel(model),
        tools=[tool],
        settings=settings,
        checkpoint_path=tmp_path / "runs.sqlite",
        memory_path=None,
        max_iterations=turns + 5,
    )
    async with agent:
        result = await agent.run("take the steps")
        state = await agent.get_context_state(result.thread_id)
        history = await agent.get_usage_history(result.thread_id)
    assert result.status == "completed", result.error
    assert state["compactions"]
    drafts = [r for r in history if r.get("purpose") == "draft"]
    assert max(r["estimated_prompt_tokens"] for r in drafts) < 2500
