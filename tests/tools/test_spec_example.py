"""The pipeline spec's "Add a tool" example, run as written, and the ``fn(args, ctx)`` contract.

The example is copied here verbatim from the spec (its "Add a tool" section); each test below
checks one promise it makes: ``ai_agent.types`` has the names it imports, a ToolSpec without a
description takes the function's docstring or else its name, ``make_tool_registry`` takes the
list, and plain ``fn(args, ctx)`` functions returning the spec's ``{"status", "error", "meta"}``
dicts are understood wherever a tool is accepted: the registry, ``Agent(tools=...)`` (a list or
a ``{name: fn}`` mapping) and toolsets.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent
from ai_agent.state import ToolCall
from ai_agent.testing import ScriptedModel
from ai_agent.tools import FunctionToolset, ToolCategory, ToolRegistry, ToolSpec, as_tool_spec
from ai_agent.tools.building import build_tool_set

# Verbatim from the spec's "Add a tool" section.
EXAMPLE = textwrap.dedent(
    """\
    from ai_agent.types import ToolSpec
    from ai_agent.tools import make_tool_registry

    def tool_fetch_users(args, ctx):
        # your HTTP client here
        return {"status":"error","error":"not wired","meta":{"code":"NOT_WIRED"}}

    specs = [ToolSpec(name="fetch_users", fn=tool_fetch_users, requires_env=["MY_API_KEY"])]
    tools = make_tool_registry(specs)
    """
)


def _example() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "spec_example"}
    exec(compile(EXAMPLE, "pipeline-draft.md", "exec"), namespace)
    return namespace


def _call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(id="c1.0", name=name, args=args)


def test_the_example_runs_as_written() -> None:
    tools = _example()["tools"]
    assert isinstance(tools, ToolRegistry)
    spec = tools["fetch_users"]
    assert spec.requires_env == ("MY_API_KEY",)
    assert spec.description == "fetch_users"  # no docstring: its name
    assert spec.category.value == "external"  # no category: the strictest (tool-oversight spec)


def test_ai_agent_types_holds_the_contract_s_names() -> None:
    from ai_agent import types

    assert types.ToolSpec is ToolSpec
    for name in types.__all__:
        assert getattr(types, name) is not None


async def test_the_example_s_tool_says_what_the_spec_says(monkeypatch: pytest.MonkeyPatch) -> None:
    tools = _example()["tools"]
    monkeypatch.delenv("MY_API_KEY", raising=False)
    missing = await tools.execute(_call("fetch_users", {}), {})
    assert (missing["status"], missing["meta"]["code"]) == ("error", "MISSING_ENV")
    monkeypatch.setenv("MY_API_KEY", "k-123")
    result = await tools.execute(_call("fetch_users", {"team": "core"}), {})
    assert (result["status"], result["error"]) == ("error", "not wired")
    assert result["meta"] == {"code": "NOT_WIRED"}


def test_a_tool_without_a_description_takes_its_docstring() -> None:
    def fetch_orders(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        """List the open orders.

        Args:
            args: Filters (the model does not need this section).
        """
        return {"status": "ok", "content": []}

    assert ToolSpec("orders", fetch_orders).description == "List the open orders."
    assert ToolSpec("l", lambda a, c: None).description == "l"  # no docstring: its name
    assert ToolSpec("d", fetch_orders, description="Mine.").description == "Mine."


def _contract_tools(seen: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    def lookup(args, ctx):  # type: ignore[no-untyped-def]  # the spec's plain form
        seen.append((args, ctx))
        return {"status": "ok", "content": {"got": args}}

    def fetch_users(args, ctx):  # type: ignore[no-untyped-def]
        return {"status": "error", "error": "not wired", "meta": {"code": "NOT_WIRED"}}

    return {"lookup": lookup, "fetch_users": fetch_users}


@pytest.mark.parametrize("form", ["mapping", "list", "registry", "toolset"])
async def test_a_plain_fn_args_ctx_is_taken_as_the_contract_wherever_tools_go(form: str) -> None:
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    fns = _contract_tools(seen)
    if form == "mapping":
        registry, _ = build_tool_set(fns)
    elif form == "list":
        registry, _ = build_tool_set(list(fns.values()))
    elif form == "registry":
        registry = ToolRegistry(fns.values())
    else:
        registry = ToolRegistry(toolsets=[FunctionToolset(fns.values(), name="mine")])
    spec = registry["lookup"]
    assert spec.parameters is None  # any object: the model's arguments reach fn as they are
    assert spec.schema["function"]["parameters"] == {"type": "object", "properties": {}}
    result = await registry.execute(_call("lookup", {"team": "core", "limit": 5}), {"k": 1})
    assert result["content"] == {"got": {"team": "core", "limit": 5}}
    assert seen[0][0] == {"team": "core", "limit": 5}
    assert seen[0][1]["k"] == 1
    failed = await registry.execute(_call("fetch_users", {}), {})
    assert (failed["error"], failed["meta"]) == ("not wired", {"code": "NOT_WIRED"})


def test_a_named_contract_fn_keeps_registration_options() -> None:
    def lookup(args, ctx):  # type: ignore[no-untyped-def]
        """Look a thing up."""
        return {"status": "ok"}

    spec = as_tool_spec(lookup, name="find", namespace="db", category="read_only")
    assert (spec.name, spec.category.value, spec.description) == (
        "db.find",
        "read_only",
        "Look a thing up.",
    )


async def test_an_agent_runs_plain_fn_args_ctx_tools_from_a_mapping(tmp_path: Path) -> None:
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    model = ScriptedModel(
        [{"tool_calls": [{"name": "lookup", "args": {"team": "core"}}]}, "found them"]
    )
    agent = Agent(
        model=model,
        tools=_contract_tools(seen),
        checkpoint_path=tmp_path / "c.sqlite",
        memory_path=None,
        unattended=True,
    )
    result = await agent.run("find the core team", thread_id="t1")
    assert result.status == "completed", result.gate
    assert seen[0][0] == {"team": "core"}
    assert seen[0][1]["thread_id"] == "t1"


def test_a_typed_function_with_a_parameter_named_args_stays_typed() -> None:
    def count(args: list[str]) -> int:
        """Count the words."""
        return len(args)

    spec = as_tool_spec(count)
    assert spec.parameters is not None
    assert spec.parameters["required"] == ["args"]


async def test_a_call_that_misfits_an_untyped_signature_says_why() -> None:
    # Meant as fn(args, ctx) under other names: read as typed, the schema asks for "params".
    def lookup(params, context):  # type: ignore[no-untyped-def]
        """Look a thing up."""
        return params

    registry = ToolRegistry([lookup])
    assert registry["lookup"].parameters is not None
    for problems in (
        registry.snapshot().problems(registry["lookup"], {"team": "core"}),
        (await registry["lookup"].fn({"team": "core"}, {}))["meta"]["problems"],
    ):
        assert "params: Field required" in problems
        assert problems[-1].startswith("(lookup's schema was read from its signature")
        assert "(params, context) have no types" in problems[-1]
        assert "fn(args, ctx)" in problems[-1]
    result = await registry.execute(_call("lookup", {"team": "core"}), {})
    assert "fn(args, ctx)" in str(result["error"])


def test_a_typed_signature_gets_no_such_note() -> None:
    def scale(value: int, ctx: dict[str, Any]) -> int:
        """Scale a value."""
        return value

    assert ToolRegistry([scale]).snapshot().problems(ToolRegistry([scale])["scale"], {}) == [
        "value: Field required"
    ]


# A result names its tool and the tool's category, as the tool-oversight spec's ToolResult does.


async def test_a_result_names_its_tool_and_category(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_API_KEY", raising=False)
    registry = ToolRegistry(
        [
            ToolSpec("echo", lambda a, c: a, category=ToolCategory.READ_ONLY),
            ToolSpec("fetch_users", lambda a, c: None, requires_env=["MY_API_KEY"]),
            ToolSpec("strict", lambda a, c: a, parameters={"required": ["n"]}),
        ]
    )
    ran = await registry.execute(_call("echo", {"x": 1}), {})
    missing = await registry.execute(_call("fetch_users", {}), {})
    invalid = await registry.execute(_call("strict", {}), {})
    assert (ran["status"], ran["tool_name"], ran["category"]) == ("ok", "echo", "read_only")
    assert (missing["tool_name"], missing["category"]) == ("fetch_users", "external")
    assert (invalid["tool_name"], invalid["category"]) == ("strict", "external")
    # A tool cannot claim another's name or a milder category: the registry sets both.
    liar = ToolRegistry(
        [
            ToolSpec(
                "liar", lambda a, c: {"status": "ok", "tool_name": "echo", "category": "read_only"}
            )
        ]
    )
    claimed = await liar.execute(_call("liar", {}), {})
    assert (claimed["tool_name"], claimed["category"]) == ("liar", "external")
    unknown = await registry.execute(_call("nothing", {}), {})
    assert unknown["tool_name"] == "nothing"
    assert "category" not in unknown  # no tool, no category


async def test_a_run_keeps_each_result_s_tool_and_category(tmp_path: Path) -> None:
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    model = ScriptedModel(
        [{"tool_calls": [{"name": "lookup", "args": {"team": "core"}}]}, "found them"]
    )
    agent = Agent(
        model=model,
        tools=_contract_tools(seen),
        checkpoint_path=tmp_path / "c.sqlite",
        memory_path=None,
        unattended=True,
    )
    await agent.run("find the core team", thread_id="t1")
    state = await agent.get_state("t1")
    [outcome] = state["results"]
    assert (outcome["result"]["tool_name"], outcome["result"]["category"]) == (
        "lookup",
        "external",
    )


async def test_a_result_the_tool_never_made_names_its_tool_too(tmp_path: Path) -> None:
    # A call refused before it ran (arguments that do not fit) keeps a result in the run too.
    from ai_agent import tool

    @tool(category="read_only")
    def scale(value: int) -> int:
        """Scale a value."""
        return value * 2

    model = ScriptedModel([{"tool_calls": [{"name": "scale", "args": {}}]}, "gave up"])
    agent = Agent(
        model=model, tools=[scale], checkpoint_path=tmp_path / "c.sqlite", memory_path=None
    )
    await agent.run("scale nothing", thread_id="t1")
    [outcome] = (await agent.get_state("t1"))["results"]
    assert outcome["result"]["meta"]["code"] == "SCHEMA_VIOLATION"
    assert (outcome["result"]["tool_name"], outcome["result"]["category"]) == (
        "scale",
        "read_only",
    )


def test_the_contract_s_first_parameter_may_be_annotated_as_a_dict() -> None:
    from collections.abc import Mapping

    from ai_agent.tools.adapters import takes_args_and_ctx

    def written(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        return {"status": "ok"}  # annotations are strings here (postponed)

    def evaluated(args, ctx):  # type: ignore[no-untyped-def]
        return {"status": "ok"}

    evaluated.__annotations__ = {"args": Mapping[str, Any], "ctx": dict}

    def typed(args: list[str], ctx: dict[str, Any]) -> int:
        return len(args)

    def defaulted(args, ctx=None):  # type: ignore[no-untyped-def]
        return args

    def keyword(args, *, ctx):  # type: ignore[no-untyped-def]
        return args

    assert takes_args_and_ctx(written) and takes_args_and_ctx(evaluated)
    assert not any(map(takes_args_and_ctx, (typed, defaulted, keyword, print)))


async def test_the_example_s_flow_pauses_once_and_completes_after_the_key_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The spec's flow, with its HTTP client wired: the run pauses with MISSING_ENV; the person
    # exports the key and answers with a plan that goes on; the call runs (env checked again)
    # with no second pause.
    monkeypatch.delenv("MY_API_KEY", raising=False)
    calls: list[dict[str, Any]] = []

    def tool_fetch_users(args, ctx):  # type: ignore[no-untyped-def]  # the spec's plain form
        calls.append(args)
        return {"status": "ok", "content": ["ada", "grace"]}

    spec = ToolSpec(name="fetch_users", fn=tool_fetch_users, requires_env=["MY_API_KEY"])
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "fetch_users", "args": {}}]},
        {"text": "ada and grace"},
    ]
    agent = Agent(
        model=ScriptedModel(turns),
        tools=[spec],
        checkpoint_path=tmp_path / "c.sqlite",
        memory_path=None,
    )
    paused = await agent.run("list the users")
    assert paused.status == "paused" and paused.gate is not None
    (issue,) = paused.gate["issues"]
    assert issue["code"] == "MISSING_ENV"
    # One gate shows all the call waits for: the key, and its confirmation.
    assert (
        "set them and resume; fetch_users is an external tool and needs confirmation: a plan "
        "that continues confirms it (deny it to skip it)"
    ) in issue["message"]
    monkeypatch.setenv("MY_API_KEY", "k-123")
    done = await agent.resume(paused.thread_id, {"instructions": "the key is set"})
    assert (done.status, done.final_text) == ("completed", "ada and grace")
    assert calls == [{}]  # the call ran, once
    assert [t["status"] for t in done.trace if t["stage"] == "gate"] == ["plan", "pass"]


async def test_a_change_shown_at_the_missing_key_gate_still_needs_its_approval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MY_API_KEY", raising=False)
    ran: list[dict[str, Any]] = []

    def write(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        ran.append(args)
        return {"status": "ok", "content": "written"}

    spec = ToolSpec(
        "write_users", write, requires_env=["MY_API_KEY"], category=ToolCategory.MODIFICATION
    )
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "write_users", "args": {}}]},
        {"text": "skipped"},
    ]
    agent = Agent(
        model=ScriptedModel(turns),
        tools=[spec],
        checkpoint_path=tmp_path / "c.sqlite",
        memory_path=None,
    )
    paused = await agent.run("write the users")
    assert paused.gate is not None
    assert (
        "needs approval: approve it in the plan, or it is skipped"
        in (paused.gate["issues"][0]["message"])
    )
    monkeypatch.setenv("MY_API_KEY", "k-123")
    done = await agent.resume(paused.thread_id, {"instructions": "the key is set"})
    assert done.status == "completed" and ran == []  # continuing is not an approval
