"""The command line: ``ai-agent "task" --tools calculator --trace`` and friends.

``main(argv) -> int`` never lets a traceback reach the user: every engine error becomes one line
that says what to do, and the exit code says how it ended:

====  ===========================================================
0     completed
1     failed (the run failed, or the model server is unreachable)
2     usage error (bad option, bad config, unknown thread, bad plan)
3     paused at the gate, waiting for a plan
4     cancelled by a plan
5     busy: another process is working on that thread
6     diverged: a replay met a call its recording does not have
7     stopped at max_iterations without a final answer (the task is not done)
130   interrupted (Ctrl-C); the run can be resumed
141   stdout closed by its reader (``ai-agent show ID | head``); nothing is printed
====  ===========================================================

Model- and tool-derived text never reaches the terminal raw: each command renders it with
`ai_agent.visible.visible`, and stdout and stderr escape any hidden character that still
arrives (``_common.guarded_output``), so an escape sequence in a command cannot make the
approval prompt show something else than what would run.

Each command group lives in its own module with an ``add_commands(sub, parents)`` function that
adds its subparsers and sets ``handler``; ``COMMAND_MODULES`` lists them. A command's module
imports what the command needs inside its handler, and only the parser of the command that
runs is built (`_OnlyParsers`): ``--help`` builds them all, to list them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Sequence
from typing import Any

from ai_agent.cli import console, debug, inspect, mcp, regress, rules, run, tools, worker
from ai_agent.cli._common import (
    EXIT,
    Parents,
    UsageError,
    guarded_output,
    logging_for,
    output_closed,
    report_error,
    stdout_closed,
)
from ai_agent.visible import visible

__all__ = ["EXIT", "main"]

COMMAND_MODULES = (run, inspect, debug, regress, tools, worker, rules, mcp, console)


class _Skipped:
    """A parser of a command that does not run: it takes every call and builds nothing.

    argparse spends longer making the 30-odd parsers than a read takes to print.
    """

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


class _OnlyParsers:
    """The subparsers action, building the parsers of ``wanted`` commands only (None: all).

    Every command's name is still recorded (`names`), so ``ai-agent "task"`` is told from a
    command as before.
    """

    def __init__(self, sub: Any, wanted: Collection[str] | None) -> None:
        self.sub, self.wanted = sub, wanted
        self.names: list[str] = []

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        self.names.append(name)
        if self.wanted is None or name in self.wanted:
            return self.sub.add_parser(name, **kwargs)
        return _Skipped()


def _parser(
    wanted: Collection[str] | None = None,
) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser (with the parsers of the ``wanted`` commands only) and every command's name."""
    parser = argparse.ArgumentParser(
        prog="ai-agent",
        description="Run a task through the nine-stage agent pipeline; pause at the gate for a "
        "person's plan; resume later from any process.",
        epilog="Exit codes: 0 completed, 1 failed, 2 usage error, 3 paused, 4 cancelled, 5 busy, "
        "6 a replay diverged, 7 stopped at max_iterations, 141 stdout closed by its reader "
        "(| head).",
    )
    sub = _OnlyParsers(parser.add_subparsers(dest="command", metavar="COMMAND"), wanted)
    parents = Parents.build()
    for module in COMMAND_MODULES:
        module.add_commands(sub, parents)
    return parser, sub.names


def _argv(argv: Sequence[str], commands: list[str]) -> list[str]:
    """``ai-agent "task"`` means ``ai-agent run "task"``."""
    args = list(argv)
    first = next((a for a in args if not a.startswith("-")), None)
    if args and first is not None and first not in commands and args[0] not in ("-h", "--help"):
        return ["run", *args]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    with guarded_output():
        try:
            code = _main(sys.argv[1:] if argv is None else argv)
            sys.stdout.flush()  # output still buffered meets a reader gone here
        except BrokenPipeError as exc:
            if not stdout_closed():  # pragma: no cover - a flush of stdout fails only so
                return report_error(exc, debug=False)
            return output_closed()
        return code


def _main(argv: Sequence[str]) -> int:
    first = next((a for a in argv if not a.startswith("-")), None)
    # The command that runs is the first word, or ``run`` (``ai-agent "task"``); help and a
    # bare ``ai-agent`` list every command.
    helping = first is None or argv[0] in ("-h", "--help")
    parser, commands = _parser(None if helping else {str(first), "run"})
    args = _parse(parser, _argv(argv, commands))
    if isinstance(args, int):
        return args
    if args.command is None:
        parser.print_help()
        return EXIT["usage"]
    return _run(args)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code when argparse already printed its problem or help."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code:
            return EXIT["usage"]
        # argparse ignores a failed write of the help: a reader gone is told as for any command.
        return output_closed() if stdout_closed() else 0


def _run(args: argparse.Namespace) -> int:
    """Run the command's handler; every error becomes one line and an exit code."""
    try:
        with logging_for(args):
            code: int = args.handler(args)
    except KeyboardInterrupt:
        thread = getattr(args, "thread_id", None) or getattr(args, "thread", None)
        hint = f"; resume it with: ai-agent resume {visible(thread)}" if thread else ""
        print(f"interrupted{hint}", file=sys.stderr)
        return 130
    except UsageError as exc:
        print(f"error: {visible(str(exc), 'lines')}", file=sys.stderr)
        return EXIT["usage"]
    except BrokenPipeError as exc:
        if stdout_closed():
            raise  # main's to handle: the reader of stdout went away
        return report_error(exc, debug=getattr(args, "debug", False))
    except Exception as exc:
        return report_error(exc, debug=getattr(args, "debug", False))
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
