"""Registry features: groups, namespaces, enable/disable, snapshots, wire names, secrets, limits."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from ai_agent import ToolCategory, ToolResult, ToolSpec
from ai_agent.errors import ToolRegistrationError, UnknownToolError
from ai_agent.state import ToolCall
from ai_agent.tools import ToolRegistry, ToolSet
from ai_agent.tools.naming import WIRE_NAME, check_wire_name, wire_name
from ai_agent.tools.results import Scrubber, clip_text, normalise, to_jsonable


def spec(name: str, **kw: Any) -> ToolSpec:
    kw.setdefault("description", f"The {name} tool.")
    kw.setdefault("category", ToolCategory.READ_ONLY)
    return ToolSpec(name, kw.pop("fn", lambda a, c: {"status": "ok", "content": name}), **kw)


def call(tool_name: str, /, **args: Any) -> ToolCall:
    return {"id": "c1", "name": tool_name, "args": args}


def catalog() -> ToolRegistry:
    return ToolRegistry(
        [
            spec("fs.read", group="files"),
            spec("fs.write", group="files", category=ToolCategory.MODIFICATION),
            spec("net.get", group="web"),
            spec("calc"),
        ]
    )


def test_groups_namespaces_and_selection() -> None:
    reg = catalog()
    assert reg.groups() == {"files": ["fs.read", "fs.write"], "web": ["net.get"]}
    assert reg.namespaces() == {"fs": ["fs.read", "fs.write"], "net": ["net.get"]}
    assert reg.select("files") == ["fs.read", "fs.write"]
    assert reg.select("fs") == ["fs.read", "fs.write"]
    assert reg.select(["calc", "fs.*", "calc"]) == ["calc", "fs.read", "fs.write"]
    assert reg.select("*.get") == ["net.get"]
    with pytest.raises(UnknownToolError, match=r"unknown tool 'nope'; tools: calc, .*; groups"):
        reg.select("nope")
    with pytest.raises(UnknownToolError, match=r"unknown tool 'zz\.\*'"):
        reg.select("zz.*")


def test_disabled_tools_stay_registered_but_leave_the_snapshot() -> None:
    reg = catalog()
    assert reg.disable("files") == ["fs.read", "fs.write"]
    assert "fs.read" in reg and not reg.is_enabled("fs.read")
    assert reg.snapshot().names == ["calc", "net.get"]
    assert reg.info("fs.read") is None
    assert reg.schemas(["fs.read", "calc"])[0]["function"]["name"] == "calc"
    assert [t["name"] for t in reg.catalog()] == ["calc", "net.get"]
    assert reg.enable("fs.read") == ["fs.read"]
    assert reg.snapshot().names == ["calc", "fs.read", "net.get"]
    reg.unregister("fs.write")  # a disabled tool can be removed too
    assert "fs.write" not in reg


async def test_a_disabled_tool_never_executes() -> None:
    ran: list[int] = []
    reg = ToolRegistry([spec("x", fn=lambda a, c: ran.append(1))])
    reg.disable("x")
    result = await reg.execute(call("x"), {})
    assert result["meta"] == {"code": "TOOL_MISSING"} and ran == []


def test_snapshots_are_immutable_and_shared_until_a_change() -> None:
    reg = catalog()
    first = reg.snapshot()
    assert reg.snapshot() is first
    reg.register(spec("new"))
    second = reg.snapshot()
    assert second is not first
    assert "new" in second.names and "new" not in first.names


async def test_turn_view_pins_one_snapshot_per_cycle() -> None:
    reg = ToolRegistry([spec("a", fn=lambda a, c: "v1")])
    view = reg.view()
    assert [s["function"]["name"] for s in view.schemas(["a"])] == ["a"]
    # Mid-cycle changes: replaced, plus a new tool; the cycle keeps what the model saw.
    reg.register(spec("a", fn=lambda a, c: "v2"), replace=True)
    reg.register(spec("b"))
    assert (await view.execute(call("a"), {}))["content"] == "v1"
    assert view.info("b") is None
    assert [t["name"] for t in view.catalog()] == ["a"]
    assert view.review(call("a")) == {"problems": [], "escalate": None}
    assert view.preview(call("a")) == "a({})"
    assert view.format_result("a", {"status": "ok", "content": "x"}) == "x"
    # The next cycle sees the registry as it is now.
    assert [s["function"]["name"] for s in view.schemas(["a", "b"])] == ["a", "b"]
    assert (await view.execute(call("a"), {}))["content"] == "v2"
    assert view.pinned is reg.snapshot()


# Wire names ------------------------------------------------------------------------------------


def test_wire_names_are_reversible_through_the_registry() -> None:
    reg = catalog()
    schemas = reg.schemas(["fs.read", "net.get", "calc"])
    names = [s["function"]["name"] for s in schemas]
    assert names == ["fs__read", "net__get", "calc"]
    assert all(WIRE_NAME.match(n) for n in names)
    assert reg.info("fs__read")["name"] == "fs.read"  # type: ignore[index]
    assert reg.info("fs.read")["name"] == "fs.read"  # type: ignore[index]
    assert reg.snapshot().canonical("nope") is None
    assert wire_name("a.b.c") == "a__b__c"


def test_names_the_wire_cannot_carry_or_that_collide_are_refused() -> None:
    reg = catalog()
    with pytest.raises(ToolRegistrationError, match="would be called 'fs__read'"):
        reg.register(spec("fs__read"))
    long_name = "n" * 40 + "." + "m" * 30
    with pytest.raises(ToolRegistrationError, match="72 characters on the wire"):
        reg.register(spec(long_name))
    assert check_wire_name("ok.name") == "ok__name"
    # Replacing a tool keeps its wire name; unregistering frees it.
    reg.register(spec("fs.read"), replace=True)
    reg.unregister("fs.read")
    reg.register(spec("fs__read"))
    assert reg.info("fs__read")["name"] == "fs__read"  # type: ignore[index]


async def test_wire_names_execute() -> None:
    reg = catalog()
    result = await reg.execute(call("net__get"), {})
    assert result["content"] == "net.get"
    assert result["summary"] == "net.get: net.get"


# Execution: validation, secrets, summaries -----------------------------------------------------


async def test_invalid_arguments_never_reach_the_tool() -> None:
    ran: list[Any] = []
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    reg = ToolRegistry([spec("t", fn=lambda a, c: ran.append(a), parameters=schema)])
    for args in ({}, {"n": "1"}):
        result = await reg.execute(call("t", **args), {})
        assert result["meta"]["code"] == "SCHEMA_VIOLATION"
    not_a_dict: ToolCall = {"id": "c", "name": "t", "args": [1]}  # type: ignore[typeddict-item]
    assert (await reg.execute(not_a_dict, {}))["meta"]["problems"] == [
        "arguments: must be a JSON object, got list"
    ]
    assert ran == []
    assert (await reg.execute(call("t", n=1), {}))["status"] == "ok"
    assert ran == [{"n": 1}]


def test_an_invalid_json_schema_is_refused_at_registration() -> None:
    broken = spec("t", parameters={"type": "object", "properties": {"n": {"type": 5}}})
    with pytest.raises(ToolRegistrationError, match="'t': its parameters are not a valid JSON"):
        ToolRegistry([broken])


async def test_a_broken_validator_blocks_the_call() -> None:
    def validator(args: dict[str, Any]) -> list[str]:
        raise RuntimeError("bug")

    reg = ToolRegistry([spec("t", validator=validator)])
    assert reg.review(call("t")) == {
        "problems": ["arguments: could not be checked (RuntimeError)"],
        "escalate": None,
    }


async def test_secrets_are_scrubbed_from_results_errors_and_summaries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret, other = "canary-secret-8d1f", "opt-secret-77aa"
    monkeypatch.setenv("SVC_KEY", secret)
    monkeypatch.setenv("OPTIONAL_THING", other)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "token-value-12345")

    def leaky(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        key = ctx["env"]["SVC_KEY"]
        return {
            "status": "ok",
            "content": {"echo": f"key={key}", "list": [other, "token-value-12345"]},
            "meta": {key: "as a key too"},
        }

    def raiser(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        raise RuntimeError(f"failed with {ctx['env']['SVC_KEY']}")

    reg = ToolRegistry(
        [
            spec("leaky", fn=leaky, requires_env=["SVC_KEY"], secret_env=["OPTIONAL_THING"]),
            spec(
                "raiser",
                fn=raiser,
                requires_env=["SVC_KEY"],
                preview=lambda a: f"uses {secret}",
                escalate=lambda a: f"because {secret}",
            ),
        ]
    )
    result = await reg.execute(call("leaky"), {})
    assert result["content"] == {"echo": "key=***", "list": ["***", "***"]}
    assert result["meta"] == {"***": "as a key too"}
    raised = await reg.execute(call("raiser"), {})
    assert raised["error"] == "tool 'raiser' raised RuntimeError: failed with ***"
    assert secret not in str(raised) and secret not in str(result)
    assert reg.preview(call("raiser")) == "uses ***"
    assert reg.review(call("raiser"))["escalate"] == "because ***"


async def test_summaries_come_from_format_result_and_survive_its_bugs() -> None:
    def bad_format(result: ToolResult) -> str:
        raise ValueError("oops")

    reg = ToolRegistry(
        [
            spec("pretty", format_result=lambda r: f"PRETTY {r['content']}"),
            spec("broken", format_result=bad_format),
            spec("long", fn=lambda a, c: "x" * 500),
            spec("own", fn=lambda a, c: {"status": "ok", "content": 1, "summary": "mine"}),
        ]
    )
    assert (await reg.execute(call("pretty"), {}))["summary"] == "PRETTY pretty"
    assert (await reg.execute(call("broken"), {}))["summary"] == "broken: broken"
    long_summary = (await reg.execute(call("long"), {}))["summary"]
    assert long_summary == "long: " + "x" * 160 + "..."
    assert (await reg.execute(call("own"), {}))["summary"] == "mine"


def test_previews_are_bounded_and_survive_their_bugs() -> None:
    def broken(args: dict[str, Any]) -> str:
        raise KeyError("x")

    reg = ToolRegistry(
        [
            spec("big", preview=lambda a: "line\n" * 2000),
            spec("bad", preview=broken),
            spec("odd", preview=lambda a: 42),
            spec("esc", escalate=broken),
        ]
    )
    big = reg.preview(call("big"))
    assert len(big) < 4100 and big.endswith("more line(s))")
    assert reg.preview(call("bad", a=1)) == 'bad({"a": 1})'
    assert reg.preview(call("odd")) == "odd({})"
    assert reg.review(call("esc"))["escalate"] == "esc could not check whether this call is safe"
    assert reg.review(call("ghost")) == {"problems": [], "escalate": None}
    assert reg.preview(call("ghost", a=1)) == 'ghost({"a": 1})'


async def test_sync_tools_run_off_the_event_loop() -> None:
    def blocking(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        time.sleep(0.3)
        return "slept"

    reg = ToolRegistry([spec("block", fn=blocking)])
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    result = await reg.execute(call("block"), {})
    task.cancel()
    assert result["content"] == "slept" and ticks >= 10


async def test_a_timed_out_tool_gets_a_short_status_and_a_hint() -> None:
    async def slow(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        await asyncio.sleep(10)
        return "late"

    reg = ToolRegistry([spec("slow", fn=slow)], timeout=0.05)
    result = await reg.execute(call("slow"), {})
    assert result["status"] == "error"
    assert result["error"] == (
        "ToolTimeoutError: slow did not finish within 0.05s and was stopped. Narrow the scope "
        "(a smaller directory, a more specific pattern, fewer results) and try again."
    )
    assert result["meta"]["error_type"] == "ToolTimeoutError"
    assert isinstance(ToolSet({}).timeout, float)


# Result helpers --------------------------------------------------------------------------------


def test_results_are_made_json_data() -> None:
    class Thing:
        def __str__(self) -> str:
            return "thing"

    assert normalise({"status": "ok", "content": {"t": Thing(), "s": {1}}}) == {
        "status": "ok",
        "content": {"t": "thing", "s": [1]},
    }
    assert normalise({"status": "error", "error": 5, "meta": [1]}) == {
        "status": "error",
        "error": "5",
        "meta": {"value": [1]},
    }
    assert normalise({"success": True, "data": (1, 2)}) == {"status": "ok", "content": [1, 2]}
    assert normalise({"success": "yes"})["content"] == {"success": "yes"}
    assert to_jsonable(b"ab") == "ab"


def test_clip_and_scrub_helpers() -> None:
    assert clip_text("short", 10, note="n") == "short"
    clipped = clip_text("a" * 100, 30, note="see x")
    assert clipped.startswith("a" * 20) and clipped.endswith("a" * 10)
    assert "[... 70 of 100 characters clipped; see x ...]" in clipped
    assert not Scrubber(["short", "", "abcdefg"])  # too short to replace safely
    assert Scrubber(["abcdefgh", "abcdefgh-ij"]).text("xabcdefgh-ijx abcdefgh") == "x***x ***"


class Kept:
    """An output store in memory."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    async def save_output(self, thread_id: str, iteration: int, call: ToolCall, text: str) -> str:
        ref = f"out-{iteration}-{call['id']}"
        self.texts[ref] = text
        return ref


@pytest.mark.parametrize(
    "result",
    [
        ToolResult(status="ok", content="a" * 1000),
        ToolResult(status="ok", content={"rows": ["b" * 50] * 30}),
        ToolResult(status="error", error="E" * 1000),
    ],
)
async def test_bounding_is_stored_once_and_idempotent(result: ToolResult) -> None:
    from ai_agent.tools.results import bound_output, is_bounded, model_text

    kept = Kept()
    text = model_text(result)
    where = ("t-1", 2, call("x"))
    shown, bounded = await bound_output(kept, where, text, result, 300)
    assert kept.texts == {"out-2-c1": text}
    assert model_text(bounded) == shown  # the bounded result reads as the model saw it
    assert is_bounded(shown, bounded, 300) and not is_bounded(text, result, 300)
    # Bounding again (a replay, a reused journal entry) changes nothing and keeps nothing new.
    kept.texts.clear()
    again = await bound_output(kept, ("another-thread", 2, call("x")), shown, bounded, 300)
    assert again == (shown, bounded) and kept.texts == {}


async def test_a_clipped_looking_result_of_another_shape_is_bounded_again() -> None:
    from ai_agent.tools.results import bound_output, is_bounded

    meta = {"clipped": True, "full_chars": 5000, "output_ref": "x"}
    for text in ("z" * 1000, "z" * 200 + "\n[... 4700 of 5000 characters clipped; n" + "z" * 800):
        fake = ToolResult(status="ok", content=text, meta=meta)
        assert not is_bounded(text, fake, 300)
        shown, _ = await bound_output(None, ("t", 1, call("x")), text, fake, 300)
        assert "the full output was not kept" in shown and len(shown) < 500


async def test_results_have_a_hard_limit_unless_it_is_off() -> None:
    big = spec("big", fn=lambda a, c: "x" * 5000)
    limited = await ToolSet({"big": big}, max_result_chars=1000).execute(call("big"), {})
    assert limited["status"] == "error" and limited["meta"]["code"] == "OUTPUT_TOO_LARGE"
    free = await ToolSet({"big": big}, max_result_chars=None).execute(call("big"), {})
    assert free["status"] == "ok" and free["content"] == "x" * 5000
