"""MCP servers: how each is reached and trusted, and reading them from a file (spec 5.5.2).

Nothing here connects or expands: ``${VAR}`` references are checked for form and stay as written
until a server is connected (`ai_agent.tools.mcp`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ai_agent.config.errors import explain_problems
from ai_agent.config.files import check_config_path, parse_config_file
from ai_agent.config.section import BAD_SECRET_CHARS, BUILT_ON_FIRST_USE, Section, ToolCategoryName
from ai_agent.errors import ConfigError
from ai_agent.url_passwords import mask_url_passwords

__all__ = [
    "MCP_ENV_REFERENCE",
    "SECRET_ENV_NAME",
    "McpAuthConfig",
    "McpServerConfig",
    "McpTransportName",
    "check_unique_servers",
    "load_mcp_config",
]

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
    # No reference ends after the last "}"; past it, each "${NAME:-" would scan to the end in
    # vain, O(n**2) on "${a:-" repeated (16,000 characters: 0.4 s).
    end = value.rfind("}") + 1
    rest = MCP_ENV_REFERENCE.sub("", value[:end]) + value[end:]
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


class McpAuthConfig(Section):
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

    model_config = BUILT_ON_FIRST_USE

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
            if BAD_SECRET_CHARS.search(value):
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


class McpServerConfig(Section):
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

    model_config = BUILT_ON_FIRST_USE

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
    pin_tools: bool = Field(
        default=True,
        description="Pin each tool's definition when first seen and withhold a changed or new "
        "one until a person accepts it (ai-agent mcp accept); false: take them as they come.",
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

        A password written in the URL is masked: the target is printed (``mcp list``).

        Examples:
            >>> McpServerConfig(name="e", command="node", args=["server.js"]).target
            'node server.js'
            >>> McpServerConfig(name="h", url="https://me:hunter2@example.com/mcp").target
            'https://me:***@example.com/mcp'
        """
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return mask_url_passwords(str(self.url), "***")


def check_unique_servers(servers: list[McpServerConfig]) -> list[McpServerConfig]:
    """``servers`` if no two share a name (a name is the namespace of a server's tools)."""
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            raise ValueError(f"two servers are named {server.name!r}; names must be unique")
        seen.add(server.name)
    return servers


class _McpConfigFile(BaseModel):
    """The shape of an MCP configuration file, for validation and its error messages."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    mcp_servers: Annotated[list[McpServerConfig], AfterValidator(check_unique_servers)]


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
    file = check_config_path(Path(path))
    data = _server_entries(file, parse_config_file(file))
    failure: ValidationError | None = None
    try:
        return _McpConfigFile(mcp_servers=data).mcp_servers
    except ValidationError as exc:
        failure = exc
    # Raised outside the handler, as in AgentSettings.load: the error's context holds inputs.
    problems = failure.errors(include_url=False)
    del failure
    raise ConfigError(explain_problems(f"invalid MCP config {file}", problems, _McpConfigFile))


def _server_entries(file: Path, data: object) -> object:
    """The file's list of servers, from any of the layouts `load_mcp_config` reads."""
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
    return data
