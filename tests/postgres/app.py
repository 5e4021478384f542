"""The Agent of the multi-process PostgreSQL tests, and a process that runs or resumes with it.

``make_agent(checkpoint_url)`` is also the worker's ``--app tests.postgres.app:make_agent``, so a
run made by one process and resumed by a worker in another have the same tool and model.

The ``effect`` tool (a modification: it needs approval) appends a line to
``$EFFECT_DIR/effects.txt`` (its side effect), first writing ``started.txt``, and sleeps
``EFFECT_SLEEP`` seconds in between (or, with ``EFFECT_WAIT_FOR_RELEASE`` set, waits until
``$EFFECT_DIR/release`` exists) so a test can overlap, stop or kill it.

Usage: python -m tests.postgres.app URL run|resume THREAD [PLAN_JSON]
Exit codes: 0 completed, 1 failed, 3 paused, 4 cancelled, 5 ThreadBusyError, 6 NothingPendingError.
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
from ai_agent.testing import ScriptedModel

CODES = {"completed": 0, "failed": 1, "paused": 3, "cancelled": 4}


def _effect(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    work = Path(os.environ["EFFECT_DIR"])
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


def make_agent(checkpoint_url: str | None) -> Agent:
    """The test Agent: the effect tool, a two-turn script, this database."""
    tool = ToolSpec(
        "effect",
        _effect,
        description="Write a line.",
        category=ToolCategory.MODIFICATION,
        timeout=120,
    )
    model = ScriptedModel(
        [{"tool_calls": [{"name": "effect", "args": {"text": "hello"}}]}, {"text": "wrote it"}]
    )
    return Agent(
        model=model,
        tools=[tool],
        checkpoint_url=checkpoint_url,
        memory_path=None,
        settings=AgentSettings(),
        unattended=os.environ.get("UNATTENDED") == "1",
    )


def main() -> int:
    url, mode, thread = sys.argv[1:4]
    plan = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    agent = make_agent(url)
    try:
        if mode == "run":
            result = asyncio.run(agent._closing(agent.run("write hello", thread_id=thread)))
        else:
            result = asyncio.run(agent._closing(agent.resume(thread, plan)))
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
