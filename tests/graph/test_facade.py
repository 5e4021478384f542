"""The Agent is a facade: one class over collaborators, each public method one collaborator's.

Structural checks (issue 16): the Agent has no mixins and nothing wraps ``run``; every method it
takes from a collaborator is that collaborator's function, with its signature and docstring; its
public names are pinned; the facade module stays small.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from ai_agent.graph import Agent
from ai_agent.graph.archive import RunArchive
from ai_agent.graph.contexts import RunContexts
from ai_agent.graph.runner import PipelineRunner
from ai_agent.graph.streaming import Streams
from ai_agent.graph.subagents import Subagents
from ai_agent.graph.tool_methods import ToolMethods

AGENT_MODULE = Path(__file__).resolve().parents[2] / "ai_agent" / "graph" / "agent.py"
# The facade's own size: its constructor's documentation and the one-line delegations, and its
# code alone, without docstrings, comments and blank lines. A new constructor argument costs its
# parameter, the line that hands it on and its documentation; the subagents' wiring (issue 18)
# its database, its arguments and its collaborator.
MAX_FACADE_LINES = 480
MAX_FACADE_CODE_LINES = 300

PUBLIC = {
    "aclose", "activate_tool_version", "add_listener", "add_tool", "afork", "ahistory",
    "approve_dynamic_tool", "as_tool", "astream", "astream_resume", "build_dynamic_tool",
    "build_dynamic_tool_from_intent", "call_tool", "create_tool_build_request_from_intent",
    "delegate", "disable_tools", "enable_tools", "export_html", "fork", "from_settings",
    "generation_params", "get_active_tools", "get_agent_state", "get_agent_usage",
    "get_context_state", "get_cost_estimate", "get_execution_trace", "get_message_history",
    "get_result", "get_state", "get_system_prompt", "get_token_breakdown", "get_token_usage",
    "get_usage_history", "history", "list_plans", "list_tools", "metrics", "prune",
    "register_tool", "reject_dynamic_tool", "remove_listener", "remove_tool", "replay", "resume",
    "resume_sync", "rollback_tool", "run", "run_report", "run_sync", "serve_plan", "set_tools",
    "store", "stream", "stream_resume", "submit_plan", "timeline", "tool_groups", "tool_output",
    "toolsmaker", "unregister_tool",
}  # fmt: skip

# Where each delegated method lives: the collaborator's class.
OWNERS = {
    "run": PipelineRunner,
    "resume": PipelineRunner,
    "astream": Streams,
    "astream_resume": Streams,
    "stream": Streams,
    "stream_resume": Streams,
    "generation_params": RunContexts,
    "as_tool": Subagents,
    "delegate": Subagents,
    "history": RunArchive,
    "replay": RunArchive,
    "submit_plan": RunArchive,
    "serve_plan": RunArchive,
    "register_tool": ToolMethods,
    "call_tool": ToolMethods,
    "build_dynamic_tool": ToolMethods,
    "tool_output": ToolMethods,
}


def test_the_agent_is_one_class_without_mixins() -> None:
    assert Agent.__mro__ == (Agent, object)


def test_the_public_names_of_the_agent_are_kept() -> None:
    public = {n for n in dir(Agent) if not n.startswith("_")}
    assert public == PUBLIC


@pytest.mark.parametrize("name", sorted(OWNERS))
def test_a_delegated_method_is_its_collaborators(name: str) -> None:
    method, owner = getattr(Agent, name), OWNERS[name]
    assert method.__wrapped__ is getattr(owner, name)
    assert inspect.signature(method) == inspect.signature(getattr(owner, name))
    assert method.__doc__ == getattr(owner, name).__doc__
    assert inspect.iscoroutinefunction(method) == inspect.iscoroutinefunction(getattr(owner, name))


def test_nothing_wraps_run() -> None:
    # run is the runner's: no class of the Agent defines it around another.
    assert [c for c in Agent.__mro__ if "run" in vars(c)] == [Agent]
    assert inspect.unwrap(Agent.run) is PipelineRunner.run


def test_the_facade_stays_small() -> None:
    source = AGENT_MODULE.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_FACADE_LINES
    assert len(_code_lines(source)) <= MAX_FACADE_CODE_LINES


def _code_lines(source: str) -> list[str]:
    """The lines of ``source`` that are code: not blank, not comments, not docstrings."""
    documented: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Constant):
            continue
        if isinstance(node.value.value, str):
            documented.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return [
        line
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and number not in documented
    ]
