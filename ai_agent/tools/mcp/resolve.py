"""A server's configuration made concrete at connect time.

``${VAR}`` expanded, auth turned into a header, and the list of values that must never leave the
process.

Expansion happens when a server is connected, never when the configuration is loaded, so a key
set (or rotated) after the Agent was built is used, and a key is held only by the connection that
needs it. A reference to a variable that is not set (or is empty, unless a ``:-default`` is given)
is an `McpEnvError` naming the variable and where it is used; no message
ever holds a value.

Which values are secrets: everything in ``auth`` and ``headers``, every ``env`` entry whose name
looks secret (KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL...), every variable whose name looks
secret wherever it is used, and the password in the ``url``. They are scrubbed from tool
results, error text and status lines.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ai_agent.config import MCP_ENV_REFERENCE, SECRET_ENV_NAME, McpServerConfig
from ai_agent.config.secrets import url_passwords
from ai_agent.errors import McpConnectError, McpEnvError
from ai_agent.tools.results import Scrubber

__all__ = ["Resolved", "referenced_variables", "resolve"]

_SECRET_NAME = SECRET_ENV_NAME
# Control characters in a header value would break (or inject into) the HTTP request; a key with
# spaces in it is a copy-and-paste accident.
_BAD_KEY = re.compile(r"[\s\x00-\x1f\x7f]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Resolved:
    """What is needed to connect to one server, with ``${VAR}`` expanded.

    Attributes:
        name: The server's name.
        transport: ``stdio``, ``sse`` or ``streamable_http``.
        command: The program (stdio), args, env and cwd.
        url: The endpoint (HTTP) and the headers to send, the auth header included.
        secrets: Values to scrub from everything that leaves the connection.
        secret_env: Names of the environment variables holding secrets (for ToolSpec.secret_env).
    """

    name: str
    transport: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    secret_env: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Resolved(name={self.name!r}, transport={self.transport!r})"

    @property
    def scrubber(self) -> Scrubber:
        """Replaces this server's secret values."""
        return Scrubber(self.secrets)

    @property
    def target(self) -> str:
        """The command line or URL, with secrets scrubbed (fit for messages)."""
        text = " ".join([self.command, *self.args]) if self.command else str(self.url)
        return self.scrubber.text(text)


def referenced_variables(config: McpServerConfig) -> list[str]:
    """Every environment variable the configuration names (``${VAR}``, ``key_env``), in order.

    Examples:
        >>> referenced_variables(McpServerConfig(name="a", url="http://h/${PATH_PART}",
        ...     auth={"key_env": "API_KEY"}))
        ['PATH_PART', 'API_KEY']
    """
    texts = [*config.args, *config.env.values(), config.cwd or "", config.url or ""]
    texts += list(config.headers.values())
    if config.auth is not None and config.auth.key is not None:
        texts.append(config.auth.key.get_secret_value())
    names = [m.group(1) for text in texts for m in MCP_ENV_REFERENCE.finditer(text)]
    if config.auth is not None and config.auth.key_env is not None:
        names.append(config.auth.key_env)
    return list(dict.fromkeys(names))


class _Expander:
    """Expands references for one server, remembering which expansions are secret."""

    def __init__(self, server: str, environ: Mapping[str, str]) -> None:
        self.server = server
        self.environ = environ
        self.secrets: list[str] = []
        self.secret_env: list[str] = []

    def variable(self, name: str, where: str, default: str | None = None) -> str:
        value = self.environ.get(name, "")
        if not value:
            if default is not None:
                return default
            state = "is empty" if name in self.environ else "is not set"
            raise McpEnvError(
                f"MCP server {self.server!r}: the environment variable {name} {state} "
                f"({where} refers to it); set it and try again",
                server=self.server,
                variable=name,
            )
        if _SECRET_NAME.search(name):
            self.keep(value, name)
        return value

    def keep(self, value: str, name: str | None = None) -> None:
        self.secrets.append(value)
        if name is not None and name not in self.secret_env:
            self.secret_env.append(name)

    def text(self, value: str, where: str, *, secret: bool = False) -> str:
        out = MCP_ENV_REFERENCE.sub(lambda m: self.variable(m.group(1), where, m.group(2)), value)
        if secret:
            self.keep(out)
            self.secret_env.extend(
                n
                for n in (m.group(1) for m in MCP_ENV_REFERENCE.finditer(value))
                if n not in self.secret_env
            )
        return out


def _auth_header(config: McpServerConfig, expand: _Expander) -> dict[str, str]:
    auth = config.auth
    if auth is None:
        return {}
    if auth.key_env is not None:
        key = expand.variable(auth.key_env, "auth.key_env")
        expand.keep(key, auth.key_env)
    else:  # the model's validator guarantees key when there is no key_env
        written = auth.key.get_secret_value() if auth.key is not None else ""
        key = expand.text(written, "auth.key", secret=True)
    if _BAD_KEY.search(key):
        raise McpEnvError(
            f"MCP server {config.name!r}: the API key has spaces or control characters around or "
            "in it; check the variable that holds it",
            server=config.name,
            variable=auth.key_env or "auth.key",
        )
    scheme = (
        auth.scheme
        if auth.scheme is not None
        else ("Bearer" if auth.header.lower() == "authorization" else "")
    )
    return {auth.header: f"{scheme} {key}" if scheme else key}


def resolve(config: McpServerConfig, environ: Mapping[str, str] | None = None) -> Resolved:
    """Expand a server's configuration against the environment (now, at connect time).

    Raises:
        McpEnvError: A referenced variable is not set; the message names it, never a value.

    Examples:
        >>> config = McpServerConfig(name="api", url="http://localhost:8080/mcp",
        ...                          auth={"key": "${DEMO_KEY}", "header": "X-API-Key"})
        >>> resolved = resolve(config, {"DEMO_KEY": "k-123456"})
        >>> resolved.headers["X-API-Key"], resolved.scrubber.text("key k-123456")
        ('k-123456', 'key ***')
        >>> resolve(config, {})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ai_agent.errors.McpEnvError: MCP server 'api': the environment variable DEMO_KEY is not...
    """
    environ = os.environ if environ is None else environ
    expand = _Expander(config.name, environ)
    env = {}
    for name, value in config.env.items():
        env[name] = expand.text(value, f"env.{name}", secret=bool(_SECRET_NAME.search(name)))
    headers = {
        name: expand.text(value, f"headers.{name}", secret=True)
        for name, value in config.headers.items()
    }
    for name, value in headers.items():
        if _CONTROL.search(value):
            raise McpEnvError(
                f"MCP server {config.name!r}: the value of header {name} has line breaks or "
                "control characters; check it and the variables it uses",
                server=config.name,
                variable=f"headers.{name}",
            )
    headers.update(_auth_header(config, expand))
    transport = config.transport or "stdio"
    url = expand.text(config.url, "url") if config.url is not None else None
    if url is not None and not url.startswith(("http://", "https://")):
        raise McpConnectError(
            f"MCP server {config.name!r}: url must start with http:// or https:// once its "
            "${...} references are expanded; check the variables it uses",
            server=config.name,
        )
    for password in url_passwords(url or ""):
        # The URL is named in every error and status line: its password (written out, or a
        # ${VAR} whose name does not say it is a secret) is as secret as a key.
        expand.keep(password)
    return Resolved(
        name=config.name,
        transport=transport,
        command=config.command,
        args=tuple(expand.text(a, f"args[{i}]") for i, a in enumerate(config.args)),
        env=env,
        cwd=expand.text(config.cwd, "cwd") if config.cwd is not None else None,
        url=url,
        headers=headers,
        secrets=tuple(dict.fromkeys(s for s in expand.secrets if s)),
        secret_env=tuple(expand.secret_env),
    )
