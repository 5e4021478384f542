"""``ai-agent runs``, ``ai-agent show`` and ``ai-agent tools``: looking at what is stored."""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from ai_agent.cli._common import (
    Parents,
    db_path,
    format_trace,
    print_json,
    print_result,
    run_closing,
    settings_of,
)

__all__ = ["add_commands"]


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``runs``, ``show`` and ``tools``."""
    runs = sub.add_parser("runs", parents=[parents.common], help="list runs, newest first")
    runs.add_argument("--status", choices=["running", "paused", "completed", "failed", "cancelled"])
    runs.add_argument("--limit", type=int, default=20)
    runs.set_defaults(handler=_runs)

    show = sub.add_parser("show", parents=[parents.common], help="show one run and its trace")
    show.add_argument("thread", help="the run's thread id")
    show.set_defaults(handler=_show)

    tools = sub.add_parser("tools", parents=[parents.common], help="list the tool catalog")
    tools.set_defaults(handler=_tools)


def _runs(args: argparse.Namespace) -> int:
    from ai_agent.checkpoints import RunStore

    store = RunStore(db_path(args))
    try:
        runs = asyncio.run(store.list_runs(limit=args.limit, status=args.status))
    finally:
        store.close()
    if args.json:
        print_json(runs)
        return 0
    if not runs:
        print("no runs")
    for r in runs:
        task = r["task"].replace("\n", " ")
        print(f"{r['thread_id']}  {r['status']:<9}  {task[:70]}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from ai_agent.graph import Agent

    agent = Agent(checkpoint_path=db_path(args), settings=settings_of(args), memory_path=None)
    result = run_closing(agent, agent.get_result(args.thread))
    if args.json:
        print_json(result.to_dict())
        return 0
    print(f"thread {result.thread_id}: {result.status} after {result.iterations} iteration(s)")
    print(format_trace(result.trace))
    print_result(result)
    return 0


def _tools(args: argparse.Namespace) -> int:
    from ai_agent.graph import Agent

    agent = Agent(checkpoint_path=os.devnull, settings=settings_of(args), memory_path=None)
    catalog = agent.registry.catalog()
    if args.json:
        print_json(catalog)
        return 0
    for t in catalog:
        env = f"  (needs {', '.join(t['requires_env'])})" if t["requires_env"] else ""
        print(f"{t['name']:<20} {t['category']:<13} {t['description'][:80]}{env}")
    return 0
