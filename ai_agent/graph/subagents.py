"""Subagents: a child agent's run as its own thread of the parent's database, linked to it.

A parent delegates to a child in two ways: its model calls the child's tool
(``child.as_tool(name=..., description=...)``, a `ai_agent.tools.toolsets.child.ChildToolset`),
or code calls ``await parent.delegate(child, task)``. Either way the child runs with its own
instructions, tools, model and limits, on the parent's database (its runs are threads of the
same store, whatever the child's own ``checkpoint_path`` says), and its run row names the
parent: ``origin='child'``, the parent's thread, and the parent's cycle and tool call
(`ai_agent.graph.runner.ParentStep`).

`Subagents` is the parent Agent's collaborator for this: it binds the child tools among the
parent's toolsets, keeps one copy of each child on the parent's database (built once, so a
spawn costs a run, not an Agent), and closes them with the parent.

The child of a tool call has a thread id derived from the call (`child_thread_id`), so the
same call always names the same child: `attach` runs a new child, re-attaches to one that
stopped mid-way (a crash: it resumes from its own last checkpoint), and returns the outcome of
one that has ended. The parent's journal then needs nothing more to keep the tree's
no-silent-rerun guarantee: the parent's call, run again after a crash, only re-attaches.

What the parent's model gets back is the child's final answer; the tool result's ``meta``
carries the child's thread id, status and token usage, which act rolls up into the parent's
usage, so the parent's budget counts its children.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from ai_agent.checkpoints.store import MAX_THREAD_ID_CHARS, new_thread_id
from ai_agent.errors import NothingPendingError, PlanRequiredError, RunError
from ai_agent.graph.runner import ParentStep
from ai_agent.observability.redaction import SecretValues
from ai_agent.state import ToolResult
from ai_agent.tools.spec import ToolCategory
from ai_agent.tools.toolsets.child import DEFAULT_CHILD_TIMEOUT, ChildToolset, Spawn, child_task

if TYPE_CHECKING:
    from ai_agent.config import AgentSettings, BudgetConfig
    from ai_agent.graph.archive import RunArchive
    from ai_agent.graph.contexts import RunContexts
    from ai_agent.graph.database import RunDatabase
    from ai_agent.graph.result import RunResult
    from ai_agent.graph.runner import PipelineRunner
    from ai_agent.tools.registry import ToolRegistry

__all__ = [
    "ChildAgent",
    "Subagent",
    "Subagents",
    "attach",
    "child_thread_id",
    "handed_on",
    "outcome_of",
]

# A child's run has ended: its row says so, and nothing of it is left to resume. (A failed
# row may be a run cancelled mid-way, which can be resumed: `attach` tries.)
_ENDED = ("completed", "cancelled")


class SharedChild(Protocol):
    """A child agent built on its parent's database (an `ai_agent.Agent`)."""

    _runner: PipelineRunner
    _contexts: RunContexts
    archive: RunArchive
    settings: AgentSettings
    secrets: SecretValues

    async def aclose(self) -> None:
        """Close what the child opened (never the parent's database)."""


class ChildAgent(Protocol):
    """What a parent needs of a child agent (an `ai_agent.Agent`): what it was built with."""

    _arguments: dict[str, Any]


def child_thread_id(parent_thread: str, call_id: str) -> str:
    """The thread id of the child spawned by a parent's tool call (the same for the same call).

    ``<parent thread>.<call id>``; when that is longer than a thread id may be (a deep tree),
    a digest of it keeps it unique and in the grammar.

    Examples:
        >>> child_thread_id("run-1", "c1.0")
        'run-1.c1.0'
        >>> len(child_thread_id("x" * 128, "c1.0"))
        38
    """
    thread = f"{parent_thread}.{call_id}"
    if len(thread) <= MAX_THREAD_ID_CHARS:
        return thread
    return "child-" + hashlib.sha256(thread.encode()).hexdigest()[:32]


async def attach(
    child: SharedChild,
    task: str,
    thread_id: str,
    parent: ParentStep | None,
    plan: Mapping[str, Any] | None = None,
) -> RunResult:
    """Run the child on ``thread_id``, or re-attach to the run already there.

    A new thread runs the task; a thread that stopped mid-way resumes from its last checkpoint
    (a crash, or the parent cancelled while it ran: its row says failed, and it continues);
    one waiting at its gate resumes with ``plan`` (the plan that answered the parent's gate,
    as `handed_on` reads it for the child), or gives its outcome as it stands without one; one
    that has ended gives its outcome.

    Raises:
        RunError: the thread belongs to another run than this parent's child.
    """
    store = child._runner.store
    record = await store.get_run(thread_id)
    if record is None:
        return await child._runner.start(task, thread_id=thread_id, parent=parent)
    if parent is None:
        raise RunError(f"thread {thread_id} already exists; resume it instead of running it")
    if record["origin"] != "child" or record["parent_thread_id"] != parent.thread_id:
        raise RunError(
            f"thread {thread_id} exists and is not a child of {parent.thread_id}; give the "
            "child a thread id of its own"
        )
    if record["status"] == "paused" and plan:
        return await child._runner.resume(thread_id, handed_on(plan, parent.call_id))
    if record["status"] in (*_ENDED, "paused"):
        return await child.archive.get_result(thread_id)
    # Running (a crash) or failed: a child cancelled with its parent (a cancelled task, a
    # timeout) is marked failed mid-way and, like its parent, continues from its checkpoint
    # when the parent's call runs again; one that failed at its end has nothing pending.
    try:
        return await child._runner.resume(thread_id)
    except (NothingPendingError, PlanRequiredError):  # it ended, or waits: as it stands
        return await child.archive.get_result(thread_id)


def handed_on(plan: Mapping[str, Any], call_id: str | None) -> dict[str, Any]:
    """The parent's plan as the answer to its child's gate (the child of call ``call_id``).

    The plan's ids, edits, rules, tool activations and grant scope name the parent's calls and
    tools; the child's calls have ids of their own that may look the same (``c1.1`` of the
    parent is not ``c1.1`` of the child). So the child's calls are approved only when the
    parent's call of the child is (by its id or ``*``), and then those its gate showed
    (``*``); nothing else of those parts reaches the child. The token bound the plan to the
    parent's gate, which the child's gate was shown in.

    Examples:
        >>> handed_on({"approve": ["c1.1"], "deny": ["c1.2"], "instructions": "go"}, "c1.0")
        {'instructions': 'go', 'approve': [], 'deny': []}
        >>> handed_on({"approve": ["c1.0"], "activate_tools": ["run_bash"]}, "c1.0")["approve"]
        ['*']
    """
    approve = plan.get("approve") or []
    approved = isinstance(approve, list) and ("*" in approve or call_id in approve)
    out = {k: v for k, v in plan.items() if k not in _PARENTS_ONLY}
    # A denied call of the parent is never run, so no deny of the parent's reaches a child.
    out.update(approve=["*"] if approved else [], deny=[])
    return out


# The parts of a plan that answer the parent's gate only: its token, and what names the
# parent's calls or tools (`handed_on`).
_PARENTS_ONLY = frozenset(
    {
        "gate_token",
        "approve",
        "deny",
        "edit_args",
        "always_allow",
        "confirm_always",
        "activate_tools",
        "grant_scope",
    }
)


def tree_budget(
    parent: BudgetConfig | None,
    used: Mapping[str, Any] | None,
    child: BudgetConfig,
    *,
    allowance: Mapping[str, Any] | None = None,
    granted: bool = False,
) -> BudgetConfig | None:
    """The child's budget, limited to what its parent's budget has left (None: no limit).

    The parent's budget limits the whole tree: a child may spend at most what the parent has
    left when it calls it (its own limits still hold when lower). The parent's limit is its
    budget or the allowance a person granted it at a BUDGET stop (its ``budget_allowance``),
    whichever is higher: the allowance is handed down. ``granted``: a person has just answered
    this child's stop for the tree budget with a plan that goes on, which allows the child one
    more of the parent's budget from here (the parent's own check still stops the parent).

    Examples:
        >>> from ai_agent.config import BudgetConfig
        >>> cap = tree_budget(BudgetConfig(max_tokens=1000), {"total_tokens": 400}, BudgetConfig())
        >>> cap.max_tokens, cap.max_cost
        (600, None)
        >>> tree_budget(BudgetConfig(max_tokens=1000), {"total_tokens": 1400}, BudgetConfig(),
        ...             allowance={"tokens": 2400}).max_tokens
        1000
        >>> tree_budget(BudgetConfig(max_tokens=1000), {"total_tokens": 990}, BudgetConfig(),
        ...             granted=True).max_tokens
        1000
        >>> tree_budget(None, {}, BudgetConfig()) is None
        True
    """
    if parent is None or (parent.max_tokens is None and parent.max_cost is None):
        return None
    spent, extra = used or {}, allowance or {}
    limits: dict[str, Any] = {}
    if parent.max_tokens is not None:
        limit = max(parent.max_tokens, int(_amount(extra.get("tokens"))))
        left = limit - int(_amount(spent.get("total_tokens")))
        left = max(1, parent.max_tokens if granted else 0, left)
        limits["max_tokens"] = min(left, child.max_tokens or left)
    if parent.max_cost is not None:
        limit_cost = max(parent.max_cost, _amount(extra.get("cost")))
        left_cost = limit_cost - _amount(spent.get("cost"))
        left_cost = max(1e-9, parent.max_cost if granted else 0.0, left_cost)
        limits["max_cost"] = min(left_cost, child.max_cost or left_cost)
    return child.model_copy(update=limits)


def _amount(value: Any) -> float:
    """A figure of usage or of an allowance: anything but a non-negative number counts as 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return 0.0
    return float(value)


def outcome_of(result: RunResult) -> ToolResult:
    """A child's RunResult as the parent's tool result.

    The answer is the content; ``meta`` holds the child's thread id, status and usage (act adds
    the usage to the parent's). A child that did not complete is an error result naming its
    thread, so the parent's gate hears why.

    Examples:
        >>> from ai_agent.graph.result import RunResult
        >>> done = RunResult(status="completed", thread_id="p.c1.0", final_text="42",
        ...                  usage={"total_tokens": 9})
        >>> outcome_of(done)["content"], outcome_of(done)["meta"]["child_usage"]
        ('42', {'total_tokens': 9})
        >>> outcome_of(RunResult(status="failed", thread_id="p.c1.0", error="boom"))["error"]
        'the subagent run p.c1.0 failed: boom'
    """
    meta: dict[str, Any] = {
        "child_thread_id": result.thread_id,
        "child_status": result.status,
        "child_usage": dict(result.usage),
    }
    if result.status == "completed":
        return ToolResult(status="ok", content=result.final_text or "", meta=meta)
    if result.status == "paused" and result.gate is not None:
        # The parent pauses on it (act holds the call: SUBAGENT_PAUSED) and shows this.
        why = "; ".join(i["message"] for i in result.gate["issues"]) or result.gate["prompt"]
        error = f"the subagent run {result.thread_id} paused at its gate: {why}"
        return ToolResult(status="error", error=error, meta={**meta, "code": "SUBAGENT_PAUSED"})
    error = f"the subagent run {result.thread_id} {result.status}: {result.error or ''}"
    error = error.rstrip(": ")
    return ToolResult(status="error", error=error, meta={**meta, "code": "TOOL_ERROR"})


class Subagent:
    """A child agent bound to one parent: the `Spawn` of its tool (see the module docstring).

    Args:
        child: The child, on the parent's database.
        budget: The parent's budget, which limits the child's (`tree_budget`).
        caps: The budgets the parent's runs run with now, by thread, when they are not its own
            ``budget``: a parent that is itself a child runs with what its own parent had
            left, and its children get no more than that.
    """

    def __init__(
        self,
        child: SharedChild,
        budget: BudgetConfig | None = None,
        caps: Mapping[str, BudgetConfig] | None = None,
    ) -> None:
        self.child = child
        self.budget = budget
        self.caps: Mapping[str, BudgetConfig] = caps if caps is not None else {}

    async def __call__(
        self,
        task: str,
        *,
        parent_thread: str,
        parent_iteration: int,
        parent_call_id: str,
        plan: Mapping[str, Any] | None = None,
        usage: Mapping[str, Any] | None = None,
        allowance: Mapping[str, Any] | None = None,
        time_limit: float | None = None,
    ) -> ToolResult:
        """Run (or re-attach to) the child of this parent call; its outcome as a tool result."""
        parent = ParentStep(parent_thread, parent_iteration, parent_call_id)
        thread = child_thread_id(parent_thread, parent_call_id)
        caps = self.child._contexts.budget_caps
        # A plan that goes on, answering the parent's gate that showed this child's BUDGET stop,
        # is the person's allowance for the child.
        granted = bool(plan and plan.get("allow_continue", True)) and await self._budget_stop(
            thread
        )
        # The parent's limit is the one its run has now: a grandchild is held to what is left
        # of the tree's budget, not to the middle agent's own settings (often none at all).
        limit = self.caps.get(parent_thread, self.budget)
        cap = tree_budget(
            limit, usage, self.child.settings.budget, allowance=allowance, granted=granted
        )
        if cap is not None:
            caps[thread] = cap
        deadline = asyncio.timeout(time_limit)
        try:
            async with deadline:
                return outcome_of(await attach(self.child, task, thread, parent, plan))
        except TimeoutError:
            if not deadline.expired():
                raise
            return await self._stopped(thread, time_limit)
        finally:
            caps.pop(thread, None)

    async def release(self, *, parent_thread: str, parent_call_id: str) -> ToolResult | None:
        """Cancel the child of this call, waiting at its gate, whose call will not go on.

        Answered at its own gate with a plan that stops it (``allow_continue`` false), it ends
        ``cancelled`` like any run a person stops; one that has ended already (this ran before a
        crash) gives its outcome as it stands. Either way its outcome carries all it spent. None
        when there is no child of this parent's call; nothing is ever started.
        """
        thread = child_thread_id(parent_thread, parent_call_id)
        record = await self.child._runner.store.get_run(thread)
        if record is None or (record["origin"], record["parent_thread_id"]) != (
            "child",
            parent_thread,
        ):
            return None
        if record["status"] != "paused":
            return outcome_of(await self.child.archive.get_result(thread))
        try:
            return outcome_of(await self.child._runner.resume(thread, {"allow_continue": False}))
        except (NothingPendingError, PlanRequiredError):  # answered meanwhile: as it stands
            return outcome_of(await self.child.archive.get_result(thread))

    async def _stopped(self, thread: str, time_limit: float | None) -> ToolResult:
        """The result of a child stopped by its timeout, with what it spent until then.

        The tool's own timeout would have made a result without the child's usage, and the
        parent's budget would not have counted what the child spent (a model calling slow
        children over and over, each given the whole of what is left, spent without limit).
        A model call the child was in when stopped is not in its state, so not counted.
        """
        try:
            stopped = await self.child.archive.get_result(thread)
            status, usage = stopped.status, dict(stopped.usage)
        except RunError:  # stopped before its first checkpoint: nothing it spent was recorded
            status, usage = "failed", {}
        error = (
            f"the subagent run {thread} did not finish within {time_limit:g}s and was stopped "
            "(what it did so far is kept in its run); ask it again with a smaller task"
        )
        meta = {
            "child_thread_id": thread,
            "child_status": status,
            "child_usage": usage,
            "code": "TIMEOUT",
            "timeout_s": time_limit,
        }
        return ToolResult(status="error", error=error, meta=meta)

    async def _budget_stop(self, thread: str) -> bool:
        """Whether the child of ``thread`` waits at its gate for a BUDGET stop."""
        record = await self.child._runner.store.get_run(thread)
        if record is None or record["status"] != "paused":
            return False
        # The report the paused gate handed out (the state has it once the gate is answered).
        gate = (await self.child.archive.get_result(thread)).gate
        return gate is not None and any(issue["code"] == "BUDGET" for issue in gate["issues"])


class Subagents:
    """A parent Agent's children: bound tools, one copy of each child on the parent's database.

    Args:
        database: The parent's run database, where every child's runs go.
        owner: The parent Agent (what its ``as_tool`` offers, what its child tools bind to).
        registry: The parent's tools, among which its child tools are bound now.
        budget: The parent's budget, which limits its children's (`tree_budget`).
    """

    def __init__(
        self,
        database: RunDatabase,
        owner: object,
        registry: ToolRegistry,
        budget: BudgetConfig | None = None,
    ) -> None:
        self._db = database
        self._owner = owner
        self._budget = budget
        self._shared: dict[int, tuple[ChildAgent, SharedChild]] = {}
        self.bind(registry, owner)

    def as_tool(
        self,
        name: str,
        description: str,
        *,
        category: ToolCategory | str = ToolCategory.READ_ONLY,
        timeout: float = DEFAULT_CHILD_TIMEOUT,
    ) -> ChildToolset:
        """This agent as a tool another agent (its parent) takes in ``Agent(tools=[...])``.

        The parent's model calls it with a subtask (``task``, and optionally ``context``);
        this agent runs it with its own instructions, tools, model and limits, as a child run
        in the parent's database, linked to the parent's call; the tool's result is its final
        answer. See docs/subagents.md.

        Args:
            name: The tool's name in the parent.
            description: What this agent does, for the parent's model.
            category: The tool's oversight category in the parent (default ``read_only``:
                calling it again re-attaches to the same child run, repeating nothing).
            timeout: Seconds one delegation may take before the child is cancelled.

        Examples:
            >>> from ai_agent import Agent, AgentSettings
            >>> child = Agent(settings=AgentSettings(_env_file=None), system_prompt="Be brief.")
            >>> child.as_tool("summarize", "Summarize a text.").tools()[0].name
            'summarize'
        """
        return ChildToolset(
            self._owner, name=name, description=description, category=category, timeout=timeout
        )

    @staticmethod
    def claim(tools: Any) -> Any:
        """``Agent(tools=...)`` with each child tool another agent has taken copied for this one.

        Examples:
            >>> taken = ChildToolset(object(), name="a", description="A.")
            >>> taken.bind("some parent", None)  # type: ignore[arg-type]
            >>> Subagents.claim([taken, "calculator"])[0] is taken
            False
        """

        def own(item: Any) -> Any:
            return item.copy() if isinstance(item, ChildToolset) and item.bound else item

        if isinstance(tools, list | tuple):
            return [own(item) for item in tools]
        if isinstance(tools, Mapping):
            return {key: own(item) for key, item in tools.items()}
        return tools

    def bind(self, registry: ToolRegistry, owner: object) -> None:
        """Bind every child tool among ``registry``'s toolsets to this parent (``owner``)."""
        # The owner's runs' budgets as its run contexts apply them (a cap when it is a child).
        contexts = getattr(owner, "_contexts", None)
        caps = getattr(contexts, "budget_caps", None)
        for toolset in registry.toolsets():
            if isinstance(toolset, ChildToolset):
                child = self.shared(cast(ChildAgent, toolset.child))
                spawn: Spawn = Subagent(child, self._budget, caps)
                toolset.bind(owner, spawn)

    def shared(self, child: ChildAgent) -> SharedChild:
        """``child`` on the parent's database (built on first use, then kept)."""
        found = self._shared.get(id(child))
        if found is None:
            # The same agent built again, its runs in the parent's database.
            build: Any = type(child)
            shared: SharedChild = build(**child._arguments, _database=self._db)
            # The child's runs are stored in the parent's database: the parent's secrets (its
            # backend key, its tools' keys) must be masked there too, though the child, built
            # with its own settings, does not know them. A child that reads one and answers
            # with it would otherwise leave it in its run row, checkpoints and recorded calls.
            parents = getattr(self._owner, "secrets", None)
            if isinstance(parents, SecretValues):
                shared.secrets.add_source(parents.values)
            found = self._shared[id(child)] = (child, shared)  # kept: its id stays its own
        return found[1]

    async def delegate(
        self,
        child: ChildAgent,
        task: str,
        *,
        context: str | None = None,
        parent_thread_id: str | None = None,
        thread_id: str | None = None,
    ) -> RunResult:
        """Run ``child`` on a subtask as a child run in this Agent's database.

        The child keeps its own instructions, tools, model and limits; its run is a thread of
        this Agent's database, linked to ``parent_thread_id`` when given (``ai-agent runs``
        shows it under its parent).

        Args:
            child: The agent to delegate to.
            task: The subtask.
            context: What the child should know besides, appended to the task.
            parent_thread_id: The run this delegation belongs to (a tool or hook of that run
                has it as ``ctx["thread_id"]``).
            thread_id: The child run's thread id (default: a fresh one).

        Returns:
            The child's RunResult (``paused`` when its gate stopped it: resume its thread).

        Raises:
            RunError: ``thread_id`` names a run that is not this parent's child.
        """
        parent = ParentStep(parent_thread_id) if parent_thread_id is not None else None
        thread = thread_id or new_thread_id()
        return await attach(self.shared(child), child_task(task, context), thread, parent)

    async def aclose(self) -> None:
        """Close every child copy (the database is the parent's, closed by the parent)."""
        for _, shared in list(self._shared.values()):
            await shared.aclose()
