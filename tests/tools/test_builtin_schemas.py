"""Every built-in tool's schema, as the model sees it, against a committed snapshot.

``builtin_schemas.json`` holds the schemas as they were when each built-in still wrote its JSON
schema by hand. The schemas now come from the tools' signatures and docstrings, and must stay
the same as JSON with sorted keys, which is how a replay compares model requests: a recorded run
replays offline only while every schema in its requests is unchanged
(``tests/checkpoints/test_fixtures.py`` replays one that used the calculator). A change to a
built-in's schema is a change to this snapshot, made on purpose.
"""

from __future__ import annotations

import json
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


def _json(schemas: dict[str, Any]) -> str:
    """The schemas as a replay compares them (``ai_agent.graph.divergence.request_lines``)."""
    return json.dumps(schemas, sort_keys=True, ensure_ascii=False, indent=1)


def _expected(case: str) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads(_SNAPSHOT.read_text())[case]
    return expected


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
    """The snapshot is of a machine where run_bash's process limit holds (see the test below)."""
    from ai_agent.tools.builtin import bash

    monkeypatch.setattr(bash, "warn_process_limit_gap", lambda setting: None)


def test_the_snapshot_covers_every_built_in() -> None:
    snapshot = json.loads(_SNAPSHOT.read_text())
    assert set(snapshot) == set(_CASES)
    assert tuple(snapshot["default"]) == BUILTIN_NAMES


@pytest.mark.parametrize("case", list(_CASES))
def test_each_built_in_schema_is_what_the_model_saw(case: str, tmp_path: Path) -> None:
    config, names = _CASES[case]
    assert _json(_seen(config, names, tmp_path)) == _json(_expected(case))


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

    # The calculator has always ignored arguments it does not know.
    assert (await calculate(expression="2 * 21", precision=2))["content"] == "42"
    # Worded by the JSON schema, not by pydantic; and a number in a string is no string.
    wrong = await registry.execute(
        {"id": "2", "name": "read_file", "args": {"path": 42, "mode": "r"}}, {}
    )
    assert wrong["meta"]["problems"] == [
        "arguments: Additional properties are not allowed ('mode' was unexpected)",
        "path: 42 is not of type 'string'",
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


@pytest.mark.parametrize("case", list(_CASES))
def test_each_built_in_schema_is_a_valid_json_schema(case: str, tmp_path: Path) -> None:
    # The registry does not check the built-ins' schemas when it mounts them (their toolset
    # says `schemas_checked`, so listing the catalog does not load jsonschema): this does.
    import jsonschema.validators

    config, names = _CASES[case]
    specs = {s.name: s for s in builtin_tools(config, workdir=tmp_path)}
    for name in names:
        parameters = specs[name].schema["function"]["parameters"]
        jsonschema.validators.validator_for(parameters).check_schema(parameters)


def _echo(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
    return ToolResult(status="ok", content=str(args))


def test_a_toolset_that_does_not_say_its_schemas_are_checked_is_checked() -> None:
    # A user's toolset gets the metaschema check at mount, as every tool that gives a schema.
    from ai_agent.errors import ToolRegistrationError
    from ai_agent.tools.spec import ToolCategory, ToolSpec
    from ai_agent.tools.toolsets import FunctionToolset

    broken = ToolSpec(
        name="broken",
        description="a schema that is not one",
        parameters={"type": "object", "properties": {"n": {"type": 3}}},
        fn=_echo,
        category=ToolCategory.READ_ONLY,
    )
    with pytest.raises(ToolRegistrationError, match="not a valid JSON schema"):
        ToolRegistry(toolsets=[FunctionToolset([broken])])
