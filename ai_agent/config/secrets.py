"""Finding every secret a settings object holds, so the Agent can mask it wherever it writes."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, SecretStr

from ai_agent.config.mcp import MCP_ENV_REFERENCE, SECRET_ENV_NAME, McpServerConfig
from ai_agent.url_passwords import CREDENTIAL_QUERY_NAMES

__all__ = ["collect_secrets", "url_passwords"]


def collect_secrets(value: Any, where: str = "") -> dict[str, str]:
    """The secrets in ``value`` (settings or a part of them) by the dotted name of their place.

    ``SecretStr`` fields at any depth, what MCP servers write out in ``headers`` and in
    ``env`` entries named like a secret, and the password of any URL in a plain text setting
    (``model_backend.base_url``, an MCP server's ``url``). A ``${VAR}`` reference is left out.

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


def _keep_url_password(found: dict[str, str], where: str, text: str) -> None:
    """The password in a URL (``https://user:pw@host/v1``) or a key in its query, kept as secrets.

    A URL in a plain text setting may carry one (``?api-key=...``): it is as secret as an API
    key, and the server's URL is named in errors, events and what the run store keeps.
    """
    if "://" not in text or ("@" not in text and "=" not in text):  # without parsing
        return
    for index, password in enumerate(sorted(url_passwords(text.strip(), credentials=True))):
        _keep_secret(found, f"{where}.password" + (f"[{index}]" if index else ""), password)


# Query parameters that carry a credential (``?api-key=...``): the names the log redactor masks.
_CREDENTIAL_QUERY = re.compile(f"(?i){CREDENTIAL_QUERY_NAMES}")


def url_passwords(url: str, *, credentials: bool = False) -> set[str]:
    """The password a URL holds, in its user info or a ``password=`` query, as written and decoded.

    libpq reads a ``password=`` query parameter too, and a password holding ``/``, ``@`` or
    ``:`` is percent-encoded in a URL: the client sends it decoded, and that is how an error
    message or a model would write it. Both forms are secrets. With ``credentials``, the values
    of the query's other credential parameters too (``api-key``, ``key``, ``token``, ``sig``...):
    some servers take the key in the URL (``https://host/v1?api-key=...``), and the URL is named
    in every "cannot reach" error.

    Examples:
        >>> sorted(url_passwords("https://h/v1?api-version=2&api-key=k%2B1", credentials=True))
        ['k%2B1', 'k+1']
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # not a URL after all (an unbalanced "[" in the host)
        return set()
    wanted = _CREDENTIAL_QUERY if credentials else re.compile("(?i)password")
    # Each value as written in the URL; its decoded forms are added below.
    pairs = (item.split("=", 1) for item in re.split("[&;]", parts.query) if "=" in item)
    query = [value for name, value in pairs if wanted.fullmatch(urllib.parse.unquote_plus(name))]
    forms = {form for p in [parts.password or "", *query] for form in (p, urllib.parse.unquote(p))}
    # A query's "+" is a space to the server that reads it.
    forms.update(urllib.parse.unquote_plus(value) for value in query)
    return forms - {""}


def _collect(value: Any, where: str, found: dict[str, str]) -> None:
    """Add the secrets in ``value`` (a settings object or a part of one) to ``found``."""
    if isinstance(value, SecretStr):
        _keep_secret(found, where, value.get_secret_value())
    elif isinstance(value, str):
        _keep_url_password(found, where, value)
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
