"""One-line summaries of what changed between two states of a run (for ``history``)."""

from __future__ import annotations

import json
from typing import Any

from ai_agent.graph.channels import own_fields
from ai_agent.state import GateReport, Message, PlanRecord, RunState, ToolCall

__all__ = ["change_summary", "clip", "describe_message", "describe_plan"]

_MAX = 160


def clip(text: str, limit: int = 60) -> str:
    r"""One line of at most ``limit`` characters.

    Examples:
        >>> clip("a long\nanswer", 8)
        'a long…'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def describe_message(message: Message) -> str:
    """What a new message means, in a few words.

    Examples:
        >>> describe_message({"role": "tool", "name": "calculator", "content": "4"})
        'tool calculator: 4'
    """
    role, content = message["role"], message.get("content") or ""
    calls = message.get("tool_calls") or []
    if calls:
        asked = ", ".join(
            f"{c['name']}({clip(json.dumps(c['args'], ensure_ascii=False), 40)})" for c in calls
        )
        return f"model asks for {asked}"
    if role == "assistant":
        return f"model answers {clip(content)!r}"
    if role == "tool":
        return f"tool {message.get('name', '?')}: {clip(content, 50)}"
    kind = message.get("kind")
    if kind == "plan":
        return f"plan instructions {clip(content)!r}"
    if kind == "recall":
        return "recalled context"
    return f"{role} {clip(content)!r}"


def describe_plan(record: PlanRecord) -> str:
    """A plan in a few words.

    Examples:
        >>> describe_plan({"iteration": 1, "source": "resume",
        ...                "plan": {"allow_continue": True, "approve": ["*"]}})
        'plan (resume): approve *'
    """
    plan: dict[str, Any] = record["plan"]
    if not plan.get("allow_continue", True):
        return f"plan ({record['source']}): stop the run"
    parts = [f"approve {', '.join(plan['approve'])}"] if plan.get("approve") else []
    if plan.get("deny"):
        parts.append(f"deny {', '.join(plan['deny'])}")
    if plan.get("edit_args"):
        parts.append(f"edit {', '.join(plan['edit_args'])}")
    if plan.get("always_allow"):
        parts.append(f"always allow ({plan['always_allow']})")
    if plan.get("activate_tools"):
        parts.append(f"activate {', '.join(plan['activate_tools'])}")
    if plan.get("instructions"):
        parts.append(f"instructions {clip(plan['instructions'], 40)!r}")
    return f"plan ({record['source']}): " + ("; ".join(parts) or "continue")


def _edit(call: ToolCall) -> str:
    """A call a person's plan edited: the model's arguments, then the ones that will run."""

    def shown(args: dict[str, Any]) -> str:
        return clip(json.dumps(args, ensure_ascii=False, sort_keys=True), 40)

    return f"{call['id']} edited: {shown(call.get('edited_from', {}))} -> {shown(call['args'])}"


def _gate(report: GateReport) -> str:
    codes = ", ".join(i["code"] for i in report["issues"])
    verdict = "intervenes" if report["intervene"] else "passes"
    score = f"{report['severity']:.2f}"
    return f"gate {verdict} at {score}" + (f" ({codes})" if codes else "")


def _messages(before: RunState, after: RunState) -> list[str]:
    old, new = before.get("messages", []), after.get("messages", [])
    # Appended, or replaced (recall puts its context first): list what was not there before.
    added = new[len(old) :] if new[: len(old)] == old else [m for m in new if m not in old]
    return [describe_message(m) for m in added]


def _fields(before: RunState, after: RunState) -> list[str]:
    parts: list[str] = []
    decision = after.get("decision")
    if decision is not None and decision != before.get("decision"):
        calls = ", ".join(c["name"] for c in decision["calls"])
        parts.append("decision: finish" if decision["action"] == "finish" else f"run {calls}")
    waiting = [p for p in after.get("pending", []) if p["blocked"]]
    if waiting and waiting != [p for p in before.get("pending", []) if p["blocked"]]:
        parts.append(
            "waiting: " + ", ".join(f"{p['call']['name']} ({p['blocked']})" for p in waiting)
        )
    edited = [p["call"] for p in after.get("pending", []) if "edited_from" in p["call"]]
    parts += [_edit(c) for c in edited if c not in [p["call"] for p in before.get("pending", [])]]
    gate = after.get("gate")
    if gate is not None and gate != before.get("gate"):
        parts.append(_gate(gate))
    plans = after.get("plans", [])
    parts += [describe_plan(p) for p in plans[len(before.get("plans", [])) :]]
    recalled = after.get("recalled")
    if recalled and recalled != before.get("recalled"):
        parts.append(f"recalled {len(recalled)} item(s)")
    if after.get("status") != before.get("status") and before.get("status") is not None:
        parts.append(f"status {after.get('status')}")
    if after.get("final_text") and after.get("final_text") != before.get("final_text"):
        parts.append(f"final text {clip(str(after.get('final_text')))!r}")
    return parts


def _own(before: RunState, after: RunState) -> list[str]:
    """The changed state fields of a pipeline's own (read with its ``--pipeline``)."""
    old = own_fields(before)
    return [
        f"{name} {clip(json.dumps(value, ensure_ascii=False, default=str), 60)}"
        for name, value in own_fields(after).items()
        if old.get(name) != value
    ]


def change_summary(before: RunState, after: RunState, *, paused: bool = False) -> str:
    """What changed from ``before`` to ``after``, in one line.

    Examples:
        >>> change_summary({"messages": []},
        ...                {"messages": [{"role": "assistant", "content": "hi"}]})
        "model answers 'hi'"
    """
    if not before:
        task = after.get("task")
        parts = [f"task {clip(task)!r}"] if task else ["run input"]
    else:
        parts = _messages(before, after) + _fields(before, after) + _own(before, after)
    if paused:
        parts.append("paused for a plan")
    return clip("; ".join(parts), _MAX) if parts else "no change"
