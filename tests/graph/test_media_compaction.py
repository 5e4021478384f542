"""A run whose tools return images: the images count toward the window, so it compacts."""

from __future__ import annotations

import base64
import struct
from typing import Any

from ai_agent import ToolCategory, ToolSpec
from ai_agent.config import AgentSettings
from ai_agent.testing import FunctionModel
from tests.graph.conftest import MakeAgent, call, text

# A PNG header that says 2048x768: 8 tiles at detail "high", 1,445 tokens each time it is sent.
WIDE_PNG = base64.b64encode(
    b"\x89PNG\r\n\x1a\n"
    + struct.pack(">I", 13)
    + b"IHDR"
    + struct.pack(">II", 2048, 768)
    + b"\x08\x06\x00\x00\x00"
    + bytes(200)
).decode()


def screenshot_tool() -> ToolSpec:
    def screenshot(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        return {
            "status": "ok",
            "content": f"screen {args.get('page')}",
            "media": [{"kind": "image", "mime_type": "image/png", "data": WIDE_PNG}],
        }

    return ToolSpec(
        "screenshot",
        screenshot,
        description="Take a screenshot of a page.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"page": {"type": "integer"}}},
    )


class Shots:
    """A model that takes ``pages`` screenshots, one per turn, then answers."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.images_seen: list[int] = []

    def __call__(self, messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        # Each image reaches the model after a line that names it (`to_langchain`).
        self.images_seen.append(sum(m["content"].count("returned by the tool") for m in messages))
        done = len(self.images_seen) - 1
        return call("screenshot", page=done) if done < self.pages else text("Seen them all.")


async def test_a_run_whose_tool_returns_large_images_compacts(make_agent: MakeAgent) -> None:
    settings = AgentSettings(
        max_iterations=20,
        model_backend={"media_inputs": ["image"]},
        context={
            "strategy": "sliding_window",
            "trigger_threshold_tokens": 3500,
            "target_tokens": 2000,
            "preserve_recent_turns": 1,
        },
    )
    shots = Shots(pages=6)
    agent = make_agent(
        model=FunctionModel(shots),
        tools=[screenshot_tool()],
        settings=settings,
        system_prompt="You look at pages.",
        max_iterations=20,
    )
    async with agent:
        result = await agent.run("look at 6 pages")
        state = await agent.get_context_state(result.thread_id)
        history = await agent.get_usage_history(result.thread_id)
    assert result.status == "completed"
    assert result.final_text == "Seen them all."
    # Text alone is a few hundred tokens: only the images' 1,445 tokens each pass the trigger.
    assert state["compactions"], "six 1,445-token images must have made the run compact"
    assert all(c["tokens_before"] > 3500 for c in state["compactions"])
    assert all(c["tokens_after"] <= 2000 for c in state["compactions"])
    # Without compaction the last request would carry all six images; no request carried more
    # than two (two are ~3,000 tokens, three pass the trigger).
    assert shots.images_seen[0] == 0
    assert max(shots.images_seen) == 2
    drafts = [r for r in history if r.get("purpose") == "draft"]
    assert len(drafts) == 7
    assert all(r["estimated_prompt_tokens"] < 3500 for r in drafts)
    assert max(r["estimated_prompt_tokens"] for r in drafts) > 2 * 1445
