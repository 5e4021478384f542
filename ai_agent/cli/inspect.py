"""``ai-agent runs`` and ``ai-agent show``: looking at what is stored."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ai_agent.cli._common import (
    Parents,
    add_pipeline_option,
    archive_of,
    run_listing,
    thread_arg,
)
from ai_agent.cli._numbers import count_arg
from ai_agent.cli._printing import (
    format_timeline,
    print_family,
    print_json,
    print_pipeline,
    print_result,
)
from ai_agent.visible import visible

if TYPE_CHECKING:
    from ai_agent.graph import RunArchive, RunFamily, UnreadChannels

__all__ = ["add_commands"]


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``runs`` and ``show``."""
    runs = sub.add_parser("runs", parents=[parents.common], help="list runs, newest first")
    runs.add_argument(
        "--status", choices=["running", "paused", "completed", "failed", "cancelled", "forked"]
    )
    runs.add_argument("--limit", type=count_arg(1), default=20, help="list this many (20)")
    runs.set_defaults(handler=_runs)

    show = sub.add_parser("show", parents=[parents.common], help="show one run and its timeline")
    show.add_argument("thread", type=thread_arg, help="the run's thread id")
    show.add_argument(
        "--checkpoint", metavar="ID", help="the run as it was at this checkpoint (see history)"
    )
    add_pipeline_option(show)
    show.set_defaults(handler=_show)


def _runs(args: argparse.Namespace) -> int:
    from ai_agent.graph import run_tree

    archive = archive_of(args, listing=True)
    runs = run_listing(archive, lambda: archive.list_runs(limit=args.limit, status=args.status))
    if args.json:
        print_json(runs)
        return 0
    if not runs:
        print("no runs")
    # A child run (a subagent's) is indented under its parent when both are listed.
    for depth, r in run_tree(runs):
        # Every value is the row's, which any program with the database may have written.
        task = visible(r["task"].replace("\n", " ")[:70])
        parent = visible(str(r["parent_thread_id"]))
        origin = "" if r["origin"] == "run" else f"  ({visible(str(r['origin']))} of {parent})"
        if depth:
            origin = f"  (child at {visible(str(r['parent_call_id']))})"
        indent = "  " * (depth - 1) + "└ " if depth else ""
        status = visible(str(r["status"]))
        print(f"{indent}{visible(r['thread_id'])}  {status:<9}  {task}{origin}")
    return 0


def _show(args: argparse.Namespace) -> int:
    archive = archive_of(args)
    gathered = run_listing(archive, lambda: _gather(archive, args.thread, args.checkpoint))
    return _print_show(args, *gathered)


def _print_show(
    args: argparse.Namespace,
    result: Any,
    timeline: Any,
    state: Any,
    family: RunFamily,
    pipeline: tuple[dict[str, Any], UnreadChannels | None],
) -> int:
    fields, unread = pipeline
    if args.json:
        print_json(
            {
                **result.to_dict(),
                "timeline": timeline,
                "at": state,
                "family": family,
                "fields": fields,
                "unread": unread.to_dict() if unread else None,
            }
        )
        return 0
    usage = result.usage
    why = "" if result.stop_reason in (None, "finished") else f" ({result.stop_reason})"
    print(
        f"thread {visible(result.thread_id)}: {result.status}{why} after {result.iterations} "
        "iteration(s), "
        f"{usage.get('total_tokens', 0)} tokens in {usage.get('requests', 0)} model request(s)"
    )
    if state is not None:
        print(
            f"at checkpoint {visible(args.checkpoint)} (step {state['step']}): next "
            f"{', '.join(state['next']) or 'nothing (the run ended)'}"
            + ("; paused for a plan" if state["paused"] else "")
        )
    print_family(family)
    print_pipeline(fields, unread)
    print(format_timeline(timeline))
    if state is None:
        print_result(result, links=args.links)
    return 0


async def _gather(archive: RunArchive, thread: str, checkpoint: str | None) -> Any:
    from ai_agent.graph import family_of, own_fields

    result, latest = await archive.get_outcome(thread)
    timeline = await archive.timeline(thread, checkpoint)
    state = None
    if checkpoint is not None:
        entry = next(e for e in await archive.ahistory(thread) if e.checkpoint_id == checkpoint)
        state = {"step": entry.step, "next": list(entry.next), "paused": entry.paused}
    fields = own_fields(latest)
    pipeline = (fields, await archive.database.unread_channels(thread))
    return result, timeline, state, await family_of(archive.store, thread), pipeline
