"""Every built-in tool's schema, as the model sees it, against a committed snapshot.

``builtin_schemas.json`` holds the schemas as they were when each built-in still wrote its JSON
schema by hand. The schemas now come from the tools' signatures and docstrings; this test keeps
them what the model saw, apart from the differences listed in ``_INTENDED`` (each with why).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest

from ai_agent.config import BashToolConfig, NotesConfig, ToolConfig, WebSearchConfig
from ai_agent.state import ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin import BUILTIN_NAMES, builtin_tools

_SNAPSHOT = Path(__file__).with_name("builtin_schemas.json")

# Settings that change what the model sees, one case each (the snapshot's keys).
_CASES: dict[str, tuple[ToolConfig, tuple[str, ...]]] = {
    "default": (ToolConfig(), BUILTIN_NAMES),
    **{
        f"web_search[{backend}]": (
            ToolConfig(web_search=WebSearchConfig(backend=backend)),
            ("web_search",),
        )
        for backend in ("tavily", "brave", "serpapi")
    },
    "run_bash[bwrap]": (ToolConfig(bash=BashToolConfig(sandbox="bwrap")), ("run_bash",)),
    "notes[k=7,read_max_chars=1234]": (
        ToolConfig(notes=NotesConfig(k=7, read_max_chars=1234)),
        ("find_similar", "read_note"),
    ),
}

Edit = Callable[[dict[str, Any]], None]


def _set(tool: str, prop: str, schema: dict[str, Any]) -> Edit:
    def edit(tools: dict[str, Any]) -> None:
        tools[tool]["parameters"]["properties"][prop] = schema

    return edit


def _forbid_extra(tool: str) -> Edit:
    def edit(tools: dict[str, Any]) -> None:
        tools[tool]["parameters"]["additionalProperties"] = False

    return edit


_CODE_TEXT = (
    "Optional Python module defining class GeneratedTool with execute(self, **kwargs); without "
    "it a template is used. self.http.request(...) makes HTTP requests, self.secrets holds the "
    "declared secrets."
)

# The intended differences from the hand-written schemas, applied to the snapshot before it is
# compared. Each accepts the same arguments as before, written as pydantic writes it, except the
# calculator's, which now refuses unknown arguments as every other built-in did.
_INTENDED: dict[str, list[Edit]] = {
    "calculator": [
        # Every other built-in refused unknown arguments; the calculator ignored them, so a
        # misspelled argument went unnoticed. Now it is a schema problem like everywhere else.
        _forbid_extra("calculator"),
    ],
    "run_bash": [
        # ``dict[str, str] | None``: pydantic writes "object or null" as anyOf instead of a list
        # of types; the same values fit.
        _set(
            "run_bash",
            "env",
            {
                "anyOf": [
                    {"type": "object", "additionalProperties": {"type": "string"}},
                    {"type": "null"},
                ],
                "default": None,
            },
        ),
    ],
    "propose_tool": [
        # ``dict[str, Any]``: "additionalProperties": true is JSON Schema's default, said aloud.
        _set(
            "propose_tool",
            "inputs",
            {
                "type": "object",
                "additionalProperties": True,
                "description": "Parameter name -> JSON type (string, integer, number, boolean, "
                "object, array).",
            },
        ),
        # Literals of strings: the enum gains "type": "string", which every value already is.
        _set(
            "propose_tool",
            "capabilities",
            {
                "type": "array",
                "items": {"type": "string", "enum": ["fs_read", "fs_write", "http", "secrets"]},
            },
        ),
        _set(
            "propose_tool",
            "risk",
            {"type": "string", "enum": ["low", "medium", "high"], "default": "medium"},
        ),
        # ``str | None = None``: anyOf instead of a list of types, and the default (null, which
        # the tool always read as "no code") said aloud.
        _set(
            "propose_tool",
            "code",
            {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": _CODE_TEXT,
            },
        ),
    ],
}


def _expected(case: str) -> dict[str, Any]:
    tools: dict[str, Any] = copy.deepcopy(json.loads(_SNAPSHOT.read_text())[case])
    for name in tools:
        for edit in _INTENDED.get(name, []):
            edit(tools)
    return tools


def _seen(config: ToolConfig, names: tuple[str, ...], workdir: Path) -> dict[str, Any]:
    """What the model sees of each named tool: its description and parameters."""
    specs = {s.name: s for s in builtin_tools(config, workdir=workdir)}
    seen = {}
    for name in names:
        function = dict(specs[name].schema["function"])
        assert function.pop("name") == name
        seen[name] = function
    return seen


@pytest.fixture(autouse=True)
def _enforced_process_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The snapshot is of a machine where run_bash's process limit holds (see the last test)."""
    from ai_agent.tools.builtin import bash

    monkeypatch.setattr(bash, "warn_process_limit_gap", lambda setting: None)


def test_the_snapshot_covers_every_built_in() -> None:
    snapshot = json.loads(_SNAPSHOT.read_text())
    assert set(snapshot) == set(_CASES)
    assert tuple(snapshot["default"]) == BUILTIN_NAMES
    assert set(_INTENDED) <= set(BUILTIN_NAMES)


@pytest.mark.parametrize("case", list(_CASES))
def test_each_built_in_schema_is_what_the_model_saw(case: str, tmp_path: Path) -> None:
    config, names = _CASES[case]
    assert _seen(config, names, tmp_path) == _expected(case)


def test_run_bash_says_when_its_process_limit_does_not_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agent.tools.builtin import bash

    monkeypatch.setattr(bash, "warn_process_limit_gap", lambda setting: "root, no cgroup")
    seen = _seen(ToolConfig(), ("run_bash",), tmp_path)["run_bash"]
    expected = _expected("default")["run_bash"]
    gap = " Its process limit is not enforced (the engine runs as root)."
    assert seen == {**expected, "description": expected["description"] + gap}


async def test_built_in_arguments_are_checked_against_the_schema_the_model_saw(
    tmp_path: Path,
) -> None:
    registry = ToolRegistry(builtin_tools(workdir=tmp_path))

    async def calculate(**args: Any) -> ToolResult:
        return await registry.execute({"id": "1", "name": "calculator", "args": args}, {})

    assert (await calculate(expression="2 * 21"))["content"] == "42"
    # Worded by the JSON schema, not by pydantic; and a number in a string is no string.
    wrong = await calculate(expression=42, precision=2)
    assert wrong["meta"]["problems"] == [
        "arguments: Additional properties are not allowed ('precision' was unexpected)",
        "expression: 42 is not of type 'string'",
    ]
    assert (await calculate(expression="  "))["meta"]["code"] == "BAD_ARGUMENTS"
    assert all(spec.validator is None for spec in builtin_tools(workdir=tmp_path))


def test_propose_tool_offers_the_capabilities_the_toolsmaker_knows() -> None:
    from ai_agent.tools.maker.propose import Capability
    from ai_agent.tools.maker.records import CAPABILITIES

    assert get_args(Capability) == CAPABILITIES


async def test_the_tools_own_checks_hold_where_the_schema_cannot_say(tmp_path: Path) -> None:
    specs = {s.name: s for s in builtin_tools(workdir=tmp_path)}
    registry = ToolRegistry(list(specs.values()))

    async def run(name: str, **args: Any) -> ToolResult:
        return await registry.execute({"id": "1", "name": name, "args": args}, {})

    assert (await run("calculator", expression="2 +"))["meta"]["code"] == "CANNOT_PARSE"
    assert (await run("find_similar", queries=["  "]))["meta"]["code"] == "BAD_ARGUMENTS"
    # Called directly, past the registry's check against the schema, the tool still refuses
    # a search type its backend does not offer.
    direct = await specs["web_search"].fn({"query": "tides", "search_type": "torrents"}, {})
    assert direct["meta"]["code"] == "BAD_ARGUMENTS"
    assert "use one of general, news" in direct["error"]
