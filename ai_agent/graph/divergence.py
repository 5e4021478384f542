"""DivergenceReport: where a replay left the recording, and how the new call differs.

Requests are compared as readable text, one line per fact (parameters, each tool schema, each
message line), so a unified diff points at the exact line that changed: a new system prompt, a
changed tool description, a different tool result earlier in the conversation.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ai_agent.checkpoints.recorded import ModelRequest
from ai_agent.state import Message, ToolCall

__all__ = ["DivergenceReport", "call_lines", "request_lines", "text_diff"]


@dataclass(frozen=True, slots=True)
class DivergenceReport:
    r"""Why a replay stopped: the first call that the recording could not answer.

    Attributes:
        source_thread_id: The run being replayed.
        thread_id: The replay's own thread (stopped at the last checkpoint before the call).
        step: LangGraph's step of the call.
        stage: The stage that made it: ``draft`` (a model request), ``act`` (a tool call) or
            ``gate`` (the run paused where the original did not, or the recorded plan does not
            fit).
        reason: One line saying what happened.
        diff: A unified diff from the recorded call (``---``) to the new one (``+++``).
        recorded: What was recorded at that point (a request, a call, a plan), or None.
        new: What the replay asked for instead.

    Examples:
        >>> report = DivergenceReport("t1", "t2", 3, "draft", "a new request", "-a\n+b")
        >>> print(report)
        replay of t1 diverged at step 3 (draft): a new request
        -a
        +b
    """

    source_thread_id: str
    thread_id: str
    step: int | None
    stage: str
    reason: str
    diff: str
    recorded: Any = None
    new: Any = None

    def __str__(self) -> str:
        head = (
            f"replay of {self.source_thread_id} diverged at step {self.step} "
            f"({self.stage}): {self.reason}"
        )
        return f"{head}\n{self.diff}" if self.diff else head


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _message_lines(index: int, message: Message) -> list[str]:
    role = message["role"]
    label = f"[{index}] {role}"
    if message.get("kind"):
        label += f" ({message['kind']})"
    if message.get("name"):
        label += f" {message['name']}"
    if message.get("tool_call_id"):
        label += f" #{message['tool_call_id']}"
    lines = [f"{label}: {line}" for line in (message["content"] or "").split("\n")]
    lines += [
        f"{label} calls {c['name']} {_json(c['args'])} #{c['id']}"
        for c in message.get("tool_calls", [])
    ]
    return lines


def request_lines(request: ModelRequest) -> list[str]:
    """A model request as lines of text, for people and for `text_diff`.

    Examples:
        >>> request_lines({"messages": [{"role": "user", "content": "hi"}], "tools": [],
        ...                "params": {"seed": 1}})
        ['params: {"seed": 1}', 'tools: (none)', '[0] user: hi']
    """
    lines = [f"params: {_json(request['params'])}"]
    tools = request["tools"]
    if not tools:
        lines.append("tools: (none)")
    for schema in tools:
        function = schema.get("function", schema)
        lines.append(f"tool {function.get('name')}: {_json(function)}")
    for index, message in enumerate(request["messages"]):
        lines += _message_lines(index, message)
    return lines


def call_lines(call: ToolCall) -> list[str]:
    """A tool call as lines of text.

    Examples:
        >>> call_lines({"id": "c1", "name": "calculator", "args": {"expression": "2+2"}})
        ['call calculator #c1', 'args: {"expression": "2+2"}']
    """
    return [f"call {call['name']} #{call['id']}", f"args: {_json(call['args'])}"]


def text_diff(recorded: Sequence[str], new: Sequence[str]) -> str:
    """A unified diff from the recorded lines to the new ones.

    All of ``new`` when nothing was recorded.

    Examples:
        >>> print(text_diff(["a", "b"], ["a", "c"]))
        --- recorded
        +++ replay
        @@ -1,2 +1,2 @@
         a
        -b
        +c
    """
    return "\n".join(
        difflib.unified_diff(list(recorded), list(new), "recorded", "replay", lineterm="")
    )
