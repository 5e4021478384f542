"""``ai-agent mcp list`` and ``--mcp-config`` on runs, called the way a shell would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ai_agent.cli import main
from tests.mcp.conftest import descendants, wait_gone


def _config(tmp_path: Path, filesystem_entry: Path, everything_entry: Path) -> Path:
    path = tmp_path / "mcp.yaml"
    path.write_text(
        "mcp_servers:\n"
        "  - name: fs\n"
        "    command: node\n"
        f"    args: [{json.dumps(str(filesystem_entry))}, {json.dumps(str(tmp_path))}]\n"
        "  - name: every\n"
        "    command: node\n"
        f"    args: [{json.dumps(str(everything_entry))}]\n"
        "    tools: [echo, get-sum]\n"
    )
    return path


def test_mcp_list_shows_servers_status_and_tools(
    filesystem_entry: Path,
    everything_entry: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _config(tmp_path, filesystem_entry, everything_entry)
    before = descendants()
    assert main(["mcp", "list", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == [
        "server",
        "transport",
        "status",
        "pid",
        "tools",
        "start",
        "reports",
        "as",
    ]
    assert lines[1].split()[:3] == ["fs", "stdio", "running"]
    assert lines[2].split()[:3] == ["every", "stdio", "running"]
    assert "fs.write_file" in out
    assert "modification (approve)" in out
    assert "every.echo" in out
    assert "every.get-env" not in out
    assert wait_gone(descendants() - before) == set()


def test_a_tool_that_runs_only_as_a_task_is_not_offered_and_mcp_list_says_why(
    everything_entry: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcp.yaml"
    # The reference server's simulate-research-query declares execution.taskSupport "required".
    config.write_text(
        "mcp_servers:\n"
        "  - name: every\n"
        "    command: node\n"
        f"    args: [{json.dumps(str(everything_entry))}]\n"
        "    tools: [echo, simulate-research-query]\n"
    )
    assert main(["mcp", "list", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "every.simulate-research-query " not in out
    assert (
        "  left out simulate-research-query: tool 'every.simulate-research-query' runs only as "
        "an MCP task (its execution.taskSupport is 'required')"
    ) in out
    assert main(["mcp", "list", "--config", str(config), "--json"]) == 0
    (every,) = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in every["tools"]] == ["every.echo"]
    assert list(every["left_out"]) == ["simulate-research-query"]


def test_mcp_list_as_json(
    filesystem_entry: Path,
    everything_entry: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _config(tmp_path, filesystem_entry, everything_entry)
    assert main(["mcp", "list", "--config", str(config), "--json"]) == 0
    servers = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in servers] == ["fs", "every"]
    every = servers[1]
    assert every["state"] == "running"
    assert [t["name"] for t in every["tools"]] == ["every.echo", "every.get-sum"]
    assert every["tools"][0]["category"] == "read_only"
    assert main(["mcp", "list", "--config", str(config), "--json", "--no-tools"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["tools"] is None


def test_mcp_list_reports_a_server_that_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WRONG_KEY", "cli-canary-key-31337")
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcp_servers": [
                    {
                        "name": "gone",
                        "url": "http://127.0.0.1:9/mcp",
                        "auth": {"key_env": "WRONG_KEY"},
                    }
                ]
            }
        )
    )
    assert main(["mcp", "list", "--config", str(config), "--no-tools"]) == 1
    out = capsys.readouterr().out
    assert "gone    streamable_http  failed" in out
    assert "error (TOOL_ERROR): MCP server 'gone' is unreachable" in out
    assert "cli-canary-key-31337" not in out


def test_mcp_list_reads_servers_from_a_settings_file(
    everything_entry: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = tmp_path / "settings.toml"
    settings.write_text(
        "max_iterations = 3\n"
        "[[mcp_servers]]\n"
        'name = "every"\n'
        'command = "node"\n'
        f"args = [{json.dumps(str(everything_entry))}]\n"
        'tools = ["echo"]\n'
    )
    assert main(["mcp", "list", "--config", str(settings)]) == 0
    assert "every.echo" in capsys.readouterr().out


def test_mcp_list_without_servers_or_with_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "list"]) == 2
    assert "no MCP servers are configured" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("mcp_servers: [{name: x, transport: carrier-pigeon, url: 'http://h'}]\n")
    assert main(["mcp", "list", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "mcp_servers[0].transport: not one of the allowed choices" in err


def test_a_run_with_mcp_config(
    filesystem_entry: Path,
    everything_entry: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _config(tmp_path, filesystem_entry, everything_entry)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "every__get-sum", "args": {"a": 20, "b": 22}}]},
                {"text": "the sum is 42"},
            ]
        )
    )
    args = ["add", "--mcp-config", str(config), "--model", f"scripted:{script}", "--no-stream"]
    assert main([*args, "--db", str(tmp_path / "c.sqlite")]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "the sum is 42"
    assert "[mcp] MCP server 'every' started (stdio" in captured.err
    assert "[1] act: running every.get-sum" in captured.err
