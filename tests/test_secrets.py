"""The canary: a planted API key never appears anywhere the engine writes or prints.

The key goes over the wire (the server must get it) and nowhere else: not the checkpoint
database, the run store, the memory files, logs, the CLI's output or trace, nor error text.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ai_agent.cli import main
from tests.openai_stub import completion, openai_stub

CANARY = "sk-canary-7f3a9c1e5b2d4f60"


def all_bytes_under(root: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in root.rglob("*") if p.is_file()]


def assert_no_canary(root: Path, *texts: str) -> None:
    leaks = [str(p) for p, data in all_bytes_under(root) if CANARY.encode() in data]
    assert leaks == [], "\n".join(leaks)
    for text in texts:
        assert CANARY not in text


def test_canary_key_reaches_the_server_and_nothing_else(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__API_KEY", CANARY)
    replies = [
        completion(tool_calls=[{"name": "calculator", "args": {"expression": "2+2"}}]),
        completion("4"),
    ]
    db = tmp_path / "store" / "c.sqlite"
    with openai_stub(replies) as stub:
        monkeypatch.setenv("MAMBA_MODEL_BACKEND__BASE_URL", stub.base_url)
        code = main(["add 2 and 2", "--tools", "calculator", "--trace", "--db", str(db)])
        json_code = main(["again", "--tools", "calculator", "--json", "--db", str(db)])
    out = capsys.readouterr()
    assert (code, json_code) == (0, 0)
    assert stub.requests[0]["headers"]["Authorization"] == f"Bearer {CANARY}"
    assert Path(".agents/memory.jsonl").exists()
    assert_no_canary(tmp_path, out.out, out.err, caplog.text)
    shown = main(["show", "--db", str(db), "--json", _first_thread(db)])
    listed = main(["runs", "--db", str(db), "--json"])
    out = capsys.readouterr()
    assert (shown, listed) == (0, 0)
    assert_no_canary(tmp_path, out.out, out.err)


def test_canary_never_appears_in_an_auth_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Some servers echo the key they refused; the engine must not pass it on."""
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__API_KEY", CANARY)
    refusal = {
        "status": 401,
        "body": {
            "error": {"message": f"Incorrect API key: {CANARY}", "type": "invalid_request_error"}
        },
    }
    with openai_stub([refusal]) as stub:
        monkeypatch.setenv("MAMBA_MODEL_BACKEND__BASE_URL", stub.base_url)
        code = main(["hello", "--json", "--db", str(tmp_path / "c.sqlite")])
    out = capsys.readouterr()
    assert code == 3  # AUTH (0.95) pauses the run: set the key and resume
    assert "refused the API key (401)" in out.out
    assert "***" in out.out
    assert_no_canary(tmp_path, out.out, out.err)


def _first_thread(db: Path) -> str:
    import sqlite3

    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT thread_id FROM agent_runs ORDER BY created_at").fetchone()
    return str(row[0])


# The canary run: every kind of configured secret, repeated by the model and echoed by tools ----

API_KEY = "sk-canary-api-5d2e8f1a9c"  # the backend key, from a settings file
HEADER = "hdr-canary-7b3c1e9f04"  # an MCP server's header value, written in the settings
TOOL_ENV = "env-canary-2a6d4b8e13"  # the value of a tool's requires_env variable
CANARIES = (API_KEY, HEADER, TOOL_ENV)


def _start_mcp(inputs: Path) -> tuple[subprocess.Popen[str], str]:
    """Our FastMCP test server over streamable HTTP, admitting only ``X-Api-Key: HEADER``."""
    from tests.mcp.conftest import FASTMCP

    args = [sys.executable, str(FASTMCP), "--transport", "streamable-http"]
    args += ["--header", "X-Api-Key", "--key-env", "TEST_SERVER_KEY"]
    with (inputs / "mcp-server.log").open("w") as err:
        server = subprocess.Popen(
            args,
            env={**os.environ, "TEST_SERVER_KEY": HEADER},
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
    assert server.stdout is not None
    line = server.stdout.readline()
    assert line.startswith("LISTENING "), line
    return server, f"http://127.0.0.1:{int(line.split()[1])}/mcp"


def _inputs(inputs: Path, mcp_url: str) -> tuple[Path, str]:
    """The settings file (backend key, web_search's key variable, the MCP server and its header)
    and the model's script: it says every canary, passes them to a tool, has a tool read them
    back from a file, proposes a tool about them, and ends repeating them."""
    settings = inputs / "settings.toml"
    settings.write_text(
        f'[model_backend]\napi_key = "{API_KEY}"\n'
        '[tool_config.web_search]\nbackend = "brave"\napi_key_env = "SEARCH_ACCESS"\n'
        f'[[mcp_servers]]\nname = "gate"\nurl = "{mcp_url}"\n'
        f'headers = {{ "X-Api-Key" = "{HEADER}" }}\n'
    )
    said = " ".join(CANARIES)
    turns = [
        {
            "text": f"The keys: {said}",
            "tool_calls": [{"name": "gate__echo", "args": {"text": said}}],
        },
        {"tool_calls": [{"name": "read_file", "args": {"path": "notes.txt"}}]},
        {
            "tool_calls": [
                {
                    "name": "propose_tool",
                    "args": {
                        "name": "leaky",
                        "purpose": f"Send the keys {said} somewhere.",
                        "inputs": {"text": "string"},
                    },
                }
            ]
        },
        {"text": f"Done; the keys were {said}."},
    ]
    script = inputs / "script.json"
    script.write_text(json.dumps(turns))
    return settings, f"scripted:{script}"


def _leaks(where: str, data: bytes | str) -> list[str]:
    raw = data.encode() if isinstance(data, str) else data
    return [f"{canary} in {where}" for canary in CANARIES if canary.encode() in raw]


def test_no_configured_secret_is_stored_or_printed_whatever_the_model_and_tools_do(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    inputs = tmp_path / "inputs"  # what the test hands in: the only files allowed to hold keys
    inputs.mkdir()
    monkeypatch.setenv("SEARCH_ACCESS", TOOL_ENV)  # web_search (brave) requires it
    Path("notes.txt").write_text(f"notes: {' '.join(CANARIES)}\n")  # a tool echoes the keys
    server, url = _start_mcp(inputs)
    try:
        settings, model = _inputs(inputs, url)
        db = tmp_path / "store" / "c.sqlite"
        common = ["--config", str(settings), "--db", str(db)]
        runner = [*common, "--model", model, "--tools", "read_file,propose_tool"]
        printed: list[tuple[str, str]] = []

        def cli(*argv: str) -> int:
            code = main([*argv])
            out = capsys.readouterr()
            printed.append((f"stdout of {argv[0]}", out.out))
            printed.append((f"stderr of {argv[0]}", out.err))
            return code

        assert (
            cli(
                "run",
                "use the keys",
                "--thread-id",
                "t1",
                "--stream",
                "--log-level",
                "DEBUG",
                *runner,
            )
            == 3
        )
        resumed = subprocess.run(
            [
                sys.executable,
                "-m",
                "ai_agent.cli",
                "resume",
                "t1",
                "--approve",
                "all",
                "--log-json",
                "--log-level",
                "DEBUG",
                *runner,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        printed += [("stdout of resume", resumed.stdout), ("stderr of resume", resumed.stderr)]
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        html = tmp_path / "export" / "t1.html"
        html.parent.mkdir()
        for argv in (
            ("show", "t1"),
            ("show", "t1", "--json"),
            ("history", "t1"),
            ("history", "t1", "--json"),
            ("runs",),
            ("runs", "--json"),
            ("export", "t1", "--html", str(html)),
        ):
            assert cli(*argv, *common) == 0, printed[-1]
    finally:
        server.kill()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()
    state_said = [text for where, text in printed if where == "stdout of show" and "***" in text]
    assert state_said, "the masked keys show where they were"
    assert html.exists() and Path(".agents/memory.jsonl").exists()
    assert Path(".agents/toolsmaker").is_dir()
    handed_in = {Path("notes.txt").resolve()}
    leaks = [
        leak
        for path, data in all_bytes_under(tmp_path)
        if inputs not in path.parents and path.resolve() not in handed_in
        for leak in _leaks(str(path.relative_to(tmp_path)), data)
    ]
    leaks += [leak for where, text in printed for leak in _leaks(where, text)]
    leaks += _leaks("the log records", caplog.text)
    assert leaks == [], "\n".join(leaks)
