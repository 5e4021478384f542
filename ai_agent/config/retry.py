"""How hard failed tool and model calls are retried, and when the breaker opens (spec 7.2.1)."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator

from ai_agent.config.section import Section

__all__ = ["ErrorRecoveryConfig"]

# Indexed by retry_level - 1 (spec 7.2.1).
_TOOL_RETRIES = (1, 2, 3)
_MODEL_RETRIES = (2, 3, 5)
_BACKOFF_MULTIPLIERS = (2.0, 1.5, 1.2)


class ErrorRecoveryConfig(Section):
    """How hard to retry failed tool and model calls (spec 7.2.1).

    ``retry_level`` picks the retry counts and the backoff multiplier; ``tool_max_retries`` and
    ``model_max_retries`` override the counts.

    Examples:
        >>> cfg = ErrorRecoveryConfig(retry_level=3, tool_max_retries=0)
        >>> cfg.tool_retries, cfg.model_retries, cfg.backoff_multiplier
        (0, 5, 1.2)
    """

    retry_level: int = Field(default=2, ge=1, le=3, description="1 conservative .. 3 aggressive.")
    tool_max_retries: int | None = Field(
        default=None,
        ge=0,
        description="Retries of a failed tool call; unset: 1, 2 or 3 by retry_level.",
    )
    model_max_retries: int | None = Field(
        default=None,
        ge=0,
        description="Retries of a failed model call; unset: 2, 3 or 5 by retry_level.",
    )
    # The spec's environment table names MAMBA_RETRY__MAX_ATTEMPTS: total attempts of a model
    # call, the first one included (so 3 means up to 2 retries). model_max_retries wins if both.
    max_attempts: int | None = Field(
        default=None,
        ge=1,
        description="Attempts of a model call, the first included (model_max_retries wins).",
    )
    initial_backoff_seconds: float = Field(
        default=1.0,
        ge=0,
        description="Wait before the first retry; later waits grow by the level's multiplier.",
    )
    # validate_default: the cross-check must also run when only initial_backoff_seconds is set.
    max_backoff_seconds: float = Field(
        default=60.0,
        ge=0,
        validate_default=True,
        description="Longest wait between retries; a longer Retry-After ends the retries.",
    )
    retryable_tool_errors: list[str] = Field(
        default_factory=lambda: ["TimeoutError", "ConnectionError", "TemporaryFailure"],
        description="Error names and codes that make a tool call retryable.",
    )
    retryable_model_errors: list[str] = Field(
        default_factory=lambda: ["RateLimitError", "ServiceUnavailable", "Timeout"],
        description="Error names and kinds that make a model call retryable.",
    )
    circuit_breaker_threshold: int = Field(
        default=5, ge=1, description="Failed model calls in a row that open the circuit breaker."
    )
    circuit_breaker_timeout: float = Field(
        default=30.0, gt=0, description="Seconds the breaker stays open before one trial call."
    )

    @field_validator("max_backoff_seconds")
    @classmethod
    def _max_not_below_initial(cls, value: float, info: ValidationInfo) -> float:
        # Declared after initial_backoff_seconds, so that value is in info.data when it was valid.
        initial = info.data.get("initial_backoff_seconds")
        if initial is not None and value < initial:
            raise ValueError(f"must be >= initial_backoff_seconds ({initial})")
        return value

    @property
    def tool_retries(self) -> int:
        """Retries for a failed tool call: the override, else 1/2/3 by level."""
        if self.tool_max_retries is not None:
            return self.tool_max_retries
        return _TOOL_RETRIES[self.retry_level - 1]

    @property
    def model_retries(self) -> int:
        """Retries for a failed model call: the overrides, else 2/3/5 by level."""
        if self.model_max_retries is not None:
            return self.model_max_retries
        if self.max_attempts is not None:
            return self.max_attempts - 1
        return _MODEL_RETRIES[self.retry_level - 1]

    @property
    def backoff_multiplier(self) -> float:
        """Growth factor between backoff waits: 2.0/1.5/1.2 by level."""
        return _BACKOFF_MULTIPLIERS[self.retry_level - 1]
