"""Secrets that reached what is stored or printed by ways the older canary tests did not try.

Each test here failed before its fix: a tool's live output cut around another call's events, a
password holding ``@`` in a URL, a key in the query string of the model server's URL, and a
password with quotes or backslashes repeated in a tool call's arguments (JSON inside JSON).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ai_agent import ToolCategory, ToolSpec
from ai_agent.cli import main
from ai_agent.events import StreamEvent, ToolFinished, ToolOutput
from ai_agent.observability.redaction import SecretValues
from ai_agent.observability.streamed import masked_across_events
from ai_agent.testing import MockOpenAIServer, Reply
from ai_agent.url_passwords import mask_url_passwords
from tests.observability.conftest import KEY, Logs, MakeAgent, text


def written(tmp_path: Path) -> str:
    """Every byte the engine wrote under ``tmp_path``, as text."""
    return "".join(
        p.read_bytes().decode("latin-1") for p in sorted(tmp_path.rglob("*")) if p.is_file()
    )


async def test_a_key_a_running_tool_prints_in_pieces_stays_masked_when_another_call_ends(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    """Two calls run at once; one prints the key in two pieces, the other ends between them.

    Any event but a chunk flushed every stream's held text: the first piece went out as it was,
    the mask of the stream started again, and the second piece did not look like a secret
    either, so the live output (what ``run`` prints) held the whole key.
    """
    other_finished = asyncio.Event()

    async def peek(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        if args["part"] == "slow":
            ctx["on_output"](f"the key is {KEY[:9]}")
            await other_finished.wait()
            ctx["on_output"](f"{KEY[9:]} (done)\n")
        return "ok"

    tool = ToolSpec(
        "peek",
        peek,
        description="Peek.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"part": {"type": "string"}}},
        concurrent=True,
    )
    turns = [
        {"tool_calls": [{"name": "peek", "args": {"part": p}} for p in ("slow", "fast")]},
        text("done"),
    ]
    settings = {"model_backend": {"api_key": KEY}, "execute_all_tool_calls": True}
    agent = make_agent(turns, tools=[tool], settings=settings)
    events: list[StreamEvent] = []
    async with agent:
        async for event in agent.astream("peek twice"):
            events.append(event)
            if isinstance(event, ToolFinished):  # the fast call's: the slow one waits for it
                other_finished.set()
    printed = "".join(e.text for e in events if isinstance(e, ToolOutput))
    assert printed == "the key is *** (done)\n"
    assert KEY not in repr(events) + written(tmp_path)


def test_a_password_holding_an_at_sign_in_a_servers_url_is_masked_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``https://me:p@ss@host`` (the password written as it is, as many URL readers take it).

    The URL pattern took the password to end at its first ``@``: ``mcp list`` printed
    ``me:***@ss-...@host``, the rest of the password.
    """
    password = "p@ss-CANARY-7d1e"
    url = f"http://alice:{password}@127.0.0.1:9/mcp?email=a@b.example"
    config = tmp_path / "mcp.json"
    servers = [{"name": "later", "url": url, "enabled": False}]
    config.write_text(json.dumps({"mcp_servers": servers}))
    main(["mcp", "list", "--config", str(config)])
    listed = capsys.readouterr().out
    main(["mcp", "list", "--json", "--config", str(config)])
    listed += capsys.readouterr().out
    assert "later: http://alice:***@127.0.0.1:9/mcp?email=a@b.example" in listed
    assert "CANARY" not in listed
    assert mask_url_passwords(f"'{url}'", "***") == "'" + url.replace(password, "***") + "'"


def test_a_key_in_the_query_of_the_model_servers_url_is_never_printed_or_stored(
    tmp_path: Path,
) -> None:
    """``--base-url http://host/v1?api-key=...`` (as some hosted endpoints take the key).

    Only a URL's password counted as a secret: the run's last error line and ``--json``'s
    error printed the key, and the checkpoints and the run's row kept it.
    """
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / ".env").write_text(
        "MAMBA_MODEL_BACKEND__MAX_RETRIES=0\nMAMBA_RETRY__RETRY_LEVEL=1\n"
    )
    key = "QK-CANARY-51c2aa9e"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAMBA_")}
    for more in ([], ["--json"]):
        url = f"http://127.0.0.1:{port}/v1?api-version=2&api-key={key}"
        done = subprocess.run(
            [sys.executable, "-m", "ai_agent.cli", "x", "--base-url", url, "--db", "c", *more],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        printed = done.stdout + done.stderr
        assert done.returncode != 0
        assert f"cannot reach the model server at http://127.0.0.1:{port}/v1" in printed
        assert key not in printed
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("c*"))
    assert b"cannot reach the model server" in stored
    assert key.encode() not in stored


async def test_a_password_with_quotes_in_json_inside_json_is_masked(
    make_agent: MakeAgent,
    server: MockOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """A password holding ``"`` and ``\\`` (a database's, say), one JSON level deeper.

    A tool call's arguments are JSON inside the JSON of the server's reply, and a tool may
    return JSON that holds JSON as a string (a config file's embedded document): the password
    is escaped twice there (``\\\\\\"``), a form the mask did not know. The reply's body in the
    DEBUG log and the tool's result in the database held it.
    """
    password = 'pw"CANARY\\4e1d-ü'
    monkeypatch.setenv("VAULT_ACCESS", password)

    def vault(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        inner = json.dumps({"password": ctx["env"]["VAULT_ACCESS"], "given": args["value"]})
        return json.dumps({"document": inner})

    tool = ToolSpec(
        "vault",
        vault,
        description="Read the vault.",
        category=ToolCategory.READ_ONLY,
        requires_env=("VAULT_ACCESS",),
        parameters={"type": "object", "properties": {"value": {"type": "string"}}},
    )
    server.add(
        Reply(tool_calls=[{"name": "vault", "args": {"value": password}}]), Reply(text="done")
    )
    settings = {"logging": {"include_request_body": True, "include_response_body": True}}
    logs = Logs().start("DEBUG", structured=False)
    agent = make_agent(server=server, tools=[tool], settings=settings)
    async with agent:
        done = await agent.run("read the vault")
    assert done.status == "completed"
    assert "response body:" in logs.text
    assert "CANARY" not in logs.text
    assert "CANARY" not in written(tmp_path)


def test_a_streamed_body_repeating_a_key_is_masked_in_one_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A logged reply (``include_response_body``, a large ``body_size_limit``) of many events,
    each repeating a key: every event looked at every secret found in the whole body, events x
    keys steps on the event loop (20,000 events: 19 s). Counted here, not timed."""
    secrets = SecretValues([KEY])
    visits = [0]

    class Counted(list[tuple[int, int]]):
        def __iter__(self) -> Iterator[tuple[int, int]]:
            for item in super().__iter__():
                visits[0] += 1
                yield item

        def __getitem__(self, index: Any) -> Any:
            visits[0] += 1
            return super().__getitem__(index)

    found = secrets.spans
    monkeypatch.setattr(secrets, "spans", lambda text: Counted(found(text)))
    events = 400
    body = "".join(f"data: {json.dumps({'c': f'{KEY[:6]}'})}\n" for _ in range(events))
    body = body.replace(f'"{KEY[:6]}"', f'"{KEY}"', events - 1) + "data: [DONE]\n"
    masked = masked_across_events(body, secrets)
    assert KEY not in masked
    assert masked.count('"***"') == events - 1
    assert visits[0] <= 8 * events  # not events x keys (160,000)


@pytest.mark.parametrize("which", ["a tool's key", "the backend key"])
async def test_a_key_the_preview_cut_runs_through_shows_no_part_of_it(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, which: str
) -> None:
    """A call's preview (what a person approving sees: a diff of a ``.env`` file, say) is cut
    at 4,000 characters. It was cut, then masked: a key the cut ran through was no longer
    recognised, and its first part went to the gate's report and the checkpoint."""
    env_key = "deploy-CANARY-9c4e1b7d2a6f"
    monkeypatch.setenv("DEPLOY_ACCESS", env_key)
    key = env_key if which == "a tool's key" else KEY

    def preview(args: dict[str, Any]) -> str:
        lines = "\n".join(f"  line {n}" for n in range(700))[: 4000 - 40]
        return f"edit .env:\n{lines}\n- DEPLOY_ACCESS={key}\n+ DEPLOY_ACCESS=new"

    tool = ToolSpec(
        "edit_env",
        lambda args, ctx: "edited",
        description="Edit the .env file.",
        category=ToolCategory.MODIFICATION,  # waits for a person, who reads the preview
        requires_env=("DEPLOY_ACCESS",),
        preview=preview,
    )
    turns = [{"tool_calls": [{"name": "edit_env", "args": {}}]}]
    settings = {"model_backend": {"api_key": KEY}}
    agent = make_agent(turns, tools=[tool], settings=settings)
    async with agent:
        paused = await agent.run("rotate the key")
    assert paused.status == "paused"
    shown = json.dumps(paused.to_dict())
    assert "preview cut" in shown
    assert key[:8] not in shown
    assert key[:8] not in written(tmp_path)
