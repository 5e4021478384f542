"""The pytest file ``ai-agent test-from-run`` writes: a recorded run as a regression test.

The test replays the run's recording (a JSON file beside it, `ai_agent.graph.cases`) with the
agent of today's code and asserts what the recorded run did: no divergence, the tool calls and
their arguments in order, the final answer and the status. A person keeps it in their
repository, so it reads like a test they wrote: the expected values are Python literals in the
file, and the agent is built in one small function they may edit.

Every value taken from the run (the task, tool arguments, the answer) is written with ``repr``,
which escapes quotes and hidden characters: a model's answer cannot end a string and become
code. The file is compiled before it is returned, so a broken one is never written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["AgentRecipe", "case_file_names", "regression_test_text"]

_WIDTH = 88


@dataclass(frozen=True)
class AgentRecipe:
    """How the generated test builds the agent under test.

    Args:
        tools: Tool names, groups or globs (``Agent(tools=...)``).
        system_prompt: A system prompt the run was made with, if not the settings' one.
        app: ``package.module:factory``: the factory (of ``ai-agent worker --app``) builds it
            from the database path, instead of ``tools`` and ``system_prompt``.
    """

    tools: Sequence[str] = ()
    system_prompt: str | None = None
    app: str | None = None


def case_file_names(thread_id: str) -> tuple[str, str]:
    """The default test file and recording names of a run.

    Examples:
        >>> case_file_names("run-7f3a.b")
        ('test_run_7f3a_b.py', 'test_run_7f3a_b.recording.json')
    """
    stem = "test_" + _identifier(thread_id if thread_id.startswith("run") else f"run_{thread_id}")
    return f"{stem}.py", f"{stem}.recording.json"


def _identifier(text: str) -> str:
    return re.sub(r"\W+", "_", text.lower()).strip("_") or "run"


def regression_test_text(case: Mapping[str, Any], recording_name: str, recipe: AgentRecipe) -> str:
    """The test file's text for a recorded case (see `ai_agent.graph.cases.export_case`).

    Raises:
        ValueError: the recording's name cannot be a file beside the test.
    """
    if "/" in recording_name or "\\" in recording_name or recording_name in ("", ".", ".."):
        raise ValueError(f"the recording's name {recording_name!r} must be a file name")
    expected = case["expected"]
    thread = str(case["thread_id"])
    calls = [(c["name"], c["args"]) for c in expected["tool_calls"]]
    name_there = _inside_docstring(recording_name)
    lines = [
        f'"""Regression test: run {thread} replayed offline from its recording.',
        "",
        f"Written by `ai-agent test-from-run {thread}`. The recording, {name_there},",
        "lies beside this file: keep both in the repository. The replay asks no model and runs",
        "no tool (their answers come from the recording); the system prompt, the tools' schemas,",
        "the hooks and the stages are today's code, so the test fails where today's code takes",
        "another way than the recorded run, and says where.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from pathlib import Path",
        "",
        *_imports(recipe),
        "",
        f"RECORDING = Path(__file__).with_name({_string(recording_name)})",
        f"TASK = {_literal(str(case['task']), 0)}",
        "",
        "",
        *_make_agent(recipe),
        "",
        "",
        "def test_replays_as_recorded(tmp_path: Path) -> None:",
        '    replay = replay_case(make_agent(tmp_path / "replay.sqlite"), RECORDING)',
        "    # The first point where today's code took another way, with a diff of the two:",
        "    assert replay.diverged is None, replay.diverged",
        *_calls(calls),
        f"    assert replay.final_text == {_literal(expected['final_text'], 4)}",
        f"    assert replay.status == {_string(str(expected['status']))}",
        "",
    ]
    source = "\n".join(lines)
    compile(source, "generated test", "exec")  # what is written is Python
    return source


def _imports(recipe: AgentRecipe) -> list[str]:
    lines = ["from ai_agent.graph import replay_case"]
    if recipe.app is None:
        return ["from ai_agent import Agent", *lines, "from ai_agent.testing import ScriptedModel"]
    module, _, factory = recipe.app.partition(":")
    return [*lines, "", f"from {module} import {factory} as make_app"]


def _make_agent(recipe: AgentRecipe) -> list[str]:
    head = ["def make_agent(checkpoint_path: Path):", '    """The agent under test."""']
    if recipe.app is not None:
        return [*head, "    return make_app(str(checkpoint_path))"]
    prompt = (
        [f"        system_prompt={_literal(recipe.system_prompt, 8)},"]
        if recipe.system_prompt is not None
        else []
    )
    return [
        *head,
        "    return Agent(",
        "        model=ScriptedModel([]),  # never asked: the replies come from the recording",
        *_tools(list(recipe.tools)),
        *prompt,
        "        checkpoint_path=checkpoint_path,",
        "        memory_path=None,",
        "    )",
    ]


def _tools(tools: list[str]) -> list[str]:
    line = f"        tools={_inline(tools)},"
    if len(line) <= _WIDTH:
        return [line]
    return ["        tools=[", *(f"            {_string(t)}," for t in tools), "        ],"]


def _calls(calls: list[tuple[str, Any]]) -> list[str]:
    if not calls:
        return ["    assert replay.tool_calls == []"]
    items = [f"        {_inline(call)}," for call in calls]
    return ["    assert replay.tool_calls == [", *items, "    ]"]


def _literal(value: Any, indent: int) -> str:
    """A Python literal of a JSON value: one line, or a string split at its line ends."""
    if isinstance(value, str) and ("\n" in value.rstrip("\n") or len(value) > _WIDTH - indent):
        parts = [_string(part) for part in value.splitlines(keepends=True)]
        pad = " " * (indent + 4)
        return "(\n" + "".join(f"{pad}{part}\n" for part in parts) + " " * indent + ")"
    return _inline(value)


def _inline(value: Any) -> str:
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_inline(k)}: {_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_inline(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    return repr(value)  # None, True, False, numbers


def _inside_docstring(text: str) -> str:
    r"""Text written inside the file's docstring: no quote or hidden character of it ends that.

    The recording's name comes from ``--out``: three quotes in it ended the docstring (then
    ``compile`` refused the file, an internal error).

    Examples:
        >>> print(_inside_docstring("x" + '"' * 3 + ".json"))
        x\"\"\".json
    """
    return _string(text)[1:-1]


def _string(text: str) -> str:
    r"""A double-quoted literal; every hidden character escaped.

    Examples:
        >>> print(_string('say "hi"\x1b[2K\u202e'))
        "say \"hi\"\x1b[2K\u202e"
    """
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        else:
            out.append(repr(char)[1:-1])  # \n, \x1b, \u202e
    return '"' + "".join(out) + '"'
