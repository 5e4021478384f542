"""The notes tools: find_similar (lexical or embeddings, MMR, short-chunk penalty) and read_note."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ai_agent.config import NotesConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin.notes import load_embedding, note_id, notes_tools
from ai_agent.tools.builtin.notes_index import parse_note
from ai_agent.tools.builtin.notes_rank import Embed
from tests.tools.conftest import CANARY, Tree, untouched

LONG = (
    "Gradient descent updates the weights against the gradient of the loss. The learning rate "
    "sets the step size; too large and training diverges, too small and it crawls. "
)


def toy_embed(texts: list[str]) -> Sequence[Sequence[float]]:
    """An embedding that only knows two topics: oceans and cooking."""
    return [
        [t.lower().count("ocean") + t.lower().count("tide"), t.lower().count("pasta")]
        for t in texts
    ]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "ml").mkdir(parents=True)
    (root / "cooking").mkdir()
    (root / "ml" / "sgd.md").write_text(
        "---\ntags: [ml, optimisation]\n---\n# SGD\n\n"
        + LONG
        + "\n\n## Schedules\n\n"
        + "Warmup then cosine decay of the learning rate works well for transformers. " * 3
    )
    (root / "ml" / "sgd-copy.md").write_text("# SGD again\n\n" + LONG)
    (root / "ml" / "adam.md").write_text(
        "# Adam\n\nAdam keeps running averages of gradients; its learning rate is less "
        "sensitive than plain SGD but still matters for stable training runs. #draft\n"
    )
    (root / "ml" / "short.md").write_text("# Tiny\n\nlearning rate\n")
    (root / "cooking" / "pasta.md").write_text(
        "# Pasta\n\nBoil the pasta in salted water; the rate of boiling does not matter much, "
        "but the water should roll. Learning to time it takes practice.\n\n```\n# not a heading\n"
        "```\n"
    )
    (root / ".hidden.md").write_text("# Hidden\n\nlearning rate learning rate\n")
    (root / "notes.txt").write_text("learning rate in a text file\n")
    return root


def registry(folder: Path, embed: Embed | None = None, **config: Any) -> ToolRegistry:
    return ToolRegistry(notes_tools(folder, NotesConfig(**config), embed))


async def run(reg: ToolRegistry, tool_name: str, /, **args: Any) -> ToolResult:
    call: ToolCall = {"id": "c", "name": tool_name, "args": args}
    return await reg.execute(call, {})


async def hits(reg: ToolRegistry, **args: Any) -> list[dict[str, Any]]:
    result = await run(reg, "find_similar", **args)
    assert result["status"] == "ok", result
    assert result["content"]["ok"] is True and result["content"]["took_ms"] >= 0
    return list(result["content"]["data"])


async def test_find_similar_returns_path_section_score_snippet(notes: Path) -> None:
    found = await hits(registry(notes), queries=["learning rate schedule warmup"], k=3)
    first = found[0]
    assert (first["path"], first["section"]) == ("ml/sgd.md", "Schedules")
    assert set(first) == {"id", "path", "section", "score", "snippet"}
    assert 0 < first["score"] <= 1 and "learning rate" in first["snippet"].lower()
    assert all(h["path"] != ".hidden.md" for h in found)


async def test_mmr_prefers_a_second_source_over_a_near_copy(notes: Path) -> None:
    query = ["gradient descent training"]
    diverse = await hits(registry(notes), queries=query, k=2)
    relevance_only = await hits(registry(notes, mmr_lambda=1.0), queries=query, k=2)
    assert sorted(h["path"] for h in relevance_only) == ["ml/sgd-copy.md", "ml/sgd.md"]
    assert len({h["path"] for h in diverse} & {"ml/sgd.md", "ml/sgd-copy.md"}) == 1


async def test_short_chunks_are_penalised(notes: Path) -> None:
    found = await hits(registry(notes), queries=["learning rate"], k=10)
    by_path = {h["path"]: h["score"] for h in found}
    unpenalised = await hits(registry(notes, min_chunk_chars=0), queries=["learning rate"], k=10)
    tiny = next(h["score"] for h in unpenalised if h["path"] == "ml/short.md")
    # "learning rate" is 13 characters: 0.5 + 0.5 * 13 / 160 of its score remains.
    assert by_path["ml/short.md"] == pytest.approx(tiny * (0.5 + 0.5 * 13 / 160), abs=1e-3)


async def test_filters_by_folder_and_tag(notes: Path) -> None:
    reg = registry(notes)
    cooking = await hits(reg, queries=["learning rate"], filter={"folder": "cooking/"})
    assert {h["path"] for h in cooking} == {"cooking/pasta.md"}
    tagged = await hits(reg, queries=["learning rate"], filter={"tag": "#ML"})
    assert {h["path"] for h in tagged} == {"ml/sgd.md"}
    draft = await hits(reg, queries=["learning rate"], filter={"tag": "draft"})
    assert {h["path"] for h in draft} == {"ml/adam.md"}
    assert await hits(reg, queries=["learning rate"], filter={"folder": "nope"}) == []


async def test_several_queries_and_k(notes: Path) -> None:
    reg = registry(notes)
    both = await hits(reg, queries=["boil pasta water", "adam running averages"], k=2)
    assert {h["path"] for h in both} == {"cooking/pasta.md", "ml/adam.md"}
    assert len(await hits(reg, queries=["learning"], k=1)) == 1
    assert await hits(reg, queries=["zebra quantum"]) == []
    bad = await run(reg, "find_similar", queries=[])
    assert bad["meta"]["code"] == "SCHEMA_VIOLATION"
    result = await run(reg, "find_similar", queries=["pasta"], k=3)
    assert str(result["summary"]).startswith("find_similar: 1 hit(s) for 'pasta' (K=3, ")


async def test_an_embedding_function_replaces_the_lexical_ranker(notes: Path) -> None:
    (notes / "sea.md").write_text("# Sea\n\n" + "The ocean tide rises twice a day. " * 6)
    lexical = await hits(registry(notes), queries=["marine water levels"], k=3)
    assert all(h["path"] != "sea.md" for h in lexical)
    embedded = await hits(registry(notes, toy_embed), queries=["ocean"], k=1)
    assert embedded[0]["path"] == "sea.md"
    by_setting = registry(notes, embedding="tests.tools.test_notes:toy_embed")
    assert (await hits(by_setting, queries=["tide"], k=1))[0]["path"] == "sea.md"


def test_loading_an_embedding_function() -> None:
    assert load_embedding("tests.tools.test_notes:toy_embed") is toy_embed
    with pytest.raises(ValueError, match="cannot load"):
        load_embedding("tests.tools.test_notes:nothing_here")
    with pytest.raises(ValueError, match="not callable"):
        load_embedding("tests.tools.test_notes:LONG")


async def test_the_index_follows_changes(notes: Path) -> None:
    reg = registry(notes)
    assert await hits(reg, queries=["zebra"]) == []
    (notes / "zoo.md").write_text("# Zoo\n\nA zebra has stripes; every zebra is unique.\n")
    assert [h["path"] for h in await hits(reg, queries=["zebra"])] == ["zoo.md"]
    (notes / "zoo.md").unlink()
    assert await hits(reg, queries=["zebra"]) == []


async def test_notes_never_leave_their_folder(notes: Path, tree: Tree) -> None:
    (notes / "linked.md").symlink_to(tree.secret)
    (notes / "linked_dir").symlink_to(tree.outside)
    reg = registry(notes)
    with untouched(tree.outside):
        found = await hits(reg, queries=[CANARY, "outside canary"], k=20)
        assert all("linked" not in h["path"] for h in found)
        for path in ["linked.md", "../outside/secret.txt", str(tree.secret), "linked_dir/x.md"]:
            result = await run(reg, "read_note", path=path)
            assert result["status"] == "error" and CANARY not in str(result), path


async def test_hostile_front_matter_breaks_neither_the_note_nor_the_search(notes: Path) -> None:
    # YAML aliases: each level holds ten of the one below; at nine levels a tag printed as
    # text would be gigabytes. A tag is a scalar: lists (and maps) are no tags.
    levels = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 3)]
    bomb = "---\n" + "\n".join(levels) + "\ntags: [ok, 7, *l2]\n---\n# Bomb\n\nzebra\n"
    assert parse_note("bomb.md", bomb).tags == frozenset({"ok", "7"})
    # Nested thousands deep, PyYAML runs out of stack: the front matter is ignored, the other
    # notes are still found.
    (notes / "deep.md").write_text("---\ntags: " + "[" * 5000 + "]" * 5000 + "\n---\nzebra\n")
    (notes / "zoo.md").write_text("# Zoo\n\nA zebra has stripes.\n")
    found = await hits(registry(notes), queries=["zebra"])
    assert sorted(h["path"] for h in found) == ["deep.md", "zoo.md"]


async def test_read_note_whole_sections_and_ranges(notes: Path) -> None:
    reg = registry(notes)
    whole = await run(reg, "read_note", path="ml/adam.md")
    assert whole["content"]["text"].startswith("# Adam\n\nAdam keeps")
    assert whole["content"]["meta"]["clipped"] is False
    section = await run(reg, "read_note", path="ml/sgd.md", section="sgd")
    text = section["content"]["text"]
    assert text.startswith("# SGD") and "## Schedules" in text  # subsections belong to it
    sub = await run(reg, "read_note", path="ml/sgd.md", section="## schedules")
    assert sub["content"]["text"].startswith("## Schedules\n\nWarmup")
    assert sub["content"]["meta"]["section"] == "Schedules"
    ranged = await run(reg, "read_note", path="ml/adam.md", start=2, end=6)
    assert ranged["content"]["text"] == "Adam"
    assert ranged["content"]["meta"] | {} == {
        "id": note_id("ml/adam.md"),
        "path": "ml/adam.md",
        "section": None,
        "start": 2,
        "end": 6,
        "total_chars": len((notes / "ml" / "adam.md").read_text()),
        "clipped": False,
    }
    assert (await run(reg, "read_note", path="ml/adam.md", start=9, end=3))["content"]["text"] == ""


async def test_read_note_clips_with_a_hint(notes: Path) -> None:
    reg = registry(notes, read_max_chars=40)
    result = await run(reg, "read_note", path="ml/sgd.md")
    content = result["content"]
    assert len(content["text"].split("\n[")[0]) == 40
    hint = content["meta"]["hint"]
    assert hint.startswith("clipped to 40 of ")
    assert "continue with start=40" in hint and "read one section: SGD, Schedules" in hint
    assert content["text"].endswith(f"[{hint}]")
    assert str(result["summary"]).startswith("read_note ml/sgd.md: 0..40 of ")
    more = await run(reg, "read_note", path="ml/sgd.md", start=40, max_chars=10)
    assert more["content"]["meta"]["start"] == 40 and more["content"]["meta"]["end"] == 50


async def test_read_note_errors_suggest_what_exists(notes: Path) -> None:
    reg = registry(notes)
    missing = await run(reg, "read_note", path="ml/sgd.md", section="Momentum")
    assert missing["meta"]["code"] == "NOT_FOUND"
    assert str(missing["error"]) == (
        "ml/sgd.md has no section 'Momentum'; its sections are: 'SGD', 'Schedules'"
    )
    gone = await run(reg, "read_note", path="ml/none.md")
    assert gone["meta"]["code"] == "NOT_FOUND"
    assert (await run(reg, "read_note", path="image.png"))["meta"]["code"] == "EXTENSION_DENIED"
    assert (await run(reg, "read_note", path="notes.txt"))["status"] == "ok"


async def test_a_missing_notes_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = await run(registry(tmp_path / "absent"), "find_similar", queries=["x"])
    assert result["status"] == "error" and "notes folder cannot be read" in str(result["error"])


def test_parsing_sections_tags_and_code_fences() -> None:
    note = parse_note(
        "n.md",
        "---\ntags: alpha, beta\n---\nIntro #gamma and a&#123; entity\n# One\n```\n# fake\n```\n"
        "## Two ##\ntext\n# Three\n",
    )
    assert [(s.title, s.level) for s in note.sections] == [
        ("", 0),
        ("One", 1),
        ("Two", 2),
        ("Three", 1),
    ]
    assert note.tags == frozenset({"alpha", "beta", "gamma"})
    assert note.section("missing") is None
    broken = parse_note("b.md", "---\n: [unclosed\n---\n# Only\n")
    assert broken.tags == frozenset() and [s.title for s in broken.sections] == ["Only"]
    assert os.path.basename(note.path) == "n.md"
