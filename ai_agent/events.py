"""The typed events of streams and listeners.

``Agent.astream`` / ``Agent.stream`` yield these, in order:

- `StageStarted` / `StageFinished` around each of the nine stages;
- `ModelDelta`: text as the model writes it, every turn (tool phases included);
- `ModelRetry`: a failed model call about to be retried, and how long until then;
- `ToolStarted`, `ToolOutput` (live chunks of a long tool's output),
  `ToolFinished`;
- `GatePaused`: the run stopped at the gate and waits for a plan;
- `FinalDelta`: the final answer's text. It is held back while a turn could still turn out
  to be a tool call, so it never carries tool-phase text; without streaming it arrives in one piece;
- `RunFinished`: the `RunResult`, always last.

Listeners (``agent.add_listener``) get the lifecycle events, a subset with three more:
`RunStarted`, `StageStarted` / `StageFinished`, `ModelRetry`,
`ToolStarted` / `ToolFinished`, `GatePaused`, `GateResumed`,
`Compacted` and `RunFinished` (see `LifecycleEvent`); never the text deltas.

With ``quiet_tools=True`` (the "quiet tool phases" policy) `ModelDelta` and
`ToolOutput` are left out: only status events and the final answer are streamed.

They sit low in the package (below the stages and the graph layer), so whatever produces an
event can build it; the graph layer's `ai_agent.graph.events` turns the engine's progress
events into them.

Examples:
    >>> from ai_agent.events import FinalDelta
    >>> FinalDelta("Hello").text
    'Hello'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ai_agent.observability.tooldata import ToolTelemetry

if TYPE_CHECKING:
    from ai_agent.graph.result import RunResult
    from ai_agent.state import GateReport

__all__ = [
    "Compacted",
    "FinalDelta",
    "GatePaused",
    "GateResumed",
    "LifecycleEvent",
    "ModelDelta",
    "ModelRetry",
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


@dataclass(frozen=True, slots=True)
class StageFinished:
    """A stage ended, after ``duration_ms``."""

    stage: str
    iteration: int
    duration_ms: float


@dataclass(frozen=True, slots=True)
class ModelDelta:
    """Text the model just wrote (any turn)."""

    text: str
    iteration: int


@dataclass(frozen=True, slots=True)
class ModelRetry:
    """A model call failed with a retryable error; the next attempt starts in ``wait_seconds``."""

    error: str
    wait_seconds: float
    iteration: int


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call began."""

    tool: str
    call_id: str
    iteration: int


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A chunk of a running tool's output (``stream`` is ``stdout`` or ``stderr``)."""

    tool: str
    call_id: str
    text: str
    stream: str
    iteration: int


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call ended with ``status`` (ok, error, skipped).

    ``telemetry`` holds what the result tells about the call, when it tells it: chars read,
    retrieval K, retrieved items (path, score, snippet), attempts (see
    `ai_agent.observability.tool_telemetry`).
    """

    tool: str
    call_id: str
    status: str
    duration_ms: float
    iteration: int
    telemetry: ToolTelemetry = field(default_factory=ToolTelemetry)


@dataclass(frozen=True, slots=True)
class GatePaused:
    """The run paused at the gate; ``report`` says why and what a plan may do."""

    iteration: int
    report: GateReport | None = None


@dataclass(frozen=True, slots=True)
class GateResumed:
    """The gate took a plan.

    It came from ``Agent.resume`` (``source="resume"``) or from the ``query_user_plan`` hook
    (``source="hook"``).
    """

    iteration: int
    source: str
    allow_continue: bool
    approve: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    activate_tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Compacted:
    """The conversation was compacted before a model call."""

    iteration: int
    strategy: str
    tokens_before: int
    tokens_after: int


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


StreamEvent = (
    StageStarted
    | StageFinished
    | ModelDelta
    | ModelRetry
    | ToolStarted
    | ToolOutput
    | ToolFinished
    | GatePaused
    | FinalDelta
    | RunFinished
)

LifecycleEvent = (
    RunStarted
    | StageStarted
    | StageFinished
    | ModelRetry
    | ToolStarted
    | ToolFinished
    | GatePaused
    | GateResumed
    | Compacted
    | RunFinished
)
