"""Bad input on the command line: one clear line, exit code 2, nothing lost or created.

Each case was once an "internal error", a traceback, or silently accepted (issue 15): deeply
nested or binary files, contradicting options, unknown settings, absurd numbers, malformed
thread ids, unsupported database URLs, and commands that created the database they were meant
to read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT, main
from tests.cli.scripts import calc, script


def fails(capsys: pytest.CaptureFixture[str], argv: list[str], *, code: int = 2) -> str:
    """Run ``argv``; it must end with ``code`` and one error on stderr, never a traceback."""
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return err


@pytest.fixture
def paused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A run paused at the gate (thread p1), and the model option to resume it with."""
    model = script(tmp_path, calc("2+3"), {"text": "5"})
    assert main(["add", "--model", model, "--thread-id", "p1", "--quiet"]) == EXIT["paused"]
    capsys.readouterr()
    return model


def still_paused(capsys: pytest.CaptureFixture[str]) -> bool:
    assert main(["show", "p1", "--json"]) == 0
    return bool(json.loads(capsys.readouterr().out)["status"] == "paused")


# Files: nesting, encoding ----------------------------------------------------------------------


def test_a_deeply_nested_plan_file(
    tmp_path: Path, paused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "deep.json"
    plan.write_text("[" * 100_000 + "]" * 100_000)
    err = fails(capsys, ["resume", "p1", "--model", paused, "--plan-file", str(plan)])
    assert err == (f"error: the plan file {plan} is nested more than 100 levels deep; flatten it\n")
    assert still_paused(capsys)


def test_a_binary_plan_file(
    tmp_path: Path, paused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    err = fails(capsys, ["resume", "p1", "--model", paused, "--plan-file", str(plan)])
    assert err == (
        f"error: the plan file {plan} is not UTF-8 text (byte 0 is 0x89); is it a binary "
        "file? Give a text file\n"
    )
    assert still_paused(capsys)


def test_a_plan_file_with_a_key_given_twice(
    tmp_path: Path, paused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # json.loads keeps the last of the two: this plan used to cancel the run without a word.
    plan = tmp_path / "plan.json"
    plan.write_text('{"allow_continue": true, "instructions": "go on", "allow_continue": false}')
    err = fails(capsys, ["resume", "p1", "--model", paused, "--plan-file", str(plan)])
    assert err == (
        f"error: the plan file {plan} is not valid JSON: the key 'allow_continue' is given "
        "twice in one object; keep one\n"
    )
    plan.write_text('{"edit_args": {"c1.0": {"expression": "1", "expression": "2+3"}}}')
    err = fails(capsys, ["resume", "p1", "--model", paused, "--plan-file", str(plan)])
    assert "the key 'expression' is given twice in one object" in err
    assert still_paused(capsys)


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("twice.json", '{"max_iterations": 3, "max_iterations": 500}', "in one object; keep one"),
        ("twice.yaml", "max_iterations: 3\nmax_iterations: 500\n", "in one mapping at line 2"),
        (
            "nested.yaml",
            "model_backend:\n  timeout: 5\n  model: m\n  timeout: 50\n",
            "the key 'timeout' is given twice in one mapping at line 4",
        ),
    ],
)
def test_a_setting_given_twice_in_a_config_file(
    name: str, text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The parsers keep the last value and drop the other silently (TOML refuses it itself).
    config = tmp_path / name
    config.write_text(text)
    err = fails(capsys, ["x", "--config", str(config), "--quiet"])
    assert err.startswith(f"error: cannot read config file {config}: the key '")
    assert problem in err and err.endswith(". Fix or remove it.\n")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", '{"a":' * 50_000 + "1" + "}" * 50_000),
        ("deep.toml", "tools = " + "[" * 50_000 + "]" * 50_000),
        ("deep.yaml", "tools: " + "[" * 50_000 + "]" * 50_000),
    ],
)
def test_a_deeply_nested_config_file(
    name: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / name
    config.write_text(text)
    err = fails(capsys, ["x", "--config", str(config), "--quiet"])
    assert err == f"error: config file {config} is nested more than 100 levels deep; flatten it\n"


def test_unknown_top_level_config_keys_name_the_closest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(
        'max_iteratons = 3\ngate_treshold = 0.5\nzzz = 1\n[model_backend]\nmodel = "m"\n'
    )
    err = fails(capsys, ["x", "--config", str(config), "--quiet"])
    lines = err.splitlines()
    assert lines[:4] == [
        f"error: config file {config} has 3 unknown setting(s):",
        "  max_iteratons: unknown setting; did you mean 'max_iterations'?",
        "  gate_treshold: unknown setting; did you mean 'gate_threshold'?",
        "  zzz: unknown setting",
    ]
    assert lines[4].startswith("  known settings: backend, system_prompt, max_iterations,")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            b"MAMBA_MAX_ITERATIONS=\xff\xfe3\n",
            "env file .env is not UTF-8 text (byte 21); is it a binary file? Save it as text",
        ),
        (  # python-dotenv skipped the line with a warning: the deny list was silently empty
            b'MAMBA_MAX_ITERATIONS=3\nMAMBA_TOOL_CONFIG__BASH__DENY=\'["rm"]\n',
            "env file .env, line 2: MAMBA_TOOL_CONFIG__BASH__DENY cannot be read (an unclosed "
            "quote or a missing '='?); write it as NAME=value",
        ),
        (
            b"export MAMBA_MODEL_BACKEND__API_KEY sk-7f3a9c1b2d\n",
            "env file .env, line 1: MAMBA_MODEL_BACKEND__API_KEY cannot be read (an unclosed "
            "quote or a missing '='?); write it as NAME=value",
        ),
    ],
)
def test_an_env_file_that_cannot_be_read(
    text: bytes, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path(".env").write_bytes(text)
    err = fails(capsys, ["x", "--model", script(tmp_path, {"text": "x"}), "--quiet"])
    assert err.endswith(f"error: {problem}\n")
    assert "sk-7f3a9c1b2d" not in err


def test_a_line_of_another_program_in_the_env_file_is_left_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path(".env").write_text('OTHER_TOOL_FLAGS="--x\nMAMBA_MAX_ITERATIONS=1\n')
    assert main(["x", "--model", script(tmp_path, {"text": "x"}), "--quiet"]) == 0


# Options that contradict each other --------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--plan", "go on", "--deny"], "argument --deny: not allowed with argument --plan"),
        (["--plan-file", "p.json", "--plan", "x"], "not allowed with argument --plan-file"),
        (["--plan-file", "p.json", "--approve", "all"], "--plan-file holds the whole plan"),
        (["--deny", "--approve", "call_0_0"], "--deny stops the run, so --approve"),
        (["--deny", "--activate", "calculator"], "--deny stops the run, so --approve"),
        (["--approve", "call_0_0", "--reject", "call_0_0"], "--reject both name call_0_0"),
        (["--reason", "why", "--plan", "go"], "--reason goes with --deny"),
        (["--plan", "go", "--scope", "tool"], "--scope says how far an --approve reaches"),
    ],
)
def test_contradicting_resume_options_leave_the_run_paused(
    options: list[str], message: str, paused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = fails(capsys, ["resume", "p1", "--model", paused, *options])
    assert message in err
    assert still_paused(capsys)


# Numbers, names, ids -------------------------------------------------------------------------


def test_max_iterations_has_a_documented_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, {"text": "x"})
    err = fails(capsys, ["x", "--model", model, "--max-iterations", "1000000000", "--quiet"])
    assert err == (
        "error: --max-iterations must be at least 1 and at most 1,000 (got 1,000,000,000)\n"
    )
    assert main(["x", "--model", model, "--max-iterations", "1000", "--quiet"]) == 0


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("calculator,,grep_search", "tool name 2 of 3 is empty in 'calculator,,grep_search'"),
        ("calculator,", "tool name 2 of 2 is empty in 'calculator,'"),
        (",", "tool name 1 of 2 is empty in ','"),
    ],
)
def test_an_empty_name_in_tools(
    tools: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, {"text": "x"})
    err = fails(capsys, ["x", "--model", model, "--tools", tools, "--quiet"])
    assert err == f"error: --tools: {message}; separate names with single commas\n"


RULE = (
    "a thread id is 1 to 128 characters of letters, digits, '.', '_', ':' and '-', starting "
    "with a letter or a digit"
)


@pytest.mark.parametrize(
    ("thread", "problem"),
    [
        ("", "invalid thread id '': it is empty"),
        ("x" * 100_000, "invalid thread id '" + "x" * 40 + "'...: it is 100,000 characters long"),
        ("a\nInjected: line", "invalid thread id 'a\\nInjected: line': '\\n' is not allowed"),
        ("runs/../etc", "invalid thread id 'runs/../etc': '/' is not allowed"),
        ("-rf", "invalid thread id '-rf': it starts with '-'"),
    ],
)
def test_malformed_thread_ids_are_refused_everywhere(
    thread: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, {"text": "x"})
    main(["setup", "--model", model, "--quiet"])  # a database, so the id is what is refused
    capsys.readouterr()
    for option, argv in (
        ("--thread-id", ["x", "--model", model, f"--thread-id={thread}"]),
        ("thread", ["resume", "--model", model, "--", thread]),
        ("thread", ["show", "--", thread]),
        ("thread", ["history", "--", thread]),
        ("--thread", ["plans", f"--thread={thread}"]),
    ):
        err = fails(capsys, argv)
        assert f"error: argument {option}: {problem}; {RULE}\n" in err, argv
        assert "\nInjected" not in err
    assert main(["runs", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1  # no run was made with a bad id


# Databases --------------------------------------------------------------------------------------


def test_an_unsupported_database_url_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, {"text": "x"})
    url = "mysql://user:hunter22@db.internal/agents"
    err = fails(capsys, ["x", "--model", model, "--db", url, "--quiet"])
    assert err == (
        "error: unsupported database URL scheme 'mysql': give a SQLite file path, "
        "sqlite:///path/to/file.sqlite, or a postgresql:// URL\n"
    )
    assert "hunter22" not in err
    assert not any("hunter22" in str(p) for p in Path.cwd().rglob("*"))
    assert not any("mysql" in str(p) for p in Path.cwd().rglob("*"))


def test_a_url_in_checkpoint_path_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAMBA_CHECKPOINT_PATH", "mysql://user:hunter22@db/agents")
    err = fails(capsys, ["x", "--model", script(tmp_path, {"text": "x"}), "--quiet"])
    assert "checkpoint_path: must be a file path; set checkpoint_url for a database URL" in err
    assert not any("hunter22" in str(p) for p in Path.cwd().rglob("*"))


READING_COMMANDS = [
    ["resume", "p1"],
    ["resume", "p1", "--plan", "go", "--queue"],
    ["show", "p1"],
    ["history", "p1"],
    ["runs"],
    ["replay", "p1"],
    ["export", "p1", "--html", "page.html"],
    ["worker", "--once"],
    ["plans"],
    ["fork", "p1", "some-checkpoint"],
    ["prune", "p1"],
    ["output", "p1", "out-1-call_0"],
    ["graph", "--thread", "p1"],
]


@pytest.mark.parametrize("argv", READING_COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_only_run_creates_a_database(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "checkpoints.sqlite"
    err = fails(capsys, [*argv, "--db", str(missing)])
    assert err == (
        f"error: no checkpoint database at {missing}; check --db (only `ai-agent run` creates "
        "a database)\n"
    )
    assert not missing.parent.exists()


def test_the_default_database_is_not_created_by_resume_either(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fails(capsys, ["resume", "p1", "--plan", "go"])
    assert not Path(".agents").exists()


def _cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAMBA_")}
    return subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_in_a_real_process_resume_and_readers_create_no_database(tmp_path: Path) -> None:
    here = tmp_path / "empty"
    here.mkdir()
    for argv in (["resume", "p1", "--plan", "go"], ["show", "p1"], ["worker", "--once"]):
        done = _cli(here, *argv, "--db", "missing.sqlite")
        assert done.returncode == EXIT["usage"], done.stderr
        assert done.stderr == (
            "error: no checkpoint database at missing.sqlite; check --db (only `ai-agent run` "
            "creates a database)\n"
        )
    done = _cli(here, "x", "--db", "mysql://user:hunter22@host/db", "--quiet")
    assert done.returncode == EXIT["usage"]
    assert "unsupported database URL scheme 'mysql'" in done.stderr
    assert "hunter22" not in done.stderr + done.stdout
    assert list(here.iterdir()) == []


def test_a_password_in_the_model_servers_url_is_never_printed(tmp_path: Path) -> None:
    # The URL is named in every "cannot reach" error: the status lines masked its password,
    # the last error line and --json's "error" did not.
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / ".env").write_text(
        "MAMBA_MODEL_BACKEND__MAX_RETRIES=0\nMAMBA_RETRY__RETRY_LEVEL=1\n"
    )
    # A password too short for the secret values' mask (under 8 characters) is hidden too.
    for password in ("pw-CANARY-51c2", "CNRY7"):
        url = f"http://agent:{password}@127.0.0.1:{port}/v1"
        for more in ([], ["--json"]):
            done = _cli(tmp_path, "x", "--base-url", url, "--db", "c.sqlite", *more)
            assert done.returncode == EXIT["failed"], done.stderr
            assert f"cannot reach the model server at http://agent:***@127.0.0.1:{port}/v1" in (
                done.stdout + done.stderr
            )
            assert password not in done.stdout + done.stderr
        # Nor kept: the failed stage's error is in the checkpoints, the run's in the run store.
        stored = b"".join(p.read_bytes() for p in tmp_path.glob("c.sqlite*"))
        assert b"cannot reach the model server" in stored
        assert password.encode() not in stored


def make_app(checkpoint_url: str | None) -> Any:
    """An ``--app`` factory (``tests.cli.test_bad_input:make_app``)."""
    from ai_agent.graph import Agent

    return Agent(checkpoint_path=checkpoint_url or "app.sqlite", memory_path=None)


def test_a_worker_built_by_an_app_creates_no_database_either(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = fails(capsys, ["worker", "--once", "--app", "tests.cli.test_bad_input:make_app"])
    assert err == (
        "error: no checkpoint database at app.sqlite; check --db (only `ai-agent run` creates "
        "a database)\n"
    )
    assert not Path("app.sqlite").exists()


def test_a_plan_file_larger_than_any_plan_is_not_read(
    tmp_path: Path, paused: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAMBA_MAX_PLAN_CHARS", "1000")
    plan = tmp_path / "huge.json"
    plan.write_text(json.dumps({"instructions": "y" * 7000}))
    err = fails(capsys, ["resume", "p1", "--model", paused, "--plan-file", str(plan)])
    assert err == (
        f"error: the plan file {plan} is larger than 6,000 bytes; shorten the plan, or raise the "
        "max_plan_chars setting\n"
    )
    plan.write_text(json.dumps({"instructions": "y" * 2000}))  # read, then refused by length
    err = fails(capsys, ["resume", "p1", "--model", paused, "--plan-file", str(plan)])
    assert "more than the 1,000 allowed (max_plan_chars)" in err
    assert still_paused(capsys)


def test_a_plan_from_the_command_line_is_parsed_once(
    paused: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read where it arrives (the options), then typed all the way to the gate.
    from tests.graph.conftest import count_plan_parses

    seen = count_plan_parses(monkeypatch)
    argv = ["resume", "p1", "--model", paused, "--activate", "calculator", "--quiet"]
    assert main(argv) == EXIT["completed"]
    assert [plan["activate_tools"] for plan in seen] == [["calculator"]]
