"""The run archive's plan queue: plans queued for paused runs, served by workers.

`ArchivePlans` is the part of `RunArchive` (``graph/archive.py``) that queues a plan for a
paused run, lists the queue and serves one plan; the queue itself is `PlanQueue`
(``graph/worker.py``), made on first use, so that reading runs does not load the worker's
module. It also holds the runner that drives replays and queued plans (`_driver`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ai_agent.errors import RunError
from ai_agent.graph.database import RunDatabase, check_thread_id

if TYPE_CHECKING:
    from ai_agent.checkpoints import PlanRecord
    from ai_agent.graph.driving import Runner
    from ai_agent.graph.interrupts import Answer
    from ai_agent.graph.worker import PlanOutcome, PlanQueue

__all__ = ["ArchivePlans"]


class ArchivePlans:
    """The plan queue's methods of `RunArchive` (see the module docstring)."""

    database: RunDatabase
    runner: Runner | None
    last_thread: str | None

    # The plan queue (graph/worker.py) ---------------------------------------------------------
    async def submit_plan(self, thread_id: str, plan: Answer) -> PlanRecord:
        """Queue a plan for a run paused at the gate (or a node's answer); a worker resumes it.

        The plan is checked now (against the pending gate and this Agent's tools) and queued
        with the paused gate report's token, read from the paused checkpoint, which the worker
        requires: it answers that gate alone. A run paused in a node of its pipeline takes the
        node's answer, as ``resume`` does (`ai_agent.graph.queued_answers`).

        Raises:
            UnknownThreadError: no such run.
            InvalidPlanError: the plan does not fit the pending gate.
            PlanRefusedError: it carries the token of another (earlier) gate, or the run is
                paused at a gate of an older ai-agent, which hands out no token.
            NothingPendingError / RunError: the run is not paused at the gate, or a plan for
                it is already queued; or the archive has no runner (it was opened on its own).

        Examples:
            >>> import asyncio, tempfile, os
            >>> from ai_agent import Agent, ToolCategory, ToolSpec
            >>> from ai_agent.graph import Worker
            >>> from ai_agent.testing import ScriptedModel
            >>> note = ToolSpec("note", lambda args, ctx: {"status": "ok", "content": "ok"},
            ...                 description="Write a note.", category=ToolCategory.MODIFICATION)
            >>> async def demo():
            ...     with tempfile.TemporaryDirectory() as d:
            ...         turns = [{"tool_calls": [{"name": "note", "args": {}}]}, {"text": "noted"}]
            ...         agent = Agent(model=ScriptedModel(turns), tools=[note], memory_path=None,
            ...                       checkpoint_path=os.path.join(d, "c.sqlite"))
            ...         async with agent:
            ...             paused = await agent.run("take a note")
            ...             queued = await agent.submit_plan(paused.thread_id, {"approve": ["*"]})
            ...             (outcome,) = await Worker(agent).run(once=True)
            ...         return paused.status, queued["status"], outcome.run_status
            >>> asyncio.run(demo())
            ('paused', 'queued', 'completed')
        """
        return await self._plans.submit(thread_id, plan)

    async def list_plans(
        self, *, status: str | None = None, thread_id: str | None = None, limit: int | None = 50
    ) -> list[PlanRecord]:
        """Plans in the queue, oldest first (optionally only one status or one run's)."""
        if thread_id is not None:
            check_thread_id(thread_id)
        return await self.database.store.list_plans(status=status, thread_id=thread_id, limit=limit)

    async def serve_plan(self, plan: PlanRecord, worker: str) -> PlanOutcome | None:
        """Take one plan: lease its thread, claim it, resume the run with it, record the outcome.

        Returns None when the plan is not this worker's to serve: its thread is busy (another
        worker or a person holds the lease) or the plan was claimed by another worker first.
        """
        return await self._plans.serve(plan, worker)

    # Helpers ----------------------------------------------------------------------------------
    @functools.cached_property
    def _plans(self) -> PlanQueue:
        """The plan queue, made on first use: reading runs does not load the worker's module."""
        from ai_agent.graph.worker import PlanQueue

        return PlanQueue(self.database, self._driver, on_drive=self._note_last)

    def _driver(self, what: str) -> Runner:
        """The runner, or a RunError saying that driving runs needs an Agent."""
        if self.runner is None:
            raise RunError(
                f"{what} needs an Agent (its model and tools): this archive was opened on its "
                "own, for reading runs; use agent.archive, or the Agent's method"
            )
        return self.runner

    def _note_last(self, thread_id: str) -> None:
        self.last_thread = thread_id  # the helpers' default thread
