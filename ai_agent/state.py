"""The run state: the data a run carries from stage to stage, checkpointed after every step.

State holds data only: plain JSON values (str, int, float, bool, None, lists and dicts), so a
checkpoint can be read back by strict serialization and inspected by people. Collaborators (the
model, tools, hooks, settings, stores) travel in `ai_agent.context.RunContext`, and secrets
never enter state at all.

Two list channels grow by appending (``messages``, ``results``, ``trace``, ``plans``); a node may
also replace ``messages`` or ``issues`` wholesale by returning ``{"replace": [...]}`` (compaction
and the gate use this), which keeps appends cheap for the delta checkpointer.

`UserPlan`, a person's plan, is named here too: it arrives from outside (another process, a
person, a JSON file), so it is a pydantic model, validated at the edge. It lives in
`ai_agent.user_plan` and is imported on first use (PEP 562), so what only reads state (``ai-agent
runs``) does not load pydantic.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, Required

# Not typing.TypedDict: pydantic builds LangGraph's JSON schemas of the state (LangGraph Studio,
# ``langgraph dev``, ``get_input_jsonschema``) and refuses typing's on Python < 3.12.
from typing_extensions import TypedDict

from ai_agent.issues import KINDS, IssueKind

if TYPE_CHECKING:
    from ai_agent.user_plan import UserPlan

__all__ = [
    "AUDIO_FORMATS",
    "CUT",
    "ENDED_BY_SERVER",
    "IMAGE_TYPES",
    "SEVERITY",
    "STAGES",
    "Citation",
    "CompactionRecord",
    "Decision",
    "Discovery",
    "GateReport",
    "Grant",
    "Issue",
    "IssueCode",
    "MediaPart",
    "Message",
    "PendingCall",
    "PlanRecord",
    "Replace",
    "RunState",
    "RunStatus",
    "Source",
    "ToolCall",
    "ToolOutcome",
    "ToolResult",
    "TraceEvent",
    "UsageRecord",
    "UserPlan",
    "append_or_replace",
    "new_run_state",
]

STAGES = ("recall", "draft", "decide", "discover", "act", "reflect", "gate", "finalize", "persist")
"""The engine's nine stages, in the order a cycle runs them."""

Role = Literal["system", "user", "assistant", "tool"]
RunStatus = Literal["running", "paused", "completed", "failed", "cancelled"]

# The kinds of issue (the name before they became an enum), and their default severities
# (0..1) of the critical gate: both from the one table of kinds, `ai_agent.issues.KINDS`.
IssueCode = IssueKind
SEVERITY: dict[str, float] = {kind: spec.severity for kind, spec in KINDS.items()}


class ToolCall(TypedDict):
    """One call the model asked for.

    ``id`` is the engine's own identity of the call, unique within the run (``c<iteration>.<n>``,
    given by the draft stage where the reply enters state): the journal, grants, plans and gate
    reports key on it. ``model_id`` is the id the model gave the call; the model sees it again in
    the conversation, but it carries no authority, since a model may repeat it. Calls of runs
    written before engine ids existed have no ``model_id``, and their ``id`` is the model's.
    ``edited_from`` holds the model's arguments of a call a person edited before approving it.
    """

    id: str
    name: str
    args: dict[str, Any]
    model_id: NotRequired[str]
    # The arguments the model asked for, when a person's plan replaced them (``edit_args``):
    # ``args`` is what runs, and this is what the person changed.
    edited_from: NotRequired[dict[str, Any]]


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types OpenAI's chat ``image_url`` parts take (as data URLs)."""

AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/wave": "wav",
    "audio/x-wav": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
"""The audio types OpenAI's chat ``input_audio`` parts take, and the ``format`` of each."""


class MediaPart(TypedDict):
    """An image or audio clip a tool returned, for a model that reads media.

    ``data`` is the bytes in base64; ``size`` (decoded bytes) and ``sha256`` (of the decoded
    bytes) are what logs, traces and events show instead of them.
    """

    kind: Literal["image", "audio"]
    mime_type: str
    data: str
    size: int
    sha256: str


class Message(TypedDict, total=False):
    """A chat message in OpenAI shape. ``kind`` marks messages compaction must keep.

    A tool message's ``media`` are the images and audio of its result that the model reads
    (``model_backend.media_inputs``); its ``content`` describes them in text either way.
    """

    role: Required[Role]
    content: Required[str]
    tool_calls: list[ToolCall]
    tool_call_id: str
    name: str
    kind: Literal["task", "plan", "recall", "summary"]
    media: list[MediaPart]


class ToolResult(TypedDict, total=False):
    """What a tool returns: ``{"status": "ok"|"error"|"skipped", "content", "error", "meta"}``.

    Recoverable problems are results with ``status="error"`` and a ``meta["code"]``; only bugs
    raise. The registry adds ``execution_time_ms``, ``summary`` (the tool's ``format_result``
    line, shown in traces), ``tool_name`` and the tool's ``category`` (a ToolCategory value;
    absent when no tool of that name exists), as the tool-oversight spec's ToolResult has them;
    the act stage names the tool of a result it made itself (a call skipped or refused) too.
    ``media`` are images and audio for a model that reads them (`MediaPart`); ``content``
    describes each in text, which is what a model that does not read them gets.

    Examples:
        >>> ToolResult(status="ok", content=68.055)
        {'status': 'ok', 'content': 68.055}
    """

    status: Required[Literal["ok", "error", "skipped"]]
    content: Any
    error: str | None
    meta: dict[str, Any]
    execution_time_ms: float
    summary: str
    tool_name: str
    category: str
    media: list[MediaPart]


class Issue(TypedDict):
    """A problem found during a cycle, scored by the gate.

    ``code`` is its kind (`ai_agent.issues.IssueKind`), kept as the kind's plain string.
    """

    code: IssueKind
    severity: float
    message: str
    tool: str | None
    call_id: str | None


class PendingCall(TypedDict):
    """A call chosen for this cycle that has not produced a result yet.

    ``blocked`` names the issue code that stopped it (approval, missing env, missing tool, unknown
    outcome); ``preview`` shows a person what the call would do.
    """

    call: ToolCall
    blocked: IssueKind | None
    preview: str
    # For UNKNOWN_OUTCOME: the journal attempt the person is asked about (see JournalEntry).
    attempt: NotRequired[float]
    # For SUBAGENT_PAUSED: the child's usage when it paused. The run counts it if the call
    # ends without the child going on (a plan denies it); a child that goes on reports all it
    # spent when it ends, this included.
    spent: NotRequired[dict[str, Any]]


class Source(TypedDict, total=False):
    """What a tool result drew on and the final answer may cite (its ``meta["sources"]``).

    ``id`` is how the model names it in the answer (``[n1f3a2c]``; the notes tools give each
    note an id made from its path); ``uri`` is where a person opens it (``file://`` or
    ``http(s)://``), never shown to the model.
    """

    id: Required[str]
    path: Required[str]
    section: str | None
    uri: str | None


class Citation(TypedDict):
    """A source the final answer cites, and the answer's sentences that cite it, in order."""

    id: str
    path: str
    section: str | None
    uri: str | None
    claims: list[str]


class ToolOutcome(TypedDict):
    """An executed (or cancelled) call and its result, in the order they happened."""

    iteration: int
    call: ToolCall
    result: ToolResult
    # The always-allow rule that let the call run without asking (its id in the run store).
    rule: NotRequired[int]


class Decision(TypedDict):
    """What decide made of the draft: run tool calls this cycle, or finish."""

    action: Literal["tool", "finish"]
    text: str
    calls: list[ToolCall]


class Discovery(TypedDict):
    """A tool proposed for the next cycle by discover (never activated by it)."""

    name: str
    reason: str


class Grant(TypedDict):
    """A person's approval, bound to exactly what the gate report showed them.

    It names the run (``thread_id``), the gate it answered (``gate``: that report's token), the
    call the person approved (``call_id``, the engine's id) and the digest of its canonical
    arguments (``args_hash``). ``scope`` says how far it reaches beyond that call: ``call``
    (only it, and only once: ``spent`` once it ran), ``args`` (this tool with exactly these
    arguments, for the rest of the run) or ``tool`` (this tool for the rest of the run, except
    calls the tool escalates to a person). It lives in state, so a fork from before it does not
    have it, and a fork from after it (another thread) does not benefit from it.

    Grants written before this binding existed (state version 1) name no run and cover nothing.
    """

    tool: str
    scope: Literal["call", "tool", "args"]
    call_id: str | None
    args_hash: str | None
    thread_id: str | None
    gate: str | None
    spent: bool


class GateReport(TypedDict):
    """The gate's verdict for one cycle; when ``intervene`` is true the run waits for a plan."""

    iteration: int
    issues: list[Issue]
    severity: float
    threshold: float
    intervene: bool
    prompt: str
    options: list[str]
    pending: list[PendingCall]
    # Names this gate of this run; with the run's nonce only a reader of this report knows it.
    # A plan that arrives through the queue must carry it (``UserPlan.gate_token``).
    token: NotRequired[str]


class PlanRecord(TypedDict):
    """A plan the run received, kept in state for the trace and for replay."""

    iteration: int
    plan: dict[str, Any]
    source: Literal["resume", "hook"]


CUT = "cut"
"""A draft's trace status when its text reply stopped at the model's token limit (finish reason
``length``): an answer the server cut, not one the model ended."""

ENDED_BY_SERVER = "ended_by_server"
"""A draft's trace status when the server ended its text reply for a reason of its own (finish
reason ``content_filter``, or any other that is not the model ending its turn): the answer may
be incomplete or filtered."""


class TraceEvent(TypedDict, total=False):
    """One line of the structured trace: a stage, how long it took, what it did."""

    stage: Required[str]
    iteration: Required[int]
    started_at: float
    duration_ms: float
    tool: str | None
    status: str
    gate_score: float | None
    detail: str
    request_id: str


class Replace(TypedDict):
    """Returned for a list channel to replace its whole value instead of appending."""

    replace: list[Any]


def append_or_replace(left: list[Any] | None, right: list[Any] | Replace | None) -> list[Any]:
    """Reducer: append a list, or replace the value when given ``{"replace": [...]}``.

    Examples:
        >>> append_or_replace([1], [2])
        [1, 2]
        >>> append_or_replace([1], {"replace": [3]})
        [3]
    """
    if right is None:
        return list(left or [])
    if isinstance(right, dict):
        return list(right["replace"])
    return [*(left or []), *right]


class UsageRecord(TypedDict, total=False):
    """One model request's tokens and cost; the run keeps them in order (``usage_log``).

    ``source`` says where the counts come from: ``server`` (reported usage, which wins) or
    ``estimate`` (tiktoken, when the server reported none). ``estimated_prompt_tokens`` is our
    estimate either way, and ``estimate_error`` its relative error against the server's count;
    ``calibrated_prompt_tokens`` / ``calibrated_error`` are the same after adding the gap the
    server showed on the previous request (its chat template's own tokens).
    ``tools_called`` names the tools this reply asked for (their calls are part of the
    completion); ``tool_result_tokens`` attributes the prompt's new tool results to their tools.
    """

    iteration: Required[int]
    at: Required[float]
    model: str
    prompt_tokens: Required[int]
    completion_tokens: Required[int]
    total_tokens: Required[int]
    cached_tokens: int
    source: Literal["server", "estimate"]
    estimated_prompt_tokens: int
    estimate_error: float | None
    calibrated_prompt_tokens: int
    calibrated_error: float
    cost: float
    latency_ms: float
    attempts: int
    streamed: bool
    tools_called: list[str]
    tool_call_tokens: dict[str, int]
    tool_result_tokens: dict[str, int]
    purpose: Literal["draft", "compaction", "output", "subagent", "output_summary"]


class CompactionRecord(TypedDict, total=False):
    """What one compaction did, kept in ``compactions`` for ``get_context_state()``."""

    iteration: Required[int]
    at: Required[float]
    strategy: Required[str]
    tokens_before: Required[int]
    tokens_after: Required[int]
    messages_before: int
    messages_after: int
    removed: int
    summarized: int
    target: int
    detail: str


class RunState(TypedDict, total=False):
    """Everything a run knows, checkpointed after every stage."""

    task: str
    status: RunStatus
    iteration: int
    messages: Annotated[list[Message], append_or_replace]
    decision: Decision | None
    pending: list[PendingCall]
    results: Annotated[list[ToolOutcome], operator.add]
    issues: Annotated[list[Issue], append_or_replace]
    gate: GateReport | None
    plans: Annotated[list[PlanRecord], operator.add]
    resolving: bool
    grants: list[Grant]
    active_tools: list[str]
    # Tools that have actually run in this run; the first-use gate of external tools reads it,
    # and as state it is checkpointed, so a fork from before a first use gates again.
    tools_used: list[str]
    discovered: list[Discovery]
    recalled: list[Any]
    reflection: str | None
    final_text: str | None
    # A typed run's answer, as plain JSON data (the typed value is rebuilt from it and the
    # output type when a result is read), and the schema it was checked against: kept from
    # the start, so a resume or replay by an Agent without the type asks for the same answer.
    output: Any
    output_schema: dict[str, Any] | None
    # The sources the final answer cites (finalize): data, so it survives resume and replay.
    citations: list[Citation]
    stop_reason: str | None
    trace: Annotated[list[TraceEvent], operator.add]
    usage: NotRequired[dict[str, Any]]
    usage_log: Annotated[list[UsageRecord], operator.add]
    compactions: Annotated[list[CompactionRecord], operator.add]
    budget_allowance: dict[str, float]
    # Random, drawn once per run by the first draft: the secret part of every gate token.
    gate_nonce: str


def new_run_state(task: str, active_tools: list[str]) -> RunState:
    """The state a run starts from: the task as the first message, nothing else done yet.

    Examples:
        >>> state = new_run_state("calc 2+2", ["calculator"])
        >>> state["messages"], state["iteration"], state["status"]
        ([{'role': 'user', 'content': 'calc 2+2', 'kind': 'task'}], 0, 'running')
    """
    return RunState(
        task=task,
        status="running",
        iteration=0,
        messages=[Message(role="user", content=task, kind="task")],
        active_tools=list(active_tools),
        grants=[],
        pending=[],
        issues=[],
        plans=[],
        results=[],
        trace=[],
        discovered=[],
        recalled=[],
        decision=None,
        gate=None,
        final_text=None,
        stop_reason=None,
        resolving=False,
        reflection=None,
    )


def __getattr__(name: str) -> Any:
    """``UserPlan``, imported from its module on first use (pydantic with it)."""
    if name == "UserPlan":
        from ai_agent.user_plan import UserPlan

        globals()[name] = UserPlan  # the next access is a plain lookup
        return UserPlan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
