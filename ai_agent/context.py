"""The run context: a run's collaborators, passed to every stage as LangGraph's runtime context.

State (``ai_agent.state``) is data and is checkpointed; the context is everything else: the model
caller, the tool box, the journal, the hooks, the policy values and the event sink. It is rebuilt by
the Agent for every run or resume, so a run resumed in another process gets live collaborators and
nothing of them is ever written to a checkpoint.

The collaborators are described here as Protocols, so the stages depend on what they need and not
on the classes behind them: the graph layer passes the real tool registry and run store; tests and
the replay machinery may pass others.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict

from ai_agent.state import Message, ToolCall, ToolResult

__all__ = [
    "ApprovalPolicy",
    "Event",
    "Hooks",
    "Journal",
    "JournalEntry",
    "Memory",
    "ModelCaller",
    "ModelReply",
    "RunContext",
    "RunPolicy",
    "ToolBox",
    "ToolInfo",
]

ApprovalPolicy = Literal["auto", "confirm", "approve", "deny"]


class ModelReply(TypedDict):
    """One model turn: the assistant message and what it cost."""

    message: Message
    usage: dict[str, Any]
    latency_ms: float


class ModelCaller(Protocol):
    """Calls the model with the conversation and the active tools' schemas."""

    async def __call__(
        self, messages: list[Message], tools: list[dict[str, Any]]
    ) -> ModelReply: ...  # pragma: no cover - protocol


class ToolInfo(TypedDict):
    """What the stages know about a tool without touching its code."""

    name: str
    description: str
    category: str
    requires_env: list[str]
    parameters: dict[str, Any]


class ToolBox(Protocol):
    """The catalog of tools a run may use, and the one way to execute them."""

    def catalog(self) -> list[ToolInfo]: ...  # pragma: no cover - protocol

    def info(self, name: str) -> ToolInfo | None: ...  # pragma: no cover - protocol

    def schemas(self, names: list[str]) -> list[dict[str, Any]]: ...  # pragma: no cover

    def preview(self, call: ToolCall) -> str: ...  # pragma: no cover - protocol

    def format_result(self, name: str, result: ToolResult) -> str: ...  # pragma: no cover

    async def execute(
        self, call: ToolCall, tool_ctx: dict[str, Any]
    ) -> ToolResult: ...  # pragma: no cover - protocol


class JournalEntry(TypedDict):
    """The journal's record of one call: an intent, and an outcome once it finished."""

    call_id: str
    tool: str
    status: Literal["intent", "done"]
    result: ToolResult | None


class Journal(Protocol):
    """Intent before a tool runs, outcome after: how a crash mid-call is detected on resume."""

    async def lookup(
        self, thread_id: str, iteration: int, call_id: str
    ) -> JournalEntry | None: ...  # pragma: no cover - protocol

    async def intent(
        self, thread_id: str, iteration: int, call: ToolCall
    ) -> None: ...  # pragma: no cover - protocol

    async def outcome(
        self, thread_id: str, iteration: int, call: ToolCall, result: ToolResult
    ) -> None: ...  # pragma: no cover - protocol


class Memory(Protocol):
    """Long-term memory of past runs, searched by recall and written by persist."""

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]: ...  # pragma: no cover

    def add(self, record: dict[str, Any]) -> None: ...  # pragma: no cover - protocol


Hook = Callable[..., Any | Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Hooks:
    """Optional functions that replace a stage's default behaviour. Each may be sync or async.

    Every hook gets ``ctx``: a read-only dict view of the run (thread_id, iteration, messages,
    results, gate, active_tools, stop_reason), never collaborators or secrets.

    Attributes:
        recall: ``recall(task, ctx) -> list`` loads prior context. Default: skip (or the SQLite
            memory when enabled).
        reflect: ``reflect(task, ctx) -> str | None`` notes progress. Default: no-progress check.
        evaluate_critical: ``evaluate_critical(task, issues, ctx) -> dict`` scores the issues and
            sets ``intervene`` (and optionally ``severity`` and ``prompt``). Default: built-in
            severities against the threshold.
        discover_tools: ``discover_tools(task, decision, ctx, catalog) -> [{name, reason}]``
            proposes tools for the next cycle. Default: keyword match against the catalog.
        query_user_plan: ``query_user_plan(task, gate, ctx) -> dict | UserPlan | None`` answers
            the gate in-process. Default: pause the run and wait for a plan.
        finalize: ``finalize(task, ctx) -> str`` composes the answer. Default: the last
            assistant text or a stop summary.
        persist: ``persist(task, ctx, final_text, gate, discovered)`` saves the result. Default:
            append JSONL to ``.agents/memory.jsonl``.

    Example:
        >>> hooks = Hooks(finalize=lambda task, ctx: "done: " + task)
        >>> hooks.finalize("x", {})
        'done: x'
    """

    recall: Hook | None = None
    reflect: Hook | None = None
    evaluate_critical: Hook | None = None
    discover_tools: Hook | None = None
    query_user_plan: Hook | None = None
    finalize: Hook | None = None
    persist: Hook | None = None


@dataclass(frozen=True, slots=True)
class RunPolicy:
    """The values that steer a run. Plain data, derived from settings by the Agent."""

    system_prompt: str = ""
    max_iterations: int = 10
    gate_threshold: float = 0.70
    execute_all_tool_calls: bool = False
    approvals: Mapping[str, ApprovalPolicy] = field(
        default_factory=lambda: {
            "read_only": "auto",
            "note_taking": "auto",
            "modification": "approve",
            "external": "confirm",
        }
    )
    unattended: bool = False
    memory_path: str | None = ".agents/memory.jsonl"
    workdir: str = "."


class Event(TypedDict, total=False):
    """A progress event for live status lines and streaming consumers."""

    type: str
    stage: str
    iteration: int
    tool: str
    detail: str
    duration_ms: float
    data: Any


def _ignore(event: Event) -> None:
    """The default event sink: nobody is listening."""


@dataclass(frozen=True, slots=True)
class RunContext:
    """Collaborators of one run; LangGraph passes it to every stage as ``runtime.context``."""

    thread_id: str
    model: ModelCaller
    tools: ToolBox
    journal: Journal
    hooks: Hooks = field(default_factory=Hooks)
    policy: RunPolicy = field(default_factory=RunPolicy)
    emit: Callable[[Event], None] = _ignore
    memory: Memory | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
