"""``ai-agent ui``: its options, and the real server it starts (token, 403, the pages)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ai_agent.cli import EXIT, main
from tests.console.server import console


def paused_run(tmp_path: Path, thread: str = "u1") -> str:
    script = tmp_path / "script.json"
    turns = [
        {"tool_calls": [{"name": "write_file", "args": {"path": "out.txt", "content": "hi"}}]},
        {"text": "written"},
    ]
    script.write_text(json.dumps(turns))
    model = f"scripted:{script}"
    code = main(["write", "--tools", "files", "--model", model, "--thread-id", thread, "--quiet"])
    assert code == EXIT["paused"]
    return model


def test_another_host_needs_allow_remote_and_a_token_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paused_run(tmp_path)
    capsys.readouterr()
    assert main(["ui", "--host", "0.0.0.0"]) == EXIT["usage"]
    assert "needs --allow-remote and a token of your own" in capsys.readouterr().err
    assert main(["ui", "--host", "0.0.0.0", "--allow-remote"]) == EXIT["usage"]
    short = tmp_path / "short"
    short.write_text("abc\n")
    assert main(["ui", "--token-file", str(short)]) == EXIT["usage"]
    assert "at least 16 characters" in capsys.readouterr().err
    assert main(["ui", "--token-file", str(tmp_path / "missing")]) != 0
    assert main(["ui", "--poll", "0"]) == EXIT["usage"]
    assert main(["ui", "--request-timeout", "-1"]) == EXIT["usage"]
    assert main(["ui", "--port", "70000"]) == EXIT["usage"]


def test_the_request_timeout_reaches_the_server(tmp_path: Path) -> None:
    # A client that connects and sends nothing is let go after --request-timeout, here well
    # under the 10 s default, so the connection's end proves the option reached the server.
    model = paused_run(tmp_path)
    args = ["--model", model, "--tools", "files", "--request-timeout", "0.3"]
    with console(args, cwd=Path.cwd()) as served:
        host, port = served.base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5.0) as idle:
            assert idle.recv(1) == b""  # closed by the server, nothing said
        with httpx.Client(base_url=served.base, follow_redirects=True) as http:  # served
            assert http.get("/inbox", params={"token": served.token}).status_code == 200


def test_ui_needs_a_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ui", "--db", str(tmp_path / "none.sqlite")]) == EXIT["usage"]
    assert "no checkpoint database" in capsys.readouterr().err


def test_the_real_console_wants_its_token(tmp_path: Path) -> None:
    model = paused_run(tmp_path)
    with console(["--model", model, "--tools", "files"], cwd=Path.cwd()) as served:
        assert served.base.startswith("http://127.0.0.1:") and len(served.token) >= 40
        with httpx.Client(base_url=served.base) as http:
            refused = http.get("/inbox")
            assert refused.status_code == 403
            assert "the token was missing or wrong" in refused.text
            assert http.get(f"/inbox?token={served.token}x").status_code == 403
            page = http.get(f"/inbox?token={served.token}", follow_redirects=True)
            assert page.status_code == 200 and "write_file out.txt (new file)" in page.text
            assert http.get("/runs").status_code == 200  # the cookie from here on
            css = http.get("/static/console.css")
            assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


def test_a_remote_console_with_its_own_token(tmp_path: Path) -> None:
    model = paused_run(tmp_path)
    token = tmp_path / "token"
    token.write_text("s" * 32 + "\n")
    args = ["--model", model, "--host", "127.0.0.1", "--token-file", str(token), "--no-worker"]
    with console(args, cwd=Path.cwd()) as served:
        assert served.token == ""  # a token of the person's own is not printed
        with httpx.Client(base_url=served.base) as http:
            assert http.get("/inbox").status_code == 403
            assert http.get(f"/inbox?token={'s' * 32}", follow_redirects=True).status_code == 200


def test_a_port_in_use_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paused_run(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        capsys.readouterr()
        assert main(["ui", "--port", str(port), "--no-worker"]) == EXIT["usage"]
    assert f"cannot serve on 127.0.0.1:{port}: Address already in use" in capsys.readouterr().err


def test_other_commands_do_not_load_the_console(tmp_path: Path) -> None:
    paused_run(tmp_path)
    script = (
        "import sys\n"
        "from ai_agent.cli import main\n"
        "code = main(['runs'])\n"
        "print('=modules=', *sys.modules)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.partition("=modules=")[2].split())
    assert "ai_agent.cli.console" in loaded  # the command module is there (the parser)...
    assert not {"ai_agent.console", "starlette", "uvicorn", "jinja2"} & loaded  # ...not the app
