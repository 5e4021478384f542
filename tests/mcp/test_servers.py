"""The manager against real servers: discovery, every transport, state, names, auth, crashes,
timeouts and shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ai_agent.config import McpServerConfig
from ai_agent.errors import ConfigError, McpConnectError, McpEnvError
from ai_agent.state import ToolResult
from ai_agent.tools import ToolCategory, ToolRegistry
from ai_agent.tools.mcp import McpManager
from tests.mcp.conftest import (
    FASTMCP,
    KEY,
    HttpServer,
    alive,
    descendants,
    everything_server,
    fastmcp_stdio,
    filesystem_server,
    wait_gone,
)

pytestmark = pytest.mark.timeout(120)


def manager(*servers: McpServerConfig, events: list[str] | None = None) -> McpManager:
    return McpManager(
        servers, registry=ToolRegistry(), on_event=events.append if events is not None else None
    )


async def call(mgr: McpManager, name: str, **args: Any) -> ToolResult:
    """One call the way a run makes it: through a registry snapshot."""
    return await mgr.registry.snapshot().execute({"id": "c1", "name": name, "args": args}, {})


# Discovery --------------------------------------------------------------------------------------
async def test_discovery_registers_namespaced_tools_with_categories(
    filesystem_entry: Path, everything_entry: Path, tmp_path: Path
) -> None:
    mgr = manager(
        filesystem_server(filesystem_entry, tmp_path), everything_server(everything_entry)
    )
    async with mgr.use() as failures:
        assert failures == []
        fs, every = mgr.tool_names("fs"), mgr.tool_names("every")
        assert {"fs.read_text_file", "fs.write_file", "fs.list_directory"} <= set(fs)
        assert {"every.echo", "every.get-sum", "every.toggle-simulated-logging"} <= set(every)
        registry = mgr.registry
        assert registry["fs.read_text_file"].category is ToolCategory.READ_ONLY
        assert registry["fs.write_file"].category is ToolCategory.MODIFICATION  # destructiveHint
        assert registry["fs.create_directory"].category is ToolCategory.MODIFICATION  # !readOnly
        assert registry["every.gzip-file-as-resource"].category is ToolCategory.EXTERNAL  # world
        assert registry["every.echo"].category is ToolCategory.READ_ONLY
        assert registry.groups()["mcp"] == sorted([*fs, *every])
        schema = registry.snapshot().schemas(["fs.read_text_file"])[0]["function"]
        assert schema["name"] == "fs__read_text_file"
        assert "path" in schema["parameters"]["properties"]
        status = {s["name"]: s for s in mgr.status()}
        assert status["fs"]["state"] == "running"
        assert status["fs"]["server"] == "secure-filesystem-server 0.2.0"
        assert status["fs"]["pid"] is not None
        assert status["fs"]["started_ms"] is not None
        assert status["fs"]["tools"] == fs
        health = await mgr.health()
        assert health["fs"] is not None
        assert health["every"] is not None


async def test_include_exclude_and_category_overrides(everything_entry: Path) -> None:
    server = everything_server(
        everything_entry,
        tools=["echo", "get-*"],
        exclude_tools=["get-env"],
        categories={"get-sum": "external"},
        active=False,
    )
    activated: list[str] = []
    mgr = McpManager([server], registry=ToolRegistry(), on_activate=activated.extend)
    async with mgr.use():
        names = mgr.tool_names("every")
    assert "every.echo" in names
    assert "every.get-env" not in names
    assert "every.toggle-simulated-logging" not in names
    assert mgr.registry["every.get-sum"].category is ToolCategory.EXTERNAL
    assert activated == []  # active: false keeps them in the catalog only


# A call on each transport -----------------------------------------------------------------------
async def test_stdio_calls_on_both_reference_servers(
    filesystem_entry: Path, everything_entry: Path, tmp_path: Path
) -> None:
    (tmp_path / "hello.txt").write_text("hello from disk\n")
    mgr = manager(
        filesystem_server(filesystem_entry, tmp_path), everything_server(everything_entry)
    )
    async with mgr.use():
        read = await call(mgr, "fs.read_text_file", path=str(tmp_path / "hello.txt"))
        assert read["status"] == "ok"
        assert read["content"] == "hello from disk\n"
        assert read["meta"]["mcp_server"] == "fs"
        total = await call(mgr, "every.get-sum", a=2, b=40)
        assert total["status"] == "ok"
        assert "42" in total["content"]
        missing = await call(mgr, "fs.read_text_file", path=str(tmp_path / "nope.txt"))
        assert missing["status"] == "error"
        assert missing["meta"]["code"] == "MCP_TOOL_ERROR"
        assert "ENOENT" in (missing["error"] or "")


@pytest.mark.parametrize("transport", ["sse", "streamableHttp"])
async def test_http_calls_on_server_everything(
    start_everything: Callable[[str], HttpServer], transport: str
) -> None:
    server = start_everything(transport)
    kind = "sse" if transport == "sse" else "streamable_http"
    mgr = manager(McpServerConfig(name="every", url=server.url, transport=kind))
    async with mgr.use() as failures:
        assert failures == []
        echo = await call(mgr, "every.echo", message="over http")
        assert echo["status"] == "ok"
        assert echo["content"] == "Echo: over http"
        image = await call(mgr, "every.get-tiny-image")
        assert image["status"] == "ok"
        assert "[image image/png" in image["content"]


@pytest.mark.parametrize("transport", ["stdio", "sse", "streamable-http"])
async def test_calls_on_our_fastmcp_server(
    start_fastmcp: Callable[..., HttpServer], transport: str
) -> None:
    if transport == "stdio":
        config = fastmcp_stdio()
    else:
        server = start_fastmcp(transport)
        kind = "sse" if transport == "sse" else "streamable_http"
        config = McpServerConfig(name="py", url=server.url, transport=kind)
    mgr = manager(config)
    async with mgr.use():
        echo = await call(mgr, "py.echo", text="hi")
        assert echo["content"] == "hi"
        failed = await call(mgr, "py.fail", message="the disk is full")
        assert failed["status"] == "error"
        assert "the disk is full" in (failed["error"] or "")


# State across calls -----------------------------------------------------------------------------
async def test_state_is_kept_across_calls_in_one_session(
    everything_entry: Path, start_fastmcp: Callable[..., HttpServer]
) -> None:
    http = start_fastmcp("streamable-http")
    mgr = manager(
        everything_server(everything_entry),
        McpServerConfig(name="py", url=http.url),
        fastmcp_stdio("pyio"),
    )
    async with mgr.use():
        first = await call(mgr, "every.toggle-simulated-logging")
        second = await call(mgr, "every.toggle-simulated-logging")
        assert str(first["content"]).startswith("Started")
        assert str(second["content"]).startswith("Stopped")  # the same session remembered
        counts = [(await call(mgr, "py.count"))["content"] for _ in range(3)]
        assert counts == ["1", "2", "3"]
        stdio_counts = [(await call(mgr, "pyio.count"))["content"] for _ in range(2)]
        assert stdio_counts == ["1", "2"]
    # A new span is a new session: the server-side state starts over.
    async with mgr.use():
        assert (await call(mgr, "py.count"))["content"] == "1"


async def test_the_adapters_default_loses_state_between_calls(
    start_fastmcp: Callable[..., HttpServer],
) -> None:
    """Why sessions are kept open (FACTS.md): get_tools() opens a session per call."""
    from langchain_mcp_adapters.client import MultiServerMCPClient

    http = start_fastmcp("streamable-http")
    client = MultiServerMCPClient({"py": {"transport": "streamable_http", "url": http.url}})
    tools = {t.name: t for t in await client.get_tools()}
    counts = [await tools["count"].ainvoke({}) for _ in range(2)]
    assert [c[0]["text"] if isinstance(c, list) else c for c in counts] == ["1", "1"]


# Names from two servers -------------------------------------------------------------------------
async def test_two_servers_with_the_same_tool_name_do_not_shadow(
    filesystem_entry: Path, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("from the filesystem server")
    mgr = manager(filesystem_server(filesystem_entry, tmp_path), fastmcp_stdio("py"))
    async with mgr.use():
        assert "fs.read_file" in mgr.registry
        assert "py.read_file" in mgr.registry
        from_fs = await call(mgr, "fs.read_file", path=str(tmp_path / "a.txt"))
        from_py = await call(mgr, "py.read_file", path="a.txt")
    assert from_fs["content"] == "from the filesystem server"
    assert from_py["content"] == "fastmcp read a.txt"
    wires = [
        s["function"]["name"]
        for s in mgr.registry.snapshot().schemas(["fs.read_file", "py.read_file"])
    ]
    assert wires == ["fs__read_file", "py__read_file"]


# Authentication ---------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
@pytest.mark.parametrize("header", ["Authorization", "X-API-Key"])
async def test_api_key_auth(
    start_fastmcp: Callable[..., HttpServer],
    monkeypatch: pytest.MonkeyPatch,
    transport: str,
    header: str,
) -> None:
    server = start_fastmcp(transport, key=True, header=header)
    kind = "sse" if transport == "sse" else "streamable_http"
    monkeypatch.setenv("GOOD_KEY", KEY)
    monkeypatch.setenv("BAD_KEY", "not-the-key-123")
    good = McpServerConfig(
        name="good", url=server.url, transport=kind, auth={"key_env": "GOOD_KEY", "header": header}
    )
    direct = McpServerConfig(
        name="direct", url=server.url, transport=kind, auth={"key": "${GOOD_KEY}", "header": header}
    )
    bad = McpServerConfig(
        name="bad", url=server.url, transport=kind, auth={"key_env": "BAD_KEY", "header": header}
    )
    none = McpServerConfig(name="none", url=server.url, transport=kind)
    mgr = manager(good, direct, bad, none)
    async with mgr.use() as failures:
        assert (await call(mgr, "good.echo", text="in"))["content"] == "in"
        assert (await call(mgr, "direct.echo", text="in too"))["content"] == "in too"
    by_server = {f.server: f for f in failures}
    assert set(by_server) == {"bad", "none"}
    assert by_server["bad"].code == "AUTH"
    assert (
        "MCP server 'bad' refused the credentials (HTTP 401 Unauthorized)"
        in by_server["bad"].message
    )
    assert "check the key in BAD_KEY" in by_server["bad"].message
    assert "not-the-key-123" not in by_server["bad"].message
    assert "add auth" in by_server["none"].message
    assert mgr.tool_names("bad") == []


async def test_start_errors_are_typed_and_say_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_fastmcp: Callable[..., HttpServer]
) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    server = start_fastmcp("streamable-http", key=True)
    open_server = start_fastmcp("streamable-http")
    script = tmp_path / "dies.py"
    script.write_text(
        "import sys\nprint('cannot open the database', file=sys.stderr)\nsys.exit(7)\n"
    )
    mgr = manager(
        McpServerConfig(name="gone", url="http://127.0.0.1:9/mcp"),
        McpServerConfig(name="wrongpath", url=open_server.url.replace("/mcp", "/nothing")),
        McpServerConfig(name="nocmd", command="no-such-mcp-server-binary"),
        McpServerConfig(name="dies", command=sys.executable, args=[str(script)]),
        McpServerConfig(name="noenv", url=server.url, auth={"key_env": "NOT_SET_ANYWHERE"}),
        McpServerConfig(name="optional", url="http://127.0.0.1:9/mcp", required=False),
    )
    async with mgr.use() as failures:
        pass
    found = {f.server: f for f in failures}
    assert "unreachable at http://127.0.0.1:9/mcp" in found["gone"].message
    assert found["gone"].code == "TOOL_ERROR"
    assert "HTTP 404" in found["wrongpath"].message
    assert "/mcp" in found["wrongpath"].message
    assert "'no-such-mcp-server-binary' was not found" in found["nocmd"].message
    assert "stopped during start-up" in found["dies"].message
    assert "cannot open the database" in found["dies"].message
    assert found["noenv"].code == "MISSING_ENV"
    assert "NOT_SET_ANYWHERE is not set" in found["noenv"].message
    assert found["optional"].required is False
    assert {s["name"]: s["error_code"] for s in mgr.status()}["noenv"] == "MISSING_ENV"


async def test_a_server_that_never_answers_at_start_times_out(tmp_path: Path) -> None:
    mgr = manager(McpServerConfig(name="mute", command="sleep", args=["600"], startup_timeout=1.5))
    before = descendants()
    started = time.monotonic()
    async with mgr.use() as failures:
        pass
    assert time.monotonic() - started < 8
    assert "did not finish starting within 1.5s" in failures[0].message
    assert wait_gone(descendants() - before) == set()


async def test_start_raises_for_direct_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    mgr = manager(
        McpServerConfig(name="noenv", command="x", env={"TOKEN": "${NOT_SET_ANYWHERE}"}),
        McpServerConfig(name="gone", url="http://127.0.0.1:9/mcp"),
    )
    with pytest.raises(McpEnvError) as env_error:
        await mgr.connection("noenv").start()
    assert env_error.value.variable == "NOT_SET_ANYWHERE"
    assert "env.TOKEN refers to it" in str(env_error.value)
    with pytest.raises(McpConnectError):
        await mgr.connection("gone").start()
    with pytest.raises(ConfigError, match="no MCP server named 'other'"):
        mgr.connection("other")


# Crashes, hangs and timeouts --------------------------------------------------------------------
async def test_a_stdio_server_killed_mid_call_is_restarted_and_the_next_call_works(
    everything_entry: Path,
) -> None:
    events: list[str] = []
    mgr = manager(everything_server(everything_entry), events=events)
    async with mgr.use():
        first_pid = mgr.status()[0]["pid"]
        assert first_pid is not None
        snapshot = mgr.registry.snapshot()
        long_call = asyncio.create_task(
            snapshot.execute(
                {
                    "id": "c1",
                    "name": "every.trigger-long-running-operation",
                    "args": {"duration": 20, "steps": 5},
                },
                {},
            )
        )
        await asyncio.sleep(1.0)
        os.kill(first_pid, signal.SIGKILL)
        result = await asyncio.wait_for(long_call, 15)
        assert result["status"] == "error"
        assert result["meta"]["code"] == "MCP_SERVER_CRASHED"
        assert result["meta"]["restarted"] is True
        assert "exited (exit code -9) during trigger-long-running-operation" in str(result["error"])
        assert "outcome is unknown" in str(result["error"])
        status = mgr.status()[0]
        assert status["restarts"] == 1
        assert status["pid"] not in (None, first_pid)
        again = await call(mgr, "every.echo", message="still here")
        assert again["content"] == "Echo: still here"
    assert any("restarting it" in e for e in events)


@pytest.mark.parametrize("transport", ["stdio", "sse", "streamable-http"])
async def test_a_crash_during_a_call_is_a_typed_error(
    start_fastmcp: Callable[..., HttpServer], transport: str
) -> None:
    if transport == "stdio":
        config = fastmcp_stdio(max_restarts=1)
    else:
        server = start_fastmcp(transport)
        kind = "sse" if transport == "sse" else "streamable_http"
        config = McpServerConfig(name="py", url=server.url, transport=kind)
    mgr = manager(config)
    async with mgr.use():
        started = time.monotonic()
        result = await call(mgr, "py.crash")
        took = time.monotonic() - started
        assert result["status"] == "error"
        assert result["meta"]["code"] == "MCP_SERVER_CRASHED"
        assert took < 10
        if transport == "stdio":  # we own the process: it is restarted and works again
            assert result["meta"]["restarted"] is True
            assert (await call(mgr, "py.echo", text="back"))["content"] == "back"
        else:  # the HTTP server is gone for good: reconnecting fails, clearly
            assert result["meta"]["restarted"] is False
            assert "unreachable" in str(result["error"])
            later = await call(mgr, "py.echo", text="x")
            assert later["meta"]["code"] == "MCP_UNAVAILABLE"


async def test_restarts_are_limited_per_run() -> None:
    mgr = manager(fastmcp_stdio(max_restarts=1))
    async with mgr.use():
        assert (await call(mgr, "py.crash"))["meta"]["restarted"] is True
        second = await call(mgr, "py.crash")
        assert second["meta"]["restarted"] is False
        assert "at most 1 time(s) per run" in str(second["error"])
        down = await call(mgr, "py.echo", text="x")
        assert down["status"] == "error"
        assert down["meta"]["code"] == "MCP_UNAVAILABLE"
    async with mgr.use():  # the next run gets its allowance back
        assert (await call(mgr, "py.echo", text="fresh"))["content"] == "fresh"


async def test_a_call_that_never_answers_times_out_within_the_limit() -> None:
    mgr = manager(fastmcp_stdio(timeout=1.5))
    async with mgr.use():
        started = time.monotonic()
        result = await call(mgr, "py.hang")
        took = time.monotonic() - started
        assert result["status"] == "error"
        assert result["meta"]["code"] == "TIMEOUT"
        assert "did not answer hang within 1.5s" in str(result["error"])
        assert 1.4 < took < 3.5
        # The server itself is fine: the next call works without a restart.
        assert (await call(mgr, "py.echo", text="ok"))["content"] == "ok"
        assert mgr.status()[0]["restarts"] == 0


async def test_a_frozen_server_times_out_and_is_restarted_for_the_next_call(
    everything_entry: Path,
) -> None:
    mgr = manager(everything_server(everything_entry, timeout=1.5))
    async with mgr.use():
        pid = mgr.status()[0]["pid"]
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)  # alive, but it will never answer again
        try:
            started = time.monotonic()
            result = await call(mgr, "every.echo", message="anyone?")
            assert time.monotonic() - started < 3.5
            assert result["meta"]["code"] == "TIMEOUT"
            again = await call(mgr, "every.echo", message="after restart")
            assert again["content"] == "Echo: after restart"
            assert mgr.status()[0]["restarts"] == 1
        finally:
            if alive(pid):
                os.kill(pid, signal.SIGCONT)
    assert wait_gone({pid}) == set()


# Shutdown ---------------------------------------------------------------------------------------
async def test_clean_shutdown_leaves_no_process_behind(
    filesystem_entry: Path, everything_entry: Path, tmp_path: Path
) -> None:
    before = descendants()
    mgr = manager(
        filesystem_server(filesystem_entry, tmp_path),
        everything_server(everything_entry),
        fastmcp_stdio(),
    )
    async with mgr.use():
        pids = {s["pid"] for s in mgr.status()}
        assert None not in pids
        children = descendants() - before
        assert {p for p in pids if p is not None} <= children
    assert wait_gone(children) == set()
    assert all(s["state"] == "stopped" for s in mgr.status())


async def test_npx_servers_take_their_children_with_them(tmp_path: Path) -> None:
    """npx starts node as a child: stopping the server ends both (its process group)."""
    from tests.mcp.conftest import NPM_ROOT

    (tmp_path / "node_modules").symlink_to(NPM_ROOT / "node_modules")
    config = McpServerConfig(
        name="fs",
        command="npx",
        args=["-y", "@modelcontextprotocol/server-filesystem", str(tmp_path)],
        cwd=str(tmp_path),
        env={"npm_config_offline": "true", "npm_config_update_notifier": "false"},
    )
    before = descendants()
    mgr = manager(config)
    async with mgr.use() as failures:
        assert failures == []
        tree = descendants() - before
        assert len(tree) >= 2  # npx and the node server under it
        assert (await call(mgr, "fs.list_allowed_directories"))["status"] == "ok"
    assert wait_gone(tree) == set()


async def test_held_servers_stay_open_between_uses_until_aclose(everything_entry: Path) -> None:
    mgr = manager(everything_server(everything_entry))
    mgr.hold()
    async with mgr.use():
        pid = mgr.status()[0]["pid"]
        await call(mgr, "every.toggle-simulated-logging")
    assert pid is not None
    assert alive(pid)
    async with mgr.use():
        assert mgr.status()[0]["pid"] == pid
        again = await call(mgr, "every.toggle-simulated-logging")
        assert str(again["content"]).startswith("Stopped")  # the same session
    await mgr.aclose()
    assert wait_gone({pid}) == set()


async def test_concurrent_uses_share_the_servers(everything_entry: Path) -> None:
    mgr = manager(everything_server(everything_entry))

    async def one(text: str) -> Any:
        async with mgr.use():
            await asyncio.sleep(0.2)
            return (await call(mgr, "every.echo", message=text))["content"]

    echoes = list(await asyncio.gather(one("a"), one("b"), one("c")))
    assert echoes == ["Echo: a", "Echo: b", "Echo: c"]
    assert mgr.status()[0]["state"] == "stopped"


async def test_a_call_outside_any_use_starts_the_server(everything_entry: Path) -> None:
    mgr = manager(everything_server(everything_entry))
    await mgr.start()
    await mgr.stop()
    result = await call(mgr, "every.echo", message="lazy")
    assert result["content"] == "Echo: lazy"
    await mgr.aclose()


async def test_tool_list_changes_reach_the_registry() -> None:
    mgr = manager(fastmcp_stdio())
    async with mgr.use():
        assert "py.grown" not in mgr.registry
        assert (await call(mgr, "py.grow"))["status"] == "ok"
        for _ in range(100):
            if "py.grown" in mgr.registry:
                break
            await asyncio.sleep(0.05)
        assert (await call(mgr, "py.grown"))["content"] == "I am new"


async def test_add_and_remove_servers(everything_entry: Path) -> None:
    mgr = manager()
    assert not mgr
    mgr.add({"name": "every", "command": "node", "args": [str(everything_entry), "stdio"]})
    with pytest.raises(ConfigError, match="already configured"):
        mgr.add(everything_server(everything_entry))
    with pytest.raises(ConfigError, match="invalid MCP server"):
        mgr.add({"name": "x"})
    async with mgr.use():
        assert "every.echo" in mgr.registry
        await mgr.remove("every")
        assert "every.echo" not in mgr.registry
    assert mgr.servers == []


async def test_removed_tools_leave_the_registry() -> None:
    events: list[str] = []
    mgr = manager(fastmcp_stdio(), events=events)
    async with mgr.use():
        assert "py.plain" in mgr.registry
        assert (await call(mgr, "py.shrink"))["content"] == "shrunk"
        for _ in range(100):
            if "py.plain" not in mgr.registry:
                break
            await asyncio.sleep(0.05)
        assert "py.plain" not in mgr.registry
    assert any("changed its tools" in e for e in events)


async def test_a_server_that_prints_other_things_still_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("DEBUG", logger="ai_agent.tools.mcp")
    server = McpServerConfig(
        name="noisy",
        command=sys.executable,
        args=[str(FASTMCP), "--transport", "stdio", "--noisy"],
    )
    mgr = manager(server)
    async with mgr.use():
        assert (await call(mgr, "noisy.echo", text="fine"))["content"] == "fine"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "a warning without a newline" in logged  # its stderr, logged at DEBUG
    assert "MCP server 'noisy': " in logged  # the line that is no JSON-RPC


async def test_a_tool_whose_name_is_taken_is_left_out(everything_entry: Path) -> None:
    from ai_agent.tools import ToolSpec

    events: list[str] = []
    mgr = manager(everything_server(everything_entry, tools=["echo", "get-sum"]), events=events)
    mgr.registry.register(ToolSpec("every.echo", lambda a, c: "mine", description="Mine."))
    async with mgr.use():
        assert mgr.tool_names("every") == ["every.get-sum"]
        assert mgr.registry["every.echo"].description == "Mine."
    assert any("tool 'echo' left out" in e for e in events)


async def test_an_empty_manager_and_servers_never_started() -> None:
    mgr = manager()
    async with mgr.use() as failures:
        assert failures == []
    assert await mgr.health() == {}
    mgr.add(McpServerConfig(name="idle", command="x", enabled=False))
    async with mgr.use() as failures:
        assert failures == []  # disabled: never started
    assert mgr.status()[0]["state"] == "stopped"
    assert await mgr.health() == {"idle": None}
    await mgr.remove("idle")
    with pytest.raises(ConfigError, match="no MCP server named 'idle'"):
        await mgr.remove("idle")
