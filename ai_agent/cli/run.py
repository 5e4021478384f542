"""``ai-agent run`` (the default command) and ``ai-agent resume``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ai_agent.cli._common import (
    EXIT,
    Parents,
    UsageError,
    build_agent,
    exit_code,
    run_closing,
    sigterm_as_ctrl_c,
    thread_arg,
)
from ai_agent.cli._printing import print_json, print_result, streaming
from ai_agent.visible import visible

if TYPE_CHECKING:
    from ai_agent.state import UserPlan

__all__ = ["add_commands"]


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``run`` and ``resume``."""
    run = sub.add_parser(
        "run", parents=[parents.common, parents.runner], help="run a task (the default command)"
    )
    run.add_argument("task", help="what the agent should do")
    run.add_argument(
        "--thread-id", type=thread_arg, help="id for the new run (default: a fresh one)"
    )
    run.set_defaults(handler=_run)

    resume = sub.add_parser(
        "resume", parents=[parents.common, parents.runner], help="resume a paused (or crashed) run"
    )
    resume.add_argument("thread", type=thread_arg, help="the run's thread id")
    # One kind of answer at a time: --deny with --plan used to cancel a run its author meant to
    # continue, and --plan-file quietly won over the others.
    answer = resume.add_mutually_exclusive_group()
    answer.add_argument("--plan", help="continue, adding these instructions")
    answer.add_argument("--plan-file", help="a JSON file holding the whole plan")
    answer.add_argument("--deny", action="store_true", help="stop the run (cancelled)")
    resume.add_argument(
        "--reason", help="with --deny: why the run is stopped (kept in its final text)"
    )
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
        "--always",
        choices=["run", "args", "tool"],
        help="also store an always-allow rule for each approved call: this tool in this run, "
        "these arguments in any run, or this tool always (ai-agent rules list / revoke)",
    )
    resume.add_argument(
        "--confirm-always",
        action="store_true",
        help="confirm --always tool for a modification tool: its every call runs unasked",
    )
    resume.add_argument(
        "--queue",
        action="store_true",
        help="check the plan and queue it for a worker (ai-agent worker) instead of resuming here",
    )
    resume.set_defaults(handler=_resume)


def _run(args: argparse.Namespace) -> int:
    from ai_agent.cli._live import LivePrinter, consume  # imports the engine: only when running
    from ai_agent.graph import new_thread_id

    agent = build_agent(args, creates=True)
    args.thread_id = new_thread_id() if args.thread_id is None else args.thread_id
    if not (args.quiet or args.json):
        print(f"run {visible(args.thread_id)}", file=sys.stderr)
    printer = LivePrinter()
    with sigterm_as_ctrl_c():
        if streaming(args):
            events = agent.astream(args.task, thread_id=args.thread_id)
            result = run_closing(agent, consume(events, printer))
        else:
            result = run_closing(agent, agent.run(args.task, thread_id=args.thread_id))
    print_result(
        result, as_json=args.json, trace=args.trace, streamed=printer.streamed, links=args.links
    )
    return exit_code(result)


def _resume(args: argparse.Namespace) -> int:
    from ai_agent.cli._live import LivePrinter, consume

    agent = build_agent(args)
    plan = plan_of(args, agent.settings.max_plan_chars)
    if args.queue:
        return _queue(args, agent, plan)
    printer = LivePrinter()
    with sigterm_as_ctrl_c():
        if streaming(args):
            events = agent.astream_resume(args.thread, plan)
            result = run_closing(agent, consume(events, printer))
        else:
            result = run_closing(agent, agent.resume(args.thread, plan))
    print_result(
        result, as_json=args.json, trace=args.trace, streamed=printer.streamed, links=args.links
    )
    return exit_code(result)


def _queue(args: argparse.Namespace, agent: Any, plan: Any) -> int:
    if plan is None:
        raise UsageError("--queue needs a plan: --plan, --plan-file, --deny, --approve ...")
    record = run_closing(agent, agent.submit_plan(args.thread, plan))
    if args.json:
        print_json(record)
    else:
        print(f"queued plan {record['id']} for run {visible(args.thread)}; a worker will resume it")
    return EXIT["completed"]


def plan_of(args: argparse.Namespace, max_chars: int) -> UserPlan | None:
    """The plan the options describe, read (`ai_agent.plans.read_plan`), or None when none.

    Args:
        args: The parsed options.
        max_chars: The settings' ``max_plan_chars``: a plan file is read only up to what a plan
            of that size can take, and a plan longer than that is refused.
    """
    from ai_agent.plans import read_plan  # a plan arrives here: read once, typed from here on

    _check_answer(args)
    if args.plan_file:
        return read_plan(_plan_file(args.plan_file, max_chars), max_chars=max_chars)
    if not (args.plan or args.deny or args.approve or args.reject or args.activate):
        return None
    star = {"all": "*"}
    plan = {
        "allow_continue": not args.deny,
        "instructions": args.reason if args.deny else args.plan,
        "approve": [star.get(a, a) for a in args.approve],
        "deny": [star.get(a, a) for a in args.reject],
        "activate_tools": list(args.activate),
        "grant_scope": args.scope,
        "always_allow": args.always,
        "confirm_always": args.confirm_always,
    }
    return read_plan(plan, max_chars=max_chars)


def _check_answer(args: argparse.Namespace) -> None:
    """Options that contradict each other (argparse's groups cannot say these)."""
    decisions = bool(
        args.approve or args.reject or args.activate or args.scope != "call" or args.always
    )
    if args.plan_file and decisions:
        raise UsageError(
            "--plan-file holds the whole plan: put approve, deny, activate_tools and "
            "grant_scope in the file, or leave the file out"
        )
    if args.deny and (args.approve or args.activate):
        raise UsageError(
            "--deny stops the run, so --approve and --activate would never apply; give one or "
            "the other"
        )
    if args.scope != "call" and not args.approve:
        raise UsageError(
            "--scope says how far an --approve reaches; name the calls with --approve CALL_ID "
            "(or --approve all), or leave --scope out"
        )
    if (args.always or args.confirm_always) and not args.approve:
        raise UsageError(
            "--always makes a rule for each call you approve; name them with --approve CALL_ID "
            "(or --approve all)"
        )
    if args.reason and not args.deny:
        raise UsageError("--reason goes with --deny; to continue with instructions use --plan")
    both = sorted(set(args.approve) & set(args.reject))
    if both:
        raise UsageError(
            f"--approve and --reject both name {', '.join(both)}; decide once for each call"
        )


def _plan_file(path: str, max_chars: int) -> Any:
    from ai_agent.datafiles import loads_json, read_text
    from ai_agent.errors import InvalidPlanError

    what = f"the plan file {path}"
    # A character takes at most 4 bytes in UTF-8 and 6 as a JSON escape (\uXXXX).
    text = read_text(
        path,
        what=what,
        max_bytes=6 * max_chars,
        error=InvalidPlanError,
        limit_hint="shorten the plan, or raise the max_plan_chars setting",
    )
    # loads_json refuses a key given twice: json.loads alone keeps the last, so a file saying
    # "allow_continue": true and then false would cancel the run without a word.
    return loads_json(text, what=what, error=InvalidPlanError)
