"""The typed events of streams and listeners.

``Agent.astream`` / ``Agent.stream`` yield these, in order:

- `StageStarted` / `StageFinished` around each of the nine stages;
- `ModelDelta`: text as the model writes it, every turn (tool phases included);
- `ModelRetry`: a failed model call about to be retried, and how long until then;
- `ToolStarted`, `ToolOutput` (live chunks of a long tool's output),
  `ToolFinished`;
- `GatePaused`: the run stopped at the gate and waits for a plan (`NodePaused`: a node of
  your pipeline called ``interrupt()``);
- `CustomEvent`: what a node or a tool wrote with ``get_stream_writer()``;
- `FinalDelta`: the final answer's text. It is held back while a turn could still turn out
  to be a tool call, so it never carries tool-phase text; without streaming it arrives in one piece;
- `RunFinished`: the `RunResult`, always last.

Listeners (``agent.add_listener``) get the lifecycle events, a subset with three more:
`RunStarted`, `StageStarted` / `StageFinished`, `ModelRetry`,
`ToolStarted` / `ToolFinished`, `GatePaused`, `GateResumed`,
`Compacted` and `RunFinished` (see `LifecycleEvent`); never the text deltas.

With ``quiet_tools=True`` (the "quiet tool phases" policy) `ModelDelta` and
`ToolOutput` are left out: only status events and the final answer are streamed.

They sit low in the package (below the stages and the graph layer): whatever produces an event
builds it (the stage wrapper, the act stage, the gate, the draft and the model caller) and hands
it to ``RunContext.emit``, so listeners, the stream and ``on_event`` all receive that one object.
A few more events are internal (the ``_``-prefixed classes: waiting for the model, the model's
tool-call and finished notices the stream needs to hold back `FinalDelta`, the local server's
and MCP servers' notices, a direct tool call). Every event that reaches ``Agent(on_event=...)``
is rendered there, by its ``progress()`` method, into the dict that callback has always received.

Examples:
    >>> from ai_agent.events import FinalDelta
    >>> FinalDelta("Hello").text
    'Hello'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ai_agent.observability.tooldata import ToolTelemetry

if TYPE_CHECKING:
    from ai_agent.graph.result import RunResult
    from ai_agent.state import CompactionRecord, GateReport, ToolCall, ToolResult

__all__ = [
    "Compacted",
    "CustomEvent",
    "FinalDelta",
    "GatePaused",
    "GateResumed",
    "LifecycleEvent",
    "ModelCallEvent",
    "ModelDelta",
    "ModelRetry",
    "NodePaused",
    "ProgressEvent",
    "RunFinished",
    "RunStarted",
    "StageFinished",
    "StageStarted",
    "StreamEvent",
    "ToolFinished",
    "ToolOutput",
    "ToolStarted",
]


@dataclass(frozen=True, slots=True)
class StageStarted:
    """A stage began."""

    stage: str
    iteration: int

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {"type": "stage_started", "stage": self.stage, "iteration": self.iteration}


@dataclass(frozen=True, slots=True)
class StageFinished:
    """A stage ended, after ``duration_ms``."""

    stage: str
    iteration: int
    duration_ms: float

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {
            "type": "stage_finished",
            "stage": self.stage,
            "iteration": self.iteration,
            "duration_ms": self.duration_ms,
        }


@dataclass(frozen=True, slots=True)
class ModelDelta:
    """Text the model just wrote (any turn)."""

    text: str
    iteration: int

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {"type": "model_delta", "detail": self.text, **_draft(self.iteration)}


@dataclass(frozen=True, slots=True)
class ModelRetry:
    """A model call failed with a retryable error; the next attempt starts in ``wait_seconds``."""

    error: str
    wait_seconds: float
    iteration: int

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {
            "type": "model_retry",
            "detail": self.error,
            "duration_ms": self.wait_seconds * 1000,
            **_draft(self.iteration),
        }


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call began.

    ``status`` is the call's one-line status (the first line of its preview: "Searching the
    notes... K=20"); ``plan``, on the first call of a turn's tool phase, says what the phase
    will do (the model's words with its calls, or the tools). Both are for people: the CLI
    prints them; ``on_event``'s dict leaves them out.
    """

    tool: str
    call_id: str
    iteration: int
    status: str = ""
    plan: str = ""

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {
            **_act("tool_started", self.tool, self.iteration),
            "data": {"call_id": self.call_id},
        }


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A chunk of a running tool's output (``stream`` is ``stdout`` or ``stderr``)."""

    tool: str
    call_id: str
    text: str
    stream: str
    iteration: int

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {
            **_act("tool_output", self.tool, self.iteration),
            "detail": self.text,
            "data": {"call_id": self.call_id, "stream": self.stream},
        }


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call ended with ``status`` (ok, error, skipped).

    ``telemetry`` holds what the result tells about the call, when it tells it: chars read,
    retrieval K, retrieved items (path, score, snippet), attempts (see
    `ai_agent.observability.tool_telemetry`). ``call`` and ``tool_result`` are the call and
    what it returned (not ``result``: that is `RunFinished`'s, a `RunResult`).
    """

    tool: str
    call_id: str
    status: str
    duration_ms: float
    iteration: int
    telemetry: ToolTelemetry = field(default_factory=ToolTelemetry)
    call: ToolCall | None = field(default=None, repr=False)
    tool_result: ToolResult | None = field(default=None, repr=False)

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        data = {
            "call_id": self.call_id,
            "call": self.call,
            "result": _without_bytes(self.tool_result),
        }
        return {
            **_act("tool_finished", self.tool, self.iteration),
            "detail": self.status,
            "duration_ms": self.duration_ms,
            "data": data,
        }


def _without_bytes(result: ToolResult | None) -> ToolResult | None:
    """A result as listeners' dicts show it: its images and audio by type, size and digest."""
    if result is None or "media" not in result:
        return result
    shown = dict(result)
    shown["media"] = [{k: v for k, v in p.items() if k != "data"} for p in result["media"]]
    return cast("ToolResult", shown)


@dataclass(frozen=True, slots=True)
class GatePaused:
    """The run paused at the gate; ``report`` says why and what a plan may do."""

    iteration: int
    report: GateReport | None = None

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {"type": "gate_paused", **_gate(self.iteration), "data": self.report}


@dataclass(frozen=True, slots=True)
class NodePaused:
    """A node of your pipeline called ``interrupt(value)``: the run waits for an answer.

    ``Agent.resume(thread_id, answer)`` (or ``ai-agent resume THREAD --plan TEXT``) gives the
    node ``answer`` as the value of its ``interrupt``.
    """

    node: str
    iteration: int
    value: Any = None

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {
            "type": "node_paused",
            "stage": self.node,
            "iteration": self.iteration,
            "data": self.value,
        }


@dataclass(frozen=True, slots=True)
class CustomEvent:
    """What a node or a tool wrote with LangGraph's ``get_stream_writer()`` (its "custom" mode)."""

    data: Any

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {"type": "custom", "data": self.data}


@dataclass(frozen=True, slots=True)
class GateResumed:
    """The gate took a plan.

    It came from ``Agent.resume`` (``source="resume"``) or from the ``query_user_plan`` hook
    (``source="hook"``). ``plan`` is the whole plan as the gate took it.
    """

    iteration: int
    source: str
    allow_continue: bool
    approve: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    activate_tools: tuple[str, ...] = ()
    plan: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        data = {"source": self.source, "plan": dict(self.plan)}
        return {"type": "gate_resumed", **_gate(self.iteration), "data": data}


@dataclass(frozen=True, slots=True)
class Compacted:
    """The conversation was compacted before a model call; ``record`` says all it did."""

    iteration: int
    strategy: str
    tokens_before: int
    tokens_after: int
    record: CompactionRecord | None = field(default=None, compare=False, repr=False)

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        data = dict(self.record or {})
        return {"type": "compacted", **_draft(self.iteration), "data": data}


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run (or a resume: a new run of the same thread) began; listeners only."""

    thread_id: str
    run_id: str
    resumed: bool


@dataclass(frozen=True, slots=True)
class FinalDelta:
    """Text of the final answer."""

    text: str


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended (completed, paused, failed or cancelled): always the last event."""

    result: RunResult


# Internal events: they reach ``on_event`` (and some the stream), never listeners.


@dataclass(frozen=True, slots=True)
class _ModelWaiting:
    """The draft sent its request and waits for the model (offering it tools, or not).

    ``typed``: the run has an output type, so no draft's text is its final answer (finalize
    asks for the typed one, `_TypedAnswer`).
    """

    iteration: int
    tools_offered: bool = False
    typed: bool = False

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {"type": "model_waiting", **_draft(self.iteration)}


@dataclass(frozen=True, slots=True)
class _ModelToolCall:
    """The streamed reply started a tool call: its text so far is a tool phase."""

    tool: str
    iteration: int = 0

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {"type": "model_tool_call", "tool": self.tool, **_draft(self.iteration)}


@dataclass(frozen=True, slots=True)
class _ModelFinished:
    """The model's reply is complete: its text, and the tools it calls (none: the answer)."""

    text: str
    tool_calls: tuple[str, ...]
    iteration: int

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        data = {"tool_calls": list(self.tool_calls)}
        return {
            "type": "model_finished",
            **_draft(self.iteration),
            "detail": self.text,
            "data": data,
        }


@dataclass(frozen=True, slots=True)
class _TypedAnswer:
    """A typed run's final answer is made: its text (the answer's JSON), which streams whole."""

    text: str
    iteration: int

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {
            "type": "typed_answer",
            "stage": "finalize",
            "iteration": self.iteration,
            "detail": self.text,
        }


@dataclass(frozen=True, slots=True)
class _BackendNotice:
    """A step of starting the local model server."""

    text: str

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {"type": "backend", "detail": self.text}


@dataclass(frozen=True, slots=True)
class _McpNotice:
    """A step in an MCP server's life (started, restarted, stopped, failed, a tool left out)."""

    text: str

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {"type": "mcp", "detail": self.text}


@dataclass(frozen=True, slots=True)
class _DirectToolStarted:
    """``Agent.call_tool`` started a tool, outside any run."""

    tool: str

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {"type": "tool_started", "stage": "call_tool", "tool": self.tool}


@dataclass(frozen=True, slots=True)
class _DirectToolFinished:
    """``Agent.call_tool``'s tool ended with ``status``."""

    tool: str
    status: str

    def progress(self) -> dict[str, Any]:
        """The ``on_event`` dict of this event."""
        return {
            "type": "tool_finished",
            "stage": "call_tool",
            "tool": self.tool,
            "detail": self.status,
        }


def _draft(iteration: int) -> dict[str, Any]:
    return {"stage": "draft", "iteration": iteration}


def _gate(iteration: int) -> dict[str, Any]:
    return {"stage": "gate", "iteration": iteration}


def _act(kind: str, tool: str, iteration: int) -> dict[str, Any]:
    return {"type": kind, "stage": "act", "tool": tool, "iteration": iteration}


# What a run reports that streams show too.
_InRun = (
    StageStarted
    | StageFinished
    | ModelDelta
    | ModelRetry
    | ToolStarted
    | ToolOutput
    | ToolFinished
    | GatePaused
    | NodePaused
    | CustomEvent
)

StreamEvent = _InRun | FinalDelta | RunFinished

LifecycleEvent = (
    RunStarted
    | StageStarted
    | StageFinished
    | ModelRetry
    | ToolStarted
    | ToolFinished
    | GatePaused
    | NodePaused
    | CustomEvent
    | GateResumed
    | Compacted
    | RunFinished
)

ModelCallEvent = ModelDelta | ModelRetry | _ModelToolCall
"""What a model call reports while it runs; the draft's `ModelEvents` sets the iteration."""

ProgressEvent = (
    _InRun
    | GateResumed
    | Compacted
    | _ModelWaiting
    | _ModelToolCall
    | _ModelFinished
    | _TypedAnswer
    | _BackendNotice
    | _McpNotice
    | _DirectToolStarted
    | _DirectToolFinished
)
"""What the engine reports as it goes (``RunContext.emit``); each renders its ``on_event`` dict."""
