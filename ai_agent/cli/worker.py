"""``ai-agent worker`` (serve the plan queue) and ``ai-agent plans`` (look at it).

A plan is queued with ``ai-agent resume THREAD --plan ... --queue``; a worker pointed at the same
database (``--db postgresql://...`` on each machine) resumes the run with it. The worker needs the
tools and model the runs were made with: pass ``--tools`` / ``--model`` as for ``run``, or
``--app module:factory``, where ``factory(checkpoint_url)`` returns the Agent (the ``--db``
value, or None to use the settings).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ai_agent.cli._common import (
    EXIT,
    Parents,
    UsageError,
    archive_of,
    build_agent,
    require_database,
    run_closing,
    run_listing,
    thread_arg,
)
from ai_agent.cli._numbers import amount_arg, count_arg
from ai_agent.cli._printing import format_table, print_json
from ai_agent.errors import StoreError
from ai_agent.visible import json_visible, visible

if TYPE_CHECKING:
    from ai_agent.graph import Agent, PlanOutcome, WorkerEvent

__all__ = ["add_commands", "load_app"]


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``worker`` and ``plans``."""
    worker = sub.add_parser(
        "worker",
        parents=[parents.common, parents.runner],
        help="resume runs whose plan has arrived (ai-agent resume ... --queue)",
        description="Serve the plan queue of one database: take each queued plan's thread "
        "lease, resume the run with the plan, record the outcome. Run one per machine (or "
        "several); one worker works on a thread at a time. SIGTERM stops it cleanly.",
    )
    worker.add_argument("--once", action="store_true", help="serve what is queued, then exit")
    worker.add_argument(
        "--poll",
        type=amount_arg(positive=True),
        default=1.0,
        metavar="SECONDS",
        help="queue poll interval (1)",
    )
    worker.add_argument(
        "--concurrency", type=count_arg(1), default=1, metavar="N", help="runs driven at once (1)"
    )
    worker.add_argument(
        "--grace",
        type=amount_arg(positive=False),
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM, time the runs in progress get to finish before they are cancelled",
    )
    worker.add_argument(
        "--outage",
        type=amount_arg(positive=False),
        default=60.0,
        metavar="SECONDS",
        help="how long the plan queue may stay unreadable (the database away) before the "
        "worker gives up with an error (60); the polls in between retry",
    )
    worker.add_argument(
        "--app",
        metavar="MODULE:FACTORY",
        help="build the Agent with your own factory(checkpoint_url) (for your own tools)",
    )
    worker.set_defaults(handler=_worker)

    plans = sub.add_parser("plans", parents=[parents.common], help="list the plan queue")
    plans.add_argument("--status", choices=["queued", "claimed", "done", "failed", "refused"])
    plans.add_argument("--thread", type=thread_arg, help="only this run's plans")
    plans.add_argument("--limit", type=count_arg(1), default=50, help="list this many (50)")
    plans.set_defaults(handler=_plans)


def load_app(spec: str, checkpoint_url: str | None) -> Agent:
    """The Agent made by ``module:factory`` (called with the database location)."""
    from importlib import import_module

    from ai_agent.graph import Agent

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"--app wants MODULE:FACTORY, such as myproject.agents:make (got {spec})")
    try:
        factory = getattr(import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"cannot load --app {spec}: {exc}") from None
    agent = factory(checkpoint_url)
    if not isinstance(agent, Agent):
        raise UsageError(f"--app {spec} returned {type(agent).__name__}, not an Agent")
    return agent


def _worker(args: argparse.Namespace) -> int:
    from ai_agent.graph import Worker

    agent = load_app(args.app, args.db) if args.app else build_agent(args, on_event=None)
    # A worker serves what runs queued: it never starts a database of its own.
    require_database(agent.archive.database)
    hide = agent.archive.database.hide  # a driver's message may quote the URL
    write = _json_writer(hide)
    worker = Worker(
        agent,
        poll=args.poll,
        concurrency=args.concurrency,
        grace=args.grace,
        outage=args.outage,
        on_event=_json_failures(write) if args.json else _printer(hide),
    )
    if not args.json:
        print(
            f"worker {worker.name} serving {agent.archive.database.describe()} "
            f"(concurrency {args.concurrency}, poll {args.poll:g}s)",
            file=sys.stderr,
            flush=True,
        )
    try:
        from ai_agent.cli._worker_logs import log_lines, logs_to  # logging: not at start-up

        with logs_to(log_lines(json_lines=args.json, debug=args.debug, write=write, hide=hide)):
            outcomes = run_closing(agent, _serve(worker, once=args.once))
    except StoreError as exc:  # the queue stayed unreadable: what was served is still told
        if not args.json:
            raise StoreError(hide(str(exc))) from None
        print_json([o.to_dict() for o in worker.outcomes])
        write({"type": "gave_up", "kind": type(exc).__name__, "error": str(exc)})
        return EXIT["failed"]
    if args.json:
        print_json([o.to_dict() for o in outcomes])
    return 0


_TEXTS = frozenset({"error", "message"})  # what may quote the driver's text, and so the URL


def _json_writer(hide: Callable[[str], str]) -> Callable[[dict[str, Any]], None]:
    """``--json``: how every line on stderr is written: one JSON object, the password hidden."""

    def write(line: dict[str, Any]) -> None:
        line = {key: hide(str(value)) if key in _TEXTS else value for key, value in line.items()}
        text = json_visible(json.dumps(line, ensure_ascii=False, default=str))
        print(text, file=sys.stderr, flush=True)

    return write


def _json_failures(write: Callable[[dict[str, Any]], None]) -> Callable[[WorkerEvent], None]:
    """``--json``: each failure as one JSON line on stderr (stdout keeps the outcomes' list).

    The outcomes come at the end; a plan that cannot be served (the database away, a write
    refused) has none, and would otherwise leave the operator's log empty while it is retried.
    The worker tells each kind of failure once per plan (`Worker`), not at every poll.
    """

    def emit(event: WorkerEvent) -> None:
        if event["type"] in ("error", "poll_error", "recovered"):
            write(event)

    return emit


async def _serve(worker: Any, *, once: bool) -> list[PlanOutcome]:
    import asyncio
    import signal

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, worker.stop)
    try:
        outcomes: list[PlanOutcome] = await worker.run(once=once)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    return outcomes


def _printer(hide: Callable[[str], str]) -> Callable[[WorkerEvent], None]:
    """Status lines on stderr, one for each event, the database's password kept out."""
    return lambda event: print(hide(_status_line(event)), file=sys.stderr, flush=True)


def _status_line(event: WorkerEvent) -> str:
    kind = event["type"]
    plan, thread = event.get("plan", event.get("plan_id")), visible(str(event.get("thread_id")))
    where = f"plan {plan} for run {thread}"
    if kind == "done":
        text = f"{where}: resumed, run {event['run_status']} ({event['seconds']:.2f}s)"
    elif kind == "failed":
        text = f"{where}: not applied: {visible(str(event['error']))}"
    elif kind == "refused":
        text = f"{where}: refused: {visible(str(event['error']))}"
    elif kind == "skipped":
        text = f"{where}: skipped (another worker or process has the run)"
    elif kind == "error":
        text = (
            f"{where}: cannot be served: {event['kind']}: {visible(str(event['error']))} "
            "(retried at every poll; told again only if the error changes)"
        )
    elif kind == "poll_error":
        text = (
            f"cannot read the plan queue: {event['kind']}: {visible(str(event['error']))} "
            "(retried at every poll; told again only if the error changes)"
        )
    elif kind == "recovered":
        text = "the plan queue can be read again"
    else:  # stopping
        text = f"stopping: waiting for {visible(', '.join(event['running']))}"
    return text


def _plans(args: argparse.Namespace) -> int:
    archive = archive_of(args, listing=True)
    plans = run_listing(
        archive,
        lambda: archive.list_plans(status=args.status, thread_id=args.thread, limit=args.limit),
    )
    if args.json:
        print_json(plans)
        return 0
    if not plans:
        print("no plans")
        return 0
    rows = [
        (
            str(p["id"]),
            p["thread_id"],
            p["status"],
            p["outcome"] or "",
            p["claimed_by"] or "",
            (p["error"] or "")[:60],
        )
        for p in plans
    ]
    print(format_table(("plan", "thread", "status", "run", "worker", "error"), rows))
    return 0
