"""``ai-agent run`` (the default command) and ``ai-agent resume``."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from ai_agent.cli._common import (
    EXIT,
    Parents,
    UsageError,
    build_agent,
    print_json,
    print_result,
    run_closing,
    streaming,
)

__all__ = ["add_commands"]


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``run`` and ``resume``."""
    run = sub.add_parser(
        "run", parents=[parents.common, parents.runner], help="run a task (the default command)"
    )
    run.add_argument("task", help="what the agent should do")
    run.add_argument("--thread-id", help="id for the new run (default: a fresh one)")
    run.set_defaults(handler=_run)

    resume = sub.add_parser(
        "resume", parents=[parents.common, parents.runner], help="resume a paused (or crashed) run"
    )
    resume.add_argument("thread", help="the run's thread id")
    resume.add_argument("--plan", help="continue, adding these instructions")
    resume.add_argument("--plan-file", help="a JSON file holding the whole plan")
    resume.add_argument("--deny", action="store_true", help="stop the run (cancelled)")
    resume.add_argument(
        "--approve",
        action="append",
        default=[],
        metavar="CALL_ID",
        help="run a waiting call, by the id the prompt shows ('all' for every one); repeatable",
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
    resume.add_argument(
        "--queue",
        action="store_true",
        help="check the plan and queue it for a worker (ai-agent worker) instead of resuming here",
    )
    resume.set_defaults(handler=_resume)


def _run(args: argparse.Namespace) -> int:
    from ai_agent.cli._live import LivePrinter, consume  # imports the engine: only when running

    agent = build_agent(args)
    args.thread_id = args.thread_id or uuid.uuid4().hex
    if not (args.quiet or args.json):
        print(f"run {args.thread_id}", file=sys.stderr)
    printer = LivePrinter()
    if streaming(args):
        events = agent.astream(args.task, thread_id=args.thread_id)
        result = run_closing(agent, consume(events, printer))
    else:
        result = run_closing(agent, agent.run(args.task, thread_id=args.thread_id))
    print_result(result, as_json=args.json, trace=args.trace, streamed=printer.streamed)
    return EXIT[result.status]


def _resume(args: argparse.Namespace) -> int:
    from ai_agent.cli._live import LivePrinter, consume

    agent = build_agent(args)
    if args.queue:
        return _queue(args, agent)
    printer = LivePrinter()
    if streaming(args):
        result = run_closing(
            agent, consume(agent.astream_resume(args.thread, plan_of(args)), printer)
        )
    else:
        result = run_closing(agent, agent.resume(args.thread, plan_of(args)))
    print_result(result, as_json=args.json, trace=args.trace, streamed=printer.streamed)
    return EXIT[result.status]


def _queue(args: argparse.Namespace, agent: Any) -> int:
    plan = plan_of(args)
    if plan is None:
        raise UsageError("--queue needs a plan: --plan, --plan-file, --deny, --approve ...")
    record = run_closing(agent, agent.submit_plan(args.thread, plan))
    if args.json:
        print_json(record)
    else:
        print(f"queued plan {record['id']} for run {args.thread}; a worker will resume it")
    return EXIT["completed"]


def plan_of(args: argparse.Namespace) -> dict[str, Any] | None:
    """The plan the options describe, or None when they describe none."""
    if args.plan_file:
        try:
            plan: dict[str, Any] = json.loads(Path(args.plan_file).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"cannot read the plan file {args.plan_file}: {exc}") from None
        return plan
    if not (args.plan or args.deny or args.approve or args.reject or args.activate):
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
