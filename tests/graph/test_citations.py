"""The final answer's citations: markers resolved against the sources the run's tools returned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, AgentSettings, ToolCategory, ToolSpec, UserPlan
from ai_agent.testing import ScriptedModel
from ai_agent.tools.builtin.notes import note_id
from tests.tools.notes_folder import notes_folder

TIDES = note_id("tides.md")


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return notes_folder(tmp_path)


def search(*queries: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "find_similar", "args": {"queries": list(queries)}}]}


def agent_for(notes: Path, tmp_path: Path, turns: list[Any], tools: list[Any]) -> Agent:
    return Agent(
        model=ScriptedModel(turns),
        tools=tools,
        settings=AgentSettings(tool_config={"notes": {"folder": str(notes), "min_chunk_chars": 0}}),
        checkpoint_path=tmp_path / "runs.sqlite",
    )


async def test_the_answer_cites_notes_by_id_and_path(notes: Path, tmp_path: Path) -> None:
    answer = (
        f"High tide comes twice a day [{TIDES}]. The moon pulls it [tides.md#Tides]. "
        "Bread needs salt [bread.md, /etc/passwd]. Nothing here [nowhere.md]."
    )
    turns = [search("tide", "bread"), {"text": answer}]
    agent = agent_for(notes, tmp_path, turns, ["find_similar"])
    async with agent:
        result = await agent.run("when is high tide?")
    assert result.status == "completed" and result.final_text == answer
    tides_uri = (notes / "tides.md").resolve().as_uri()
    assert result.citations == [
        {
            "id": TIDES,
            "path": "tides.md",
            "section": "Tides",
            "uri": tides_uri,
            "claims": [
                f"High tide comes twice a day [{TIDES}].",
                "The moon pulls it [tides.md#Tides].",
            ],
        },
        {
            "id": note_id("bread.md"),
            "path": "bread.md",
            "section": "Bread",
            "uri": (notes / "bread.md").resolve().as_uri(),
            "claims": ["Bread needs salt [bread.md, /etc/passwd]."],
        },
    ]
    # Data in the checkpoint: read back without the run, and in the JSON form.
    assert (await agent.get_result(result.thread_id)).citations == result.citations
    assert result.to_dict()["citations"][0]["id"] == TIDES


async def test_only_what_a_tool_returned_is_cited(notes: Path, tmp_path: Path) -> None:
    """A model cannot cite a file no tool gave it; a tool's unsafe URI is not kept."""
    hostile = ToolSpec(
        "links",
        lambda a, c: {
            "status": "ok",
            "content": "see [s1]",
            "meta": {
                "sources": [
                    {"id": "s1", "path": "x.md", "uri": "javascript:alert(1)"},
                    {"id": "s2", "path": "y.md", "uri": "file:///tmp/a\x1b]8;;evil\x07"},
                    {"id": 3, "path": "z.md"},
                    "not a source",
                ]
            },
        },
        description="Links.",
        category=ToolCategory.READ_ONLY,
    )
    turns = [{"tool_calls": [{"name": "links", "args": {}}]}, {"text": "A [s1]. B [s2]. C [3]."}]
    agent = agent_for(notes, tmp_path, turns, [hostile])
    result = await agent.run("links")
    assert [(c["id"], c["uri"]) for c in result.citations] == [("s1", None), ("s2", None)]


async def test_citations_survive_a_pause_and_a_resume(notes: Path, tmp_path: Path) -> None:
    log: list[str] = []

    def published(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        log.append("published")
        return "ok"

    publish = ToolSpec(
        "publish",
        published,
        description="Publish the answer.",
        category=ToolCategory.EXTERNAL,  # waits for a person
    )
    turns = [
        search("tide"),
        {"tool_calls": [{"name": "publish", "args": {}}]},
        {"text": f"Twice a day [{TIDES}]."},
    ]
    agent = agent_for(notes, tmp_path, turns, ["find_similar", publish])
    async with agent:
        paused = await agent.run("when is high tide?")
        assert paused.status == "paused" and paused.citations == []
    again = agent_for(notes, tmp_path, turns, ["find_similar", publish])  # another Agent
    async with again:
        done = await again.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed" and log == ["published"]
    assert [(c["id"], c["claims"]) for c in done.citations] == [
        (TIDES, [f"Twice a day [{TIDES}]."])
    ]


async def test_an_answer_without_sources_has_no_citations(notes: Path, tmp_path: Path) -> None:
    agent = agent_for(notes, tmp_path, [{"text": "No notes needed [1]."}], ["find_similar"])
    result = await agent.run("hello")
    assert result.citations == []


async def test_the_html_export_links_the_sources(notes: Path, tmp_path: Path) -> None:
    turns = [search("tide"), {"text": f"Twice a day [{TIDES}]."}]
    agent = agent_for(notes, tmp_path, turns, ["find_similar"])
    async with agent:
        result = await agent.run("when is high tide?")
        page = (await agent.export_html(result.thread_id, tmp_path / "run.html")).read_text()
    uri = (notes / "tides.md").resolve().as_uri()
    assert f'<code>[{TIDES}]</code> <a href="{uri}">tides.md #Tides</a>' in page
    assert f"<li>Twice a day [{TIDES}].</li>" in page


def test_the_html_export_links_only_safe_targets() -> None:
    from ai_agent.graph.html_report import _sources

    hostile = [
        {"id": "a", "path": "<b>x</b>", "uri": "javascript:alert(1)", "claims": ["<i>"]},
        {"id": "b", "path": "y", "uri": 'https://ok.example/"onmouseover=x', "claims": []},
        "not a citation",
    ]
    html = _sources({"citations": hostile})
    assert "javascript:" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html
    assert '<a href="https://ok.example/&quot;onmouseover=x">y</a>' in html
    assert _sources({}) == ""
