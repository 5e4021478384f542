"""Generated queries: find_similar searches at most max_queries of the model's queries, or the
question itself when generation is off, and the model is told what was left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, AgentSettings
from ai_agent.config import NotesConfig
from ai_agent.errors import ConfigError
from ai_agent.state import ToolCall, ToolResult
from ai_agent.testing import FunctionModel
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin.notes import notes_tools
from ai_agent.tools.builtin.notes_queries import MAX_QUERY_CHARS
from tests.tools.notes_folder import notes_folder

QUERIES = ["high tide", "moon", "bread", "salt", "tide times"]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return notes_folder(tmp_path)


async def search(folder: Path, args: dict[str, Any], task: str = "", **config: Any) -> ToolResult:
    reg = ToolRegistry(notes_tools(folder, NotesConfig(min_chunk_chars=0, **config)))
    call: ToolCall = {"id": "c", "name": "find_similar", "args": args}
    return await reg.execute(call, {"task": task})


async def test_queries_past_the_limit_are_dropped_with_a_note(notes: Path) -> None:
    result = await search(notes, {"queries": QUERIES})
    assert result["status"] == "ok"
    assert result["meta"]["queries"] == ["high tide", "moon", "bread"]
    note = "2 of 5 queries dropped (at most 3 per search)"
    assert result["content"]["note"].startswith(note)
    assert {h["path"] for h in result["content"]["data"]} == {"tides.md", "bread.md"}
    assert result["summary"].endswith(note + ": search them in another call if still needed")


async def test_a_lower_limit_holds_and_blank_queries_do_not_count(notes: Path) -> None:
    result = await search(notes, {"queries": [" ", "salt", "", "moon"]}, max_queries=1)
    assert result["meta"]["queries"] == ["salt"]
    assert result["content"]["note"].startswith("1 of 2 queries dropped (at most 1 per search)")
    assert [h["path"] for h in result["content"]["data"]] == ["bread.md"]


async def test_within_the_limit_nothing_is_said(notes: Path) -> None:
    result = await search(notes, {"queries": ["moon", "salt"]})
    assert result["meta"]["queries"] == ["moon", "salt"]
    assert "note" not in result["content"] and "note" not in result["meta"]


async def test_off_the_question_is_searched_as_asked(notes: Path) -> None:
    result = await search(
        notes, {"queries": ["bread"]}, task="When is high tide?", generated_queries=False
    )
    assert result["meta"]["queries"] == ["When is high tide?"]
    assert [h["path"] for h in result["content"]["data"]] == ["tides.md"]
    assert result["content"]["note"] == (
        "generated queries are off: the question was searched as asked, not the query given"
    )
    many = await search(notes, {"queries": QUERIES}, task="bread?", generated_queries=False)
    assert many["content"]["note"].endswith("not 5 queries given")


async def test_off_without_a_question_one_query_is_searched(notes: Path) -> None:
    result = await search(notes, {"queries": ["moon", "salt"]}, generated_queries=False)
    assert result["meta"]["queries"] == ["moon"]
    assert result["content"]["note"].startswith("1 of 2 queries dropped (at most 1 per search)")


async def test_a_huge_query_is_cut_and_said_to_be(notes: Path) -> None:
    result = await search(notes, {"queries": ["tide " * 1000]})
    assert len(result["meta"]["queries"][0]) == MAX_QUERY_CHARS
    assert result["content"]["note"] == f"queries are cut to {MAX_QUERY_CHARS} characters"


@pytest.mark.parametrize("value", [0, 4])
def test_max_queries_is_one_to_three(value: int) -> None:
    with pytest.raises(ConfigError, match="max_queries"):
        AgentSettings.load(tool_config={"notes": {"max_queries": value}})


async def test_a_hostile_model_reads_the_note_in_its_next_request(
    notes: Path, tmp_path: Path
) -> None:
    requests: list[list[dict[str, Any]]] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        requests.append(messages)
        if info["turn"] == 0:
            return {"tool_calls": [{"name": "find_similar", "args": {"queries": QUERIES}}]}
        return {"text": "Twice a day."}

    settings = AgentSettings(tool_config={"notes": {"folder": str(notes), "min_chunk_chars": 0}})
    agent = Agent(
        model=FunctionModel(reply),
        tools=["find_similar"],
        settings=settings,
        checkpoint_path=tmp_path / "runs.sqlite",
    )
    async with agent:
        result = await agent.run("when is high tide?")
    assert result.status == "completed"
    seen = json.loads(next(m for m in requests[1] if m["role"] == "tool")["content"])
    assert seen["note"].startswith("2 of 5 queries dropped (at most 3 per search)")
    state = await agent.get_state(result.thread_id)
    assert state["results"][0]["result"]["meta"]["queries"] == ["high tide", "moon", "bread"]
