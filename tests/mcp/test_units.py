"""The pure parts: ${VAR} expansion and secrets, auth headers, categories, names, results."""

from __future__ import annotations

import base64
import hashlib
from types import SimpleNamespace
from typing import Any

import pytest

from ai_agent.config import McpServerConfig
from ai_agent.errors import McpConnectError, McpEnvError, ToolRegistrationError
from ai_agent.state import ToolResult
from ai_agent.tools import ToolCategory
from ai_agent.tools.mcp import category_for, convert_result, local_names, resolve
from ai_agent.tools.mcp.adapt import mcp_tool_spec, selected
from ai_agent.tools.mcp.resolve import referenced_variables

Ns = SimpleNamespace  # results and tools of the MCP client are read by attribute


# ${VAR} expansion and auth ----------------------------------------------------------------------
def test_references_expand_at_connect_time_with_defaults() -> None:
    config = McpServerConfig(
        name="s",
        command="run",
        args=["--root", "${ROOT}", "--mode=${MODE:-safe}", "${EMPTY:-fallback}"],
        env={"API_TOKEN": "${MY_TOKEN}", "PLAIN": "${ROOT}/x"},
        cwd="${ROOT}",
    )
    environ = {"ROOT": "/data", "MY_TOKEN": "tok-abcdef", "EMPTY": ""}
    resolved = resolve(config, environ)
    assert resolved.args == ("--root", "/data", "--mode=safe", "fallback")
    assert dict(resolved.env) == {"API_TOKEN": "tok-abcdef", "PLAIN": "/data/x"}
    assert resolved.cwd == "/data"
    # env entries named like secrets are secrets; other expansions are not.
    assert resolved.secrets == ("tok-abcdef",)
    assert "MY_TOKEN" in resolved.secret_env
    assert "/data" not in resolved.secrets
    assert "tok-abcdef" not in repr(resolved)


def test_a_variable_named_like_a_secret_is_one_wherever_it_is_used() -> None:
    config = McpServerConfig(name="s", command="run", args=["--key=${SERVICE_API_KEY}"])
    resolved = resolve(config, {"SERVICE_API_KEY": "k-9876543"})
    assert resolved.secrets == ("k-9876543",)
    assert resolved.target == "run --key=***"


@pytest.mark.parametrize(
    ("auth", "header", "value"),
    [
        ({"key_env": "K"}, "Authorization", "Bearer k-123456"),
        ({"key": "${K}"}, "Authorization", "Bearer k-123456"),
        ({"key_env": "K", "header": "X-API-Key"}, "X-API-Key", "k-123456"),
        ({"key": "${K}", "header": "X-API-Key", "scheme": "Token"}, "X-API-Key", "Token k-123456"),
        ({"key_env": "K", "scheme": ""}, "Authorization", "k-123456"),
        ({"key": "literal-key-1"}, "Authorization", "Bearer literal-key-1"),
    ],
)
def test_auth_headers(auth: dict[str, Any], header: str, value: str) -> None:
    config = McpServerConfig(name="s", url="http://h/mcp", auth=auth, headers={"X-Tenant": "t1"})
    resolved = resolve(config, {"K": "k-123456"})
    assert dict(resolved.headers) == {"X-Tenant": "t1", header: value}
    key = value.rsplit(maxsplit=1)[-1]
    assert key in resolved.secrets
    assert resolved.scrubber.text(f"sent {value}") == f"sent {value.replace(key, '***')}"


def test_missing_and_empty_variables_are_named_never_shown() -> None:
    config = McpServerConfig(name="api", url="http://h/mcp", auth={"key_env": "API_KEY"})
    with pytest.raises(McpEnvError) as caught:
        resolve(config, {})
    assert caught.value.variable == "API_KEY"
    assert caught.value.server == "api"
    assert caught.value.issue_code == "MISSING_ENV"
    assert "API_KEY is not set (auth.key_env refers to it)" in str(caught.value)
    with pytest.raises(McpEnvError, match="API_KEY is empty"):
        resolve(config, {"API_KEY": ""})
    spaced = {"API_KEY": "abc def-123"}
    with pytest.raises(McpEnvError, match="spaces or control characters") as bad:
        resolve(config, spaced)
    assert "abc def-123" not in str(bad.value)
    header = McpServerConfig(name="h", url="http://h/mcp", headers={"X-T": "${TENANT}"})
    with pytest.raises(McpEnvError, match=r"headers\.X-T refers to it"):
        resolve(header, {})
    with pytest.raises(McpEnvError, match="header X-T has line breaks"):
        resolve(header, {"TENANT": "a\r\nX-Evil: 1"})


def test_an_expanded_url_must_be_http() -> None:
    config = McpServerConfig(name="s", url="${BASE}/mcp")
    assert resolve(config, {"BASE": "https://h"}).url == "https://h/mcp"
    with pytest.raises(McpConnectError, match="must start with http"):
        resolve(config, {"BASE": "ftp://h"})


def test_referenced_variables() -> None:
    config = McpServerConfig(
        name="s",
        url="http://h/${A}",
        headers={"X": "${B}"},
        auth={"key": "${C}-${A}"},
    )
    assert referenced_variables(config) == ["A", "B", "C"]


# Categories -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        ({"readOnlyHint": True}, ToolCategory.READ_ONLY),
        ({"readOnlyHint": True, "openWorldHint": False}, ToolCategory.READ_ONLY),
        ({"readOnlyHint": True, "openWorldHint": True}, ToolCategory.EXTERNAL),
        ({"destructiveHint": True}, ToolCategory.MODIFICATION),
        ({"readOnlyHint": False, "destructiveHint": False}, ToolCategory.MODIFICATION),
        ({"readOnlyHint": False, "openWorldHint": True}, ToolCategory.EXTERNAL),
        ({"openWorldHint": True}, ToolCategory.EXTERNAL),
        ({"openWorldHint": False}, ToolCategory.EXTERNAL),  # says nothing about what it does
        ({"title": "x"}, ToolCategory.EXTERNAL),
        ({}, ToolCategory.EXTERNAL),
        (None, ToolCategory.EXTERNAL),
    ],
)
def test_categories_from_annotations(hints: Any, expected: ToolCategory) -> None:
    assert category_for(hints, "t") is expected
    as_object = Ns(**hints) if hints is not None else None
    assert category_for(as_object, "t") is expected


def test_category_overrides_win_first_match_first() -> None:
    hints = {"readOnlyHint": True}
    overrides = {"write_*": "modification", "*": "external"}
    assert category_for(hints, "write_file", overrides) is ToolCategory.MODIFICATION
    assert category_for(hints, "read_file", overrides) is ToolCategory.EXTERNAL


def test_selection() -> None:
    assert selected("a", [], [])
    assert not selected("a", ["b*"], [])
    assert not selected("b1", ["b*"], ["b1"])


# Names ------------------------------------------------------------------------------------------
def test_local_names_fit_the_wire_and_never_collide() -> None:
    server = "s" * 20
    names = local_names(server, ["ok_name", "a.b", "a_b", "9lives", "x" * 80, "x" * 80 + "y", ""])
    for local in names:
        assert len(f"{server}__{local}") <= 64
        assert local[0].isalpha() or local[0] == "_"
    assert names["ok_name"] == "ok_name"
    assert names["a_b"] == "a_b"  # a name that fits keeps it, even listed after "a.b"
    assert local_names("s", ["x", "x"]) == {"x": "x"}  # one tool, however often listed
    assert sorted(names.values()) == sorted(
        ["ok_name", "a.b", "a_b", "9lives", "x" * 80, "x" * 80 + "y", ""]
    )


# Results ----------------------------------------------------------------------------------------
def _result(*content: Any, structured: Any = None, error: bool = False) -> SimpleNamespace:
    return Ns(content=list(content), structuredContent=structured, isError=error)


def test_results_of_every_content_kind() -> None:
    png = base64.b64encode(b"\x89PNG" + b"0" * 96).decode()
    result = convert_result(
        _result(
            Ns(type="text", text="hello"),
            Ns(type="image", mimeType="image/png", data=png),
            Ns(type="audio", mimeType="audio/wav", data="!!not base64!!"),
            Ns(type="resource_link", uri="file:///a.txt", name="a.txt"),
            Ns(type="resource_link", uri="file:///b.txt", name=""),
            Ns(type="resource", resource=Ns(uri="file:///c.txt", text="inline text")),
            Ns(type="resource", resource=Ns(uri="file:///d.bin", blob=png, mimeType=None)),
            Ns(type="something-new"),
        ),
        server="s",
        tool="t",
    )
    lines = str(result["content"]).split("\n")
    digest = hashlib.sha256(base64.b64decode(png)).hexdigest()
    assert lines[0] == "hello"
    assert lines[1] == f"[image image/png, 100 bytes, sha256 {digest[:12]}]"
    assert lines[2] == "[audio audio/wav, 14 characters, not base64]"
    assert lines[3] == "[resource file:///a.txt (a.txt)]"
    assert lines[4] == "[resource file:///b.txt]"
    assert lines[5] == "inline text"
    assert lines[6] == "[binary resource file:///d.bin, application/octet-stream, 100 bytes]"
    assert lines[7] == "[something-new content]"
    assert result["meta"] == {"mcp_server": "s", "mcp_tool": "t"}
    # The image is kept beside its description (the Agent's tool box keeps it only for a model
    # that reads images); the audio that is not base64 is described and never sent.
    assert result["media"] == [
        {"kind": "image", "mime_type": "image/png", "data": png, "size": 100, "sha256": digest}
    ]


def test_structured_results_and_errors() -> None:
    structured = convert_result(_result(structured={"n": 1}), server="s", tool="t")
    assert structured["content"] == {"n": 1}
    empty = convert_result(_result(), server="s", tool="t")
    assert empty == ToolResult(status="ok", content="", meta={"mcp_server": "s", "mcp_tool": "t"})
    silent = convert_result(_result(error=True), server="s", tool="t")
    assert silent["error"] == "the MCP tool t reported an error without a message"
    assert silent["meta"]["code"] == "MCP_TOOL_ERROR"


async def test_tool_specs() -> None:
    config = McpServerConfig(name="srv", command="run")
    seen: list[tuple[str, dict[str, Any]]] = []

    async def invoke(tool: str, args: dict[str, Any]) -> ToolResult:
        seen.append((tool, args))
        return ToolResult(status="ok", content="done")

    tool = Ns(name="do.it", description="", title="Do it", inputSchema=None, annotations=None)
    spec = mcp_tool_spec(config, tool, "do_it", invoke, target="run --flag")
    assert spec.name == "srv.do_it"
    assert spec.description == "Do it"
    assert spec.category is ToolCategory.EXTERNAL
    assert spec.group == "mcp"
    assert spec.parameters == {"type": "object", "properties": {}}
    assert await spec.fn({"x": 1}, {}) == ToolResult(status="ok", content="done")
    assert seen == [("do.it", {"x": 1})]
    assert spec.preview is not None
    assert (
        spec.preview({"x": 1}) == "srv.do_it({\"x\": 1})\non MCP server 'srv' (stdio: run --flag)"
    )
    bare = Ns(name="t", description=None, title=None, inputSchema={}, annotations=None)
    assert "a tool of the MCP server 'srv'" in mcp_tool_spec(config, bare, "t", invoke).description
    broken = Ns(name="b", description="B.", inputSchema={"type": "object", "properties": 3})
    with pytest.raises(ToolRegistrationError):
        mcp_tool_spec(config, broken, "b", invoke)


# A server as a toolset (no server process: its tool list and start are stood in for) -------------
def _tool(name: str, schema: dict[str, Any] | None = None) -> Ns:
    schema = schema or {"type": "object", "properties": {}}
    return Ns(name=name, description=f"The {name} tool.", annotations=None, inputSchema=schema)


async def test_a_servers_tools_become_the_toolsets_and_a_broken_one_is_left_out() -> None:
    from ai_agent.tools import ToolRegistry
    from ai_agent.tools.mcp import McpManager

    events: list[str] = []
    manager = McpManager(
        [McpServerConfig(name="srv", command="x", exclude_tools=["hidden"])],
        registry=ToolRegistry(),
        on_event=events.append,
    )
    toolset = manager.toolset("srv")
    broken = _tool("broken", {"type": "object", "properties": {"n": {"type": 5}}})
    await toolset._discovered([_tool("good"), broken, _tool("hidden")])
    assert [s.name for s in toolset.tools()] == ["srv.good"]
    assert manager.tool_names("srv") == ["srv.good"] and toolset.original("srv.good") == "good"
    (event,) = events
    assert event.startswith("MCP server 'srv': tool 'broken' left out: tool 'srv.broken'")
    assert "not a valid JSON schema" in event
    quiet = McpManager([McpServerConfig(name="q", command="x")], registry=ToolRegistry())
    await quiet.toolset("q")._discovered([broken])  # no listener: left out silently
    assert quiet.tool_names("q") == []


async def test_a_start_that_fails_with_a_bug_is_raised_and_the_span_not_counted() -> None:
    from ai_agent.tools import ToolRegistry
    from ai_agent.tools.mcp import McpManager

    manager = McpManager([McpServerConfig(name="srv", command="x")], registry=ToolRegistry())
    toolset = manager.toolset("srv")

    async def bug() -> None:
        raise RuntimeError("a bug in the client")

    toolset.connection.start = bug  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="a bug in the client"):
        await manager.start()
    with pytest.raises(RuntimeError, match="a bug in the client"):
        async with manager.use():
            pass  # pragma: no cover - never entered
    assert toolset._spans == 0 and toolset.issues() == []
