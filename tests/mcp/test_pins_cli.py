"""``ai-agent mcp pins``, ``mcp accept`` and ``mcp list`` over pinned tools, as real processes.

The pins are made by real connections to ``servers/raw_server.py`` (see tests/mcp/test_pins.py);
the commands run as a shell would run them, on the same SQLite file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.test_pins import Model, _manager, pins, raw, run, serve, tool

pytestmark = pytest.mark.timeout(180)

CANARY = "pin-canary-5e1d0c77a9"


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE")}
    return subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def _pin_then_change(tmp_path: Path, changed: list[dict[str, Any]], **options: Any) -> Path:
    """Pin ``echo`` (and ``other``) on first use, then connect again to a server that changed."""
    script, db = tmp_path / "tools.json", tmp_path / "c.sqlite"
    serve(script, [tool("echo"), tool("other", "Another.")])
    for tools in ([], changed):
        if tools:
            serve(script, tools)
        mgr = await _manager(db, raw(script, **options), [])
        async with mgr.use():
            pass
    return db


async def test_mcp_accept_shows_the_diff_and_then_the_tool_is_offered(tmp_path: Path) -> None:
    changed = [tool("echo", "Echo a text, loudly."), tool("other", "Another.")]
    await _pin_then_change(tmp_path, changed)
    listing = cli("mcp", "pins", "--db", "c.sqlite", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].split() == [
        *("server", "tool", "digest", "pending", "state", "first", "seen", "accepted", "at"),
    ]
    echo = next(line for line in lines if line.startswith("raw     echo"))
    assert "changed, awaiting acceptance" in echo
    other = next(line for line in lines if line.startswith("raw     other"))
    assert "pinned" in other and "first use" in other
    assert "`ai-agent mcp accept SERVER TOOL`" in listing.stdout

    accepted = cli("mcp", "accept", "raw", "echo", "--db", "c.sqlite", cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    out = accepted.stdout
    assert '-  "description": "Echo a text.",' in out
    assert '+  "description": "Echo a text, loudly.",' in out
    assert "accepted echo of MCP server raw" in out
    (echo_pin,) = [p for p in await pins(tmp_path / "c.sqlite") if p["tool"] == "echo"]
    assert (echo_pin["state"], echo_pin["pending_digest"]) == ("pinned", None)
    assert echo_pin["accepted_at"] is not None

    model = Model()
    script = tmp_path / "tools.json"
    result, state = await run(tmp_path, raw(script), model)
    assert result.status == "completed", result.error
    assert "raw__echo" in model.offered[0]
    assert state["results"][0]["result"]["content"] == "echoed"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["accept", "nope", "echo"], "MCP server 'nope' has no pinned tools"),
        (["accept", "raw", "ghost"], "MCP server 'raw' has no pinned tool 'ghost'"),
        (["accept", "raw", "other"], "tool 'other' of MCP server 'raw' awaits no acceptance"),
        (["accept", "raw"], "name the tools to accept, or pass --all"),
    ],
)
async def test_accept_without_anything_to_accept_is_a_clear_error(
    tmp_path: Path, args: list[str], message: str
) -> None:
    await _pin_then_change(tmp_path, [tool("echo", "Changed."), tool("other", "Another.")])
    done = cli("mcp", *args, "--db", "c.sqlite", cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    everything = cli("mcp", "accept", "raw", "--all", "--db", "c.sqlite", cwd=tmp_path)
    assert everything.returncode == 0, everything.stderr
    again = cli("mcp", "accept", "raw", "--all", "--db", "c.sqlite", cwd=tmp_path)
    assert again.returncode == 2
    assert "nothing of MCP server 'raw' awaits acceptance" in again.stderr


async def test_mcp_list_says_how_many_tools_are_withheld(tmp_path: Path) -> None:
    changed = [tool("echo", "Changed."), tool("other", "Another."), tool("new", "New.")]
    await _pin_then_change(tmp_path, changed)
    config = tmp_path / "mcp.yaml"
    server = raw(tmp_path / "tools.json")
    config.write_text(
        json.dumps({"mcp_servers": [server.model_dump(include={"name", "command", "args"})]})
    )
    listed = cli("mcp", "list", "--config", str(config), "--db", "c.sqlite", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "2 withheld until accepted: echo (changed), new (new)" in listed.stdout
    assert "raw.other" in listed.stdout and "raw.echo " not in listed.stdout


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("definition = '{'", "its pinned definition is not a JSON object"),
        ("digest = 5", "its pinned digest is not a sha256"),
        ('definition = \'{"name":"echo"}\'', "its pinned definition does not match its digest"),
        ("digest = NULL, definition = NULL", "it holds no definition"),
    ],
)
async def test_a_hostile_pins_row_lists_its_problem_and_its_tool_stays_withheld(
    tmp_path: Path, change: str, problem: str
) -> None:
    db = await _pin_then_change(tmp_path, [])
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE agent_tool_pins SET {change} WHERE tool = 'echo'")
    listing = cli("mcp", "pins", "raw", "--db", "c.sqlite", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert "Traceback" not in listing.stderr
    assert f"NOT TRUSTED: the pin of tool echo of raw cannot be trusted ({problem})" in (
        listing.stdout
    )
    as_json = cli("mcp", "pins", "--json", "--db", "c.sqlite", cwd=tmp_path)
    (echo,) = [p for p in json.loads(as_json.stdout) if p["tool"] == "echo"]
    assert problem in echo["problem"]
    # The server still lists the very definition that was pinned: the row is not trusted.
    mgr = await _manager(db, raw(tmp_path / "tools.json"), [])
    async with mgr.use():
        assert mgr.tool_names("raw") == ["raw.other"]
        assert mgr.status()[0]["withheld"] == {"echo": "unreadable"}
        why = mgr.registry.withheld("raw.echo")
        assert why is not None and "whose pin cannot be read" in why
    # A person who accepts what the server lists now makes it trusted again.
    accepted = cli("mcp", "accept", "raw", "echo", "--db", "c.sqlite", cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    mgr = await _manager(db, raw(tmp_path / "tools.json"), [])
    async with mgr.use():
        assert mgr.tool_names("raw") == ["raw.echo", "raw.other"]


async def test_a_server_secret_in_a_description_never_shows_in_pins_or_diffs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIN_CANARY", CANARY)
    leaky = "Echo. Your token is {env:API_TOKEN}."
    db = await _pin_then_change(
        tmp_path,
        [tool("echo", leaky + " Changed."), tool("other", "Another.")],
        env={"API_TOKEN": "${PIN_CANARY}"},
    )
    stored = json.dumps(await pins(db))
    assert "Your token is" in stored and CANARY not in stored
    shown = [
        cli("mcp", "pins", "--db", "c.sqlite", cwd=tmp_path),
        cli("mcp", "pins", "--json", "--db", "c.sqlite", cwd=tmp_path),
        cli("mcp", "accept", "raw", "--all", "--db", "c.sqlite", cwd=tmp_path),
    ]
    assert all(done.returncode == 0 for done in shown), [d.stderr for d in shown]
    assert '+  "description": "Echo. Your token is' in shown[2].stdout
    for done in shown:
        assert CANARY not in done.stdout + done.stderr
    assert CANARY.encode() not in db.read_bytes()
