"""Debugging commands: ``history``, ``fork``, ``replay``, ``graph``, ``export`` and ``prune``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.cli._common import (
    Parents,
    UsageError,
    add_pipeline_option,
    archive_of,
    build_agent,
    exit_code,
    run_closing,
    run_listing,
    thread_arg,
)
from ai_agent.cli._numbers import amount_arg, count_arg
from ai_agent.cli._printing import (
    format_table,
    print_family,
    print_json,
    print_pipeline,
    print_result,
)
from ai_agent.visible import visible

if TYPE_CHECKING:
    from ai_agent.graph import (
        HistoryEntry,
        ModelIdentity,
        PruneReport,
        ReplayMode,
        RunArchive,
        RunFamily,
        RunResult,
        TimelineRow,
        UnreadChannels,
    )

__all__ = ["add_commands"]


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``history``, ``fork``, ``replay``, ``graph``, ``export`` and ``prune``."""
    history = sub.add_parser(
        "history", parents=[parents.common], help="list a run's checkpoints, oldest first"
    )
    history.add_argument("thread", type=thread_arg, help="the run's thread id")
    add_pipeline_option(history)
    history.set_defaults(handler=_history)

    fork = sub.add_parser(
        "fork", parents=[parents.common], help="copy a run up to a checkpoint into a new thread"
    )
    fork.add_argument("thread", type=thread_arg, help="the run's thread id")
    fork.add_argument("checkpoint", help="the checkpoint id (see `ai-agent history THREAD`)")
    fork.add_argument("--update", help="state values to apply to the fork, as JSON")
    fork.set_defaults(handler=_fork)

    replay = sub.add_parser(
        "replay",
        parents=[parents.common, parents.runner],
        help="re-run a stored run into a new thread, offline from its recording",
    )
    replay.add_argument("thread", type=thread_arg, help="the run's thread id")
    replay.add_argument(
        "--from",
        dest="checkpoint",
        metavar="CHECKPOINT",
        help="start there (with --live-after: switch to live there)",
    )
    live = replay.add_mutually_exclusive_group()
    live.add_argument("--live", action="store_true", help="call the model and tools again")
    live.add_argument(
        "--live-after", action="store_true", help="recorded up to the checkpoint, live after it"
    )
    replay.set_defaults(handler=_replay)

    graph = sub.add_parser(
        "graph", parents=[parents.common], help="print the pipeline as a Mermaid diagram"
    )
    graph.add_argument("--thread", type=thread_arg, help="mark the stages this run went through")
    graph.set_defaults(handler=_graph)

    export = sub.add_parser(
        "export", parents=[parents.common], help="write a run as one self-contained HTML page"
    )
    export.add_argument("thread", type=thread_arg, help="the run's thread id")
    export.add_argument("--html", required=True, metavar="FILE", help="the page to write")
    add_pipeline_option(export)
    export.set_defaults(handler=_export)

    prune = sub.add_parser(
        "prune",
        parents=[parents.common],
        help="delete old checkpoints and recorded calls, keeping paused runs resumable",
    )
    prune.add_argument("thread", type=thread_arg, nargs="?", help="prune this run")
    prune.add_argument(
        "--older-than",
        type=amount_arg(positive=False),
        metavar="DAYS",
        help="runs idle this long",
    )
    prune.add_argument(
        "--keep-last", type=count_arg(0), metavar="N", help="all but the N latest runs"
    )
    prune.add_argument("--no-vacuum", action="store_true", help="do not reclaim the space")
    prune.set_defaults(handler=_prune)


# Each handler gets its data through one event loop, then hands it to a printer: the printers
# hold the logic, the handlers stay two lines long.


def _history(args: argparse.Namespace) -> int:
    archive = archive_of(args)
    return _show_history(args, *run_listing(archive, lambda: _around(archive, args.thread)))


async def _around(
    archive: RunArchive, thread: str
) -> tuple[list[HistoryEntry], RunFamily, UnreadChannels | None]:
    """A run's checkpoints, its family and what its reader's pipeline cannot read."""
    from ai_agent.graph import family_of

    entries = await archive.ahistory(thread)
    family = await family_of(archive.store, thread)
    return entries, family, await archive.database.unread_channels(thread)


def _show_history(
    args: argparse.Namespace,
    entries: list[HistoryEntry],
    family: RunFamily,
    unread: UnreadChannels | None,
) -> int:
    if args.json:
        print_json(
            {
                "thread_id": args.thread,
                "family": family,
                "unread": unread.to_dict() if unread else None,
                "checkpoints": [e.to_dict() for e in entries],
            }
        )
        return 0
    print_family(family)
    print_pipeline({}, unread)
    rows = [
        (str(e.step), e.stage, e.time[11:19], e.checkpoint_id, e.summary.replace("\n", " "))
        for e in entries
    ]
    print(format_table(("step", "stage", "time", "checkpoint", "what changed"), rows))
    return 0


def _update_of(args: argparse.Namespace) -> dict[str, Any] | None:
    from ai_agent.datafiles import strict_loads

    if not args.update:
        return None
    try:
        update = strict_loads(args.update)
    except RecursionError:
        raise UsageError("--update is nested too deeply; flatten it") from None
    except ValueError as exc:  # not JSON, a key given twice, NaN, a number too large
        raise UsageError(f"--update is not JSON we can read: {exc}") from None
    if not isinstance(update, dict):
        raise UsageError('--update must be a JSON object, e.g. {"reflection": "..."}')
    return update


def _fork(args: argparse.Namespace) -> int:
    archive, update = archive_of(args), _update_of(args)
    return _show_fork(
        args, run_closing(archive, archive.afork(args.thread, args.checkpoint, update))
    )


def _show_fork(args: argparse.Namespace, new: str) -> int:
    if args.json:
        print_json({"thread_id": new, "parent_thread_id": args.thread})
    else:
        print(visible(new))
        print(f"resume it with: ai-agent resume {visible(new)}", file=sys.stderr)
    return 0


def _replay(args: argparse.Namespace) -> int:
    mode: ReplayMode = "live" if args.live else "live-after" if args.live_after else "recorded"
    agent = build_agent(args)
    # Without --model the replay compares its requests as the original's model made them.
    identity: ModelIdentity = "recorded" if args.model is None else "agent"
    replaying = agent.replay(args.thread, args.checkpoint, mode, model_identity=identity)
    return _show_replay(args, mode, run_closing(agent, replaying))


def _show_replay(args: argparse.Namespace, mode: str, result: RunResult) -> int:
    if args.json:
        print_json(result.to_dict())
    else:
        print(
            f"replay {visible(result.thread_id)} of {visible(args.thread)} ({mode}): "
            f"{result.status}",
            file=sys.stderr,
        )
        if result.divergence is not None:  # quotes the recorded and the new calls
            print(visible(str(result.divergence), "lines"))
        else:
            print_result(result, trace=args.trace, links=args.links)
    return exit_code(result)


def _graph(args: argparse.Namespace) -> int:
    if not args.thread:
        return _show_graph(None)
    archive = archive_of(args)
    return _show_graph(run_listing(archive, lambda: archive.timeline(args.thread)))


def _show_graph(timeline: list[TimelineRow] | None) -> int:
    from ai_agent.graph import mermaid

    visits: dict[str, int] | None = None
    if timeline is not None:
        visits = {}
        for row in timeline:
            visits[row["stage"]] = visits.get(row["stage"], 0) + 1
    print(mermaid(visits), end="")
    return 0


def _export(args: argparse.Namespace) -> int:
    archive = archive_of(args)
    page = run_listing(archive, lambda: archive.export_html(args.thread, Path(args.html)))
    return _show_export(args, page)


def _show_export(args: argparse.Namespace, path: Path) -> int:
    if args.json:
        print_json({"thread_id": args.thread, "html": str(path)})
    else:
        print(visible(str(path)))
    return 0


def _prune(args: argparse.Namespace) -> int:
    archive = archive_of(args)
    pruning = archive.prune(
        args.thread,
        older_than_days=args.older_than,
        keep_last=args.keep_last,
        vacuum=not args.no_vacuum,
    )
    return _show_prune(args, run_closing(archive, pruning))


def _show_prune(args: argparse.Namespace, report: PruneReport) -> int:
    if args.json:
        print_json(report.to_dict())
        return 0
    saved = report.bytes_before - report.bytes_after
    print(
        f"pruned {len(report.pruned)} run(s): {report.checkpoints_deleted} checkpoint(s) and "
        f"{report.calls_deleted} recorded call(s) deleted; "
        + (f"{saved / 1024:.0f} KiB reclaimed" if report.vacuumed else "space not reclaimed yet")
    )
    for thread, why in report.skipped.items():
        print(f"skipped {visible(thread)}: {visible(why)}")
    return 0
