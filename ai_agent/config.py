"""Settings for the engine: the only module that reads environment variables and config files.

`AgentSettings` gathers every setting from these sources, highest priority first:

1. arguments to the constructor (or to `AgentSettings.load` / `load_settings`);
2. environment variables, prefix ``MAMBA_``, nested fields joined by ``__``
   (``MAMBA_MODEL_BACKEND__TIMEOUT=10``);
3. ``.env`` in the working directory;
4. ``~/agents.env`` (user-wide defaults; the home directory is looked up at load time);
5. ``config.toml`` and ``config.yaml`` in the working directory. If both exist, both are read and
   ``config.toml`` wins for every key it sets, the same per-key layering every other source uses;
6. the defaults written here.

``AgentSettings(_env_file=...)`` replaces the two env files (``.env`` and ``~/agents.env``) with the
file or files given, exactly as pydantic-settings defines it (in a tuple the later file wins;
``_env_file=None`` reads none). ``AgentSettings.load("prod.toml")`` reads that one config file in
place of ``config.toml`` / ``config.yaml``.

Every section rejects unknown keys, so a typo in a config file (``timout = 5``) is an error rather
than a silently ignored line. Unrelated top-level ``MAMBA_*`` variables are ignored.

Secrets are `pydantic.SecretStr`. Their value never appears in ``repr``, ``str``,
``model_dump_json`` or any error text: pydantic's own errors hide inputs, and `ConfigError`
messages show the given value only for non-secret fields. `ModelBackendSettings.get_headers`
is where the key is read for use.

Examples:
    >>> settings = AgentSettings(_env_file=None, max_iterations=5)
    >>> settings.max_iterations, settings.model_backend.model
    (5, 'llama3.2')
"""

from __future__ import annotations

import difflib
import importlib
import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal, get_args, get_origin

import annotated_types
from dotenv import dotenv_values
from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    SecretStr,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from ai_agent.datafiles import MAX_DEPTH, parse_nested, read_text
from ai_agent.errors import ConfigError

__all__ = [
    "AgentSettings",
    "BashToolConfig",
    "BudgetConfig",
    "CompactionConfig",
    "ErrorRecoveryConfig",
    "FileToolsConfig",
    "LoggingConfig",
    "McpAuthConfig",
    "McpServerConfig",
    "ModelBackendSettings",
    "ModelRate",
    "NotesConfig",
    "ObservabilityConfig",
    "StreamingConfig",
    "TokenizerConfig",
    "ToolConfig",
    "ToolsmakerConfig",
    "WebSearchConfig",
    "load_mcp_config",
    "load_settings",
    "split_tool_names",
]

ENV_PREFIX = "MAMBA_"
ENV_NESTED_DELIMITER = "__"
USER_ENV_FILE_NAME = "agents.env"
DEFAULT_CONFIG_FILES = ("config.toml", "config.yaml")
CONFIG_FILE_SUFFIXES = (".toml", ".yaml", ".yml", ".json")
# The most cycles a run may be given (the setting, Agent(max_iterations=...), --max-iterations):
# each cycle is a model call, so a larger number is a typo, not a plan.
MAX_ITERATIONS = 1000
# A config file larger than this is refused before it is read: settings, MCP servers and tool
# options fill a few kilobytes; megabytes mean the wrong file.
MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024

# The marker put in model_config["env_file"]. AgentSettings recognises it by identity, so it can
# tell "the caller gave no _env_file" (read .env and ~/agents.env) from "the caller gave one" (read
# exactly what was given), and resolve the home directory when settings load, not at import.
_PROJECT_ENV_FILE = Path(".env")

# Set only while AgentSettings.load() constructs settings from an explicit config file: the sources
# hook is a classmethod pydantic-settings calls with fixed arguments, so the path travels here.
_CONFIG_FILE_OVERRIDE: ContextVar[Path | None] = ContextVar("ai_agent_config_file", default=None)

_GATE_PROFILE_THRESHOLDS: Mapping[str, float] = MappingProxyType(
    {"interactive": 0.60, "default": 0.70, "batch": 0.90}
)
# Indexed by retry_level - 1 (spec 7.2.1).
_TOOL_RETRIES = (1, 2, 3)
_MODEL_RETRIES = (2, 3, 5)
_BACKOFF_MULTIPLIERS = (2.0, 1.5, 1.2)

_HTTP_URL: TypeAdapter[HttpUrl] = TypeAdapter(HttpUrl)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_IMPORT_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?")
# Whitespace or control characters in an API key would break (or inject into) the HTTP header.
_BAD_SECRET_CHARS = re.compile(r"[\s\x00-\x1f\x7f]")

CompactionStrategy = Literal[
    "sliding_window", "summarize_older", "selective_pruning", "importance_scoring", "hybrid"
]
HybridComponent = Literal[
    "sliding_window", "summarize_older", "selective_pruning", "importance_scoring"
]


class _Section(BaseModel):
    """Base of every settings section.

    Sections are plain models, not ``BaseSettings``: a nested ``BaseSettings`` would read the
    environment on its own, without the ``MAMBA_`` prefix. Unknown keys are errors so that typos in
    config files surface, and inputs are hidden from pydantic's error text so a secret given in the
    wrong place is never echoed.
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


def _check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return pattern


def _check_import_path(path: str) -> str:
    if not _IMPORT_PATH.fullmatch(path):
        raise ValueError("must be an import path such as 'package.module:Collector'")
    return path


class ModelBackendSettings(_Section):
    """Connection to an OpenAI-compatible model server (spec 5.3, 6.4.3).

    The generation parameters left at ``None`` are not sent, so the server's defaults apply.

    Examples:
        >>> backend = ModelBackendSettings(api_key="sk-example", temperature=0.2)
        >>> backend.api_key
        SecretStr('**********')
        >>> backend.generation_params()
        {'temperature': 0.2}
    """

    base_url: str = Field(
        default="http://localhost:11434/v1",
        description="Base URL of the OpenAI-compatible API; trailing slashes are removed.",
    )
    api_key: SecretStr | None = Field(
        default=None, description="API key for authenticated endpoints; empty means none."
    )
    model: str = Field(default="llama3.2", min_length=1, description="Model identifier.")
    timeout: float = Field(default=30.0, gt=0, description="Request timeout in seconds.")
    total_timeout: float = Field(
        default=600.0,
        gt=0,
        description="Longest one attempt of a model call may take, a streamed reply included; "
        "past it the attempt is a timeout, retried like any other.",
    )
    idle_timeout: float | None = Field(
        default=None,
        gt=0,
        description="Longest wait for the next part of a streamed reply; past it the attempt "
        "is a timeout, retried like any other. Unset: the request timeout.",
    )
    max_retries: int = Field(default=3, ge=0, description="Retry attempts for failed requests.")
    temperature: float | None = Field(
        default=None, ge=0, le=2, description="Sampling temperature; unset: the server's default."
    )
    max_tokens: int | None = Field(
        default=None, gt=0, description="Most tokens in one reply; unset: the server's default."
    )
    top_p: float | None = Field(
        default=None, ge=0, le=1, description="Nucleus sampling; unset: the server's default."
    )
    seed: int | None = Field(
        default=None, description="Sampling seed, for servers that honour one."
    )
    context_window: int | None = Field(
        default=None, gt=0, description="The model's context window in tokens, when known."
    )
    max_response_chars: int = Field(
        default=1_000_000,
        gt=0,
        description="Size cap of one reply (text plus tool-call arguments); larger is an error.",
    )

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        try:
            _HTTP_URL.validate_python(value)
        except ValidationError:
            raise ValueError(
                "must be an http:// or https:// URL, such as http://localhost:11434/v1"
            ) from None
        return value.rstrip("/")

    @field_validator("api_key", mode="before")
    @classmethod
    def _check_api_key(cls, value: object) -> object:
        # Runs on the raw input, so the check never needs to unwrap a SecretStr built from it.
        # The error text names the rule, never the value.
        if isinstance(value, str):
            value = value.strip()
            if not value:
                return None
            if _BAD_SECRET_CHARS.search(value):
                raise ValueError("must not contain spaces, line breaks or control characters")
        return value

    def get_headers(self) -> dict[str, str]:
        """HTTP headers for a request to the backend.

        This is the one place the API key is unwrapped; pass the result straight to the HTTP
        client and never log it.

        Returns:
            ``{"Authorization": "Bearer <key>"}`` when a key is set, else an empty dict.

        Examples:
            >>> ModelBackendSettings().get_headers()
            {}
        """
        if self.api_key is None:
            return {}
        return {"Authorization": f"Bearer {self.api_key.get_secret_value()}"}

    def generation_params(self) -> dict[str, float | int]:
        """The generation parameters that are set, ready for a chat-completions request.

        Examples:
            >>> ModelBackendSettings(max_tokens=256, seed=7).generation_params()
            {'max_tokens': 256, 'seed': 7}
        """
        params: dict[str, float | int | None] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_p": self.top_p,
            "seed": self.seed,
        }
        return {name: value for name, value in params.items() if value is not None}


class LoggingConfig(_Section):
    """How the engine logs (spec 6.2.2). Every pattern must compile, or loading fails.

    Examples:
        >>> LoggingConfig(level="debug").level
        'DEBUG'
    """

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="INFO",
        description="The ai_agent logger's level, when configure_logging or the CLI installs a "
        "handler.",
    )
    structured: bool = Field(default=False, description="JSON lines instead of text.")
    include_request_body: bool = Field(
        default=False, description="Log model request bodies at DEBUG."
    )
    include_response_body: bool = Field(
        default=False, description="Log model response bodies at DEBUG."
    )
    body_size_limit: int = Field(default=1024, ge=0, description="Max bytes of a logged body.")
    include_correlation_id: bool = Field(
        default=True,
        description="Thread, run, stage, iteration, request and tool-call ids on every line.",
    )
    redact_authorization: bool = Field(
        default=True, description="Mask Authorization headers and bearer tokens."
    )
    redact_api_keys: bool = Field(
        default=True, description="Mask API keys in query strings (api_key=, key=, token=)."
    )
    sensitive_patterns: list[Annotated[str, AfterValidator(_check_regex)]] = Field(
        default_factory=lambda: [r"password=\S+", r"secret=\S+"],
        description="Regular expressions whose matches are masked in every record.",
    )
    slow_response_seconds: float = Field(
        default=10.0, gt=0, description="Model calls slower than this are logged at WARNING."
    )

    @field_validator("level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @property
    def compiled_patterns(self) -> list[re.Pattern[str]]:
        """The sensitive patterns, compiled.

        Examples:
            >>> LoggingConfig().compiled_patterns[0].sub("***", "password=hunter2")
            '***'
        """
        return [re.compile(pattern) for pattern in self.sensitive_patterns]


class ObservabilityConfig(_Section):
    """Request ids, trace propagation and metrics (spec 6.3.1). Nothing is exported by default.

    ``custom_collectors`` holds import paths (``package.module:Name``); this module only checks
    their form and never imports them.

    Examples:
        >>> ObservabilityConfig(request_id_format="ulid").request_id_format
        'ulid'
    """

    request_id_format: Literal["uuid4", "ulid"] = Field(
        default="uuid4", description="uuid4, or ulid (26 characters that sort by time)."
    )
    propagate_trace_context: bool = Field(
        default=True, description="Model requests carry X-Request-ID, traceparent and tracestate."
    )
    enable_otel_instrumentation: bool = Field(
        default=False,
        description="OpenTelemetry spans for runs, stages, model and tool calls (the otel extra).",
    )
    metrics_enabled: bool = Field(
        default=True, description="Time runs, stages, model and tool calls (agent.metrics)."
    )
    custom_collectors: list[Annotated[str, AfterValidator(_check_import_path)]] = Field(
        default_factory=list,
        description="Import paths of more metric collectors (package.module:Name).",
    )


class ErrorRecoveryConfig(_Section):
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


class TokenizerConfig(_Section):
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


def _default_hybrid_weights() -> dict[HybridComponent, float]:
    return {"sliding_window": 0.2, "summarize_older": 0.5, "selective_pruning": 0.3}


class CompactionConfig(_Section):
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


class ModelRate(_Section):
    """What a model costs, per million tokens (spec 5.6.4).

    ``cached_per_1m`` prices prompt tokens served from the server's cache; None prices them
    like other prompt tokens.

    Examples:
        >>> ModelRate(prompt_per_1m=0.15, completion_per_1m=0.6).cost(1000, 500)
        0.00045
    """

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


class BudgetConfig(_Section):
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


class StreamingConfig(_Section):
    """What is streamed (spec 5.3.1).

    Examples:
        >>> StreamingConfig(chunk_size=4096).chunk_size
        4096
    """

    stream_model_responses: bool = Field(
        default=True, description="Ask the server for streamed replies while someone watches."
    )
    stream_tool_results: bool = Field(
        default=True, description="Send tool output events as it arrives."
    )
    chunk_size: int = Field(default=1024, gt=0, description="Bytes per chunk of tool output.")


ToolCategoryName = Literal["read_only", "note_taking", "modification", "external"]
ApprovalPolicyName = Literal["auto", "confirm", "approve", "deny"]


def _extensions(values: list[str]) -> list[str]:
    out = []
    for value in values:
        ext = value.strip().lower()
        if not ext or ext in (".", "*"):
            raise ValueError("extensions look like '.py' or 'py'")
        out.append(ext if ext.startswith(".") else "." + ext)
    return out


class FileToolsConfig(_Section):
    """The file, glob and grep tools (spec 5.4.1-5.4.3).

    ``sandbox`` keeps every path inside ``base_dir`` (the Agent's working directory when unset),
    after symlinks are resolved, at the moment of use. Extensions are matched case-insensitively;
    an empty ``allowed_extensions`` allows any extension not denied.

    Examples:
        >>> FileToolsConfig(denied_extensions=["PEM", ".key"]).denied_extensions
        ['.pem', '.key']
    """

    sandbox: bool = Field(
        default=True,
        description="Keep every path inside base_dir, after symlinks, at the moment of use.",
    )
    base_dir: Path | None = Field(
        default=None, description="Root of the file sandbox; unset: the Agent's working directory."
    )
    max_read_bytes: int = Field(
        default=1_000_000, gt=0, description="Largest file read_file reads and grep searches."
    )
    allowed_extensions: list[str] = Field(
        default_factory=list,
        description="Only these extensions may be read or written; empty: any not denied.",
    )
    denied_extensions: list[str] = Field(
        default_factory=list, description="Extensions never read or written (.pem, .key...)."
    )
    max_results: int = Field(default=200, gt=0, description="Result limit of glob and grep.")
    absolute_paths: bool = Field(default=False, description="glob/grep report absolute paths.")
    respect_gitignore: bool = Field(
        default=True, description="glob and grep skip what .gitignore files ignore."
    )
    allow_hard_links: bool = Field(
        default=False,
        description="Read files that have more than one hard link (another name, possibly "
        "outside base_dir); off: such files are refused.",
    )

    @field_validator("allowed_extensions", "denied_extensions")
    @classmethod
    def _check_extensions(cls, value: list[str]) -> list[str]:
        return _extensions(value)


class BashToolConfig(_Section):
    """The ``run_bash`` tool (spec 5.4.4).

    ``allow``/``deny`` name programs (``git``, ``rm``); they are checked on every command of the
    parsed command line. ``sandbox="bwrap"`` runs commands under bubblewrap: only the file tools'
    base directory is writable, there is no network, the rest of the system is read-only, and
    the engine's own state is hidden. ``sandbox="none"`` hides nothing from a command. In both
    modes a command gets the process, memory and CPU limits below, and dies with the engine.

    Examples:
        >>> BashToolConfig(allow=["ls", "git"]).allow
        ['ls', 'git']
    """

    allow: list[str] = Field(default_factory=list, description="Empty: any program.")
    deny: list[str] = Field(
        default_factory=list,
        description="Programs never run, checked on every command of the parsed line.",
    )
    confirm_destructive: bool = Field(
        default=True,
        description="Destructive commands (rm, dd, git reset --hard...) wait for a person.",
    )
    sandbox: Literal["none", "bwrap"] = Field(
        default="none",
        description="bwrap: run commands under bubblewrap (system read-only, base_dir writable, no "
        "network); none: no OS sandbox.",
    )
    max_timeout: float = Field(default=600.0, gt=0, description="Cap of a call's timeout (s).")
    max_output_bytes: int = Field(default=100_000, gt=0, description="Per stream.")
    pass_env: list[str] = Field(
        default_factory=list,
        description="Secret-looking environment variables to pass to commands anyway.",
    )
    readonly_paths: list[Path] = Field(
        default_factory=list, description="Extra paths visible (read-only) inside the sandbox."
    )
    max_processes: int = Field(
        default=256,
        gt=0,
        description="Processes and threads a command may have at once: a pids cgroup of the "
        "call's own, which binds root too, where the engine may make one; otherwise "
        "RLIMIT_NPROC, which root escapes (the tool then says the limit is not enforced).",
    )
    memory_mb: int = Field(
        default=4096,
        gt=0,
        description="Memory of each process of a command, in MiB (RLIMIT_DATA: heap and other "
        "private writable memory).",
    )
    cpu_seconds: int | None = Field(
        default=None,
        gt=0,
        description="CPU seconds of each process of a command (RLIMIT_CPU); unset: the call's "
        "timeout.",
    )


class WebSearchConfig(_Section):
    """The ``web_search`` tool (spec 5.4.5).

    ``url`` is the SearXNG instance; the hosted backends read their key from the environment
    variable ``api_key_env`` (default ``TAVILY_API_KEY``, ``BRAVE_API_KEY`` or
    ``SERPAPI_API_KEY``), never from a file.

    Examples:
        >>> WebSearchConfig(backend="brave").backend
        'brave'
    """

    backend: Literal["searxng", "tavily", "brave", "serpapi"] = Field(
        default="searxng", description="searxng, tavily, brave or serpapi."
    )
    url: str = Field(
        default="http://localhost:8888",
        description="The SearXNG instance (it must allow JSON output).",
    )
    api_key_env: str | None = Field(
        default=None,
        description="Environment variable holding a hosted backend's key; unset: TAVILY_API_KEY, "
        "BRAVE_API_KEY or SERPAPI_API_KEY.",
    )
    timeout: float = Field(default=15.0, gt=0, description="Seconds one search request may take.")
    rate_limit_per_minute: int = Field(default=30, ge=0, description="0: no limit.")
    max_wait_seconds: float = Field(
        default=10.0, ge=0, description="Longest wait for a rate-limit slot before the call fails."
    )
    cache_ttl_seconds: float = Field(default=0.0, ge=0, description="0: no cache.")
    max_results: int = Field(default=20, gt=0, description="Most results one search returns.")

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        try:
            _HTTP_URL.validate_python(value)
        except ValidationError:
            raise ValueError("must be an http:// or https:// URL") from None
        return value.rstrip("/")


class NotesConfig(_Section):
    """The notes tools ``find_similar`` and ``read_note`` (notes-assistant flow).

    ``embedding`` is an import path (``package.module:function``) of ``fn(texts) -> vectors``;
    without one, a lexical (BM25) ranker is used.

    Examples:
        >>> NotesConfig().mmr_lambda, NotesConfig().min_chunk_chars
        (0.5, 160)
    """

    folder: Path | None = Field(
        default=None, description="Folder of Markdown notes; unset: the file sandbox's base."
    )
    k: int = Field(
        default=20,
        gt=0,
        le=100,
        description="Results find_similar returns when the call does not say.",
    )
    mmr_lambda: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Relevance against diversity when picking results (maximal marginal "
        "relevance).",
    )
    min_chunk_chars: int = Field(
        default=160, ge=0, description="Chunks shorter than this are ranked lower."
    )
    chunk_chars: int = Field(
        default=1200, ge=200, description="Target size of a chunk of a note's section."
    )
    read_max_chars: int = Field(
        default=4000, gt=0, description="Most characters read_note returns in one call."
    )
    embedding: Annotated[str, AfterValidator(_check_import_path)] | None = Field(
        default=None, description="Import path of fn(texts) -> vectors; unset: BM25 ranking."
    )


class ToolsmakerConfig(_Section):
    """Generated tools (the toolsmaker): where they are kept and how each call is confined.

    Every call of a generated tool runs in its own bubblewrap sandbox; these are its limits.
    ``dir`` and ``audit_path`` are relative to the working directory, like ``checkpoint_path``;
    ``Agent(toolsmaker_dir=..., toolsmaker_audit_path=...)`` overrides them.

    Example:
        >>> ToolsmakerConfig().dir.as_posix(), ToolsmakerConfig().memory_mb
        ('.agents/toolsmaker', 512)
    """

    dir: Path = Field(
        default=Path(".agents/toolsmaker"),
        description="Where generated tools, their records, reviews and audit log are kept.",
    )
    audit_path: Path | None = Field(default=None, description="Default: dir/audit.jsonl.")
    timeout: float = Field(default=30.0, gt=0, description="Wall seconds per call.")
    cpu_seconds: int | None = Field(default=None, gt=0, description="Default: the timeout.")
    memory_mb: int = Field(default=512, ge=64, description="Address space of the tool process.")
    max_processes: int = Field(
        default=64,
        gt=0,
        description="Processes and threads at once (besides seccomp's ban on new ones): a pids "
        "cgroup of the call's own where the engine may make one, otherwise RLIMIT_NPROC, "
        "which root escapes.",
    )
    file_size_mb: int = Field(default=16, ge=0, description="Largest file it may write.")
    tmp_mb: int = Field(default=16, ge=0, description="Size of its private /tmp (0: none).")
    max_output_bytes: int = Field(default=1_000_000, gt=0, description="Bytes read per call.")
    max_response_bytes: int = Field(default=1_000_000, gt=0, description="Per HTTP response.")
    max_redirects: int = Field(
        default=5, ge=0, description="Redirects the HTTP broker follows (each host checked)."
    )


class ToolConfig(_Section):
    """How tools run: limits for every tool, and the built-in tools' own settings.

    Examples:
        >>> ToolConfig().timeout, ToolConfig().max_output_chars
        (30.0, 12000)
    """

    timeout: float = Field(default=30.0, gt=0, description="Seconds a tool call may take.")
    max_output_chars: int = Field(
        default=12_000,
        ge=200,
        description="Longer tool outputs are clipped (head and tail kept) before the model sees "
        "them; the full text stays in the run store.",
    )
    max_result_chars: int = Field(
        default=10_000_000,
        ge=1000,
        description="The largest result a tool may return (characters of its JSON form): a "
        "larger one is not kept; the call ends as an error result (OUTPUT_TOO_LARGE) the model "
        "sees.",
    )
    first_use_gate: bool = Field(
        default=True, description="The first call of each external tool in a run waits."
    )
    files: FileToolsConfig = Field(default_factory=FileToolsConfig)
    bash: BashToolConfig = Field(default_factory=BashToolConfig)
    web_search: WebSearchConfig = Field(default_factory=WebSearchConfig)
    notes: NotesConfig = Field(default_factory=NotesConfig)
    toolsmaker: ToolsmakerConfig = Field(default_factory=ToolsmakerConfig)


# --- MCP servers (spec 5.5.2) --------------------------------------------------------------------

McpTransportName = Literal["stdio", "sse", "streamable_http"]
_MCP_TRANSPORT_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "http": "streamable_http",
        "streamable-http": "streamable_http",
        "streamableHttp": "streamable_http",
    }
)
# A server's name is the namespace of its tools (``filesystem.read_file``): one name part.
_MCP_SERVER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,39}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# ``${VAR}`` or ``${VAR:-default}``; anything else after a ``${`` is a mistake worth reporting.
MCP_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Environment variable names that say they hold a secret (an MCP server's ``env`` entry so named
# is a secret, as is a variable so named wherever a server's configuration refers to it).
SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")


def _check_references(value: str) -> str:
    """Every ``${`` must start a well-formed reference (checked here; expanded at connect time)."""
    rest = MCP_ENV_REFERENCE.sub("", value)
    if "${" in rest:
        raise ValueError(
            "has a malformed ${...} reference: write ${NAME} or ${NAME:-default}, where NAME "
            "is letters, digits and underscores"
        )
    return value


def _check_reference_map(values: dict[str, str]) -> dict[str, str]:
    for value in values.values():
        _check_references(value)
    return values


def _check_reference_list(values: list[str]) -> list[str]:
    for value in values:
        _check_references(value)
    return values


class McpAuthConfig(_Section):
    """API-key authentication of an MCP server reached over HTTP (spec 5.5.2).

    The key comes from ``key_env`` (the name of an environment variable) or from ``key`` (the key
    itself, or ``${VAR}`` references); either way it is read from the environment when the server
    is connected, never earlier, and never written anywhere. It is sent as
    ``Authorization: Bearer <key>``, or bare in the header named by ``header`` (``X-API-Key``).

    Examples:
        >>> McpAuthConfig(key_env="MCP_API_KEY").header
        'Authorization'
        >>> McpAuthConfig(key="${MCP_API_KEY}", header="X-API-Key").key
        SecretStr('**********')
    """

    type: Literal["api_key"] = Field(default="api_key", description="Authentication type.")
    key_env: str | None = Field(
        default=None, description="Environment variable that holds the key."
    )
    key: SecretStr | None = Field(
        default=None, description="The key, or ${VAR} references to environment variables."
    )
    header: str = Field(
        default="Authorization",
        description="Header that carries the key: Authorization gets 'Bearer <key>', any other "
        "header the bare key.",
    )
    scheme: str | None = Field(
        default=None,
        description="What goes before the key in the header (default: 'Bearer' in Authorization, "
        "nothing elsewhere).",
    )

    @field_validator("key_env")
    @classmethod
    def _check_key_env(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "must be the name of an environment variable (letters, digits, underscores), "
                "not the key itself; put a key or ${VAR} in 'key'"
            )
        return value

    @field_validator("key", mode="before")
    @classmethod
    def _check_key(cls, value: object) -> object:
        # On the raw input, so the check never unwraps a SecretStr; errors name the rule only.
        if isinstance(value, str):
            value = value.strip()
            if not value:
                raise ValueError("is empty; give the key or a ${VAR} reference")
            if _BAD_SECRET_CHARS.search(value):
                raise ValueError("must not contain spaces, line breaks or control characters")
            _check_references(value)
        return value

    @field_validator("header")
    @classmethod
    def _check_header(cls, value: str) -> str:
        if not _HEADER_NAME.fullmatch(value):
            raise ValueError("must be an HTTP header name such as Authorization or X-API-Key")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> McpAuthConfig:
        if self.key_env is not None and self.key is not None:
            raise ValueError("give key_env or key, not both")
        if self.key_env is None and self.key is None:
            raise ValueError(
                "needs key_env (the environment variable holding the key) or key "
                '(for instance "${MY_API_KEY}")'
            )
        return self


class McpServerConfig(_Section):
    """One MCP server whose tools the agent may use (spec 5.5.2).

    A stdio server is a program the agent starts (``command``, ``args``, ``env``, ``cwd``); an
    HTTP server is reached at ``url`` with ``transport`` ``streamable_http`` (the default for a
    URL) or ``sse``, optionally with ``headers`` and ``auth``. ``${VAR}`` and ``${VAR:-default}``
    in ``args``, ``env``, ``cwd``, ``url``, ``headers`` and ``auth.key`` are expanded from the
    environment when the server is connected; a variable that is not set is an error naming it.

    The server's tools join the registry as ``<name>.<tool>``. Their category comes from the
    tool's MCP annotations unless ``categories`` says otherwise (``{"write_*": "modification"}``,
    or ``{"*": "external"}`` to distrust the server's hints).

    Examples:
        >>> fs = McpServerConfig(name="fs", command="npx",
        ...                      args=["-y", "@modelcontextprotocol/server-filesystem", "/data"])
        >>> fs.transport, fs.timeout
        ('stdio', 30.0)
        >>> McpServerConfig(name="api", url="http://localhost:8080/mcp").transport
        'streamable_http'
    """

    name: str = Field(description="The server's name: the namespace of its tools.")
    transport: McpTransportName | None = Field(
        default=None,
        validation_alias=AliasChoices("transport", "type"),
        description="stdio, sse or streamable_http (default: stdio with a command, "
        "streamable_http with a url).",
    )
    command: str | None = Field(default=None, description="Program that runs a stdio server.")
    args: Annotated[list[str], AfterValidator(_check_reference_list)] = Field(
        default_factory=list, description="Its arguments."
    )
    # env and headers may hold keys written out: kept out of repr (errors never show them).
    env: Annotated[dict[str, str], AfterValidator(_check_reference_map)] = Field(
        default_factory=dict,
        repr=False,
        description="Environment of a stdio server, besides HOME, LOGNAME, PATH, SHELL, TERM "
        "and USER (nothing else of the agent's environment is passed on).",
    )
    cwd: Annotated[str, AfterValidator(_check_references)] | None = Field(
        default=None, description="Working directory of a stdio server."
    )
    url: Annotated[str, AfterValidator(_check_references)] | None = Field(
        default=None, description="Endpoint of an HTTP server (/mcp, or /sse for sse)."
    )
    headers: Annotated[dict[str, str], AfterValidator(_check_reference_map)] = Field(
        default_factory=dict,
        repr=False,
        description="Extra HTTP headers (values are treated as secrets).",
    )
    auth: McpAuthConfig | None = None
    timeout: float = Field(default=30.0, gt=0, description="Seconds each tool call may take.")
    startup_timeout: float = Field(
        default=30.0, gt=0, description="Seconds to start, initialize and list tools."
    )
    max_restarts: int = Field(
        default=1, ge=0, description="Restarts per run after the server crashes or hangs."
    )
    enabled: bool = Field(default=True, description="False: configured but never started.")
    required: bool = Field(
        default=True,
        description="A run whose required server fails to start pauses at the gate; an "
        "optional one only loses its tools.",
    )
    active: bool = Field(
        default=True, description="Its tools are active in new runs (else catalog only)."
    )
    tools: list[str] = Field(
        default_factory=list, description="Only these of its tools (names or globs)."
    )
    exclude_tools: list[str] = Field(
        default_factory=list, description="Leave out these tools (names or globs)."
    )
    categories: dict[str, ToolCategoryName] = Field(
        default_factory=dict,
        description="Category per tool name or glob, over what the annotations say.",
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _MCP_SERVER_NAME.fullmatch(value):
            raise ValueError(
                "must start with a letter or '_' and hold only letters, digits, '_' or '-' "
                "(at most 40): it becomes the namespace of the server's tools"
            )
        return value

    @field_validator("transport", mode="before")
    @classmethod
    def _transport_alias(cls, value: object) -> object:
        return _MCP_TRANSPORT_ALIASES.get(value, value) if isinstance(value, str) else value

    @field_validator("env", "headers")
    @classmethod
    def _check_names(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        pattern = _ENV_NAME if info.field_name == "env" else _HEADER_NAME
        for name in value:
            if not pattern.fullmatch(name):
                kind = "an environment variable" if info.field_name == "env" else "a header"
                raise ValueError(f"{name!r} is not a valid name for {kind}")
        return value

    @model_validator(mode="after")
    def _check_transport(self) -> McpServerConfig:
        if self.command is not None and self.url is not None:
            raise ValueError(
                f"server {self.name!r}: give command (a stdio server) or url (an HTTP server), "
                "not both"
            )
        if self.transport is None:
            if self.command is None and self.url is None:
                raise ValueError(
                    f"server {self.name!r}: say how to reach it: command (and args, env) for a "
                    "stdio server, or url (and transport: sse or streamable_http) for HTTP"
                )
            self.transport = "stdio" if self.command is not None else "streamable_http"
        if self.transport == "stdio":
            self._check_stdio()
        else:
            self._check_http()
        return self

    def _check_stdio(self) -> None:
        if self.command is None:
            raise ValueError(
                f"server {self.name!r}: a stdio server needs command (the program to start)"
            )
        if self.auth is not None or self.headers:
            raise ValueError(
                f"server {self.name!r}: auth and headers apply to HTTP servers; give a stdio "
                'server its key through env, e.g. env: {API_KEY: "${MY_API_KEY}"}'
            )

    def _check_http(self) -> None:
        if self.url is None:
            raise ValueError(
                f"server {self.name!r}: a {self.transport} server needs url "
                "(such as http://localhost:8080/mcp)"
            )
        if self.args or self.env or self.cwd is not None:
            raise ValueError(
                f"server {self.name!r}: args, env and cwd apply to stdio servers, not to "
                f"a {self.transport} server"
            )
        if "${" not in self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"server {self.name!r}: url must start with http:// or https://")

    @property
    def target(self) -> str:
        """Where the server is: its command line or its URL, as configured (unexpanded).

        Examples:
            >>> McpServerConfig(name="e", command="node", args=["server.js"]).target
            'node server.js'
        """
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return str(self.url)


def _check_unique_servers(servers: list[McpServerConfig]) -> list[McpServerConfig]:
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            raise ValueError(f"two servers are named {server.name!r}; names must be unique")
        seen.add(server.name)
    return servers


class AgentSettings(BaseSettings):
    """Every setting of the engine, from arguments, environment, env files and config files.

    See the module docstring for the order of the sources. Build it with `load` or
    `load_settings` to get a `ConfigError` that names each bad field; the plain
    constructor raises pydantic's ``ValidationError`` (with inputs hidden).

    Examples:
        >>> settings = AgentSettings(_env_file=None, gate_profile="batch")
        >>> settings.effective_gate_threshold
        0.9
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
        env_file=_PROJECT_ENV_FILE,
        env_file_encoding="utf-8",
        extra="ignore",
        hide_input_in_errors=True,
    )

    backend: Literal["openai", "local"] = Field(
        default="openai",
        description="openai: any OpenAI-compatible server (model_backend); local: the built-in "
        "llama.cpp server with a small model (the local extra).",
    )
    system_prompt: str = Field(
        default="", description="Sent first on every model call; never stored in the run state."
    )
    max_iterations: int = Field(
        default=10,
        ge=1,
        le=MAX_ITERATIONS,
        description="Cycles (draft to gate) before a run stops with a summary.",
    )
    gate_profile: Literal["interactive", "default", "batch"] = Field(
        default="default",
        description="The gate threshold when gate_threshold is unset: interactive 0.60, default "
        "0.70, batch 0.90.",
    )
    gate_threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Severity at which the gate intervenes; unset: the gate profile's threshold.",
    )
    max_plan_chars: int = Field(
        default=100_000,
        ge=1000,
        description="The longest plan accepted (characters of its JSON form): a longer one is "
        "refused (InvalidPlanError) and the run stays paused.",
    )
    execute_all_tool_calls: bool = Field(
        default=False, description="Run every tool call of a draft, not only the first."
    )
    checkpoint_path: Path = Field(
        default=Path(".agents/checkpoints.sqlite"),
        description="SQLite file of the checkpoints and the run store.",
    )
    # A secret: a database URL may carry a password (shown only through describe_location).
    checkpoint_url: SecretStr | None = Field(
        default=None,
        description="A postgresql:// URL (or a SQLite path) for checkpoints and the run store; "
        "set, it wins over checkpoint_path.",
    )
    lease_seconds: float = Field(
        default=300.0,
        gt=0,
        description="How long a run's lease on its thread lasts unless renewed (its process "
        "renews it every fifth of that); a process stalled past it loses the thread to another "
        "and stops.",
    )
    memory_path: Path = Field(
        default=Path(".agents/memory.jsonl"),
        description="JSONL file the persist stage appends each finished run to.",
    )
    memory_sqlite: bool = Field(default=False, description="Opt in to the SQLite (FTS) memory.")
    # NoDecode: the env value is read by _split_tools, so "calculator,grep" works besides JSON.
    tools: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Tools to activate: names, groups or globs (in the environment a JSON list, "
        "or names separated by commas).",
    )
    approvals: dict[ToolCategoryName, ApprovalPolicyName] = Field(
        default_factory=dict, description="Approval policy per tool category (over defaults)."
    )
    unattended: bool = Field(default=False, description="Grant approvals (deny still holds).")
    tool_config: ToolConfig = Field(default_factory=ToolConfig)
    mcp_servers: Annotated[list[McpServerConfig], AfterValidator(_check_unique_servers)] = Field(
        default_factory=list, description="MCP servers whose tools the agent may use."
    )

    model_backend: ModelBackendSettings = Field(default_factory=ModelBackendSettings)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    observability: ObservabilityConfig = Field(default_factory=ObservabilityConfig)
    retry: ErrorRecoveryConfig = Field(default_factory=ErrorRecoveryConfig)
    token_tracking: TokenizerConfig = Field(default_factory=TokenizerConfig)
    context: CompactionConfig = Field(default_factory=CompactionConfig)
    streaming: StreamingConfig = Field(default_factory=StreamingConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)

    GATE_PROFILE_THRESHOLDS: ClassVar[Mapping[str, float]] = _GATE_PROFILE_THRESHOLDS

    def __init__(self, **values: Any) -> None:
        """Build settings from ``values`` (highest priority) and every other source.

        Declared only for type checkers: without it they check the arguments against the field
        types and reject what pydantic accepts and the spec documents, such as
        ``model_backend={"base_url": ...}`` or ``_env_file="production.env"``.
        """
        super().__init__(**values)

    @field_validator("tools", mode="before")
    @classmethod
    def _split_tools(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                try:
                    return json.loads(text)
                except json.JSONDecodeError:
                    raise ValueError(
                        'must be a JSON list such as ["calculator"] or names separated by commas'
                    ) from None
            try:
                return split_tool_names(text)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("checkpoint_path", mode="before")
    @classmethod
    def _path_not_url(cls, value: object) -> object:
        # A Path folds "//", so a URL here would become a file whose name holds its password.
        if isinstance(value, str) and _URL.match(value):
            raise ValueError("must be a file path; set checkpoint_url for a database URL")
        return value

    def secret_values(self) -> dict[str, str]:
        """Every secret these settings hold, by the dotted name of where it is set (sorted).

        ``SecretStr`` fields at any depth (the backend key, ``checkpoint_url``, MCP ``auth.key``),
        and what MCP servers write out in ``headers`` and in ``env`` entries named like a secret.
        A value that refers to a variable (``${VAR}``) is left out: the variable's value becomes
        known, and is masked, when the server is connected. The Agent masks every value in what
        it stores and prints (`ai_agent.observability.redaction.SecretValues`).

        Examples:
            >>> settings = AgentSettings(_env_file=None, model_backend={"api_key": "sk-123456789"},
            ...     mcp_servers=[{"name": "api", "url": "http://h/mcp",
            ...                   "headers": {"X-Key": "k-abcdefgh", "X-Ref": "${REF}"}}])
            >>> settings.secret_values()
            {'mcp_servers[0].headers.X-Key': 'k-abcdefgh', 'model_backend.api_key': 'sk-123456789'}
        """
        found: dict[str, str] = {}
        _collect_secrets(self, "", found)
        return dict(sorted(found.items()))

    @property
    def effective_gate_threshold(self) -> float:
        """The gate threshold in force: ``gate_threshold`` if set, else the profile's value.

        Examples:
            >>> AgentSettings(_env_file=None, gate_profile="interactive").effective_gate_threshold
            0.6
        """
        if self.gate_threshold is not None:
            return self.gate_threshold
        return _GATE_PROFILE_THRESHOLDS[self.gate_profile]

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Order the sources: arguments, env, env files, config files (defaults come last)."""
        if (
            isinstance(dotenv_settings, DotEnvSettingsSource)
            and dotenv_settings.env_file is _PROJECT_ENV_FILE
        ):
            dotenv_settings = _rebuild_dotenv(settings_cls, dotenv_settings, _default_env_files())
        override = _CONFIG_FILE_OVERRIDE.get()
        paths = [override] if override is not None else _default_config_files()
        config_sources = tuple(
            InitSettingsSource(settings_cls, init_kwargs=_read_config_file(path)) for path in paths
        )
        # file_secret_settings is dropped: the engine reads no secrets directory.
        return (init_settings, env_settings, dotenv_settings, *config_sources)

    @classmethod
    def load(cls, config_file: str | Path | None = None, **overrides: Any) -> AgentSettings:
        """Load settings, turning every validation problem into one `ConfigError`.

        Args:
            config_file: A ``.toml``, ``.yaml``, ``.yml`` or ``.json`` file read in place of
                ``config.toml`` / ``config.yaml``. ``None`` reads those defaults.
            **overrides: Field values (highest priority) and pydantic-settings options such as
                ``_env_file``.

        Returns:
            The validated settings.

        Raises:
            ConfigError: The file is missing or has an unsupported suffix, a file cannot be
                parsed, or a value is invalid. The message names each field by its dotted path,
                what is allowed, the value given (never for secrets) and where it was set.

        Examples:
            >>> AgentSettings.load(_env_file=None, max_iterations=3).max_iterations
            3
        """
        path = None if config_file is None else _check_config_path(Path(config_file))
        failure: ValidationError | None = None
        message = ""
        with _config_file_override(path):
            try:
                return cls(**overrides)
            except ValidationError as exc:
                failure = exc
            except SettingsError as exc:
                message = (
                    f"cannot read settings: {exc}. A whole section set in one variable must be "
                    f"JSON; or set one field at a time, e.g. {ENV_PREFIX}MODEL_BACKEND__TIMEOUT=10"
                )
            except RecursionError:
                # JSON in an environment variable or env file, decoded by pydantic-settings
                # (config files are refused earlier, by name, in _parse_config_file).
                message = (
                    "cannot read settings: a value set as JSON in the environment or an env file "
                    f"is nested more than {MAX_DEPTH} levels deep; flatten it"
                )
        # Raised outside the handlers on purpose: a ConfigError raised inside one would carry the
        # ValidationError as __context__, and its errors() still hold the raw inputs (secrets too).
        if failure is not None:
            message = _format_validation_error(failure, cls, overrides, path)
            del failure
        raise ConfigError(message)


def split_tool_names(text: str) -> list[str]:
    """Tool names separated by commas (``"calculator, fs.*"``); nothing at all is no tools.

    An empty name between commas is refused: ``"calculator,,grep"`` or a trailing comma is more
    likely a name lost in editing than a request for fewer tools.

    Raises:
        ConfigError: an empty name.

    Examples:
        >>> split_tool_names(" calculator, fs.* "), split_tool_names("")
        (['calculator', 'fs.*'], [])
        >>> split_tool_names("calculator,,grep")
        Traceback (most recent call last):
        ...
        ai_agent.errors.ConfigError: tool name 2 of 3 is empty in 'calculator,,grep'; ...
    """
    if not text.strip():
        return []
    names = [name.strip() for name in text.split(",")]
    if "" in names:
        shown = text if len(text) <= _MAX_SHOWN_VALUE else text[: _MAX_SHOWN_VALUE - 3] + "..."
        raise ConfigError(
            f"tool name {names.index('') + 1} of {len(names)} is empty in {shown!r}; "
            "separate names with single commas"
        )
    return names


def load_settings(**kwargs: Any) -> AgentSettings:
    """Load `AgentSettings` from all sources; same as `AgentSettings.load`.

    Args:
        **kwargs: ``config_file`` (see `AgentSettings.load`), field values and
            pydantic-settings options such as ``_env_file``.

    Raises:
        ConfigError: A setting is invalid or a config file cannot be read.

    Examples:
        >>> load_settings(_env_file=None, backend="local").backend
        'local'
    """
    return AgentSettings.load(**kwargs)


def _keep_secret(found: dict[str, str], where: str, value: str) -> None:
    # A ${VAR} reference is not a secret: its value is, once the server connects.
    if value and not MCP_ENV_REFERENCE.search(value):
        found[where] = value


def _mcp_secrets(server: McpServerConfig, where: str, found: dict[str, str]) -> None:
    """What a server writes out in plain strings: header values, env entries named as secret."""
    for header, text in server.headers.items():
        _keep_secret(found, f"{where}.headers.{header}", text)
    for name, text in server.env.items():
        if SECRET_ENV_NAME.search(name):
            _keep_secret(found, f"{where}.env.{name}", text)


def _collect_secrets(value: Any, where: str, found: dict[str, str]) -> None:
    """Add the secrets in ``value`` (a settings object or a part of one) to ``found``."""
    if isinstance(value, SecretStr):
        _keep_secret(found, where, value.get_secret_value())
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            _collect_secrets(getattr(value, name), f"{where}.{name}" if where else name, found)
        if isinstance(value, McpServerConfig):
            _mcp_secrets(value, where, found)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _collect_secrets(item, f"{where}[{index}]", found)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _collect_secrets(item, f"{where}.{key}", found)


class _McpConfigFile(BaseModel):
    """The shape of an MCP configuration file, for validation and its error messages."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    mcp_servers: Annotated[list[McpServerConfig], AfterValidator(_check_unique_servers)]


def load_mcp_config(path: str | Path) -> list[McpServerConfig]:
    """Read MCP server definitions from a YAML, JSON or TOML file.

    The file holds ``mcp_servers``: a list of servers (spec 5.5.2), or a mapping of name to
    server; ``mcpServers`` (the layout many MCP clients share) and a bare top-level list are read
    too. Nothing is expanded or connected here: ``${VAR}`` references stay as written until a
    server is connected.

    Args:
        path: A ``.yaml``, ``.yml``, ``.json`` or ``.toml`` file.

    Returns:
        The servers, in file order.

    Raises:
        ConfigError: The file is missing or unreadable, or a server is invalid; the message names
            each problem by its place in the file (``mcp_servers[1].transport``) and what to fix.

    Examples:
        >>> import json, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "mcp.json")
        >>> with open(path, "w") as f:
        ...     json.dump({"mcpServers": {"fs": {"command": "npx", "args": ["-y", "pkg"]}}}, f)
        >>> [(s.name, s.transport) for s in load_mcp_config(path)]
        [('fs', 'stdio')]
    """
    file = _check_config_path(Path(path))
    data = _parse_config_file(file)
    if isinstance(data, dict):
        key = next((k for k in ("mcp_servers", "mcpServers") if k in data), None)
        if key is None:
            raise ConfigError(
                f"MCP config file {file} has no mcp_servers: list the servers under mcp_servers "
                "(see docs/mcp.md)"
            )
        data = data[key]
    if isinstance(data, dict):  # name -> server
        data = [
            {"name": name, **entry} if isinstance(entry, dict) else entry
            for name, entry in data.items()
        ]
    failure: ValidationError | None = None
    try:
        return _McpConfigFile(mcp_servers=data).mcp_servers
    except ValidationError as exc:
        failure = exc
    # Raised outside the handler, as in AgentSettings.load: the error's context holds inputs.
    problems = failure.errors(include_url=False)
    del failure
    lines = [f"invalid MCP config {file} ({len(problems)} problem{'s' * (len(problems) != 1)}):"]
    for problem in problems:
        target = _resolve_loc(_McpConfigFile, problem["loc"])
        message = str(problem["msg"]).removeprefix("Value error, ")
        details = []
        if problem["type"] == "extra_forbidden":
            message = _closest_hint(str(problem["loc"][-1]), target.parent_fields)
            details.append(f"known here: {', '.join(target.parent_fields)}")
        else:
            allowed = _allowed(target.annotation, target.metadata)
            if problem["type"] == "literal_error" and allowed and allowed.startswith("one of"):
                message = "not one of the allowed choices"
            if allowed:
                details.append(f"allowed: {allowed}")
            details.append(_given(problem.get("input"), target))
        lines += [f"  {target.dotted}: {message}", f"    {'; '.join(details)}"]
    raise ConfigError("\n".join(lines))


# --- sources -------------------------------------------------------------------------------------


def _default_env_files() -> tuple[Path, ...]:
    """``~/agents.env`` then ``.env``: in a tuple of env files the later one wins."""
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no passwd entry: there is no user-wide file to read
        return (_PROJECT_ENV_FILE,)
    return (home / USER_ENV_FILE_NAME, _PROJECT_ENV_FILE)


def _rebuild_dotenv(
    settings_cls: type[BaseSettings], source: DotEnvSettingsSource, env_files: tuple[Path, ...]
) -> DotEnvSettingsSource:
    # The source reads its files when constructed, so swap in a new one that keeps every other
    # option the caller may have passed (_env_file_encoding, _case_sensitive, ...).
    return DotEnvSettingsSource(
        settings_cls,
        env_file=env_files,
        env_file_encoding=source.env_file_encoding,
        case_sensitive=source.case_sensitive,
        env_prefix=source.env_prefix,
        env_nested_delimiter=source.env_nested_delimiter,
        env_ignore_empty=source.env_ignore_empty,
        env_parse_none_str=source.env_parse_none_str,
        env_parse_enums=source.env_parse_enums,
    )


def _default_config_files() -> list[Path]:
    # config.toml first: a source listed earlier wins, so toml beats yaml key by key.
    return [Path(name) for name in DEFAULT_CONFIG_FILES if Path(name).is_file()]


@contextmanager
def _config_file_override(path: Path | None) -> Iterator[None]:
    token = _CONFIG_FILE_OVERRIDE.set(path)
    try:
        yield
    finally:
        _CONFIG_FILE_OVERRIDE.reset(token)


def _check_config_path(path: Path) -> Path:
    if path.suffix.lower() not in CONFIG_FILE_SUFFIXES:
        raise ConfigError(
            f"unsupported config file {path}: the suffix must be one of "
            f"{', '.join(CONFIG_FILE_SUFFIXES)}"
        )
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}. Check the path, or pass None.")
    return path


def _read_config_file(path: Path) -> dict[str, Any]:
    """Parse a config file into a mapping, or raise ConfigError naming the file and position."""
    data = _parse_config_file(path)
    if data is None:  # an empty YAML file
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file {path} must hold a table of settings at the top level, "
            f"not a {type(data).__name__}"
        )
    _check_known_keys(path, data)
    return data


def _check_known_keys(path: Path, data: Mapping[str, Any]) -> None:
    """Refuse top-level keys that are no setting, naming the closest one.

    Sections reject unknown keys themselves (``extra="forbid"``); the top level of
    `AgentSettings` has to ignore unknown ``MAMBA_*`` variables, so a misspelt key in a file
    would otherwise vanish without a word.
    """
    known = list(AgentSettings.model_fields)
    unknown = [key for key in data if key not in AgentSettings.model_fields]
    if not unknown:
        return
    lines = [f"config file {path} has {len(unknown)} unknown setting(s):"]
    lines += [f"  {key}: {_closest_hint(str(key), known)}" for key in unknown]
    lines.append(f"  known settings: {', '.join(known)}")
    raise ConfigError("\n".join(lines))


def _closest_hint(name: str, known: Sequence[str]) -> str:
    """``did you mean 'x'?`` for the known name closest to ``name``, or a plain "unknown".

    Examples:
        >>> _closest_hint("max_iteratons", ["max_iterations", "tools"])
        "unknown setting; did you mean 'max_iterations'?"
        >>> _closest_hint("zzz", ["tools"])
        'unknown setting'
    """
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"unknown setting; did you mean {close[0]!r}?" if close else "unknown setting"


def _parse_config_file(path: Path) -> object:
    """The data in a TOML, JSON or YAML file; ConfigError naming the file and position.

    The file is read through `ai_agent.datafiles`: at most `MAX_CONFIG_FILE_BYTES`, UTF-8 text,
    nested at most `ai_agent.datafiles.MAX_DEPTH` levels.
    """
    what = f"config file {path}"
    text = read_text(path, what=what, max_bytes=MAX_CONFIG_FILE_BYTES)
    suffix = path.suffix.lower()
    parse = tomllib.loads if suffix == ".toml" else json.loads if suffix == ".json" else _load_yaml
    try:
        return parse_nested(parse, text, what=what)
    except ValueError as exc:
        # tomllib and json errors (ValueError subclasses) name the position, not the content.
        raise ConfigError(f"cannot read config file {path}: {exc}. Fix or remove it.") from None


def _load_yaml(text: str) -> object:
    # PyYAML ships no type stubs; importing it by name keeps mypy strict without an ignore.
    yaml = importlib.import_module("yaml")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # str(exc) quotes the offending line, which could hold a secret: keep problem + position.
        problem = getattr(exc, "problem", None) or "invalid YAML"
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ValueError(f"{problem}{where}") from None


# --- error messages ------------------------------------------------------------------------------

_MAX_SHOWN_VALUE = 80


def _format_validation_error(
    exc: ValidationError,
    settings_cls: type[BaseModel],
    overrides: Mapping[str, Any],
    config_file: Path | None,
) -> str:
    """One line per problem: where, what is wrong, what is allowed, what was given, who set it."""
    origin = _Origins(overrides, config_file)
    problems = exc.errors(include_url=False)
    count = len(problems)
    lines = [f"invalid settings ({count} problem{'s' if count != 1 else ''}):"]
    for problem in problems:
        lines.extend(_describe_problem(problem, settings_cls, origin))
    return "\n".join(lines)


def _describe_problem(
    problem: ErrorDetails, settings_cls: type[BaseModel], origin: _Origins
) -> list[str]:
    target = _resolve_loc(settings_cls, problem["loc"])
    message = str(problem["msg"]).removeprefix("Value error, ")
    details = []
    if problem["type"] == "extra_forbidden":
        message = _closest_hint(str(problem["loc"][-1]), target.parent_fields)
        details.append(f"known here: {', '.join(target.parent_fields)}")
    else:
        allowed = _allowed(target.annotation, target.metadata)
        if problem["type"] == "literal_error" and allowed and allowed.startswith("one of"):
            message = "not one of the allowed choices"  # they follow under "allowed"
        if allowed:
            details.append(f"allowed: {allowed}")
        details.append(_given(problem.get("input"), target))
    return [
        f"  {target.dotted}: {message}",
        f"    {'; '.join(details)}",
        f"    {origin.describe(target.field_path)}",
    ]


@dataclass
class _Target:
    """Where a validation error points: the dotted path and the field behind it."""

    dotted: str = ""
    field_path: list[str] = dataclass_field(default_factory=list)
    # The type the error is about: a field's, or a list item's / dict key's or value's inside it.
    annotation: object = None
    metadata: list[object] = dataclass_field(default_factory=list)
    container: object = None  # the dict type last stepped into, for a following "[key]"
    parent_fields: list[str] = dataclass_field(default_factory=list)
    # False when the error is about a whole section or an unknown key: its input is not shown,
    # since a section may hold a secret and a misspelt key may be a misspelt api_key.
    is_leaf: bool = True
    is_secret: bool = False


def _resolve_loc(settings_cls: type[BaseModel], loc: Sequence[int | str]) -> _Target:
    target = _Target()
    model: type[BaseModel] | None = settings_cls
    parts: list[str] = []
    # Inside a list or dict item (mcp_servers[1].timeout) the source sets the whole list, so the
    # origin is looked up for the list's field.
    in_item = False
    for item in loc:
        if model is not None and isinstance(item, str):
            target.parent_fields = list(model.model_fields)
            field = model.model_fields.get(item)
            parts.append(f".{item}" if parts else item)
            if not in_item:
                target.field_path.append(item)
            if field is None:  # an unknown key (extra_forbidden): keep it to find who set it
                target.is_leaf = False
                model = None
                continue
            target.annotation, target.metadata = field.annotation, list(field.metadata)
            target.is_secret = _mentions(field.annotation, SecretStr)
            model = _section_model(_without_none(field.annotation))
            target.is_leaf = model is None
        else:
            _step_into_item(target, item, parts)
            # A list or dict of sections (mcp_servers[1]): the next name is one of its fields.
            model = _section_model(_without_none(target.annotation))
            target.is_leaf = model is None
            in_item = True
    target.dotted = "".join(parts)
    return target


def _step_into_item(target: _Target, item: int | str, parts: list[str]) -> None:
    """Follow a list index or dict key in an error location into the item's type."""
    if item == "[key]":  # pydantic's marker: the error is about the key just named
        target.annotation = get_args(target.container)[0]
        return
    parts.append(f"[{item!r}]" if isinstance(item, str) else f"[{item}]")
    target.container = _without_none(target.annotation)
    args = get_args(target.container)
    target.annotation = args[-1] if args else None  # list[X] -> X, dict[K, V] -> V
    target.metadata = []


def _section_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _mentions(annotation: object, wanted: type) -> bool:
    if annotation is wanted:
        return True
    return any(_mentions(arg, wanted) for arg in get_args(annotation))


def _without_none(annotation: object) -> object:
    """``float | None`` -> ``float``; anything else unchanged."""
    args = get_args(annotation)
    if get_origin(annotation) is not Literal and len(args) == 2 and type(None) in args:
        return next(arg for arg in args if arg is not type(None))
    return annotation


_KIND_NAMES: dict[object, str] = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "text",
    SecretStr: "text without spaces",
    Path: "a file path",
    list: "a list",
    dict: "a mapping",
}


def _allowed(annotation: object, metadata: Sequence[object]) -> str | None:
    """A short description of the values a type takes, from the type and its constraints."""
    annotation = _without_none(annotation)
    if get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        more = [m for e in extra for m in (e.metadata if isinstance(e, FieldInfo) else [e])]
        return _allowed(base, [*metadata, *more])
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(repr(choice) for choice in get_args(annotation))
    kind = _KIND_NAMES.get(get_origin(annotation) or annotation)
    if kind is None:
        return None
    return " ".join([kind, *_bounds(metadata)])


_BOUNDS = (
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.Le, "le", "<="),
)


def _bounds(metadata: Sequence[object]) -> list[str]:
    bounds = [
        f"{symbol} {getattr(item, attribute)}"
        for item in metadata
        for kind, attribute, symbol in _BOUNDS
        if isinstance(item, kind)
    ]
    return [" and ".join(bounds)] if bounds else []


def _given(value: object, target: _Target) -> str:
    if target.is_secret:
        return "given: (secret, hidden)"
    if not target.is_leaf or isinstance(value, (dict, list, tuple)):
        return "given: (a structured value, not shown)"
    shown = repr(value)
    if len(shown) > _MAX_SHOWN_VALUE:
        shown = shown[: _MAX_SHOWN_VALUE - 3] + "..."
    return f"given: {shown}"


class _Origins:
    """Finds which source set a field, to tell the user what to change."""

    def __init__(self, overrides: Mapping[str, Any], config_file: Path | None) -> None:
        self.overrides = overrides
        env_file = overrides.get("_env_file", _PROJECT_ENV_FILE)
        if env_file is _PROJECT_ENV_FILE:
            env_files: Sequence[Any] = _default_env_files()
        elif env_file is None:
            env_files = ()
        elif isinstance(env_file, (str, os.PathLike)):
            env_files = (env_file,)
        else:
            env_files = tuple(env_file)
        self.env_files = [Path(name) for name in env_files]
        self.config_files = [config_file] if config_file else _default_config_files()

    def describe(self, field_path: Sequence[str]) -> str:
        names = _env_names(field_path)
        found = self._find(field_path, names)
        if found:
            return f"set by {found}; change it there"
        config_names = " / ".join(str(path) for path in self.config_files) or "config.toml"
        key = field_path[-1]
        table = ".".join(field_path[:-1])
        in_file = (
            f"{key} under [{table}] in {config_names}" if table else f"{key} in {config_names}"
        )
        return f"set it with {names[0]} (environment or an env file) or {in_file}"

    def _find(self, field_path: Sequence[str], names: Sequence[str]) -> str | None:
        if _lookup(self.overrides, field_path):
            return f"the argument {field_path[0]}="
        for name in names:
            if any(key.upper() == name for key in os.environ):
                return f"the environment variable {name}"
        found = self._find_in_env_files(names)
        if found:
            return found
        for config_file in self.config_files:
            if _lookup(_read_config_file(config_file), field_path):
                return f"{'.'.join(field_path)} in {config_file}"
        return None

    def _find_in_env_files(self, names: Sequence[str]) -> str | None:
        # The later env file wins, so look from the last one back.
        for env_file in reversed(self.env_files):
            if env_file.is_file():
                keys = {key.upper() for key in dotenv_values(env_file)}
                for name in names:
                    if name in keys:
                        return f"{name} in {env_file}"
        return None


def _env_names(field_path: Sequence[str]) -> list[str]:
    """Most specific first: MAMBA_MODEL_BACKEND__TIMEOUT, then MAMBA_MODEL_BACKEND."""
    return [
        ENV_PREFIX + ENV_NESTED_DELIMITER.join(field_path[:depth]).upper()
        for depth in range(len(field_path), 0, -1)
    ]


def _lookup(data: Mapping[str, Any], field_path: Sequence[str]) -> bool:
    """Whether ``data`` sets ``field_path`` or a section holding it."""
    node: object = data
    for key in field_path:
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return True
