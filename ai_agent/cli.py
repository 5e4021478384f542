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
130   interrupted (Ctrl-C); the run can be resumed
====  ===========================================================
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from ai_agent.config import AgentSettings
    from ai_agent.context import Event
    from ai_agent.graph import Agent, RunResult

__all__ = ["EXIT", "main"]

EXIT = {"completed": 0, "failed": 1, "usage": 2, "paused": 3, "cancelled": 4, "busy": 5}
COMMANDS = ("run", "resume", "runs", "show", "tools")


class _UsageError(Exception):
    """A command-line mistake: printed as one line, exit code 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ai-agent",
        description="Run a task through the nine-stage agent pipeline; pause at the gate for a "
        "person's plan; resume later from any process.",
        epilog="Exit codes: 0 completed, 1 failed, 2 usage error, 3 paused, 4 cancelled, 5 busy.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", help="checkpoint database (default .agents/checkpoints.sqlite)")
    common.add_argument("--config", help="a config file (.toml, .yaml, .json) to load")
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    common.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    runner = argparse.ArgumentParser(add_help=False)
    runner.add_argument("--model", help="model id on the server, or scripted:PATH for a script")
    runner.add_argument("--base-url", help="OpenAI-compatible server URL (ending in /v1)")
    runner.add_argument(
        "--backend",
        choices=["openai", "local"],
        help="'local' starts the built-in llama.cpp server with a small model",
    )
    runner.add_argument("--threshold", type=float, help="gate threshold, 0..1")
    runner.add_argument(
        "--profile",
        choices=["interactive", "default", "batch"],
        help="gate profile: interactive 0.60, default 0.70, batch 0.90",
    )
    runner.add_argument("--max-iterations", type=int, help="cycles before stopping")
    runner.add_argument("--system-prompt", help="system prompt for every model call")
    runner.add_argument("--trace", action="store_true", help="print the structured trace")
    runner.add_argument("--quiet", action="store_true", help="no live status lines on stderr")
    runner.add_argument(
        "--yes",
        action="store_true",
        help="unattended: grant approvals (denied categories stay denied)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", parents=[common, runner], help="run a task (the default)")
    run.add_argument("task", help="what the agent should do")
    run.add_argument("--tools", default="", help="comma-separated built-in tools to activate")
    run.add_argument("--thread-id", help="id for the new run (default: a fresh one)")

    resume = sub.add_parser("resume", parents=[common, runner], help="resume a paused run")
    resume.add_argument("thread", help="the run's thread id")
    resume.add_argument("--tools", default="", help="comma-separated built-in tools to offer")
    resume.add_argument("--plan", help="continue, adding these instructions")
    resume.add_argument("--plan-file", help="a JSON file holding the whole plan")
    resume.add_argument("--deny", action="store_true", help="stop the run (cancelled)")
    resume.add_argument(
        "--approve",
        action="append",
        default=[],
        metavar="CALL_ID",
        help="run a waiting call ('all' for every one); repeatable",
    )
    resume.add_argument(
        "--reject",
        action="append",
        default=[],
        metavar="CALL_ID",
        help="cancel a waiting call ('all' for every one); repeatable",
    )
    resume.add_argument(
        "--activate",
        action="append",
        default=[],
        metavar="TOOL",
        help="activate a catalog tool from now on; repeatable",
    )
    resume.add_argument(
        "--scope",
        choices=["call", "tool", "args"],
        default="call",
        help="how far an approval reaches (default: this call)",
    )

    runs = sub.add_parser("runs", parents=[common], help="list runs, newest first")
    runs.add_argument("--status", choices=["running", "paused", "completed", "failed", "cancelled"])
    runs.add_argument("--limit", type=int, default=20)

    show = sub.add_parser("show", parents=[common], help="show one run and its trace")
    show.add_argument("thread", help="the run's thread id")

    sub.add_parser("tools", parents=[common], help="list the tools in the catalog")
    return parser


def _argv(argv: Sequence[str]) -> list[str]:
    """``ai-agent "task"`` means ``ai-agent run "task"``."""
    args = list(argv)
    first = next((a for a in args if not a.startswith("-")), None)
    if args and first is not None and first not in COMMANDS and args[0] not in ("-h", "--help"):
        return ["run", *args]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(_argv(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse already printed the problem (or the help)
        return int(exc.code or 0) and EXIT["usage"]
    if args.command is None:
        parser.print_help()
        return EXIT["usage"]
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        thread = getattr(args, "thread_id", None) or getattr(args, "thread", None)
        hint = f"; resume it with: ai-agent resume {thread}" if thread else ""
        print(f"interrupted{hint}", file=sys.stderr)
        return 130
    except Exception as exc:
        return _report(exc, args.debug)


def _report(exc: Exception, debug: bool) -> int:
    from ai_agent.errors import AgentError, ConfigError, RunError, ThreadBusyError

    if isinstance(exc, ThreadBusyError):
        print(f"busy: {exc}", file=sys.stderr)
        return EXIT["busy"]
    if isinstance(exc, ConfigError | RunError | _UsageError):
        print(f"error: {exc}", file=sys.stderr)
        return EXIT["usage"]
    if isinstance(exc, AgentError):
        print(f"error: {exc}", file=sys.stderr)
        return EXIT["failed"]
    if debug:
        import traceback

        traceback.print_exception(exc)
    else:
        print(
            f"internal error: {type(exc).__name__}: {exc} (run with --debug for details, "
            "and please report it)",
            file=sys.stderr,
        )
    return EXIT["failed"]


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "runs":
        return _runs(args)
    if args.command == "show":
        return _show(args)
    if args.command == "tools":
        return _tools(args)
    agent = _agent(args)
    if args.command == "run":
        thread_id = args.thread_id or uuid.uuid4().hex
        args.thread_id = thread_id
        if not args.quiet:
            print(f"run {thread_id}", file=sys.stderr)
        result = asyncio.run(_closing(agent, agent.run(args.task, thread_id=thread_id)))
    else:
        plan = _plan(args)
        result = asyncio.run(_closing(agent, agent.resume(args.thread, plan)))
    _print_result(result, args)
    return EXIT[result.status]


async def _closing(agent: Agent, coro: Any) -> RunResult:
    async with agent:
        result: RunResult = await coro
        return result


def _settings(args: argparse.Namespace) -> AgentSettings:
    from ai_agent.config import AgentSettings, load_settings

    overrides: dict[str, Any] = {}
    if getattr(args, "base_url", None):
        overrides["model_backend"] = {"base_url": args.base_url}
    if args.config:
        return AgentSettings.load(args.config, **overrides)
    return load_settings(**overrides)


def _agent(args: argparse.Namespace) -> Agent:
    from ai_agent.graph import Agent

    settings = _settings(args)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()] or None
    if args.command == "resume" and tools is None:
        tools = list(settings.tools) or None
    if args.max_iterations is not None and args.max_iterations < 1:
        raise _UsageError("--max-iterations must be at least 1")
    return Agent(
        model=args.model,
        tools=tools,
        system_prompt=args.system_prompt,
        max_iterations=args.max_iterations,
        gate_threshold=args.threshold,
        gate_profile=args.profile,
        checkpoint_path=args.db,
        settings=settings,
        backend=args.backend,
        unattended=args.yes,
        on_event=None if args.quiet or args.json else _status_line(sys.stderr),
    )


def _plan(args: argparse.Namespace) -> dict[str, Any] | None:
    if args.plan_file:
        try:
            plan: dict[str, Any] = json.loads(Path(args.plan_file).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise _UsageError(f"cannot read the plan file {args.plan_file}: {exc}") from None
        return plan
    wants_plan = args.plan or args.deny or args.approve or args.reject or args.activate
    if not wants_plan:
        return None
    star = {"all": "*"}
    return {
        "allow_continue": not args.deny,
        "instructions": args.plan,
        "approve": [star.get(a, a) for a in args.approve],
        "deny": [star.get(a, a) for a in args.reject],
        "activate_tools": list(args.activate),
        "grant_scope": args.scope,
    }


def _status_line(stream: TextIO) -> Any:
    """Live status lines: which stage runs, which tool, when we wait for the model."""

    def emit(event: Event) -> None:
        kind, it = event.get("type"), event.get("iteration", 0)
        if kind == "stage_started":
            text = f"[{it}] {event.get('stage')}"
        elif kind == "model_waiting":
            text = f"[{it}] draft: waiting for the model"
        elif kind == "tool_started":
            text = f"[{it}] act: running {event.get('tool')}"
        elif kind == "gate_paused":
            text = f"[{it}] gate: paused for a plan"
        else:
            return
        print(text, file=stream, flush=True)

    return emit


def _print_result(result: RunResult, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str))
        return
    if args.trace:
        print(format_trace(result.trace))
    if result.status in ("completed", "cancelled"):
        print(result.final_text or "")
    if result.status == "cancelled":
        print("(cancelled)", file=sys.stderr)
    elif result.status == "paused" and result.gate:
        print(result.gate["prompt"])
    elif result.status == "failed":
        print(f"error: {result.error}", file=sys.stderr)


def format_trace(trace: Sequence[Any]) -> str:
    """The structured trace as a readable table."""
    head = ("stage", "iter", "ms", "tool", "status", "gate", "detail")
    rows = [head]
    for t in trace:
        gate = t.get("gate_score")
        rows.append(
            (
                str(t.get("stage", "")),
                str(t.get("iteration", "")),
                f"{t.get('duration_ms', 0):.1f}",
                str(t.get("tool") or ""),
                str(t.get("status", "")),
                "" if gate is None else f"{gate:.2f}",
                str(t.get("detail") or "")[:60].replace("\n", " "),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def _store(args: argparse.Namespace) -> Any:
    from ai_agent.checkpoints import RunStore

    return RunStore(args.db or _settings(args).checkpoint_path)


def _runs(args: argparse.Namespace) -> int:
    path = Path(args.db or _settings(args).checkpoint_path)
    if not path.exists():
        raise _UsageError(f"no checkpoint database at {path}; run a task first or pass --db")
    store = _store(args)
    runs = asyncio.run(store.list_runs(limit=args.limit, status=args.status))
    store.close()
    if args.json:
        print(json.dumps(runs, indent=2, ensure_ascii=False))
        return 0
    if not runs:
        print("no runs")
    for r in runs:
        task = r["task"].replace("\n", " ")
        print(f"{r['thread_id']}  {r['status']:<9}  {task[:70]}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from ai_agent.graph import Agent

    path = Path(args.db or _settings(args).checkpoint_path)
    if not path.exists():
        raise _UsageError(f"no checkpoint database at {path}; pass --db")
    agent = Agent(checkpoint_path=path, settings=_settings(args), memory_path=None)
    result = asyncio.run(_closing(agent, agent.get_result(args.thread)))
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str))
        return 0
    print(f"thread {result.thread_id}: {result.status} after {result.iterations} iteration(s)")
    print(format_trace(result.trace))
    _print_result(result, argparse.Namespace(json=False, trace=False))
    return 0


def _tools(args: argparse.Namespace) -> int:
    from ai_agent.graph import Agent

    agent = Agent(checkpoint_path=os.devnull, settings=_settings(args), memory_path=None)
    catalog = agent.registry.catalog()
    if args.json:
        print(json.dumps(catalog, indent=2))
        return 0
    for t in catalog:
        env = f"  (needs {', '.join(t['requires_env'])})" if t["requires_env"] else ""
        print(f"{t['name']:<20} {t['category']:<13} {t['description'][:80]}{env}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
