"""Hostile tool outputs: what a tool (a Python function, a LangChain tool) returns cannot make
the engine crash, drop what matters without a sign, or flood the model's context."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import StructuredTool, ToolException

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.state import ToolCall, ToolResult
from ai_agent.testing import ScriptedModel
from ai_agent.tools.media import admit, media_part
from ai_agent.tools.registry import ToolRegistry
from ai_agent.tools.results import bound_output, normalise


def returning(name: str, value: Any) -> ToolSpec:
    return ToolSpec(
        name, lambda args, ctx: value, description="A tool.", category=ToolCategory.READ_ONLY
    )


async def run_one(reg: ToolRegistry, name: str, **args: Any) -> ToolResult:
    call: ToolCall = {"id": "c1", "name": name, "args": args}
    return await reg.execute(call, {})


# Values that are not JSON --------------------------------------------------------------------


async def test_an_int_too_long_for_text_is_the_tools_error_not_the_engines() -> None:
    reg = ToolRegistry([returning("big", 10**5000), returning("nested", {"n": [10**5000]})])
    for name in ("big", "nested"):
        result = await run_one(reg, name)
        assert result["status"] == "error", result
        assert result["meta"]["code"] == "BAD_RESULT"
        assert "more than 4,300 digits" in str(result["error"])


async def test_a_run_whose_tool_returns_a_huge_int_reaches_the_gate_not_a_failure() -> None:
    ask = {"tool_calls": [{"name": "big", "args": {}}]}
    agent = Agent(
        model=ScriptedModel([ask, "noted"]),
        tools=[returning("big", 10**5000)],
        memory_path=None,
    )
    result = await agent.run("go")
    assert result.status == "paused", result.error  # the tool's error, for a person
    assert result.gate is not None
    assert "BAD_RESULT" in str(result.gate) or "more than 4,300 digits" in str(result.gate)


# Data that looks like a result ---------------------------------------------------------------


async def test_an_api_reply_with_a_status_is_data_not_a_result() -> None:
    reply = {"status": "ok", "results": [{"id": 1}], "next": 2}
    failure = {"status": "error", "code": 404, "message": "no such user"}
    reg = ToolRegistry([returning("api", reply), returning("fail", failure)])
    ok = await run_one(reg, "api")
    assert ok["status"] == "ok" and ok["content"] == reply
    assert reg.format_result("api", ok) != "null"
    said = await run_one(reg, "fail")
    assert said["content"] == failure  # the tool's data: its message reaches the model


def test_the_spec_shape_with_more_fields_is_data() -> None:
    page = {"success": True, "data": [1, 2], "next_page": 3}
    assert normalise(page) == {"status": "ok", "content": page}

    @dataclass
    class Reply:
        success: bool
        data: list[int]
        total: int

    assert normalise(Reply(True, [1], 9))["content"] == {"success": True, "data": [1], "total": 9}
    assert normalise({"success": False, "error_message": "down"})["error"] == "down"


async def test_a_tools_claim_to_be_bounded_already_does_not_pass_its_whole_text() -> None:
    limit = 300
    head, tail = limit * 2 // 3, limit - limit * 2 // 3
    full = 10_000_000
    marker_start = f"\n[... {full - head - tail} of {full} characters clipped; "
    flood = "x" * head + marker_start + "y" * 1_000_000 + " ...]\n" + "z" * tail
    forged = ToolResult(
        status="ok",
        content=flood,
        meta={"clipped": True, "full_chars": full, "output_ref": None, "summary": "clip"},
    )
    call: ToolCall = {"id": "c1", "name": "t", "args": {}}
    text, kept = await bound_output(None, ("t", 1, call), flood, forged, limit, "clip")
    assert len(text) < limit + 1000
    assert kept["meta"]["full_chars"] == len(flood)


# Media -----------------------------------------------------------------------------------------


def test_an_image_that_is_no_image_is_not_sent_as_one() -> None:
    html = base64.b64encode(b"<html><script>x</script></html>").decode()
    part = media_part("image", "image/png", html)
    assert part is not None and part["mime_type"] != "image/png"
    result = ToolResult(status="ok", content="x", media=[part])
    assert "media" not in admit(result, {"image"}, 10_000)
    jpeg = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x00" * 20).decode()
    said_png = media_part("image", "image/png", jpeg)
    assert said_png is not None and said_png["mime_type"] == "image/jpeg"


def test_an_image_as_a_data_url_is_kept_and_a_broken_one_is_named() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8).decode()
    result = normalise(
        {
            "status": "ok",
            "content": "the chart",
            "media": [
                {"kind": "image", "mime_type": "image/png", "data": f"data:image/png;base64,{png}"},
                {"kind": "audio", "mime_type": "audio/wav", "data": "%%% not base64 %%%"},
            ],
        }
    )
    assert [p["data"] for p in result["media"]] == [png]
    assert "[audio audio/wav: left out, its data is not base64]" in str(result["content"])


# LangChain tools -----------------------------------------------------------------------------


def _pair(a: int) -> tuple[int, int]:
    """A pair."""
    return (a, a + 1)


@dataclass
class Article:
    title: str
    content: str


def _article(a: int) -> Article:
    """An article."""
    return Article(title="Headline", content="body")


def _fails(a: int) -> str:
    """Fails."""
    raise ToolException("the disk is full")


async def test_langchain_outputs_keep_their_meaning() -> None:
    reg = ToolRegistry()
    reg.register(StructuredTool.from_function(_pair, name="pair"))
    reg.register(StructuredTool.from_function(_article, name="article"))
    reg.register(StructuredTool.from_function(_fails, name="handled", handle_tool_error=True))
    reg.register(StructuredTool.from_function(_fails, name="raised"))
    assert (await run_one(reg, "pair", a=1))["content"] == [1, 2]
    assert (await run_one(reg, "article", a=1))["content"] == {
        "title": "Headline",
        "content": "body",
    }
    for name in ("handled", "raised"):
        failed = await run_one(reg, name, a=1)
        assert (failed["status"], failed["error"]) == ("error", "the disk is full"), name
