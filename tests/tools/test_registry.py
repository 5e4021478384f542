"""The registry: registration rules, the ToolBox protocol, and execution wrapping."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ai_agent import ToolCategory, ToolSpec, make_tool_registry
from ai_agent.errors import ToolRegistrationError, UnknownToolError
from ai_agent.state import ToolCall
from ai_agent.tools.registry import ToolRegistry, missing_env


def ok(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    return {"status": "ok", "content": args}


def spec(name: str = "t", **kw: Any) -> ToolSpec:
    kw.setdefault("description", "A tool.")
    return ToolSpec(name, kw.pop("fn", ok), **kw)


def call(name: str = "t", **args: Any) -> ToolCall:
    return {"id": "c1", "name": name, "args": args}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "bad name"}, "tool name 'bad name' is invalid"),
        ({"name": "x" * 65}, "is invalid"),
        ({"description": 3}, "description must be text"),
        ({"fn": 42}, "fn must be callable"),
        ({"parameters": {"type": "array"}}, "must be a JSON object schema"),
    ],
)
def test_invalid_specs_fail_at_registration(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolRegistrationError, match=message):
        spec(**kwargs)


def test_spec_schema_and_defaults() -> None:
    s = spec("fs.read", parameters={"properties": {"p": {"type": "string"}}}, requires_env=["A"])
    assert s.category is ToolCategory.EXTERNAL
    assert s.requires_env == ("A",)
    assert s.schema == {
        "type": "function",
        "function": {
            "name": "fs.read",
            "description": "A tool.",
            "parameters": {"properties": {"p": {"type": "string"}}, "type": "object"},
        },
    }


def test_registration_rules() -> None:
    reg = make_tool_registry([spec("a")])
    with pytest.raises(ToolRegistrationError, match="already registered"):
        reg.register(spec("a"))
    reg.register(spec("a", description="New."), replace=True)
    assert reg["a"].description == "New."
    with pytest.raises(ToolRegistrationError, match="cannot use 'a' as a tool"):
        reg.register("a")
    assert reg.unregister("a").name == "a"
    assert len(reg) == 0 and "a" not in reg
    with pytest.raises(UnknownToolError, match="no tool named 'a'; known tools: none"):
        reg["a"]


def test_toolbox_protocol() -> None:
    reg = ToolRegistry(
        [
            spec("b", category=ToolCategory.READ_ONLY),
            spec("a", preview=lambda args: f"would do {args}"),
        ]
    )
    assert [t["name"] for t in reg.catalog()] == ["a", "b"]
    assert reg.info("b") == {
        "name": "b",
        "description": "A tool.",
        "category": "read_only",
        "requires_env": [],
        "parameters": {"type": "object", "properties": {}},
    }
    assert reg.info("zz") is None
    assert [s["function"]["name"] for s in reg.schemas(["b", "zz", "a"])] == ["b", "a"]
    assert reg.preview(call("a", x=1)) == "would do {'x': 1}"
    assert reg.preview(call("b", y="é")) == 'b({"y": "é"})'
    assert reg.format_result("a", {"status": "ok", "content": "text"}) == "text"
    assert reg.format_result("a", {"status": "ok", "content": {"n": 1}}) == '{"n": 1}'
    assert reg.format_result("a", {"status": "error", "error": "bad"}) == "Error: bad"
    assert reg.format_result("a", {"status": "error"}) == "Error: the tool failed"


async def test_execute_wraps_every_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    async def slow(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(5)
        return {"status": "ok"}

    def boom(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("x")

    async def plain(args: dict[str, Any], ctx: dict[str, Any]) -> int:
        return 7

    def returns_awaitable(args: dict[str, Any], ctx: dict[str, Any]) -> Any:
        return plain(args, ctx)

    reg = ToolRegistry(
        [
            spec("slow", fn=slow, timeout=0.05),
            spec("boom", fn=boom),
            spec("plain", fn=plain),
            spec("aw", fn=returns_awaitable),
            spec("env", requires_env=["NEEDED_KEY"]),
            spec("ok"),
        ]
    )
    result = await reg.execute(call("ok", a=1), {})
    assert result["status"] == "ok" and result["content"] == {"a": 1}
    assert result["execution_time_ms"] >= 0
    timeout = await reg.execute(call("slow"), {})
    assert timeout["meta"] == {
        "code": "TIMEOUT",
        "error_type": "ToolTimeoutError",
        "timeout_s": 0.05,
    }
    assert "did not finish within 0.05s" in str(timeout["error"])
    assert "Narrow the scope" in str(timeout["error"])
    raised = await reg.execute(call("boom"), {})
    assert raised["meta"]["code"] == "TOOL_EXCEPTION"
    assert raised["meta"]["exception_types"][0] == "KeyError"  # what tool retries match on
    assert "raised KeyError" in str(raised["error"])
    assert (await reg.execute(call("plain"), {}))["content"] == 7
    assert (await reg.execute(call("aw"), {}))["content"] == 7
    missing = await reg.execute(call("env"), {})
    assert missing["meta"] == {"code": "MISSING_ENV", "missing": ["NEEDED_KEY"]}
    monkeypatch.setenv("NEEDED_KEY", "v")
    assert missing_env(reg["env"]) == []
    assert (await reg.execute(call("env"), {}))["status"] == "ok"
    unknown = await reg.execute(call("nobody"), {})
    assert unknown["meta"] == {"code": "TOOL_MISSING"}
