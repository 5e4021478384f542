"""MCP server configuration: the spec's shape, validation messages that say what to fix, files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ai_agent.config import AgentSettings, McpAuthConfig, McpServerConfig, load_mcp_config
from ai_agent.errors import ConfigError
from ai_agent.tools.mcp.manager import gather_servers

SPEC_EXAMPLE = """\
mcp_servers:
  - name: filesystem
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/path/to/allowed"]
    transport: stdio
  - name: custom-api
    url: http://localhost:8080/mcp
    transport: sse
    auth:
      type: api_key
      key_env: MCP_CUSTOM_API_KEY  # Environment variable containing the API key
      header: X-API-Key            # Header name for the API key (default: Authorization)
  - name: secured-service
    url: https://api.example.com/mcp
    transport: sse
    auth:
      type: api_key
      key: ${SECURED_SERVICE_KEY}  # Direct reference to environment variable
"""


def test_the_spec_example_loads_as_written(tmp_path: Path) -> None:
    path = tmp_path / "mcp.yaml"
    path.write_text(SPEC_EXAMPLE)
    fs, custom, secured = load_mcp_config(path)
    assert (fs.name, fs.transport, fs.command) == ("filesystem", "stdio", "npx")
    assert fs.args[-1] == "/path/to/allowed"
    assert (custom.transport, custom.url) == ("sse", "http://localhost:8080/mcp")
    assert custom.auth is not None
    assert (custom.auth.key_env, custom.auth.header) == ("MCP_CUSTOM_API_KEY", "X-API-Key")
    assert secured.auth is not None
    assert secured.auth.key is not None
    assert secured.auth.key.get_secret_value() == "${SECURED_SERVICE_KEY}"  # not expanded yet
    assert secured.auth.header == "Authorization"
    assert "SECURED" not in repr(secured)


def test_every_file_layout(tmp_path: Path) -> None:
    one = {"name": "a", "command": "x"}
    layouts: dict[str, Any] = {
        "list.json": [one],
        "spec.json": {"mcp_servers": [one]},
        "mapping.json": {"mcp_servers": {"a": {"command": "x"}}},
        "clients.json": {"mcpServers": {"a": {"command": "x", "type": "stdio"}}},
    }
    for name, data in layouts.items():
        path = tmp_path / name
        path.write_text(json.dumps(data))
        assert [(s.name, s.command) for s in load_mcp_config(path)] == [("a", "x")], name
    toml = tmp_path / "servers.toml"
    toml.write_text('[[mcp_servers]]\nname = "a"\nurl = "http://127.0.0.1:1/mcp"\n')
    assert load_mcp_config(toml)[0].transport == "streamable_http"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{}", "has no mcp_servers"),
        ("mcp_servers: [{name: a}]", "say how to reach it"),
        ("mcp_servers: [{name: a, command: x, url: 'http://h'}]", "not both"),
        ("mcp_servers: [{name: a, url: 'ftp://h'}]", "must start with http:// or https://"),
        (
            "mcp_servers: [{name: a, url: 'http://h', transport: websocket}]",
            "allowed: one of 'stdio', 'sse', 'streamable_http'; given: 'websocket'",
        ),
        ("mcp_servers: [{name: a, transport: stdio, url: 'http://h'}]", "needs command"),
        ("mcp_servers: [{name: a, transport: sse}]", "a sse server needs url"),
        ("mcp_servers: [{name: a, url: 'http://h', args: [x]}]", "apply to stdio servers"),
        (
            "mcp_servers: [{name: a, command: x, auth: {key_env: K}}]",
            "give a stdio server its key through env",
        ),
        (
            "mcp_servers: [{name: a, url: 'http://h', auth: {key_env: K, key: k}}]",
            "give key_env or key, not both",
        ),
        ("mcp_servers: [{name: a, url: 'http://h', auth: {}}]", "needs key_env"),
        (
            "mcp_servers: [{name: a, url: 'http://h', auth: {key_env: 'sk-123 456'}}]",
            "not the key itself",
        ),
        ("mcp_servers: [{name: a, url: 'http://h', auth: {key: ''}}]", "is empty"),
        (
            "mcp_servers: [{name: a, url: 'http://h', auth: {type: oauth, key_env: K}}]",
            "allowed: one of 'api_key'",
        ),
        (
            "mcp_servers: [{name: a, url: 'http://h', auth: {key_env: K, header: 'X Key'}}]",
            "must be an HTTP header name",
        ),
        ("mcp_servers: [{name: 'my.server', command: x}]", "becomes the namespace"),
        ("mcp_servers: [{name: a, command: x, args: ['${oops']}]", "malformed ${...} reference"),
        ("mcp_servers: [{name: a, command: x, env: {'BAD-NAME': v}}]", "not a valid name"),
        ("mcp_servers: [{name: a, url: 'http://h', headers: {'X Y': v}}]", "not a valid name"),
        ("mcp_servers: [{name: a, command: x, timout: 3}]", "timout: unknown setting"),
        ("mcp_servers: [{name: a, command: x, timeout: 0}]", "a finite number > 0"),
        ("mcp_servers: [{name: a, command: x}, {name: a, command: y}]", "two servers are named"),
        (
            "mcp_servers: [{name: a, command: x, categories: {'*': dangerous}}]",
            "one of 'read_only'",
        ),
    ],
)
def test_validation_messages_say_what_to_fix(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "mcp.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError) as caught:
        load_mcp_config(path)
    assert expected in str(caught.value)
    assert str(path) in str(caught.value)


def test_a_key_in_the_wrong_place_is_never_echoed(tmp_path: Path) -> None:
    path = tmp_path / "mcp.yaml"
    path.write_text("mcp_servers: [{name: a, url: 'http://h', auth: {key: 'sk live key'}}]")
    with pytest.raises(ConfigError) as caught:
        load_mcp_config(path)
    assert "sk live key" not in str(caught.value)
    assert "(secret, hidden)" in str(caught.value)


def test_files_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_mcp_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="suffix"):
        load_mcp_config(tmp_path / "servers.ini")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_mcp_config(broken)


def test_settings_hold_mcp_servers_from_yaml_toml_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("config.yaml").write_text("mcp_servers:\n  - {name: y, command: from-yaml}\n")
    assert [s.command for s in AgentSettings.load(_env_file=None).mcp_servers] == ["from-yaml"]
    Path("config.toml").write_text('[[mcp_servers]]\nname = "t"\ncommand = "from-toml"\n')
    assert [s.name for s in AgentSettings.load(_env_file=None).mcp_servers] == ["t"]
    monkeypatch.setenv("MAMBA_MCP_SERVERS", json.dumps([{"name": "e", "url": "http://h/mcp"}]))
    servers = AgentSettings.load(_env_file=None).mcp_servers
    assert [(s.name, s.transport) for s in servers] == [("e", "streamable_http")]


def test_settings_errors_point_into_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "MAMBA_MCP_SERVERS", json.dumps([{"name": "a", "command": "x", "timeout": -1}])
    )
    with pytest.raises(ConfigError) as caught:
        AgentSettings.load(_env_file=None)
    message = str(caught.value)
    assert "mcp_servers[0].timeout" in message
    assert "set by the environment variable MAMBA_MCP_SERVERS" in message


def test_transport_aliases_and_defaults() -> None:
    for alias in ("http", "streamable-http", "streamableHttp", "streamable_http"):
        server = McpServerConfig.model_validate(
            {"name": "a", "url": "http://h/mcp", "transport": alias}
        )
        assert server.transport == "streamable_http"
    server = McpServerConfig(name="a", command="x")
    assert (server.timeout, server.startup_timeout, server.max_restarts) == (30.0, 30.0, 1)
    assert (server.enabled, server.required, server.active) == (True, True, True)
    assert server.target == "x"
    assert McpServerConfig(name="b", url="${BASE}/mcp").url == "${BASE}/mcp"


def test_written_out_secrets_stay_out_of_repr() -> None:
    server = McpServerConfig(
        name="a",
        url="http://h/mcp",
        headers={"X-Token": "literal-token-1"},
        auth={"key": "literal-key-2"},
    )
    stdio = McpServerConfig(name="b", command="x", env={"API_KEY": "literal-key-3"})
    shown = repr(server) + str(server) + repr(stdio)
    for secret in ("literal-token-1", "literal-key-2", "literal-key-3"):
        assert secret not in shown


def test_auth_defaults() -> None:
    auth = McpAuthConfig(key_env="K")
    assert (auth.type, auth.header, auth.scheme) == ("api_key", "Authorization", None)
    with pytest.raises(ValidationError):
        McpAuthConfig(key="has\nnewline")


def test_gather_servers_layers_settings_files_and_arguments(tmp_path: Path) -> None:
    path = tmp_path / "more.yaml"
    path.write_text("mcp_servers:\n  - {name: b, command: from-file}\n  - {name: c, command: c}\n")
    settings = [McpServerConfig(name="a", command="a"), McpServerConfig(name="b", command="old")]
    servers = gather_servers(settings, path, [{"name": "c", "command": "from-argument"}])
    assert [(s.name, s.command) for s in servers] == [
        ("a", "a"),
        ("b", "from-file"),
        ("c", "from-argument"),
    ]
    assert gather_servers(settings, [path, path], None)[1].command == "from-file"
    with pytest.raises(ConfigError, match="invalid MCP server: name: Field required"):
        gather_servers([], None, [{"command": "x"}])
