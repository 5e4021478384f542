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

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    NotRequired,
    Protocol,
    TypedDict,
    runtime_checkable,
)

from ai_agent.journal import Journal, JournalEntry
from ai_agent.state import (
    CompactionRecord,
    GateReport,
    Issue,
    Message,
    RunState,
    ToolCall,
    ToolResult,
    UsageRecord,
)
from ai_agent.usage import MAX_REPORTED_TOKENS, counted_usage, usage_is_counted

if TYPE_CHECKING:
    from ai_agent.errors import ContextOverflowError
    from ai_agent.events import ModelCallEvent, ProgressEvent
    from ai_agent.structured import OutputSpec

__all__ = [
    "MAX_REPORTED_TOKENS",
    "AllowRule",
    "ApprovalPolicy",
    "CallReview",
    "CallerBase",
    "Event",
    "Hooks",
    "Journal",
    "JournalEntry",
    "Memory",
    "Meter",
    "ModelCall",
    "ModelCaller",
    "ModelEvents",
    "ModelReply",
    "OutputStore",
    "Prepared",
    "ReportingCaller",
    "RuleBook",
    "RuleTerms",
    "RunContext",
    "RunPolicy",
    "ToolBox",
    "ToolInfo",
    "counted_usage",
    "reporting",
    "usage_is_counted",
]

ApprovalPolicy = Literal["auto", "confirm", "approve", "deny"]


class ModelReply(TypedDict):
    """One model turn: the assistant message and what it cost.

    ``usage`` is what the server reported (OpenAI's names), empty when it reported nothing. The
    other keys are optional: a ModelCaller that does not know them leaves them out.
    ``request_id`` is the call's id (its ``X-Request-ID``), set by the Agent's observed caller.
    """

    message: Message
    usage: dict[str, Any]
    latency_ms: float
    model: NotRequired[str]
    streamed: NotRequired[bool]
    attempts: NotRequired[int]
    retries: NotRequired[list[dict[str, Any]]]
    finish_reason: NotRequired[str]
    request_id: NotRequired[str]


class ModelCaller(Protocol):
    """Calls the model with the conversation and the active tools' schemas.

    ``response_format`` (a chat-completions ``response_format``, such as ``{"type":
    "json_schema", ...}``) asks for a reply of that shape; only a typed run's final answer
    sends one (`ai_agent.structured`), and a caller passes it on as it is.
    """

    async def __call__(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> ModelReply:
        """Send the conversation and the tool schemas; return the assembled reply."""


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call of a `ModelCaller`, its arguments as one value.

    Callers written as `CallerBase` subclasses take it whole and pass it on whole
    (`ModelCall.to`), so a new argument of the protocol is one edit here, not one per caller.
    """

    messages: list[Message]
    tools: list[dict[str, Any]]
    response_format: dict[str, Any] | None = None

    async def to(self, caller: ModelCaller) -> ModelReply:
        """Make this call of ``caller`` (the next caller in a chain of wrappers)."""
        return await caller(self.messages, self.tools, response_format=self.response_format)


class CallerBase:
    """A `ModelCaller` written as one method, `answer`, over one `ModelCall`.

    The engine's callers (the chat model's, and the wrappers that observe, record, replay and
    mask) are each an ``answer``; only this class spells out the protocol's signature.
    """

    async def __call__(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> ModelReply:
        """Send the conversation and the tool schemas; return the assembled reply."""
        return await self.answer(ModelCall(messages, tools, response_format))

    async def answer(self, call: ModelCall) -> ModelReply:
        """The reply to one call."""
        raise NotImplementedError  # pragma: no cover - every subclass answers


class Prepared(TypedDict, total=False):
    """What a Meter made ready for a model call.

    Attributes:
        messages: The conversation to send (compacted when ``compaction`` is set).
        estimate: Estimated prompt tokens of the request (tiktoken).
        calibrated: The estimate corrected by what the server counted on earlier requests.
        compaction: What compaction did, when it ran.
        extra_usage: Usage records of model calls made while preparing (summaries, scores).
        budget_issue: Why the call must not be made (a BUDGET issue for the gate).
        allowance: A budget allowance granted by a person's plan, to keep in state.
    """

    messages: list[Message]
    estimate: int
    calibrated: int
    compaction: CompactionRecord
    extra_usage: list[UsageRecord]
    budget_issue: str
    allowance: dict[str, float]


class Meter(Protocol):
    """Token accounting around model calls: estimate, compact, check the budget, record usage."""

    @property
    def limited(self) -> bool:
        """Whether a token or cost budget limits the run (and so its children's whole tree)."""

    async def prepare(
        self,
        state: RunState,
        *,
        system_prompt: str,
        tools: list[dict[str, Any]],
        model: ModelCaller,
        iteration: int,
    ) -> Prepared:
        """Make a model call ready: estimate its tokens, compact if needed, check the budget."""

    def record(
        self, reply: ModelReply, *, iteration: int, request: list[Message], prepared: Prepared
    ) -> UsageRecord:
        """Record the usage of a model reply (the server's counts, else the estimate)."""

    async def compact_after_overflow(
        self,
        prepared: Prepared,
        overflow: ContextOverflowError,
        *,
        system_prompt: str,
        tools: list[dict[str, Any]],
        model: ModelCaller,
        iteration: int,
    ) -> Prepared:
        """A compacted request after the server refused ``prepared`` as too long.

        Raises the overflow, made final, when the conversation cannot shrink.
        """


class ToolInfo(TypedDict):
    """What the stages know about a tool without touching its code."""

    name: str
    description: str
    category: str
    requires_env: list[str]
    parameters: dict[str, Any]
    concurrent: NotRequired[bool]


class CallReview(TypedDict):
    """What the tool box says about one call before it runs.

    ``problems`` lists what is wrong with the arguments (empty: they fit the schema);
    ``escalate`` is why this particular call needs a person even when its category would run it
    unasked (a destructive command), or None.
    """

    problems: list[str]
    escalate: str | None


class ToolBox(Protocol):
    """The catalog of tools a run may use, and the one way to execute them.

    ``info`` accepts a tool's name or its wire name (the name the model saw in ``schemas``) and
    answers with the tool's own name, which is what state, grants and plans use.
    """

    def catalog(self) -> list[ToolInfo]:
        """Every tool a run could use, active or not."""

    def info(self, name: str) -> ToolInfo | None:
        """One tool by its name or wire name, or None when there is none."""

    def schemas(self, names: list[str]) -> list[dict[str, Any]]:
        """The OpenAI function schemas of the named tools (what the model is offered)."""

    def preview(self, call: ToolCall) -> str:
        """What a call would do, in words a person can approve."""

    def review(self, call: ToolCall) -> CallReview:
        """Problems with a call's arguments, and whether it needs a person anyway."""

    def format_result(self, name: str, result: ToolResult) -> str:
        """The one-line summary of a result that traces show."""

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """Run one call under the tool's checks, timeout and output cap."""


class RuleTerms(TypedDict):
    """What an always-allow rule allows, and who asked for it (see `AllowRule`)."""

    tool: str
    scope: Literal["run", "args", "tool"]
    thread_id: str | None
    args_hash: str | None
    args: dict[str, Any] | None
    category: str
    confirmed: bool
    source: str


class AllowRule(RuleTerms):
    """An always-allow rule a person made, as the run store holds it (`RuleBook`).

    ``scope``: ``run`` (this tool in run ``thread_id``), ``args`` (this tool with the arguments
    whose digest is ``args_hash``, in any run) or ``tool`` (this tool in every run; for a
    modification tool only when ``confirmed``). ``problem`` says why a stored row is unreadable
    (it is then never used); ``source`` names the run, gate and call the person approved.
    """

    id: int
    created_at: float
    revoked_at: float | None
    problem: str | None


class RuleBook(Protocol):
    """Where a run reads the always-allow rules that may let a call run unasked."""

    async def rules_for(self, tool: str) -> list[AllowRule]:
        """The rules of ``tool`` that are not revoked, unreadable ones included (with why)."""


class OutputStore(Protocol):
    """Keeps the full text of tool outputs that were clipped before reaching the model."""

    async def save_output(self, thread_id: str, iteration: int, call: ToolCall, text: str) -> str:
        """Keep the full text of a clipped output; return its reference."""


class Memory(Protocol):
    """Long-term memory of past runs, searched by recall and written by persist."""

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """Records of past runs that match ``query``, best first."""

    def add(self, record: dict[str, Any]) -> None:
        """Remember one finished run."""


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

    Examples:
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
    """The values that steer a run. Plain data, derived from settings by the Agent.

    ``approvals`` maps a tool category to ``auto``/``confirm``/``approve``/``deny``;
    ``unattended`` (``--yes``) grants what would wait for a person, ``deny`` still holds.
    ``execute_all_tool_calls``: a draft's calls run in its cycle, at most ``max_tool_calls`` of
    them (off: only the first). ``first_use_gate``: the first call of each external tool in a
    run waits for a person even when the external policy is ``auto``. ``max_output_chars``:
    longer tool outputs are summarized (``output_summary``: extractive, clip, or model
    within ``output_summary_timeout`` and ``output_summary_input_chars``) before the
    model sees them (the full text goes to the run store). ``output``: the type the final
    answer must fit (`ai_agent.structured.OutputSpec`), asked for as ``output_mode`` says and
    sent back with its errors ``output_retries`` times before the gate hears of it.
    ``max_concurrent_calls``: how many calls of tools that may run at once
    (``ToolSpec.concurrent``) run together.
    ``media_inputs`` and ``max_media_bytes``: the images and audio of tool results the model
    gets as content parts (`ai_agent.tools.media`).
    """

    system_prompt: str = ""
    max_iterations: int = 10
    gate_threshold: float = 0.70
    execute_all_tool_calls: bool = False
    max_tool_calls: int = 3
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
    stream_tool_results: bool = True
    stream_chunk_size: int = 1024
    first_use_gate: bool = True
    max_output_chars: int = 12_000
    # The type the final answer must fit (``Agent(output_type=...)``), and how it is asked
    # for (the ``output`` settings). A run without one keeps the schema it started with.
    output: OutputSpec | None = None
    output_mode: Literal["native", "tool"] = "native"
    output_retries: int = 2
    max_concurrent_calls: int = 4
    output_summary: Literal["extractive", "clip", "model"] = "extractive"
    output_summary_timeout: float = 60.0
    output_summary_input_chars: int = 24_000
    media_inputs: frozenset[str] = frozenset()
    max_media_bytes: int = 1_000_000


class Event(TypedDict, total=False):
    """A progress event as ``Agent(on_event=...)`` receives it (see `ai_agent.events`).

    The engine reports typed events (``RunContext.emit``); each renders this dict with its
    ``progress()`` method, at that callback only.
    """

    type: str
    stage: str
    iteration: int
    tool: str
    detail: str
    duration_ms: float
    data: Any


def _ignore(event: ProgressEvent) -> None:
    """The default event sink: nobody is listening."""


def _same(value: Any) -> Any:
    """The default of ``RunContext.scrub``: no secrets known, nothing to mask."""
    return value


def _no_issues() -> list[Issue]:
    """The default of ``RunContext.take_issues``: nothing was found before the run."""
    return []


class ModelEvents:
    """Where the model calls of a run's drafts report progress: retries, and token deltas.

    The Agent makes one per run and binds its model caller to it (`reporting`); the draft
    opens it around its model call (`during`), which sets each event's iteration to the
    draft's. Outside a draft (a compaction summary) nothing is reported and the model
    is not asked to stream. Retries are reported to every run; token deltas (and so a streamed
    request) only when ``tokens`` is set: while someone consumes them (``Agent.astream``), so
    plain runs work with servers whose streaming is broken.

    Examples:
        >>> from ai_agent.events import ModelDelta
        >>> seen = []
        >>> events = ModelEvents(seen.append, tokens=True)
        >>> events(ModelDelta("lost", 0))  # outside a draft
        >>> with events.during(2):
        ...     events.streaming, events(ModelDelta("hi", 0))
        (True, None)
        >>> seen, events.streaming
        ([ModelDelta(text='hi', iteration=2)], False)
    """

    def __init__(
        self, emit: Callable[[ProgressEvent], None] = _ignore, *, tokens: bool = False
    ) -> None:
        self._emit, self._tokens = emit, tokens
        self._iteration: int | None = None

    @property
    def streaming(self) -> bool:
        """Whether the model call being made now should stream its token deltas here."""
        return self._tokens and self._iteration is not None

    @contextmanager
    def during(self, iteration: int) -> Iterator[None]:
        """Report the progress of the model calls made inside the block, as draft ``iteration``."""
        self._iteration = iteration
        try:
            yield
        finally:
            self._iteration = None

    def __call__(self, event: ModelCallEvent) -> None:
        """Report one event of the model call being made now (dropped outside a draft)."""
        if self._iteration is not None:
            self._emit(replace(event, iteration=self._iteration))


@runtime_checkable
class ReportingCaller(Protocol):
    """A ModelCaller that can report its progress (`ai_agent.models.ChatModelCaller` is one)."""

    def reporting(self, events: ModelEvents) -> ModelCaller:
        """The same caller (same client, retries and breaker), reporting to ``events``."""


def reporting(caller: ModelCaller, events: ModelEvents) -> ModelCaller:
    """``caller`` bound to report to ``events`` when it can; otherwise ``caller`` itself."""
    return caller.reporting(events) if isinstance(caller, ReportingCaller) else caller


@dataclass(frozen=True, slots=True)
class RunContext:
    """Collaborators of one run; LangGraph passes it to every stage as ``runtime.context``."""

    thread_id: str
    model: ModelCaller
    tools: ToolBox
    journal: Journal
    hooks: Hooks = field(default_factory=Hooks)
    policy: RunPolicy = field(default_factory=RunPolicy)
    # Where the stages report what happens (typed events, `ai_agent.events`): the Agent's
    # listeners, its ``on_event`` callback and the run's stream all receive the same objects.
    emit: Callable[[ProgressEvent], None] = _ignore
    memory: Memory | None = None
    meter: Meter | None = None
    # Where the run's model caller reports retries and token deltas; the draft opens it around
    # its call. The Agent binds its caller to the same object (`reporting`).
    model_events: ModelEvents = field(default_factory=ModelEvents)
    extras: Mapping[str, Any] = field(default_factory=dict)
    outputs: OutputStore | None = None
    # Issues the Agent found while preparing this run or resume (an MCP server that refused its
    # key or did not start). The first draft takes them and goes to the gate instead of asking
    # the model; later calls return nothing. A function, so the context stays immutable.
    take_issues: Callable[[], list[Issue]] = _no_issues
    # Masks every secret the Agent knows in a JSON-like value (a copy when anything changed).
    # The stage wrapper passes each state update through it, so whatever a stage, a hook or an
    # error message produced, no configured secret enters state (and so the checkpoints).
    scrub: Callable[[Any], Any] = _same
    # The paused gate's report this resume answers, as the person was shown it (None for a
    # run, a crash's resume or a replay): the gate takes it as decided, so it is never
    # evaluated or asked again (`evaluate_critical`, `query_user_plan`) on the way back in.
    answering: GateReport | None = None
    # The always-allow rules (the run store); None where none apply: a replay follows the
    # answers the recording holds, never a rule made since.
    rules: RuleBook | None = None
    # Cancels the subagent a held call of this run waits on (by the call's tool name and id),
    # when the person's plan denies the call or stops the run; its outcome carries what the
    # child spent (None: no child). None where no child is touched: a replay.
    release_child: Callable[[str, str], Awaitable[ToolResult | None]] | None = None
