"""A process that runs or resumes one agent run, for the multi-process tests.

Usage: python proc_agent.py DB WORKDIR run|resume|submit|worker THREAD [PLAN_JSON]

``submit`` queues the plan for the thread (``Agent.submit_plan``) and prints the plan row;
``worker`` serves the plan queue once (``Worker.run(once=True)``) and prints the outcomes.

The ``effect`` tool appends a line to WORKDIR/effects.txt (its side effect), first writing
WORKDIR/started.txt, and sleeps EFFECT_SLEEP seconds in between (or, with EFFECT_WAIT_FOR_RELEASE
set, waits until WORKDIR/release exists) so a test can overlap or kill it. With EFFECT_BIG set
its output is EFFECT_BIG characters long.

Crash points, for the crash tests (each a real SIGKILL of this process, at one instant):

- ``CRASH_AT=create_run``: right after the run row is created, before the lease and the first
  checkpoint;
- ``CRASH_AT=writes``: once the tool has run, right after a step's task writes are stored and
  before the checkpoint that follows them;
- ``CRASH_AT=answer``: once the tool has run and the model answered, as a typed run (TYPED=1)
  asks for its typed final answer, before the request is made;
- ``CRASH_AT=outcome``: right after the tool's outcome is journaled, before act's writes;
- ``FULL_AFTER=outcome``: not a crash: once the tool's outcome is journaled, the database may not
  grow any more (``PRAGMA max_page_count`` on every connection of this process), so the next
  write that needs a page fails as on a full disk (SQLite's own SQLITE_FULL).

MODEL_SUMMARY=1 has the model summarize the tool's long output (``output_summary = "model"``,
``max_output_chars`` 1000, with EFFECT_BIG): the summary names the process that wrote it.
TYPED=1 gives the Agent an output type (``Written``), and the script a JSON turn after its
answer, which the typed final answer gets.
RACE_BEFORE=create_run holds each process just before it creates the run row until RACE_N of them
got there, so they create the same new thread at once.
LEASE_SECONDS shortens the lease (and its heartbeat) for the fencing tests.
SUBAGENT=1 makes that agent a child (a subagent): the run is a parent whose model delegates
"write hello" to it through its ``writer`` tool, so the effect happens inside the child's run.
Exit codes: 0 completed, 3 paused, 4 cancelled, 5 ThreadBusyError, 6 NothingPendingError,
7 another AgentError (its message on stdout).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.checkpoints._sqlite import SqliteDatabase
from ai_agent.checkpoints.delta import DeltaSaver
from ai_agent.checkpoints.runstore import RunStore
from ai_agent.config import AgentSettings
from ai_agent.errors import AgentError, NothingPendingError, ThreadBusyError
from ai_agent.graph import Worker
from ai_agent.testing import FunctionModel, ScriptedModel

CODES = {"completed": 0, "failed": 1, "paused": 3, "cancelled": 4}


class Written(BaseModel):
    """The typed answer of a TYPED=1 run."""

    written: str


def crash() -> None:
    """Die at once, as a power cut or the OOM killer would end the process."""
    os.kill(os.getpid(), signal.SIGKILL)


def install_crash_points(work: Path) -> None:
    """Patch the crash point the environment asks for into this process (test code only)."""
    if os.environ.get("RACE_BEFORE") == "create_run":
        install_race(work)
    install_crash(os.environ.get("CRASH_AT"), work)
    if os.environ.get("FULL_AFTER") == "outcome":
        install_full_disk()


def install_crash(point: str | None, work: Path) -> None:
    """Die at ``point`` (see the module's docstring); None: nowhere."""
    if point == "create_run":
        create_run = RunStore.create_run

        async def create_then_crash(self: RunStore, *args: Any, **kwargs: Any) -> None:
            await create_run(self, *args, **kwargs)
            crash()

        setattr(RunStore, "create_run", create_then_crash)  # noqa: B010 - a patch, on purpose
    elif point == "writes":
        aput = DeltaSaver.aput

        async def store_writes_then_crash(self: DeltaSaver, *args: Any, **kwargs: Any) -> Any:
            if self._buffer and (work / "effects.txt").exists():
                self._flush()
                await self._acall(lambda: None)  # the worker ran the queued writes: stored
                crash()
            return await aput(self, *args, **kwargs)

        setattr(DeltaSaver, "aput", store_writes_then_crash)  # noqa: B010
    elif point == "outcome":
        install_crash_after_outcome()
    elif point == "answer":
        from ai_agent.nodes._answer import _Asking

        def crash_before_asking(self: _Asking) -> Any:
            crash()

        setattr(_Asking, "request", crash_before_asking)  # noqa: B010


def install_crash_after_outcome() -> None:
    """Die right after a tool's outcome is journaled (act's writes are not stored yet)."""
    outcome = RunStore.outcome

    async def journal_then_crash(self: RunStore, *args: Any, **kwargs: Any) -> None:
        await outcome(self, *args, **kwargs)
        crash()

    setattr(RunStore, "outcome", journal_then_crash)  # noqa: B010 - a patch, on purpose


def install_race(work: Path) -> None:
    """Hold ``create_run`` until RACE_N processes reached it: they all start the thread at once."""
    create_run = RunStore.create_run
    wanted = int(os.environ.get("RACE_N", "2"))

    async def create_together(self: RunStore, *args: Any, **kwargs: Any) -> None:
        (work / f"ready.{os.getpid()}").touch()
        deadline = time.monotonic() + 60
        # Other processes touch the files: no in-process event can say when they have.
        while len(list(work.glob("ready.*"))) < wanted and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await create_run(self, *args, **kwargs)

    setattr(RunStore, "create_run", create_together)  # noqa: B010


def install_full_disk() -> None:
    """Once a tool's outcome is journaled, no connection of this process may grow the file."""
    outcome = RunStore.outcome
    savers: list[DeltaSaver] = []
    init = DeltaSaver.__init__

    def remember(self: DeltaSaver, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        savers.append(self)

    async def outcome_then_full(self: RunStore, *args: Any, **kwargs: Any) -> None:
        await outcome(self, *args, **kwargs)
        db = cast(SqliteDatabase, self._db)
        with db._lock:
            limit(db.conn)
        for saver in savers:
            await saver._acall(limit, saver.store.conn)

    setattr(DeltaSaver, "__init__", remember)  # noqa: B010
    setattr(RunStore, "outcome", outcome_then_full)  # noqa: B010


def limit(conn: Any) -> None:
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def model_and_settings(
    script: list[dict[str, Any]],
) -> tuple[ScriptedModel | FunctionModel, dict[str, Any]]:
    """The model of the script and the settings, as the environment asks."""
    model: ScriptedModel | FunctionModel = ScriptedModel(script)
    settings: dict[str, Any] = {}
    if os.environ.get("MODEL_SUMMARY") == "1":
        model = FunctionModel(summarizing(script))
        settings["tool_config"] = {"max_output_chars": 1000, "output_summary": "model"}
    if os.environ.get("LEASE_SECONDS"):
        settings["lease_seconds"] = float(os.environ["LEASE_SECONDS"])
    return model, settings


def summarizing(script: list[dict[str, Any]]) -> Any:
    """The script's replies, and a summary naming this process for a summary request."""

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        if "You shorten the output" in messages[0]["content"]:
            return {"text": f"x repeated; summary by {os.getpid()}"}
        return script[info["turn"]]

    return reply


def queue(agent: Agent, mode: str, thread: str, plan: Any) -> int:
    """``submit`` a plan to the queue, or serve the queue once as a ``worker``."""
    if mode == "submit":
        print(json.dumps(asyncio.run(agent._closing(agent.submit_plan(thread, plan or {})))))
    else:
        outcomes = asyncio.run(agent._closing(Worker(agent).run(once=True)))
        print(json.dumps([o.to_dict() for o in outcomes]))
    return 0


def parent_of(child: Agent, db: str, settings: dict[str, Any]) -> Agent:
    """A parent whose model delegates "write hello" to ``child`` through its ``writer`` tool."""
    turns: list[Any] = [
        {"tool_calls": [{"name": "writer", "args": {"task": "write hello"}}]},
        {"text": "the writer wrote it"},
    ]
    return Agent(
        model=ScriptedModel(turns),
        tools=[child.as_tool("writer", "Writes lines.")],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(**settings),
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    db, workdir, mode, thread = args[:4]
    plan = json.loads(args[4]) if len(args) > 4 else None
    work = Path(workdir)
    install_crash_points(work)

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
        size = int(os.environ.get("EFFECT_BIG", "0"))
        return {"status": "ok", "content": "x" * size if size else "written"}

    tool = ToolSpec(
        "effect",
        effect,
        description="Write a line.",
        category=ToolCategory.MODIFICATION,
        timeout=120,
    )
    typed = os.environ.get("TYPED") == "1"
    script: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "effect", "args": {"text": "hello"}}]},
        {"text": "wrote it"},
        *([{"text": '{"written": "hello"}'}] if typed else []),
    ]
    model, settings = model_and_settings(script)
    agent = Agent(
        model=model,
        tools=[tool],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(**settings),
        unattended=os.environ.get("UNATTENDED") == "1",
        output_type=Written if typed else None,
    )
    agent = parent_of(agent, db, settings) if os.environ.get("SUBAGENT") == "1" else agent
    if mode in ("submit", "worker"):
        return queue(agent, mode, thread, plan)
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
    except AgentError as exc:
        print(f"error: {type(exc).__name__}: {exc}")
        return 7
    print(json.dumps(result.to_dict(), default=str))
    return CODES[result.status]


if __name__ == "__main__":
    sys.exit(main())
