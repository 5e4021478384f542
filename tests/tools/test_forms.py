"""Every form of tool lands in the one registry: ToolSpec, @tool, BaseTool, pydantic, LangChain."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, ClassVar

import pytest
from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from ai_agent import BaseTool, ToolCategory, ToolResult, ToolSpec, tool
from ai_agent.errors import ToolRegistrationError
from ai_agent.state import ToolCall
from ai_agent.tools import ToolRegistry, as_tool_spec
from ai_agent.tools.adapters import is_tool
from ai_agent.tools.docstrings import parse_docstring
from ai_agent.tools.schema import Omittable, compact_schema


def call(tool_name: str, /, **args: Any) -> ToolCall:
    return {"id": "c1", "name": tool_name, "args": args}


async def run(reg: ToolRegistry, tool_name: str, /, **args: Any) -> ToolResult:
    return await reg.execute(call(tool_name, **args), {"thread_id": "t"})


# @tool functions --------------------------------------------------------------------------------


@tool(category="read_only", group="demo")
def scale(value: float, factor: int = 2, *, label: str | None = None) -> dict[str, Any]:
    """Multiply a value.

    The result is rounded to two places.

    Args:
        value: The number to scale.
        factor (int): How many times,
            at least one.
        label: An optional name.

    Returns:
        The scaled value.
    """
    return {"label": label, "value": round(value * factor, 2)}


def test_tool_decorator_builds_the_schema_from_signature_and_docstring() -> None:
    spec = as_tool_spec(scale)
    assert scale(1.5) == {"label": None, "value": 3.0}  # still a plain function
    assert spec.name == "scale" and spec.group == "demo"
    assert spec.category is ToolCategory.READ_ONLY
    assert spec.description == "Multiply a value.\n\nThe result is rounded to two places."
    params = dict(spec.parameters or {})
    assert params["required"] == ["value"]
    assert params["additionalProperties"] is False
    assert params["properties"]["value"] == {
        "description": "The number to scale.",
        "type": "number",
    }
    assert params["properties"]["factor"] == {
        "default": 2,
        "description": "How many times, at least one.",
        "type": "integer",
    }
    assert "Returns" not in spec.description


async def test_tool_functions_validate_and_convert_arguments() -> None:
    reg = ToolRegistry([scale])
    ok = await run(reg, "scale", value="2.5", factor=3)
    assert ok["status"] == "ok" and ok["content"] == {"label": None, "value": 7.5}
    bad = await run(reg, "scale", value="x", extra=1)
    assert bad["status"] == "error"
    assert bad["meta"]["code"] == "SCHEMA_VIOLATION"
    assert bad["meta"]["problems"] == [
        "value: Input should be a valid number, unable to parse string as a number",
        "extra: Extra inputs are not permitted",
    ]
    assert reg.review(call("scale", value=1)) == {"problems": [], "escalate": None}


def test_a_missing_description_fails_when_decorated() -> None:
    def undocumented(x: int) -> int:
        return x

    with pytest.raises(ToolRegistrationError, match="'undocumented' has no description"):
        tool(undocumented)
    with pytest.raises(ToolRegistrationError, match="has no description"):
        as_tool_spec(undocumented)


def test_signatures_without_a_schema_fail_at_registration() -> None:
    def star(*values: int) -> int:
        """Add numbers."""
        return sum(values)

    with pytest.raises(ToolRegistrationError, match=r"\*values cannot be described"):
        tool(star)

    def hint(x: UnknownType) -> None:  # type: ignore[name-defined]  # noqa: F821
        """Use an unknown type."""

    with pytest.raises(ToolRegistrationError, match="cannot read the type hints"):
        tool(hint)

    with pytest.raises(ToolRegistrationError, match="unknown category 'loud'"):
        tool(category="loud")(scale)


Count = Annotated[int, Field(ge=1, description="How many.")]


@tool(category="read_only")
def pick(
    kinds: list[str],
    times: Count = 1,
    kind: str = Field("plain", json_schema_extra={"enum": ["plain", "fancy"]}),
    label: Omittable[str] = None,
    at: Omittable[Annotated[int, Field(ge=0)]] = None,
) -> dict[str, Any]:
    """Pick something.

    Args:
        kinds: What to pick from.
        kind: Which kind.
    """
    return {"times": times, "kind": kind, "label": label, "at": at}


async def test_annotations_field_defaults_and_omittable_arguments_shape_the_schema() -> None:
    properties = dict(as_tool_spec(pick).parameters or {})["properties"]
    # A Field in the annotation keeps its description when the docstring has none.
    assert properties["times"] == {
        "type": "integer",
        "minimum": 1,
        "default": 1,
        "description": "How many.",
    }
    # A Field as the default brings what only the call site knows; the docstring adds the text.
    assert properties["kind"] == {
        "type": "string",
        "enum": ["plain", "fancy"],
        "default": "plain",
        "description": "Which kind.",
    }
    # An omittable argument shows its type alone: not required, no null, no default.
    assert properties["label"] == {"type": "string"}
    assert properties["at"] == {"type": "integer", "minimum": 0}
    assert dict(as_tool_spec(pick).parameters or {})["required"] == ["kinds"]
    reg = ToolRegistry([pick])
    left_out = await run(reg, "pick", kinds=["a"])
    assert left_out["content"] == {"times": 1, "kind": "plain", "label": None, "at": None}
    given = await run(reg, "pick", kinds=["a"], label="x", at=2)
    assert given["content"] == {"times": 1, "kind": "plain", "label": "x", "at": 2}
    assert (await run(reg, "pick", kinds=["a"], at=-1))["meta"]["code"] == "SCHEMA_VIOLATION"


def test_a_compact_schema_says_the_same_in_fewer_words() -> None:
    nullable = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "default": None}
    assert compact_schema({"type": "array", "items": nullable}) == {
        "type": "array",
        "items": {"type": ["integer", "null"], "minimum": 0, "default": None},
    }
    # What a list of types cannot say stays an anyOf: more options, a reference, a clash.
    unchanged = [
        {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]},
        {"anyOf": [{"type": "string", "default": "x"}, {"type": "null"}], "default": None},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    ]
    assert [compact_schema(s) for s in unchanged] == unchanged
    assert compact_schema({"type": "object", "additionalProperties": False}) == {
        "type": "object",
        "additionalProperties": False,
    }


async def test_async_tools_positional_only_parameters_and_the_context() -> None:
    seen: list[dict[str, Any]] = []

    @tool(name="fetch", category=ToolCategory.EXTERNAL, requires_env=["FETCH_KEY"], timeout=5)
    async def fetch_it(path: str, /, ctx: dict[str, Any], limit: int = 3) -> str:
        """Fetch a path."""
        seen.append(ctx)
        return f"{path}:{limit}"

    spec = as_tool_spec(fetch_it)
    assert (spec.name, spec.requires_env, spec.timeout) == ("fetch", ("FETCH_KEY",), 5)
    assert "ctx" not in spec.schema["function"]["parameters"]["properties"]
    os_env = pytest.MonkeyPatch()
    os_env.setenv("FETCH_KEY", "value-123456")
    try:
        result = await run(ToolRegistry([fetch_it]), "fetch", path="/a")
    finally:
        os_env.undo()
    assert result["content"] == "/a:3"
    assert seen[0]["env"] == {"FETCH_KEY": "value-123456"} and seen[0]["thread_id"] == "t"


async def test_plain_functions_are_tools_with_the_strictest_category() -> None:
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    spec = as_tool_spec(shout)
    assert spec.category is ToolCategory.EXTERNAL
    assert (await run(ToolRegistry([shout]), "shout", text="hi"))["content"] == "HI"


# pydantic models with __call__ -------------------------------------------------------------------


class Greeting(BaseModel):
    """Greet someone by name."""

    name: str = Field(description="Who to greet.")
    times: int = Field(default=1, ge=1, le=3)

    def __call__(self) -> str:
        return " ".join([f"hello {self.name}"] * self.times)


class AsyncGreeting(Greeting):
    """Greet someone, asynchronously, saying which run asks."""

    async def __call__(self, ctx: dict[str, Any]) -> str:  # type: ignore[override]
        await asyncio.sleep(0)
        return f"hi {self.name} from {ctx['thread_id']}"


async def test_pydantic_models_with_call_are_tools() -> None:
    reg = ToolRegistry()
    spec = reg.register(Greeting, category="read_only")
    assert spec.name == "greeting" and spec.description == "Greet someone by name."
    props = spec.schema["function"]["parameters"]["properties"]
    assert props["name"] == {"description": "Who to greet.", "type": "string"}
    assert (await run(reg, "greeting", name="ada", times=2))["content"] == "hello ada hello ada"
    too_many = await run(reg, "greeting", name="ada", times=9)
    assert too_many["meta"]["code"] == "SCHEMA_VIOLATION"
    assert too_many["meta"]["problems"] == ["times: Input should be less than or equal to 3"]
    reg.register(tool(name="hi")(AsyncGreeting))
    assert (await run(reg, "hi", name="bob"))["content"] == "hi bob from t"


def test_pydantic_models_need_a_docstring_and_a_call() -> None:
    class NoCall(BaseModel):
        """Does nothing."""

        x: int = 0

    class NoDoc(BaseModel):
        x: int = 0

        def __call__(self) -> int:
            return self.x

    with pytest.raises(ToolRegistrationError, match="has no __call__"):
        as_tool_spec(NoCall)
    with pytest.raises(ToolRegistrationError, match="give NoDoc a docstring"):
        as_tool_spec(NoDoc)


# BaseTool subclasses ---------------------------------------------------------------------------


class Annotate(BaseTool):
    """The tool-oversight spec's example shape."""

    name = "gnorm_annotate"
    description = "Annotate text with named entities."
    category = ToolCategory.EXTERNAL
    requires_env = ("GNORM_KEY",)

    async def execute(self, text: str, limit: int = 5) -> ToolResult:
        """Annotate.

        Args:
            text: The text to annotate.
            limit: At most this many entities.
        """
        if not text:
            return {"status": "error", "error": "No text provided"}
        found = [w for w in text.split() if w.istitle()][:limit]
        return {"status": "ok", "content": {"annotations": found, "count": len(found)}}

    def format_result(self, result: ToolResult) -> str:
        if result["status"] != "ok":
            return f"GNORM annotation failed: {result.get('error')}"
        count = result["content"]["count"]
        return "No entities found in the text." if not count else f"Found {count} entities"

    def preview(self, args: dict[str, Any]) -> str:
        return f"Execute GNORM annotation on {len(args.get('text', ''))} characters?"


class Loose(BaseTool):
    name = "loose"
    description = "Take anything."
    category = ToolCategory.READ_ONLY

    async def execute(self, **kwargs: Any) -> ToolResult:
        return {"status": "ok", "content": sorted(kwargs)}


class Schemed(BaseTool):
    name = "schemed"
    description = "Take a number."
    category = ToolCategory.READ_ONLY
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }

    async def execute(self, ctx: dict[str, Any], **kwargs: Any) -> ToolResult:
        return {"status": "ok", "content": [kwargs["n"], ctx["thread_id"]]}


class SpecStyle(BaseTool):
    """Returns the spec's dataclass-style result."""

    name = "spec_style"
    description = "Return a spec-style result."
    category = ToolCategory.READ_ONLY

    async def execute(self, fail: bool = False) -> Any:
        class Result:
            success = not fail
            data: ClassVar[dict[str, int]] = {"x": 1}
            error_message = "it broke"

        return Result()


async def test_base_tools_are_adapted_with_their_format_result_and_preview(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GNORM_KEY", "gnorm-secret-value")
    reg = ToolRegistry([Annotate(), Loose, Schemed(), SpecStyle()])
    spec = reg["gnorm_annotate"]
    assert spec.requires_env == ("GNORM_KEY",)
    assert spec.schema["function"]["parameters"]["properties"]["text"] == {
        "description": "The text to annotate.",
        "type": "string",
    }
    result = await run(reg, "gnorm_annotate", text="Ada met Alan in Rome")
    assert result["content"] == {"annotations": ["Ada", "Alan", "Rome"], "count": 3}
    assert result["summary"] == "Found 3 entities"
    none = await run(reg, "gnorm_annotate", text="nothing here")
    assert none["summary"] == "No entities found in the text."
    failed = await run(reg, "gnorm_annotate", text="")
    assert failed["summary"] == "GNORM annotation failed: No text provided"
    assert reg.preview(call("gnorm_annotate", text="abc")) == (
        "Execute GNORM annotation on 3 characters?"
    )
    assert (await run(reg, "loose", b=1, a=2))["content"] == ["a", "b"]
    assert (await run(reg, "schemed", n=4))["content"] == [4, "t"]
    assert (await run(reg, "schemed", n="4"))["meta"]["problems"] == [
        "n: '4' is not of type 'integer'"
    ]
    assert (await run(reg, "spec_style"))["content"] == {"x": 1}
    broken = await run(reg, "spec_style", fail=True)
    assert (broken["status"], broken["error"]) == ("error", "it broke")


def test_base_tool_classes_need_a_no_argument_constructor() -> None:
    class Needs(Loose):
        def __init__(self, x: int) -> None:
            self.x = x

    with pytest.raises(ToolRegistrationError, match=r"cannot build the tool Needs\(\)"):
        as_tool_spec(Needs)


# LangChain tools -------------------------------------------------------------------------------


def _multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def _refuse(reason: str) -> str:
    """Refuse with a reason."""
    raise ToolException(f"refused: {reason}")


async def test_langchain_tools_are_adapted() -> None:
    multiply = StructuredTool.from_function(_multiply)
    refuse = StructuredTool.from_function(_refuse, name="refuse")
    reg = ToolRegistry()
    spec = reg.register(multiply, namespace="lc", category="read_only")
    reg.register(refuse)
    assert spec.name == "lc._multiply" and spec.category is ToolCategory.READ_ONLY
    assert reg["refuse"].category is ToolCategory.EXTERNAL  # LangChain says nothing: strictest
    props = spec.schema["function"]["parameters"]["properties"]
    assert set(props) == {"a", "b"}
    assert (await run(reg, "lc._multiply", a=6, b=7))["content"] == 42
    bad = await run(reg, "lc._multiply", a="six", b=7)
    assert bad["meta"]["code"] == "SCHEMA_VIOLATION"
    refused = await run(reg, "refuse", reason="no")
    assert (refused["status"], refused["error"]) == ("error", "refused: no")


# Options, detection and the docstring reader ---------------------------------------------------


def test_registration_options_override_what_a_tool_says() -> None:
    base = ToolSpec("t", lambda a, c: 1, description="T.", category=ToolCategory.READ_ONLY)
    spec = as_tool_spec(base, namespace="ns", category="modification", group="g", timeout=3)
    assert (spec.name, spec.category, spec.group, spec.timeout) == (
        "ns.t",
        ToolCategory.MODIFICATION,
        "g",
        3,
    )
    with pytest.raises(ToolRegistrationError, match="unknown tool option"):
        as_tool_spec(base, colour="red")
    with pytest.raises(ToolRegistrationError, match="unknown category"):
        as_tool_spec(base, category="wild")
    with pytest.raises(ToolRegistrationError, match="cannot use 42 as a tool"):
        as_tool_spec(42)
    assert is_tool(base) and is_tool(Greeting) and is_tool(Annotate) and not is_tool("x")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"group": "bad group"}, "group 'bad group' is invalid"),
        ({"timeout": 0}, "timeout must be above 0"),
        ({"category": "loud"}, "unknown category 'loud'"),
    ],
)
def test_new_spec_fields_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolRegistrationError, match=message):
        ToolSpec("t", lambda a, c: 1, description="T.", **kwargs)


def test_docstring_reader() -> None:
    doc = parse_docstring(
        """Summary line
        continued.

        Second paragraph.

        Args:
            path (str): Where.
            *rest: Everything else.
            flag: On or off.

        Example:
            >>> f(1)
        """
    )
    assert doc.description == "Summary line continued.\n\nSecond paragraph."
    assert doc.args == {"path": "Where.", "rest": "Everything else.", "flag": "On or off."}
    assert parse_docstring(None).description == ""
