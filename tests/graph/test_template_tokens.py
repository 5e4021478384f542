"""The first request's estimate counts the chat template's own tokens (the scripted model).

The real server's figures are in tests/local/test_local_streaming_tokens.py; here the arithmetic:
each draft's estimate is the messages, the tool definitions and the template's overhead
(`TokenizerConfig.template_*`) from the first request on, before any usage came back to
calibrate it. A run with the overhead set to 0 is the baseline.
"""

from __future__ import annotations

from typing import Any

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.config import AgentSettings, TokenizerConfig
from tests.graph.conftest import MakeAgent, call, text

DEFAULTS = TokenizerConfig()
NONE = {"template_system_tokens": 0, "template_tools_tokens": 0, "template_tool_turn_tokens": 0}


def echo() -> ToolSpec:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    return ToolSpec(
        "echo",
        lambda args, ctx: args.get("x", ""),
        description="Echo x.",
        parameters=schema,
        category=ToolCategory.READ_ONLY,
    )


async def estimates(agent: Agent, task: str) -> list[int]:
    result = await agent.run(task)
    assert result.status == "completed"
    return [r["estimated_prompt_tokens"] for r in await agent.get_usage_history(result.thread_id)]


async def test_every_estimate_counts_the_chat_template_from_the_first(
    make_agent: MakeAgent,
) -> None:
    turns: list[Any] = [call("echo", x="a"), text("done")]
    bare = make_agent(turns, tools=[echo()], settings=AgentSettings(token_tracking=NONE))
    full = make_agent(turns, tools=[echo()])
    (bare_first, bare_second), (first, second) = [await estimates(a, "say a") for a in (bare, full)]
    # No system prompt, tools offered: the template's default system prompt and tool instructions.
    template = DEFAULTS.template_system_tokens + DEFAULTS.template_tools_tokens
    assert first - bare_first == template
    # The next request also has an assistant turn with a tool call for the template to render.
    assert second - bare_second == template + DEFAULTS.template_tool_turn_tokens


async def test_a_system_prompt_replaces_the_template_s_default_one(make_agent: MakeAgent) -> None:
    bare = make_agent([text("done")], system_prompt="Be brief.")
    full = make_agent([text("done")], settings=AgentSettings(token_tracking=NONE))
    (with_prompt,), (without,) = await estimates(bare, "hi"), await estimates(full, "hi")
    # "Be brief." as a system message costs its own tokens; no default prompt is added for it.
    assert with_prompt - without < DEFAULTS.template_system_tokens
