"""Finding every secret a settings object holds, so the Agent can mask it wherever it writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, SecretStr

from ai_agent.config.mcp import MCP_ENV_REFERENCE, SECRET_ENV_NAME, McpServerConfig

__all__ = ["collect_secrets"]


def collect_secrets(value: Any, where: str = "") -> dict[str, str]:
    """The secrets in ``value`` (settings or a part of them) by the dotted name of their place.

    ``SecretStr`` fields at any depth, and what MCP servers write out in ``headers`` and in
    ``env`` entries named like a secret. A ``${VAR}`` reference is left out.

    Examples:
        >>> from ai_agent.config.backend import ModelBackendSettings
        >>> collect_secrets(ModelBackendSettings(api_key="sk-123456789"), "model_backend")
        {'model_backend.api_key': 'sk-123456789'}
    """
    found: dict[str, str] = {}
    _collect(value, where, found)
    return found


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


def _collect(value: Any, where: str, found: dict[str, str]) -> None:
    """Add the secrets in ``value`` (a settings object or a part of one) to ``found``."""
    if isinstance(value, SecretStr):
        _keep_secret(found, where, value.get_secret_value())
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            _collect(getattr(value, name), f"{where}.{name}" if where else name, found)
        if isinstance(value, McpServerConfig):
            _mcp_secrets(value, where, found)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _collect(item, f"{where}[{index}]", found)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _collect(item, f"{where}.{key}", found)
