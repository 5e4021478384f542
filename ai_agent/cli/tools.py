"""``ai-agent tools`` and ``ai-agent output``.

``tools`` lists the catalog by category, with the approval policy in force; ``output`` prints the
full text of a tool output that was clipped in a run.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from ai_agent.cli._common import Parents, db_path, print_json, run_closing, settings_of

if TYPE_CHECKING:
    from ai_agent.graph.tools_mixin import ToolListing

__all__ = ["add_commands"]

_CATEGORIES = ("read_only", "note_taking", "modification", "external")
_MEANING = {
    "auto": "runs without asking",
    "auto (unattended)": "runs without asking (unattended)",
    "confirm": "waits for a person's confirmation",
    "approve": "waits for a person's approval, with a preview",
    "deny": "never runs",
}


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``tools`` and ``output``."""
    tools = sub.add_parser(
        "tools", parents=[parents.common], help="list the tool catalog by category"
    )
    tools.add_argument("--category", choices=_CATEGORIES, help="only this category")
    tools.set_defaults(handler=_tools)

    output = sub.add_parser(
        "output", parents=[parents.common], help="print a tool output that was clipped in a run"
    )
    output.add_argument("thread", help="the run's thread id")
    output.add_argument("ref", help="the output's reference (out-<iteration>-<call id>)")
    output.set_defaults(handler=_output)


def _line(t: ToolListing) -> str:
    notes = []
    if t["missing_env"]:
        notes.append(f"needs {', '.join(t['missing_env'])}")
    if not t["enabled"]:
        notes.append("disabled")
    extra = f"  ({'; '.join(notes)})" if notes else ""
    description = t["description"].split("\n", 1)[0]
    if len(description) > 72:
        description = description[:71] + "…"
    return f"  {t['name']:<18} {t['group'] or '':<8} {description}{extra}"


def _heading(category: str, policy: str, first_use_gate: bool) -> str:
    meaning = _MEANING.get(policy, policy)
    if category == "external" and first_use_gate and policy.startswith("auto"):
        meaning += "; the first call of each in a run waits for a person"
    return f"{category}: {meaning} (policy: {policy})"


def _tools(args: argparse.Namespace) -> int:
    from ai_agent.graph import Agent

    agent = Agent(checkpoint_path=os.devnull, settings=settings_of(args), memory_path=None)
    listing = [t for t in agent.list_tools() if not args.category or t["category"] == args.category]
    if args.json:
        print_json(listing)
        return 0
    blocks = []
    for category in _CATEGORIES:
        members = [t for t in listing if t["category"] == category]
        if not members:
            continue
        head = _heading(category, members[0]["policy"], agent.policy.first_use_gate)
        blocks.append("\n".join([head, *(_line(t) for t in members)]))
    print("\n\n".join(blocks))
    return 0


def _output(args: argparse.Namespace) -> int:
    from ai_agent.graph import Agent

    agent = Agent(checkpoint_path=db_path(args), settings=settings_of(args), memory_path=None)
    text = run_closing(agent, agent.tool_output(args.thread, args.ref))
    if args.json:
        print_json({"thread_id": args.thread, "ref": args.ref, "content": text})
    else:
        print(text)
    return 0
