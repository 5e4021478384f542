"""One exception tree for the whole engine.

Every error the engine raises on purpose derives from `AgentError`, and every message says
what happened and what to do next. Nothing here logs in its constructor, and no message ever holds a
secret value (API keys, header values): callers pass names, never values.

```text
AgentError
├── ConfigError                 settings or a config file failed validation
│   └── OutputSchemaError       an output type or JSON Schema that cannot type an answer
├── ModelError                  the model backend could not give a usable reply
│   ├── ModelUnavailableError   the server could not be reached (names the URL)
│   ├── ModelAuthError          401/403 from the server
│   ├── ModelRateLimitError     429 or a quota message
│   ├── ModelResponseError      empty, cut, malformed or oversized reply
│   │   ├── EmptyResponseError      the server sent no choices / nothing at all
│   │   ├── StreamInterruptedError  the stream stopped before the reply was complete
│   │   ├── MalformedToolCallError  a tool call's arguments are not a JSON object
│   │   ├── ContextOverflowError    the request is longer than the model's context window
│   │   └── ResponseTooLargeError   the reply passed the configured size cap
│   ├── CircuitOpenError        the breaker for this backend is open; calls fail fast
│   ├── BudgetExceededError     the next call would pass a token or cost limit
│   └── ScriptExhaustedError    a ScriptedModel was asked for a turn it does not have
├── ToolError
│   ├── ToolRegistrationError   a tool definition is invalid (caught at registration)
│   ├── UnknownToolError        a name that no registered tool has
│   ├── ToolPolicyViolation     a tool tried something its policy forbids
│   ├── ToolBuildError          the toolsmaker cannot build what it was given
│   ├── ToolTransitionError     a generated tool's status change its lifecycle refuses
│   ├── SandboxUnavailableError the OS sandbox of generated tools (bubblewrap) cannot run
│   ├── ApprovalRequiredError   a direct call needs a person's approval first
│   ├── ToolTimeoutError        a tool did not finish in time (results carry its name)
│   └── SchemaViolation         a call's arguments do not fit the tool's schema
├── RunError                    a run or resume request cannot proceed
│   ├── UnknownThreadError      no run with that thread id exists
│   ├── InvalidThreadIdError    a thread id outside the grammar (1-128 of A-Z a-z 0-9 . _ : -)
│   ├── UnknownCheckpointError  the thread has no checkpoint with that id
│   ├── NothingPendingError     the run has nothing left to resume
│   ├── PlanRequiredError       the run is paused at the gate and needs a plan
│   ├── InvalidPlanError        the plan failed validation; the interrupt stays pending
│   │   └── PlanRefusedError        its gate token is missing, stale or not the report's
│   ├── ThreadBusyError         another process holds this thread's lease
│   │   └── LeaseLostError      this process's lease was taken over; it stopped writing
│   ├── ReplayDivergedError     a replay asked for a call the recording does not have
│   ├── HookError               a user's hook (recall, evaluate_critical, persist...) raised
│   ├── OutputValidationError   a stored output does not fit the output type it is read with
│   └── UnknownOutputError      a run kept no tool output under that reference
├── StoreError                  the checkpoint database or run store cannot be used
│   ├── StorageFullError        the database's disk is full; nothing was lost, free space
│   └── CorruptRunError         a stored row or checkpoint of one run cannot be read back
└── LocalBackendError           the built-in local model server could not be prepared or started
```
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "ApprovalRequiredError",
    "BudgetExceededError",
    "CircuitOpenError",
    "ConfigError",
    "ContextOverflowError",
    "CorruptRunError",
    "EmptyResponseError",
    "HookError",
    "InvalidPlanError",
    "InvalidThreadIdError",
    "LeaseLostError",
    "LocalBackendError",
    "MalformedToolCallError",
    "McpAuthError",
    "McpConnectError",
    "McpEnvError",
    "McpServerError",
    "ModelAuthError",
    "ModelError",
    "ModelRateLimitError",
    "ModelResponseError",
    "ModelUnavailableError",
    "NothingPendingError",
    "OutputSchemaError",
    "OutputValidationError",
    "PlanRefusedError",
    "PlanRequiredError",
    "ReplayDivergedError",
    "ResponseTooLargeError",
    "RunError",
    "SandboxUnavailableError",
    "SchemaViolation",
    "ScriptExhaustedError",
    "StorageFullError",
    "StoreError",
    "StreamInterruptedError",
    "ThreadBusyError",
    "ToolBuildError",
    "ToolError",
    "ToolPolicyViolation",
    "ToolRegistrationError",
    "ToolTimeoutError",
    "ToolTransitionError",
    "UnknownCheckpointError",
    "UnknownOutputError",
    "UnknownThreadError",
    "UnknownToolError",
]


class AgentError(Exception):
    """Base of every error the engine raises on purpose."""


class ConfigError(AgentError):
    """Settings or a configuration file failed validation; the message names the field."""


class OutputSchemaError(ConfigError):
    """An output type (``Agent(output_type=...)``, ``--output-schema``) that cannot type an answer.

    The type is not one pydantic can describe as a JSON object (a model, a dataclass, a
    TypedDict), or the JSON Schema is invalid or does not describe an object.
    """


class ModelError(AgentError):
    """The model backend could not give a usable reply.

    ``kinds`` are the names the error also answers to in ``ErrorRecoveryConfig``'s retryable
    lists (``RateLimitError``, ``ServiceUnavailable``, ``Timeout``...).
    """

    kinds: tuple[str, ...] = ()


class ModelUnavailableError(ModelError):
    """The model server could not be reached, or failed (5xx)."""

    kinds = ("ServiceUnavailable",)


class ModelAuthError(ModelError):
    """The model server refused the credentials (401/403)."""


class ModelRateLimitError(ModelError):
    """The model server asked us to slow down (429 or a quota message)."""

    kinds = ("RateLimitError",)

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ModelResponseError(ModelError):
    """The reply was empty, cut off, malformed or larger than the configured cap."""


class EmptyResponseError(ModelResponseError):
    """The server answered without a reply: no choices, or a stream with no content at all."""

    kinds = ("EmptyResponse",)


class StreamInterruptedError(ModelResponseError):
    """The stream stopped before the reply was complete (no finish reason, a cut connection).

    Attributes:
        partial_text: The text received before the cut, so a caller can show or log it.
    """

    kinds = ("StreamInterrupted", "ConnectionError", "ServiceUnavailable")

    def __init__(self, message: str, *, partial_text: str = "") -> None:
        super().__init__(message)
        self.partial_text = partial_text


class MalformedToolCallError(ModelResponseError):
    """The model asked for a tool with arguments that are not a JSON object.

    Attributes:
        tool: The tool the call named.
        raw_arguments: The arguments as sent (cut to a readable length).
    """

    kinds = ("MalformedToolCall",)

    def __init__(self, message: str, *, tool: str = "", raw_arguments: str = "") -> None:
        super().__init__(message)
        self.tool = tool
        self.raw_arguments = raw_arguments


class ContextOverflowError(ModelResponseError):
    """The server refused the request as longer than the model's context window (a 400).

    The draft compacts the conversation and retries once before this reaches the gate.

    Attributes:
        prompt_tokens: The request's size as the server counted it, when it said.
        window: The model's context window as the server reported it, when it said.
    """

    kinds = ("ContextOverflow",)

    def __init__(
        self, message: str, *, prompt_tokens: int | None = None, window: int | None = None
    ) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.window = window

    def unresolved(self, how: str) -> ContextOverflowError:
        """The same overflow once compacting could not resolve it: what the gate shows.

        Args:
            how: What was tried (the conversation compacted and retried once, or it could not be
                compacted any further).
        """
        err = ContextOverflowError(
            f"{self}; {how}. Raise the server's context size (for the local server: --ctx), or "
            "set MAMBA_MODEL_BACKEND__CONTEXT_WINDOW to the server's window so compaction starts "
            "before a request gets this long (or lower MAMBA_CONTEXT__TARGET_TOKENS), then resume",
            prompt_tokens=self.prompt_tokens,
            window=self.window,
        )
        err.kinds = self.kinds
        return err


class ResponseTooLargeError(ModelResponseError):
    """The reply passed the size cap (``ModelBackendSettings.max_response_chars``)."""

    kinds = ("ResponseTooLarge",)


class CircuitOpenError(ModelError):
    """The circuit breaker for this backend is open: calls fail fast until it cools down.

    Attributes:
        retry_in: Seconds until the breaker lets a trial call through.
    """

    def __init__(self, message: str, *, retry_in: float = 0.0) -> None:
        super().__init__(message)
        self.retry_in = retry_in


class BudgetExceededError(ModelError):
    """The next model call would pass the run's token or cost limit; the gate asks a person.

    Attributes:
        limit: Which limit: ``"tokens"`` or ``"cost"``.
    """

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


class ScriptExhaustedError(ModelError):
    """A ScriptedModel was asked for a turn beyond the end of its script."""


class ToolError(AgentError):
    """A problem with a tool definition or its use."""


class ToolRegistrationError(ToolError):
    """A tool definition is invalid; raised when it is registered, never at run time."""


class UnknownToolError(ToolError):
    """No registered tool has this name."""


class ToolPolicyViolation(ToolError):  # noqa: N818 - the name the toolsmaker spec uses
    """A tool tried to do something its policy does not allow."""


class ToolBuildError(ToolError):
    """The toolsmaker was given something it cannot build (not an intent, unknown fields)."""


class ToolTransitionError(ToolError):
    """A generated tool's status change that its lifecycle does not allow.

    The lifecycle is ``draft -> validated -> approval_required -> approved | rejected`` and
    ``approved -> activated``; the message names the allowed next statuses.
    """


class SandboxUnavailableError(ToolError):
    """Generated tools cannot run here: bubblewrap (the OS sandbox) is missing or fails.

    There is no fallback to running them in the engine's process: install the Debian package
    ``bubblewrap``.
    """


class ApprovalRequiredError(ToolError):
    """A direct tool call (``Agent.call_tool``) needs a person's approval under the policy.

    Pass ``approved=True`` once a person has approved it, or run the Agent unattended.
    """


class ToolTimeoutError(ToolError):
    """A tool did not finish in time. In a run this arrives as a result with code TIMEOUT."""


class SchemaViolation(ToolError):  # noqa: N818 - the name the notes-assistant spec uses
    """A call's arguments do not fit the tool's schema. In a run: a result with that code."""


class McpServerError(ToolError):
    """An MCP server could not be used. The message names the server and what to do, never a key.

    Attributes:
        server: The server's configured name.
        issue_code: The gate issue it becomes in a run (``AUTH``, ``MISSING_ENV``,
            ``TOOL_ERROR``): the kind the table of kinds (`ai_agent.issues.KINDS`) gives it.
    """

    # In step with ai_agent.issues, which imports this module (tests/test_issues.py checks).
    issue_code = "TOOL_ERROR"

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class McpAuthError(McpServerError):
    """The MCP server refused the credentials (HTTP 401 or 403): a gate issue of code AUTH."""

    issue_code = "AUTH"


class McpEnvError(McpServerError):
    """An environment variable the server's configuration refers to is not set.

    A ``${VAR}`` or ``key_env`` without a value: a gate issue of code MISSING_ENV.

    Attributes:
        variable: The variable's name.
    """

    issue_code = "MISSING_ENV"

    def __init__(self, message: str, *, server: str, variable: str) -> None:
        super().__init__(message, server=server)
        self.variable = variable


class McpConnectError(McpServerError):
    """The MCP server could not be started, reached or initialized in time."""


class RunError(AgentError):
    """A run or resume request cannot proceed."""


class HookError(RunError):
    """A user's hook raised: named by the hook, with the exception it raised.

    Before the gate it becomes a HOOK_ERROR issue there (the run pauses: fix the hook and
    resume); after the gate (finalize, persist) the run fails where it stood, and ``resume``
    runs the stage again.

    Attributes:
        hook: The hook's name in `ai_agent.context.Hooks`.
    """

    def __init__(self, hook: str, exc: BaseException) -> None:
        detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        super().__init__(
            f"the {hook} hook raised {type(exc).__name__}"
            + (f": {detail}" if detail else "")
            + "; fix the hook, then resume the run"
        )
        self.hook = hook


class OutputValidationError(RunError):
    """A run's stored output does not fit the output type it is read with.

    The run was made with another type (or schema) than the reader's; its data is still in
    the state (``get_state(thread)["output"]``).
    """


class UnknownThreadError(RunError):
    """No run with this thread id exists in the checkpoint database."""


class InvalidThreadIdError(RunError):
    """A thread id that breaks the grammar every thread id follows.

    1 to 128 characters of ``A-Z a-z 0-9 . _ : -``, starting with a letter or a digit: safe in
    file names, URLs, log lines and terminals. Every id the engine makes itself fits it.
    """


class UnknownCheckpointError(RunError):
    """The thread has no checkpoint with this id (``ai-agent history THREAD`` lists them)."""


class NothingPendingError(RunError):
    """The run has finished; there is nothing to resume."""


class PlanRequiredError(RunError):
    """The run is paused at the gate; resuming it needs a plan."""


class InvalidPlanError(RunError):
    """The plan failed validation. The run stays paused and can be resumed with a valid plan."""


class PlanRefusedError(InvalidPlanError):
    """The plan's gate token is not the one the paused gate's report handed out.

    It is missing, belongs to an earlier gate (the run has moved on), or was made up: the plan
    was not written by someone who saw that report. The run stays paused.
    """


class ThreadBusyError(RunError):
    """Another process holds the lease for this thread."""


class LeaseLostError(ThreadBusyError):
    """This process's lease on a thread ran out and another process took the thread over.

    Raised by the first write this process tries after the takeover (every write of a lease
    holder is checked against the lease in its own transaction), and by a lease renewal. The
    run stops at once and writes nothing more; the process that took over carries it on.
    """


class ReplayDivergedError(RunError):
    """A replay asked for a model or tool call the recording does not have.

    The replay stops there; its ``RunResult.divergence`` says where and how the new call differs
    from the recorded one.
    """


class UnknownOutputError(RunError):
    """The run kept no (clipped) tool output under that reference."""


class StoreError(AgentError):
    """The checkpoint database or the run store cannot be used."""


class StorageFullError(StoreError):
    """The database could not grow: its disk (or its size limit) is full.

    The write that failed is rolled back whole, and everything committed before stays, so a
    run stopped by it continues where it was once there is space again.

    Attributes:
        where: The database (a file path, or a URL without its password).
        thread_id: The run that was writing, when known.
    """

    def __init__(self, where: str, *, thread_id: str | None = None) -> None:
        then = f"continue the run with: ai-agent resume {thread_id}" if thread_id else "try again"
        super().__init__(
            f"the database {where} is full (its disk has no space left for this write); "
            f"nothing stored before is lost: free some space, then {then}"
        )
        self.where = where
        self.thread_id = thread_id


class CorruptRunError(StoreError):
    """A stored row or checkpoint of one run cannot be read back (damaged or edited by hand).

    Only that run is affected: the message names it, the row, and what can still be done (an
    earlier checkpoint may be intact: ``ai-agent history THREAD``, then fork from it; or
    ``ai-agent prune``/delete the run).

    Attributes:
        thread_id: The run.
    """

    def __init__(self, message: str, *, thread_id: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class LocalBackendError(AgentError):
    """The built-in local model server could not be prepared or started."""
