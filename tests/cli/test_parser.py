"""Only the parser of the command that runs is built, and it is the same parser."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from ai_agent.cli import _parser, main


def _help(parser: argparse.ArgumentParser, argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parser.parse_args([*argv, "--help"])
    return out.getvalue()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_is_named_whichever_parsers_are_built() -> None:
    full, names = _parser()
    assert names == list(_subcommands(full))
    assert {"run", "runs", "show", "history", "export", "tools", "mcp"} <= set(names)
    one, named = _parser({"runs", "run"})
    assert named == names  # ``ai-agent "task"`` is told from a command as before
    assert set(_subcommands(one)) == {"runs", "run"}


@pytest.mark.parametrize("command", _parser()[1])
def test_a_command_built_alone_parses_as_when_all_are_built(command: str) -> None:
    full, _ = _parser()
    alone, _ = _parser({command, "run"})
    assert _help(alone, [command]) == _help(full, [command])


@pytest.mark.parametrize("command", ["tools", "mcp"])
def test_a_command_s_own_subcommands_are_built_with_it(command: str) -> None:
    full, _ = _parser()
    alone, _ = _parser({command, "run"})
    nested = _subcommands(_subcommands(full)[command])
    assert nested  # ``tools pending``, ``mcp list``...
    for name in nested:
        assert _help(alone, [command, name]) == _help(full, [command, name])


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out
    assert all(f"    {name}" in listed for name in _parser()[1])
