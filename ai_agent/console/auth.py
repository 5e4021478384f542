"""Who may use the console: a secret token, a session cookie, CSRF tokens and the Host header.

The console answers gates: whoever reaches it can approve a command. So every request needs the
token the console printed in its URL (``/?token=...``). The first visit with the token sets a
session cookie (HttpOnly, SameSite=Strict) and redirects to the same page without the token, so
the token stays out of the browser's history and of Referer headers; later requests carry the
cookie. Anything else gets 403.

Every state-changing request (a POST) must also carry the session's CSRF token in its form
(``csrf``), and an Origin header on any request, when the browser sends one, must be the
console's own (a cross-origin read of a page or of the event stream is refused too). The
Host header must name the address the console listens on (with a loopback bind: ``127.0.0.1``,
``localhost`` or ``[::1]`` with its port), which stops DNS rebinding: a page on another site
whose name is made to resolve to 127.0.0.1 sends its own name as the Host.

The session and CSRF values are HMACs of the token, so they are as hard to guess as the token
and a process restart with a new token invalidates them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["COOKIE", "Access", "hosts_for", "is_loopback", "new_token"]

COOKIE = "ai_agent_console"
"""The session cookie's name."""

MIN_TOKEN_CHARS = 16
"""A configured token shorter than this is refused: it could be guessed."""


def new_token() -> str:
    """A fresh random token (32 bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


def _mac(key: str, purpose: str) -> str:
    return hmac.new(key.encode(), purpose.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Access:
    """The console's credentials and the hosts it answers to.

    Args:
        token: The secret in the printed URL.
        hosts: The Host header values accepted (``127.0.0.1:8765``, ``localhost:8765``...).

    Examples:
        >>> access = Access("a" * 32, hosts=frozenset({"127.0.0.1:8765"}))
        >>> access.session_ok(access.session), access.session_ok("forged")
        (True, False)
        >>> access.csrf_ok(access.csrf), access.host_ok("evil.example:8765")
        (True, False)
    """

    token: str
    hosts: frozenset[str] = field(default_factory=frozenset)

    @property
    def session(self) -> str:
        """The session cookie's value."""
        return _mac(self.token, "session")

    @property
    def csrf(self) -> str:
        """The CSRF token forms carry."""
        return _mac(self.token, "csrf")

    def token_ok(self, value: str | None) -> bool:
        """Whether ``value`` is the console's token."""
        return value is not None and hmac.compare_digest(value.encode(), self.token.encode())

    def session_ok(self, value: str | None) -> bool:
        """Whether ``value`` is the session cookie's value."""
        return value is not None and hmac.compare_digest(value.encode(), self.session.encode())

    def csrf_ok(self, value: str | None) -> bool:
        """Whether ``value`` is the CSRF token."""
        return value is not None and hmac.compare_digest(value.encode(), self.csrf.encode())

    def host_ok(self, host: str | None) -> bool:
        """Whether a request's Host header names this console (any host when none are set)."""
        return not self.hosts or (host is not None and host.lower() in self.hosts)

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        """Whether an Origin header (absent, or ``http://HOST``) is the page's own host."""
        if origin is None:
            return True
        netloc = urlsplit(origin).netloc.lower()
        return bool(netloc) and host is not None and netloc == host.lower()


def hosts_for(host: str, port: int) -> frozenset[str]:
    """The Host header values a console bound to ``host:port`` answers to.

    A loopback bind answers to the loopback names only (DNS rebinding sends another name). A
    console bound to another address is reached by names it cannot know (its addresses, its
    DNS names): it answers to any, and the token and the Origin check stand alone.

    Examples:
        >>> sorted(hosts_for("127.0.0.1", 8765))
        ['127.0.0.1:8765', '[::1]:8765', 'localhost:8765']
        >>> hosts_for("0.0.0.0", 80)
        frozenset()
    """
    if not is_loopback(host):
        return frozenset()
    names = {host, "127.0.0.1", "localhost", "[::1]"}
    return frozenset(f"{_bracketed(n).lower()}:{port}" for n in names)


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or name.

    Examples:
        >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    return host in ("localhost", "::1", "[::1]") or host.startswith("127.")
