"""Toolsets: sources of tools with one interface, composed by the registry."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ai_agent.errors import ToolRegistrationError, UnknownToolError
from ai_agent.issues import IssueKind
from ai_agent.state import Issue
from ai_agent.tools import (
    BuiltinToolset,
    FunctionToolset,
    ToolRegistry,
    ToolSet,
    Toolset,
    ToolSnapshot,
    ToolSpec,
)
from ai_agent.tools.building import build_tool_set
from ai_agent.tools.registry import Refresh


def spec(name: str, text: str = "ok") -> ToolSpec:
    return ToolSpec(name, lambda a, c: text, description=f"The {name} tool.")


class Listed(Toolset):
    """A toolset over a list the test changes; it counts its spans and can fail to open."""

    def __init__(self, name: str, *specs: ToolSpec) -> None:
        self.name = name
        self.specs = list(specs)
        self.open = 0
        self.entries = 0
        self.fail: BaseException | None = None
        self.problems: list[Issue] = []

    def tools(self) -> Sequence[ToolSpec]:
        return list(self.specs)

    async def __aenter__(self) -> Listed:
        await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        self.open += 1
        self.entries += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.open -= 1

    def issues(self) -> list[Issue]:
        return list(self.problems)


def issue(message: str) -> Issue:
    return Issue(code=IssueKind.AUTH, severity=0.95, message=message, tool=None, call_id=None)


def test_the_snapshot_keeps_its_old_name() -> None:
    assert ToolSet is ToolSnapshot


def test_a_toolset_subclass_is_one_class_and_a_mount() -> None:
    class Greetings(Toolset):
        def tools(self) -> Sequence[ToolSpec]:
            return [spec("hello")]

    greetings = Greetings()
    registry = ToolRegistry()
    assert registry.mount(greetings) == Refresh(added=["hello"])
    assert registry.owner("hello") is greetings and greetings.name == "toolset"
    assert registry.toolsets() == [registry.functions, greetings]
    assert greetings.issues() == []
    registry.unmount(greetings)
    registry.unmount(greetings)  # twice: nothing more to do
    assert "hello" not in registry and registry.toolsets() == [registry.functions]


def test_a_toolsets_changes_reach_the_catalog_and_unchanged_tools_stay() -> None:
    a, b = spec("a"), spec("b")
    source = Listed("src", a, b)
    registry = ToolRegistry(toolsets=[source])
    before = registry.snapshot()
    source.changed()
    assert registry.snapshot() is before  # nothing changed: the same snapshot
    source.specs = [spec("a", "new"), spec("c")]
    source.changed()
    assert list(registry) == ["a", "c"]
    assert registry.names_of(source) == ["a", "c"]
    assert registry["a"] is source.specs[0]


def test_a_name_another_toolset_holds_is_refused() -> None:
    first, second = Listed("first", spec("x")), Listed("second", spec("x"), spec("y"))
    registry = ToolRegistry(toolsets=[first])
    with pytest.raises(ToolRegistrationError, match="'x' is already registered"):
        registry.mount(second)
    assert registry.toolsets() == [first, registry.functions]  # the mount was undone
    assert "y" not in registry and second._listeners() == []
    seen: list[Refresh] = []
    refresh = registry.mount(second, on_refresh=seen.append)
    assert refresh.added == ["y"] and [r.spec.name for r in refresh.refused] == ["x"]
    assert seen == [refresh]
    assert registry.owner("x") is first
    with pytest.raises(ToolRegistrationError, match="mounted already"):
        registry.mount(second)
    # A wire name two toolsets would share is refused the same way.
    third = Listed("third", spec("x.y"))
    second.specs.append(spec("x__y"))
    second.changed()
    assert (
        registry.mount(third, on_refresh=seen.append)
        .refused[0]
        .error.args[0]
        .startswith("tool 'x.y' would be called 'x__y'")
    )


def test_a_replacing_registration_takes_the_name_from_its_toolset() -> None:
    builtin = FunctionToolset([spec("calc")], name="builtin")
    registry = ToolRegistry(toolsets=[builtin])
    with pytest.raises(ToolRegistrationError, match="already registered"):
        registry.register(spec("calc", "mine"))
    assert registry.functions.tools() == []  # nothing half-added
    mine = registry.register(spec("calc", "mine"), replace=True)
    assert registry["calc"] is mine and registry.owner("calc") is registry.functions
    assert builtin.tools() == []  # told it lost the name
    registry.unregister("calc")
    assert "calc" not in registry and registry.functions.tools() == []
    assert registry.register(mine) is mine  # the same tool again, after it was removed
    with pytest.raises(ToolRegistrationError, match="already registered"):
        registry.functions.add(mine)
    with pytest.raises(UnknownToolError, match="no tool named 'nope'"):
        registry.unregister("nope")


def test_a_function_toolset_adds_and_removes() -> None:
    tools = FunctionToolset([spec("a")], name="mine")
    registry = ToolRegistry(toolsets=[tools])
    tools.add(spec("b"))
    tools.add(spec("b", "again"), replace=True)
    assert registry.names_of(tools) == ["a", "b"] and registry["b"] is tools.tools()[1]
    assert tools.remove("a").name == "a"
    assert "a" not in registry
    with pytest.raises(UnknownToolError, match="toolset 'mine' has no tool named 'a'"):
        tools.remove("a")
    # A registry that refuses a replacement leaves the toolset as it was.
    other = ToolRegistry(toolsets=[FunctionToolset([spec("c")])])
    other.mount(tools)
    with pytest.raises(ToolRegistrationError):
        tools.add(spec("c"))
    assert [s.name for s in tools.tools()] == ["b"]
    kept = tools.tools()[0]
    broken = ToolSpec(
        "b",
        lambda a, c: "",
        description="Broken.",
        parameters={"type": "object", "properties": {"n": {"type": 5}}},
    )
    with pytest.raises(ToolRegistrationError, match="not a valid JSON"):
        tools.add(broken, replace=True)
    assert tools.tools() == [kept] and registry["b"] is kept


def test_the_builtin_toolset_is_the_catalog_the_agent_starts_from() -> None:
    registry, active = build_tool_set(["calculator"])
    builtin = registry.toolsets()[0]
    assert isinstance(builtin, BuiltinToolset) and builtin.name == "builtin"
    assert registry.owner("calculator") is builtin and active == ["calculator"]


def test_a_users_toolset_in_the_agents_tools_is_mounted_and_active() -> None:
    source = Listed("mine", spec("mine.a"))
    registry, active = build_tool_set(["calculator", source])
    assert active == ["calculator", "mine.a"]
    assert registry.owner("mine.a") is source
    source.specs.append(spec("mine.b"))
    source.changed()  # a tool it offers later is active in new runs too
    assert active == ["calculator", "mine.a", "mine.b"]
    source.specs.append(spec("calculator"))
    with pytest.raises(ToolRegistrationError, match="'calculator' is already registered"):
        source.changed()
    with pytest.raises(ToolRegistrationError, match="'calculator' is already registered"):
        build_tool_set([Listed("clash", spec("calculator"))])


async def test_a_session_enters_every_toolset_once_and_collects_their_issues() -> None:
    a, b = Listed("a", spec("a")), Listed("b", spec("b"))
    b.problems = [issue("b refused the key")]
    registry = ToolRegistry(toolsets=[a, b])
    async with registry.session() as issues:
        assert (a.open, b.open) == (1, 1)
        assert [i["message"] for i in issues] == ["b refused the key"]
    assert (a.open, b.open) == (0, 0)


async def test_held_toolsets_stay_open_between_sessions_until_aclose() -> None:
    a = Listed("a", spec("a"))
    registry = ToolRegistry(toolsets=[a])
    registry.hold()
    async with registry.session(), registry.session():
        assert a.open == 2
    assert a.open == 1 and a.entries == 2  # each session entered it; the first is kept
    late = Listed("late", spec("late"))
    registry.mount(late)  # a toolset mounted while held is held from its first session
    async with registry.session():
        assert (a.open, late.open) == (2, 1)
    assert (a.open, late.open) == (1, 1)
    await registry.aclose()
    assert (a.open, late.open) == (0, 0)
    async with registry.session():
        pass
    assert a.open == 0  # no longer held


async def test_a_toolset_that_fails_to_open_fails_the_session_and_the_rest_close() -> None:
    good, bad = Listed("good"), Listed("bad")
    bad.fail = RuntimeError("cannot open")
    registry = ToolRegistry(toolsets=[good, bad])
    registry.hold()
    with pytest.raises(RuntimeError, match="cannot open"):
        async with registry.session():
            pass  # pragma: no cover - never entered
    assert good.open == 1  # kept by the hold
    bad.fail = None
    async with registry.session():
        assert (good.open, bad.open) == (2, 1)  # the failed one: kept from this session on
    assert (good.open, bad.open) == (1, 1)
    await registry.aclose()
    assert (good.open, bad.open) == (0, 0)


def test_a_toolset_stops_telling_a_registry_that_unmounted_it() -> None:
    source = Listed("src", spec("a"))
    registry = ToolRegistry(toolsets=[source])
    registry.unmount(source)
    calls: list[Any] = []
    source.watch(lambda t, names: calls.append((t.name, sorted(names))))
    source.changed(takeover=["a"])
    assert calls == [("src", ["a"])] and "a" not in registry
    source.unwatch(print)  # not watching: nothing to do


def test_the_toolsets_package_knows_no_particular_source() -> None:
    """Sources depend on the protocol, never the other way: no MCP, toolsmaker or graph here."""
    package = Path(__file__).resolve().parents[2] / "ai_agent" / "tools" / "toolsets"
    allowed = {
        "ai_agent.config",
        "ai_agent.errors",
        "ai_agent.state",
        "ai_agent.tools.adapters",
        "ai_agent.tools.builtin",
        "ai_agent.tools.spec",
        "ai_agent.tools.toolsets",
    }
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ai_agent"):
                module = node.module or ""
                assert any(module == a or module.startswith(a + ".") for a in allowed), (
                    f"{path.name} imports {module}"
                )
