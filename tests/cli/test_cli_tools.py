"""The CLI's tool options and commands: --tools with groups, --approval, tools, output."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT, main
from tests.cli.scripts import script


def tool_call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "args": args}]}


def test_tools_accepts_groups_and_the_approval_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("in.txt").write_text("hello")
    model = script(
        tmp_path, tool_call("write_file", path="out.txt", content="x"), {"text": "written"}
    )
    code = main(["copy", "--tools", "files", "--model", model, "--quiet"])
    assert code == EXIT["paused"] and not Path("out.txt").exists()
    assert "write_file out.txt (new file):" in capsys.readouterr().out
    code = main(
        ["copy", "--tools", "files", "--approval", "modification=auto", "--model", model, "--quiet"]
    )
    assert code == EXIT["completed"] and Path("out.txt").read_text() == "x"


def test_a_bad_approval_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["x", "--approval", "modification=maybe"]) == EXIT["usage"]
    assert "use CATEGORY=POLICY" in capsys.readouterr().err
    assert main(["x", "--tools", "nope,calculator"]) == EXIT["usage"]
    assert "unknown tool 'nope'" in capsys.readouterr().err


def test_tools_by_category_with_missing_keys(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAMBA_TOOL_CONFIG__WEB_SEARCH__BACKEND", "brave")
    monkeypatch.setenv("MAMBA_APPROVALS", '{"external": "auto"}')
    assert main(["tools", "--category", "external"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "external: runs without asking; the first call of each in a run waits for a person "
        "(policy: auto)",
        "  web_search         web        Search the web; returns results with title, url and "
        "snippet.  (needs BRAVE_API_KEY)",
    ]
    assert main(["tools", "--json", "--category", "read_only"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert {t["category"] for t in listing} == {"read_only"}
    assert {"name", "wire_name", "policy", "group", "enabled", "missing_env"} <= set(listing[0])


def test_output_prints_a_clipped_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("big.txt").write_text("BEGIN " + "y" * 20_000 + " END")
    model = script(tmp_path, tool_call("read_file", path="big.txt"), {"text": "read"})
    db = str(tmp_path / "c.sqlite")
    code = main(
        [
            "read",
            "--tools",
            "read_file",
            "--model",
            model,
            "--thread-id",
            "o1",
            "--db",
            db,
            "--quiet",
        ]
    )
    assert code == EXIT["completed"]
    capsys.readouterr()
    assert main(["output", "o1", "out-1-c1.0", "--db", db]) == 0
    assert capsys.readouterr().out == "BEGIN " + "y" * 20_000 + " END\n"
    assert main(["output", "o1", "out-1-c1.0", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ref"] == "out-1-c1.0"
    assert main(["output", "o1", "nope", "--db", db]) == EXIT["usage"]
    assert "run o1 kept no output 'nope'; kept outputs: out-1-c1.0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"tools": ["calculator", "read_file", "web_search"], "unattended": False},
        {"approvals": {"external": "auto", "modification": "deny"}},
        {"mcp_servers": [{"name": "files", "command": "mcp-server-files", "enabled": False}]},
    ],
    ids=["defaults", "tools", "approvals", "mcp"],
)
def test_the_catalog_without_an_agent_lists_what_the_agent_lists(settings: dict[str, Any]) -> None:
    # ``tools`` and ``mcp list`` build the catalog alone (no model stack); it must stay the
    # Agent's own: the same tools, categories, policies and states, and the same servers.
    from ai_agent.config import AgentSettings
    from ai_agent.graph import Agent
    from ai_agent.graph.catalog import tool_catalog

    s = AgentSettings(_env_file=None, **settings)
    agent = Agent(checkpoint_path=os.devnull, settings=s, memory_path=None)
    catalog = tool_catalog(s)
    assert catalog.listing() == agent.list_tools()
    assert catalog.policy == agent.policy
    assert [c.name for c in catalog.mcp.servers] == [c.name for c in agent.mcp.servers]
