"""A process that runs or resumes one agent run, for the multi-process tests.

Usage: python proc_agent.py DB WORKDIR run|resume|submit|worker THREAD [PLAN_JSON]

``submit`` queues the plan for the thread (``Agent.submit_plan``) and prints the plan row;
``worker`` serves the plan queue once (``Worker.run(once=True)``) and prints the outcomes.

The ``effect`` tool appends a line to WORKDIR/effects.txt (its side effect), first writing
WORKDIR/started.txt, and sleeps EFFECT_SLEEP seconds in between (or, with EFFECT_WAIT_FOR_RELEASE
set, waits until WORKDIR/release exists) so a test can overlap or kill it.
Exit codes: 0 completed, 3 paused, 4 cancelled, 5 ThreadBusyError, 6 NothingPendingError.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.config import AgentSettings
from ai_agent.errors import NothingPendingError, ThreadBusyError
from ai_agent.graph import Worker
from ai_agent.testing import ScriptedModel

CODES = {"completed": 0, "failed": 1, "paused": 3, "cancelled": 4}


def main() -> int:
    db, workdir, mode, thread = sys.argv[1:5]
    plan = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
    work = Path(workdir)

    def effect(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        with (work / "started.txt").open("a") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(float(os.environ.get("EFFECT_SLEEP", "0")))
        if os.environ.get("EFFECT_WAIT_FOR_RELEASE"):  # hold the call until the test says so
            deadline = time.monotonic() + 120
            while not (work / "release").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        with (work / "effects.txt").open("a") as fh:
            fh.write(f"{args.get('text')} by {os.getpid()}\n")
        return {"status": "ok", "content": "written"}

    tool = ToolSpec(
        "effect",
        effect,
        description="Write a line.",
        category=ToolCategory.MODIFICATION,
        timeout=120,
    )
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "effect", "args": {"text": "hello"}}]},
            {"text": "wrote it"},
        ]
    )
    agent = Agent(
        model=model,
        tools=[tool],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
        unattended=os.environ.get("UNATTENDED") == "1",
    )
    if mode == "submit":
        print(json.dumps(asyncio.run(agent._closing(agent.submit_plan(thread, plan or {})))))
        return 0
    if mode == "worker":
        outcomes = asyncio.run(agent._closing(Worker(agent).run(once=True)))
        print(json.dumps([o.to_dict() for o in outcomes]))
        return 0
    try:
        if mode == "run":
            result = asyncio.run(agent.run("write hello", thread_id=thread))
        else:
            result = asyncio.run(agent.resume(thread, plan))
    except ThreadBusyError as exc:
        print(f"busy: {exc}")
        return 5
    except NothingPendingError as exc:
        print(f"nothing: {exc}")
        return 6
    print(json.dumps(result.to_dict(), default=str))
    return CODES[result.status]


if __name__ == "__main__":
    sys.exit(main())
