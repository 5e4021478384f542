"""Settings for the engine: the only package that reads environment variables and config files.

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
``_env_file=None`` reads none). ``AgentSettings.load("prod.toml")`` (or
``AgentSettings(_config_file="prod.toml")``) reads that one config file in place of
``config.toml`` / ``config.yaml``.

Every section rejects unknown keys, so a typo in a config file (``timout = 5``) is an error rather
than a silently ignored line. Unrelated top-level ``MAMBA_*`` variables are ignored.

Secrets are `pydantic.SecretStr`. Their value never appears in ``repr``, ``str``,
``model_dump_json`` or any error text: pydantic's own errors hide inputs, and `ConfigError`
messages show the given value only for non-secret fields. `ModelBackendSettings.get_headers`
is where the key is read for use.

One module per concern: ``section`` (the base of every section), ``backend``, ``tools``, ``mcp``,
``retry``, ``tokens``, ``observability`` (the sections), ``settings`` (`AgentSettings` itself),
``sources`` (the sources and their order), ``files`` (reading a config file), ``secrets`` (finding
the secrets settings hold) and ``errors`` (validation errors as readable text). Import from
``ai_agent.config``: the modules are its parts, not separate interfaces.

Examples:
    >>> settings = AgentSettings(_env_file=None, max_iterations=5)
    >>> settings.max_iterations, settings.model_backend.model
    (5, 'llama3.2')
"""

from __future__ import annotations

from ai_agent.config.backend import ModelBackendSettings
from ai_agent.config.files import CONFIG_FILE_SUFFIXES, DEFAULT_CONFIG_FILES, MAX_CONFIG_FILE_BYTES
from ai_agent.config.mcp import (
    MCP_ENV_REFERENCE,
    SECRET_ENV_NAME,
    McpAuthConfig,
    McpServerConfig,
    McpTransportName,
    load_mcp_config,
)
from ai_agent.config.observability import LoggingConfig, ObservabilityConfig, StreamingConfig
from ai_agent.config.output import OutputConfig
from ai_agent.config.retry import ErrorRecoveryConfig
from ai_agent.config.section import ApprovalPolicyName, ToolCategoryName
from ai_agent.config.settings import MAX_ITERATIONS, AgentSettings, load_settings, split_tool_names
from ai_agent.config.sources import ENV_NESTED_DELIMITER, ENV_PREFIX, USER_ENV_FILE_NAME
from ai_agent.config.tokens import (
    BudgetConfig,
    CompactionConfig,
    CompactionStrategy,
    HybridComponent,
    ModelRate,
    TokenizerConfig,
)
from ai_agent.config.tools import (
    BashToolConfig,
    FileToolsConfig,
    NotesConfig,
    ToolConfig,
    ToolsmakerConfig,
    WebSearchConfig,
)

__all__ = [
    "CONFIG_FILE_SUFFIXES",
    "DEFAULT_CONFIG_FILES",
    "ENV_NESTED_DELIMITER",
    "ENV_PREFIX",
    "MAX_CONFIG_FILE_BYTES",
    "MAX_ITERATIONS",
    "MCP_ENV_REFERENCE",
    "SECRET_ENV_NAME",
    "USER_ENV_FILE_NAME",
    "AgentSettings",
    "ApprovalPolicyName",
    "BashToolConfig",
    "BudgetConfig",
    "CompactionConfig",
    "CompactionStrategy",
    "ErrorRecoveryConfig",
    "FileToolsConfig",
    "HybridComponent",
    "LoggingConfig",
    "McpAuthConfig",
    "McpServerConfig",
    "McpTransportName",
    "ModelBackendSettings",
    "ModelRate",
    "NotesConfig",
    "ObservabilityConfig",
    "OutputConfig",
    "StreamingConfig",
    "TokenizerConfig",
    "ToolCategoryName",
    "ToolConfig",
    "ToolsmakerConfig",
    "WebSearchConfig",
    "load_mcp_config",
    "load_settings",
    "split_tool_names",
]
