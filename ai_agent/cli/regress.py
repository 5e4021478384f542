"""``ai-agent test-from-run`` (a run as a regression test) and ``ai-agent eval`` (a folder of them).

``test-from-run THREAD`` writes two files: a pytest file (``test_run_<id>.py``, or ``--out``)
and beside it the run's recording (``<same name>.recording.json``, `ai_agent.graph.cases`). The
test replays the recording offline with the agent of today's code and asserts the final answer
and the tool calls with their arguments (`ai_agent.graph.testfile`).

``eval DIR`` replays every recording in a folder (``*.recording.json``) and reports for each:
the same, or where it diverged and how. Offline by default (no model, no tool runs); with
``--model`` the model and the tools are called again, and each gate the original was answered
at gets the same plan. Exit code 0 when every case did the same, 6 when one diverged, 2 when a
case could not be read.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.cli._common import (
    EXIT,
    Parents,
    UsageError,
    archive_of,
    build_agent,
    run_closing,
    thread_arg,
)
from ai_agent.cli._printing import print_json
from ai_agent.visible import visible

if TYPE_CHECKING:
    from ai_agent.graph import Agent

__all__ = ["add_commands"]

CASE_GLOB = "*.recording.json"


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``test-from-run`` and ``eval``."""
    make = sub.add_parser(
        "test-from-run",
        parents=[parents.common],
        help="write a pytest file that replays a run offline and asserts what it did",
        description="Write a pytest file that replays the run's recording offline (no model, "
        "no tool runs) with today's code, and asserts its tool calls, their arguments and its "
        "answer; the recording is written beside it (NAME.recording.json).",
    )
    make.add_argument("thread", type=thread_arg, help="the run's thread id")
    make.add_argument("--out", metavar="FILE", help="the test file (test_run_<id>.py here)")
    make.add_argument("--force", action="store_true", help="replace files that exist")
    _agent_options(make)
    make.set_defaults(handler=_test_from_run)

    evaluate = sub.add_parser(
        "eval",
        parents=[parents.common, parents.runner],
        help="replay a folder of recorded runs against today's code (or another model)",
        description="Replay every recording (*.recording.json) in DIR and report, for each, "
        "whether it did the same or where it diverged. Offline unless --model is given: then "
        "the model and the tools are called again (the tools for real, under their approval "
        "policies), and each gate gets the plan the original got there.",
    )
    evaluate.add_argument("dir", metavar="DIR", help="the folder of recorded cases")
    evaluate.add_argument(
        "--app",
        metavar="MODULE:FACTORY",
        help="build the Agent with your own factory(checkpoint_path) (for your own tools)",
    )
    evaluate.set_defaults(handler=_eval)


def _agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tools",
        default="",
        help="the tools the test's agent has (default: those the run started with)",
    )
    parser.add_argument("--system-prompt", help="the system prompt the test's agent has")
    parser.add_argument(
        "--app",
        metavar="MODULE:FACTORY",
        help="the test builds its agent with your factory(checkpoint_path) instead",
    )


# test-from-run -----------------------------------------------------------------------------


def _test_from_run(args: argparse.Namespace) -> int:
    from ai_agent.graph import export_case

    test = Path(args.out) if args.out else Path(_names(args.thread)[0])
    if test.suffix != ".py":
        raise UsageError(f"--out {test}: the test file's name must end in .py")
    recording = test.with_name(test.stem + ".recording.json")
    existing = [str(p) for p in (test, recording) if p.exists()]
    if existing and not args.force:
        raise UsageError(f"{', '.join(existing)} exists; pass --force to replace it")
    archive = archive_of(args)
    case = run_closing(archive, export_case(archive.database, args.thread))
    source = _source(args, case, recording.name)
    _write(test, recording, case, source)
    if args.json:
        print_json({"thread_id": args.thread, "test": str(test), "recording": str(recording)})
    else:
        print(visible(str(test)))
        print(f"recording: {visible(str(recording))}; run it with: pytest {visible(str(test))}")
    return 0


def _names(thread: str) -> tuple[str, str]:
    from ai_agent.graph import case_file_names

    return case_file_names(thread)


def _source(args: argparse.Namespace, case: dict[str, Any], recording: str) -> str:
    from ai_agent.config import split_tool_names
    from ai_agent.errors import ConfigError
    from ai_agent.graph import AgentRecipe, regression_test_text

    if args.app is not None and ":" not in args.app:
        raise UsageError(
            f"--app wants MODULE:FACTORY, such as myproject.agents:make (got {args.app})"
        )
    try:
        tools = split_tool_names(args.tools) or list(case["tools"])
    except ConfigError as exc:
        raise UsageError(f"--tools: {exc}") from None
    recipe = AgentRecipe(tools=tools, system_prompt=args.system_prompt, app=args.app)
    return regression_test_text(case, recording, recipe)


def _write(test: Path, recording: Path, case: dict[str, Any], source: str) -> None:
    from ai_agent.graph import write_case

    try:
        test.parent.mkdir(parents=True, exist_ok=True)
        write_case(case, recording)  # UTF-8, as pytest reads the test (PEP 3120)
        test.write_text(source, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {test}: {exc.strerror or exc}") from None


# eval ------------------------------------------------------------------------------------------


def _eval(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder of recorded cases")
    files = sorted(folder.glob(CASE_GLOB))
    if not files:
        raise UsageError(
            f"no recorded cases ({CASE_GLOB}) in {folder}; write them with "
            "`ai-agent test-from-run THREAD --out DIR/test_NAME.py`"
        )
    import asyncio

    reports = asyncio.run(_evaluate(args, files))
    return _show_eval(args, reports)


async def _evaluate(args: argparse.Namespace, files: list[Path]) -> list[dict[str, Any]]:
    import tempfile

    from ai_agent.errors import AgentError
    from ai_agent.graph import check_case, read_case

    reports = []
    with tempfile.TemporaryDirectory(prefix="ai-agent-eval-") as scratch:
        for index, path in enumerate(files):
            name = path.name.removesuffix(".recording.json")
            try:
                case = read_case(path)
                agent = _agent(args, case, Path(scratch) / f"case-{index}.sqlite")
                async with agent:
                    result = await check_case(agent, case, live=_live(args))
            except AgentError as exc:
                reports.append({"case": name, "same": False, "error": str(exc)})
                continue
            reports.append({**result.to_dict(), "case": name, "thread_id": result.case})
    return reports


def _agent(args: argparse.Namespace, case: dict[str, Any], database: Path) -> Agent:
    from ai_agent.cli.worker import load_app

    if args.app:
        return load_app(args.app, str(database))
    overrides: dict[str, Any] = {"checkpoint_path": database, "memory_path": None, "on_event": None}
    if not args.tools:
        overrides["tools"] = list(case["tools"])
    if not _live(args):
        # Offline: an empty script, never asked (a replay that did ask it would fail).
        silent = database.with_suffix(".script.json")
        silent.write_text('[{"text": "an offline eval asks no model"}]')
        overrides["model"] = f"scripted:{silent}"
    return build_agent(args, creates=True, **overrides)


def _live(args: argparse.Namespace) -> bool:
    """Whether the eval calls a model: ``--model``, ``--backend`` or ``--base-url`` named one."""
    return any(getattr(args, name, None) for name in ("model", "backend", "base_url"))


def _show_eval(args: argparse.Namespace, reports: list[dict[str, Any]]) -> int:
    if args.json:
        print_json(reports)
    else:
        for report in reports:
            print(_line(report))
        same = sum(1 for r in reports if r["same"])
        print(f"{same} of {len(reports)} case(s) the same")
    if any("error" in r for r in reports):
        return EXIT["usage"]
    return 0 if all(r["same"] for r in reports) else EXIT["diverged"]


def _line(report: dict[str, Any]) -> str:
    name = visible(report["case"])
    if "error" in report:
        return f"{name}: cannot be replayed: {visible(report['error'], 'lines')}"
    if report["same"]:
        return f"{name}: same"
    at = f" at step {report['step']}" if report["step"] is not None else ""
    detail = visible(report["detail"], "lines")
    indented = "".join(f"\n    {line}" for line in detail.split("\n") if line)
    return f"{name}: diverged{at}: {visible(report['where'])}{indented}"
