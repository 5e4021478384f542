"""One exception tree for the whole engine.

Every error the engine raises on purpose derives from :class:`AgentError`, and every message says
what happened and what to do next. Nothing here logs in its constructor, and no message ever holds a
secret value (API keys, header values): callers pass names, never values.

::

    AgentError
    ├── ConfigError                 settings or a config file failed validation
    ├── ModelError                  the model backend could not give a usable reply
    │   ├── ModelUnavailableError   the server could not be reached (names the URL)
    │   ├── ModelAuthError          401/403 from the server
    │   ├── ModelRateLimitError     429 or a quota message
    │   ├── ModelResponseError      empty, cut, malformed or oversized reply
    │   ├── CircuitOpenError        the breaker for this backend is open; calls fail fast
    │   └── ScriptExhaustedError    a ScriptedModel was asked for a turn it does not have
    ├── ToolError
    │   ├── ToolRegistrationError   a tool definition is invalid (caught at registration)
    │   ├── UnknownToolError        a name that no registered tool has
    │   └── ToolPolicyViolation     a tool tried something its policy forbids
    ├── RunError                    a run or resume request cannot proceed
    │   ├── UnknownThreadError      no run with that thread id exists
    │   ├── UnknownCheckpointError  the thread has no checkpoint with that id
    │   ├── NothingPendingError     the run has nothing left to resume
    │   ├── PlanRequiredError       the run is paused at the gate and needs a plan
    │   ├── InvalidPlanError        the plan failed validation; the interrupt stays pending
    │   ├── ThreadBusyError         another process holds this thread's lease
    │   └── ReplayDivergedError     a replay asked for a call the recording does not have
    ├── StoreError                  the checkpoint database or run store cannot be used
    └── LocalBackendError           the built-in local model server could not be prepared or started
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "CircuitOpenError",
    "ConfigError",
    "InvalidPlanError",
    "LocalBackendError",
    "ModelAuthError",
    "ModelError",
    "ModelRateLimitError",
    "ModelResponseError",
    "ModelUnavailableError",
    "NothingPendingError",
    "PlanRequiredError",
    "ReplayDivergedError",
    "RunError",
    "ScriptExhaustedError",
    "StoreError",
    "ThreadBusyError",
    "ToolError",
    "ToolPolicyViolation",
    "ToolRegistrationError",
    "UnknownCheckpointError",
    "UnknownThreadError",
    "UnknownToolError",
]


class AgentError(Exception):
    """Base of every error the engine raises on purpose."""


class ConfigError(AgentError):
    """Settings or a configuration file failed validation; the message names the field."""


class ModelError(AgentError):
    """The model backend could not give a usable reply."""


class ModelUnavailableError(ModelError):
    """The model server could not be reached."""


class ModelAuthError(ModelError):
    """The model server refused the credentials (401/403)."""


class ModelRateLimitError(ModelError):
    """The model server asked us to slow down (429 or a quota message)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ModelResponseError(ModelError):
    """The reply was empty, cut off, malformed or larger than the configured cap."""


class CircuitOpenError(ModelError):
    """The circuit breaker for this backend is open: calls fail fast until it cools down."""


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


class RunError(AgentError):
    """A run or resume request cannot proceed."""


class UnknownThreadError(RunError):
    """No run with this thread id exists in the checkpoint database."""


class UnknownCheckpointError(RunError):
    """The thread has no checkpoint with this id (``ai-agent history THREAD`` lists them)."""


class NothingPendingError(RunError):
    """The run has finished; there is nothing to resume."""


class PlanRequiredError(RunError):
    """The run is paused at the gate; resuming it needs a plan."""


class InvalidPlanError(RunError):
    """The plan failed validation. The run stays paused and can be resumed with a valid plan."""


class ThreadBusyError(RunError):
    """Another process holds the lease for this thread."""


class ReplayDivergedError(RunError):
    """A replay asked for a model or tool call the recording does not have.

    The replay stops there; its ``RunResult.divergence`` says where and how the new call differs
    from the recorded one.
    """


class StoreError(AgentError):
    """The checkpoint database or the run store cannot be used."""


class LocalBackendError(AgentError):
    """The built-in local model server could not be prepared or started."""
