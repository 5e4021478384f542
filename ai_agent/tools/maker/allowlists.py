"""The allowlists of generated tools: the paths they may be given and the hosts they may reach.

Policy checked by the engine, in Python: `check_relative_path` when a tool's ``allowed_paths``
are validated (a path that passes is then *mounted*, see `ai_agent.tools.maker.confine`), and
the host rules the HTTP broker (`ai_agent.tools.maker.broker`) applies to every request a tool
makes.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from dataclasses import dataclass

__all__ = ["HostRule", "address_ok", "check_relative_path", "host_allowed", "parse_host_rule"]

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)\Z")  # \Z: "$" lets a final newline through


def check_relative_path(value: object) -> str:
    """``value`` as a normalised relative directory, or ValueError saying what is wrong.

    Args:
        value: An ``allowed_paths`` entry.

    Returns:
        The path, relative to the workspace, without ``.`` parts or trailing slashes.

    Raises:
        ValueError: not a string, absolute, climbing out (``..``), the whole workspace, naming a
            hidden entry, or holding a NUL byte or a backslash.

    Examples:
        >>> check_relative_path("reports/2024/")
        'reports/2024'
        >>> check_relative_path("../etc")
        Traceback (most recent call last):
        ...
        ValueError: '../etc' climbs out of the workspace ('..')
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not a path")
    if "\x00" in value or "\\" in value:
        raise ValueError(f"{value!r} contains a NUL byte or a backslash")
    if value.startswith("/") or value.startswith("~"):
        raise ValueError(f"{value!r} is absolute; give a path relative to the workspace")
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"{value!r} climbs out of the workspace ('..')")
    if not parts:
        raise ValueError(
            f"{value!r} is the whole workspace; name a subdirectory (the workspace holds the "
            "engine's own files)"
        )
    hidden = [p for p in parts if p.startswith(".")]
    if hidden:
        raise ValueError(
            f"{value!r} names a hidden entry ({hidden[0]}); hidden directories (.git, .agents, "
            ".env...) are never given to generated tools"
        )
    return posixpath.join(*parts)


@dataclass(frozen=True, slots=True)
class HostRule:
    """One allowlist entry: a host (``*.`` for its subdomains) and an optional port.

    Attributes:
        host: The lower-case host name or address (without ``*.``).
        port: The only port it allows (None: 80 and 443).
        subdomains: True for ``*.host``: subdomains of ``host``, not ``host`` itself.
        literal_ip: True when ``host`` is an address.
    """

    host: str
    port: int | None
    subdomains: bool
    literal_ip: bool

    def matches(self, host: str, port: int) -> bool:
        """Whether the rule covers ``host:port``.

        Args:
            host: A lower-case host name or address.
            port: The port the request goes to.

        Returns:
            True when the host matches (a ``*.`` rule: a subdomain) and so does the port (a
            rule without a port: 80 and 443 only).
        """
        if self.port is None:
            if port not in (80, 443):
                return False
        elif port != self.port:
            return False
        if self.subdomains:
            return host.endswith("." + self.host)
        return host == self.host

    @property
    def private_ok(self) -> bool:
        """A rule that names a literal address or ``localhost`` may reach a private address."""
        return self.literal_ip or self.host == "localhost"


def _check_host(host: str, entry: str) -> bool:
    """True when ``host`` is an IP literal; ValueError when it is neither an IP nor a name."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return True
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise ValueError(f"{entry!r} is not a host name (letters, digits, '-' and dots)")
    if labels[-1].isdigit():
        raise ValueError(f"{entry!r} is not a valid address")
    return False


def parse_host_rule(entry: object) -> HostRule:
    """Parse an allowlist entry (``api.example.com``, ``*.example.com``, ``127.0.0.1:8080``).

    Args:
        entry: One ``allowed_domains`` entry.

    Returns:
        The rule (lower-case host, optional port).

    Raises:
        ValueError: a URL rather than a host, a misplaced wildcard, an invalid name, address or
            port.

    Examples:
        >>> parse_host_rule("*.Example.com").matches("api.example.com", 443)
        True
        >>> parse_host_rule("http://x.com")
        Traceback (most recent call last):
        ...
        ValueError: 'http://x.com' must be a host, not a URL (no scheme, path or user)
    """
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError(f"{entry!r} is not a host")
    text = entry.strip().lower()
    if any(c in text for c in "/@?#") or "://" in text:
        raise ValueError(f"{entry!r} must be a host, not a URL (no scheme, path or user)")
    subdomains = text.startswith("*.")
    if subdomains:
        text = text[2:]
    port: int | None = None
    if text.startswith("["):  # [v6] or [v6]:port
        close = text.find("]")
        host, rest = text[1:close], text[close + 1 :]
        if rest:
            port = _port(rest.removeprefix(":"), entry)
    elif text.count(":") == 1:
        host, _, raw = text.partition(":")
        port = _port(raw, entry)
    else:
        host = text
    if "*" in host:
        raise ValueError(f"{entry!r}: a wildcard may only lead ('*.example.com')")
    literal = _check_host(host, entry)
    if literal and subdomains:
        raise ValueError(f"{entry!r}: '*.' goes with host names, not addresses")
    return HostRule(host=host, port=port, subdomains=subdomains, literal_ip=literal)


def _port(raw: str, entry: object) -> int:
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ValueError(f"{entry!r} has an invalid port")
    return int(raw)


def host_allowed(rules: list[HostRule], host: str, port: int) -> HostRule | None:
    """The first rule that covers ``host:port``.

    Args:
        rules: The parsed allowlist.
        host: The request's host (case and a trailing dot do not matter).
        port: The request's port.

    Returns:
        The rule, or None when no rule covers it.
    """
    host = host.lower().rstrip(".")
    return next((r for r in rules if r.matches(host, port)), None)


def address_ok(address: str, rule: HostRule) -> bool:
    """May a request that matched ``rule`` connect to ``address``?

    A name from the allowlist must resolve to public addresses: a DNS answer pointing at
    loopback, a private network or link-local (cloud metadata at 169.254.169.254) is refused,
    so an allowlisted name cannot be turned against the engine's own network. Rules naming a
    literal address or ``localhost`` reach exactly what they name.

    Args:
        address: An address the host resolved to (or the literal address in the URL).
        rule: The allowlist rule the host matched.

    Returns:
        True when the broker may connect to it.
    """
    ip = ipaddress.ip_address(address)
    if rule.private_ok:
        return True
    return bool(ip.is_global) and not ip.is_multicast
