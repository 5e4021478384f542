"""Counting tokens, compacting the conversation, and what a run may cost (spec 5.6, 5.7)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from ai_agent.config.section import BUILT_ON_FIRST_USE, Section

__all__ = [
    "BudgetConfig",
    "CompactionConfig",
    "CompactionStrategy",
    "HybridComponent",
    "ModelRate",
    "TokenizerConfig",
]

CompactionStrategy = Literal[
    "sliding_window", "summarize_older", "selective_pruning", "importance_scoring", "hybrid"
]
HybridComponent = Literal[
    "sliding_window", "summarize_older", "selective_pruning", "importance_scoring"
]


class TokenizerConfig(Section):
    """Token counting with tiktoken (spec 5.6.1). Counts are approximate, hence the margin.

    Examples:
        >>> TokenizerConfig().safety_margin
        0.05
    """

    encoding: str = Field(
        default="cl100k_base", min_length=1, description="tiktoken encoding used for counting."
    )
    fallback_encoding: str = Field(
        default="cl100k_base",
        min_length=1,
        description="Encoding used when encoding cannot be loaded.",
    )
    model_mapping: dict[str, str] = Field(
        default_factory=lambda: {"llama": "cl100k_base", "mistral": "cl100k_base"},
        description="Encoding by a part of the model id (the longest match wins).",
    )
    cache_tokenizer: bool = Field(
        default=True, description="Share each loaded encoding in the process."
    )
    count_special_tokens: bool = Field(
        default=True, description="Special tokens in a text count as one token each."
    )
    safety_margin: float = Field(
        default=0.05, ge=0, le=0.5, description="Added to counts in window checks (0.05 is 5 %)."
    )
    # What a server's chat template adds to a request beyond the messages themselves, counted from
    # the first request (the server's usage then calibrates the rest). Defaults measured on the
    # local backend's llama.cpp server (Qwen2.5's ChatML template); open models' templates are
    # alike. OpenAI's hosted models add less: set these to 0 there.
    template_system_tokens: int = Field(
        default=22,
        ge=0,
        description="Tokens a chat template adds when a request has no system message "
        "(its default system prompt).",
    )
    template_tools_tokens: int = Field(
        default=84,
        ge=0,
        description="Tokens a chat template adds once to a request that offers tools "
        "(its tool-calling instructions).",
    )
    template_tool_turn_tokens: int = Field(
        default=44,
        ge=0,
        description="Tokens a chat template adds per assistant turn with tool calls "
        "(how it renders the calls and wraps their results).",
    )


def _default_hybrid_weights() -> dict[HybridComponent, float]:
    return {"sliding_window": 0.2, "summarize_older": 0.5, "selective_pruning": 0.3}


class CompactionConfig(Section):
    """When and how to shrink the conversation (spec 5.7.3).

    ``hybrid_weights`` weighs the other strategies when ``strategy`` is ``"hybrid"``.

    Examples:
        >>> CompactionConfig(strategy="sliding_window").target_tokens
        80000
    """

    strategy: CompactionStrategy = Field(
        default="summarize_older",
        description="sliding_window, summarize_older, selective_pruning, importance_scoring or "
        "hybrid.",
    )
    trigger_threshold_tokens: int = Field(
        default=100_000,
        gt=0,
        description="Compact when a request's calibrated estimate reaches this.",
    )
    target_tokens: int = Field(
        default=80_000,
        gt=0,
        validate_default=True,
        description="Compact down to this (below the trigger).",
    )
    preserve_recent_turns: int = Field(
        default=10, ge=0, description="Most recent blocks kept verbatim."
    )
    preserve_system_prompt: bool = Field(
        default=True, description="Never compact away a system message in the conversation."
    )
    summarization_model: str = Field(
        default="same",
        min_length=1,
        description="Model for summaries and scores: same, or another model id on the same server.",
    )
    hybrid_weights: dict[HybridComponent, Annotated[float, Field(ge=0)]] = Field(
        default_factory=_default_hybrid_weights,
        description="Weights of the other strategies when strategy is hybrid.",
    )

    @field_validator("target_tokens")
    @classmethod
    def _target_below_trigger(cls, value: int, info: ValidationInfo) -> int:
        trigger = info.data.get("trigger_threshold_tokens")
        if trigger is not None and value >= trigger:
            raise ValueError(f"must be below trigger_threshold_tokens ({trigger})")
        return value

    @field_validator("hybrid_weights")
    @classmethod
    def _some_weight(cls, value: dict[HybridComponent, float]) -> dict[HybridComponent, float]:
        if value and not any(value.values()):
            raise ValueError("at least one weight must be above 0")
        return value


class ModelRate(Section):
    """What a model costs, per million tokens (spec 5.6.4).

    ``cached_per_1m`` prices prompt tokens served from the server's cache; None prices them
    like other prompt tokens.

    Examples:
        >>> ModelRate(prompt_per_1m=0.15, completion_per_1m=0.6).cost(1000, 500)
        0.00045
    """

    model_config = BUILT_ON_FIRST_USE

    prompt_per_1m: float = Field(default=0.0, ge=0, description="Cost of a million prompt tokens.")
    completion_per_1m: float = Field(
        default=0.0, ge=0, description="Cost of a million completion tokens."
    )
    cached_per_1m: float | None = Field(
        default=None,
        ge=0,
        description="Cost of a million cached prompt tokens; unset: as other prompt tokens.",
    )

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float:
        """The cost of one request, rounded to 1e-9."""
        cached = min(cached_tokens, prompt_tokens)
        cached_rate = self.prompt_per_1m if self.cached_per_1m is None else self.cached_per_1m
        total = (
            (prompt_tokens - cached) * self.prompt_per_1m
            + cached * cached_rate
            + completion_tokens * self.completion_per_1m
        ) / 1_000_000
        return round(total, 9)


class BudgetConfig(Section):
    """Cost rates per model and the limits of one run (spec 5.6.4).

    ``rates`` maps a model id, or a part of one (the longest match wins; ``"*"`` matches any),
    to its `ModelRate`. Before each model call the run checks that the call cannot pass
    ``max_tokens`` or ``max_cost``; if it could, the gate gets a BUDGET issue instead, and a plan
    that continues grants one more budget of the same size.

    Examples:
        >>> cfg = BudgetConfig(rates={"gpt-4o-mini": {"prompt_per_1m": 0.15}}, max_cost=1.0)
        >>> cfg.rate_for("gpt-4o-mini-2024").prompt_per_1m
        0.15
        >>> cfg.rate_for("llama3.2").prompt_per_1m
        0.0
    """

    rates: dict[str, ModelRate] = Field(
        default_factory=dict,
        description="ModelRate (prompt_per_1m, completion_per_1m, cached_per_1m) by model id, a "
        "part of one, or *.",
    )
    currency: str = Field(
        default="USD", min_length=1, description="Currency of the rates and costs."
    )
    max_tokens: int | None = Field(default=None, gt=0, description="Total tokens per run.")
    max_cost: float | None = Field(default=None, gt=0, description="Cost per run.")

    def rate_for(self, model: str) -> ModelRate:
        """The rate of ``model``: exact id, else the longest contained key, else ``*``, else 0."""
        if model in self.rates:
            return self.rates[model]
        lowered = model.lower()
        matches = [k for k in self.rates if k != "*" and k.lower() in lowered]
        if matches:
            return self.rates[max(matches, key=len)]
        return self.rates.get("*", ModelRate())
