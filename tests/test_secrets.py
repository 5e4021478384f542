"""The canary: a planted API key never appears anywhere the engine writes or prints.

The key goes over the wire (the server must get it) and nowhere else: not the checkpoint
database, the run store, the memory files, logs, the CLI's output or trace, nor error text.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ai_agent.cli import main
from tests.openai_stub import completion, openai_stub

CANARY = "sk-canary-7f3a9c1e5b2d4f60"


def all_bytes_under(root: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in root.rglob("*") if p.is_file()]


def assert_no_canary(root: Path, *texts: str) -> None:
    leaks = [str(p) for p, data in all_bytes_under(root) if CANARY.encode() in data]
    assert leaks == []
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
