"""`AgentSettings`: every setting of the engine in one object, and loading it with clear errors.

The sources and their order are described in `ai_agent.config`; `AgentSettings.load` turns every
problem into one `ConfigError` that names each bad field and where it was set.

Examples:
    >>> load_settings(_env_file=None, max_iterations=0)
    Traceback (most recent call last):
    ...
    ai_agent.errors.ConfigError: invalid settings (1 problem):
      max_iterations: Input should be greater than or equal to 1
    ...
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from ai_agent.config.backend import ModelBackendSettings
from ai_agent.config.errors import explain_problems, shorten
from ai_agent.config.files import check_config_path
from ai_agent.config.mcp import McpServerConfig, check_unique_servers
from ai_agent.config.observability import LoggingConfig, ObservabilityConfig, StreamingConfig
from ai_agent.config.output import OutputConfig
from ai_agent.config.retry import ErrorRecoveryConfig
from ai_agent.config.secrets import collect_secrets
from ai_agent.config.section import ApprovalPolicyName, ToolCategoryName
from ai_agent.config.sources import (
    CONFIG_FILE_ARGUMENT,
    ENV_NESTED_DELIMITER,
    ENV_PREFIX,
    PROJECT_ENV_FILE,
    Origins,
    check_env_files,
    settings_sources,
)
from ai_agent.config.tokens import BudgetConfig, CompactionConfig, TokenizerConfig
from ai_agent.config.tools import ToolConfig
from ai_agent.datafiles import MAX_DEPTH
from ai_agent.errors import ConfigError

__all__ = ["MAX_ITERATIONS", "MAX_TOOL_CALLS", "AgentSettings", "load_settings", "split_tool_names"]

# The most cycles a run may be given (the setting, Agent(max_iterations=...), --max-iterations):
# each cycle is a model call, so a larger number is a typo, not a plan.
MAX_ITERATIONS = 1000
# The most tool calls one draft may have run in its cycle (the notes-assistant flow's "Max Tool
# Calls", 1 to 8): each result lands in the model's next request, so more is a flood, not a plan.
MAX_TOOL_CALLS = 8

_GATE_PROFILE_THRESHOLDS: Mapping[str, float] = MappingProxyType(
    {"interactive": 0.60, "default": 0.70, "batch": 0.90}
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


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
        env_file=PROJECT_ENV_FILE,
        env_file_encoding="utf-8",
        extra="ignore",
        hide_input_in_errors=True,
        allow_inf_nan=False,  # as every section (`Section`)
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
        default=False,
        description="Run several tool calls of a draft in its cycle (up to max_tool_calls), "
        "not only the first.",
    )
    max_tool_calls: int = Field(
        default=3,
        ge=1,
        le=MAX_TOOL_CALLS,
        description="The most tool calls of one draft run in its cycle when "
        "execute_all_tool_calls is on; the model is told the others were not run.",
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
    # A secret: a PostgreSQL URL may carry a password.
    memory_store: SecretStr | None = Field(
        default=None,
        description="Long-term memory in LangGraph's BaseStore for recall and persist: a SQLite "
        "file or a postgresql:// URL (in place of the SQLite memory).",
    )
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
    mcp_servers: Annotated[list[McpServerConfig], AfterValidator(check_unique_servers)] = Field(
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
    output: OutputConfig = Field(default_factory=OutputConfig)

    GATE_PROFILE_THRESHOLDS: ClassVar[Mapping[str, float]] = _GATE_PROFILE_THRESHOLDS

    def __init__(self, *, _config_file: str | Path | None = None, **values: Any) -> None:
        """Build settings from ``values`` (highest priority) and every other source.

        Args:
            _config_file: A ``.toml``, ``.yaml``, ``.yml`` or ``.json`` file read in place of
                ``config.toml`` / ``config.yaml``; ``None`` reads those. Named like
                ``_env_file``: it says where to read, it is not a setting.
            **values: Field values and pydantic-settings options such as ``_env_file``.

        Declared for type checkers too: without it they check the arguments against the field
        types and reject what pydantic accepts and the spec documents, such as
        ``model_backend={"base_url": ...}`` or ``_env_file="production.env"``.
        """
        # The sources hook takes the file back out of the arguments (`settings_sources`).
        values[CONFIG_FILE_ARGUMENT] = _config_file
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
        what MCP servers write out in ``headers`` and in ``env`` entries named like a secret, and
        the password of a URL in any other setting (``https://user:pw@host/v1``).
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
        return dict(sorted(collect_secrets(self).items()))

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
        # file_secret_settings is dropped: the engine reads no secrets directory.
        return settings_sources(settings_cls, init_settings, env_settings, dotenv_settings)

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
        path = None if config_file is None else check_config_path(Path(config_file))
        failure: ValidationError | None = None
        message = ""
        undecodable = False
        try:
            return cls(_config_file=path, **overrides)
        except ValidationError as exc:
            failure = exc
        except SettingsError as exc:
            message = (
                f"cannot read settings: {exc}. A whole section set in one variable must be "
                f"JSON; or set one field at a time, e.g. {ENV_PREFIX}MODEL_BACKEND__TIMEOUT=10"
            )
        except UnicodeDecodeError:
            # .env, read by pydantic-settings before the sources hook could check it: named
            # below (outside the handler: the error holds the file's bytes).
            undecodable = True
            message = "cannot read settings: an env file is not UTF-8 text"
        except RecursionError:
            # JSON in an environment variable or env file, decoded by pydantic-settings
            # (config files are refused earlier, by name, in parse_config_file).
            message = (
                "cannot read settings: a value set as JSON in the environment or an env file "
                f"is nested more than {MAX_DEPTH} levels deep; flatten it"
            )
        # Raised outside the handlers on purpose: a ConfigError raised inside one would carry the
        # ValidationError as __context__, and its errors() still hold the raw inputs (secrets too).
        if undecodable:
            encoding = overrides.get("_env_file_encoding", cls.model_config["env_file_encoding"])
            check_env_files(Origins(cls, overrides, path).env_files, encoding)
        if failure is not None:
            problems = failure.errors(include_url=False)
            del failure
            origin = Origins(cls, overrides, path)
            message = explain_problems("invalid settings", problems, cls, origin)
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
        raise ConfigError(
            f"tool name {names.index('') + 1} of {len(names)} is empty in {shorten(text)!r}; "
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
