r"""Redaction: what the engine logs, and puts in spans, never carries a credential.

A `Redactor` masks, in this order:

1. the secret values the engine knows (the configured API key, the local server's key), always,
   whatever the settings say: the design's invariant is that no key ever reaches a log;
2. with ``redact_authorization``: the values of ``Authorization``, ``Proxy-Authorization``,
   ``X-Api-Key`` and ``Api-Key`` headers, in any form (``Authorization: Bearer x``,
   ``{"authorization": "x"}``), and any ``Bearer <token>``;
3. with ``redact_api_keys``: credentials in query strings (``?api_key=``, ``&key=``, ``token=``,
   ``access_token=``, ``sig=``...), ``api_key`` / ``access_token`` assignments anywhere, and the
   password of a URL (``postgresql://user:***@host/db``);
4. every match of the user's ``sensitive_patterns`` (the whole match is masked).

Examples:
    >>> redact = Redactor(patterns=[r"password=\S+"], secrets=["sk-canary-1234"])
    >>> redact("GET /v1/models?api_key=abc&limit=5 Authorization: Bearer xyz")
    'GET /v1/models?api_key=***&limit=5 Authorization: Bearer ***'
    >>> redact("key sk-canary-1234 and password=hunter2")
    'key *** and ***'
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ai_agent.config import LoggingConfig

__all__ = ["MASK", "SENSITIVE_HEADERS", "Redactor", "cut_body"]

MASK = "***"
SENSITIVE_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
# Shorter values are too likely to occur by chance in ordinary text to be worth masking.
_MIN_SECRET = 4

_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key)(\"?'?\s*[:=]\s*\"?'?)"
    r"((?:bearer|basic|token)\s+)?[^\s\"',;}]+"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*")
_QUERY_KEY = re.compile(
    r"(?i)([?&;](?:api[_-]?key|key|token|access[_-]?token|auth[_-]?token|refresh[_-]?token"
    r"|client[_-]?secret|secret|password|sig|signature)=)[^&\s#\"'<>]*"
)
_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+(@)")
_KEY_ASSIGNMENT = re.compile(
    r"(?i)(\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)\"?'?\s*[:=]\s*\"?'?)"
    r"[^\s\"',;}&]+"
)


class Redactor:
    """Masks credentials and sensitive patterns in text; callable on a string.

    Args:
        authorization: Mask authorization headers and bearer tokens.
        api_keys: Mask credentials in query strings and ``api_key`` assignments.
        patterns: Regular expressions whose every match is masked.
        secrets: Literal values always masked (API keys).
    """

    def __init__(
        self,
        *,
        authorization: bool = True,
        api_keys: bool = True,
        patterns: Iterable[str | re.Pattern[str]] = (),
        secrets: Iterable[str] = (),
    ) -> None:
        self.authorization = authorization
        self.api_keys = api_keys
        self.patterns = tuple(re.compile(p) if isinstance(p, str) else p for p in patterns)
        self._lock = threading.Lock()
        self._secrets: tuple[str, ...] = ()
        self._secret_re: re.Pattern[str] | None = None
        for secret in secrets:
            self.add_secret(secret)

    @classmethod
    def from_config(
        cls, config: LoggingConfig | None = None, secrets: Iterable[str] = ()
    ) -> Redactor:
        """A redactor following ``LoggingConfig`` (the defaults when None), with ``secrets``."""
        if config is None:
            return cls(secrets=secrets, patterns=(r"password=\S+", r"secret=\S+"))
        return cls(
            authorization=config.redact_authorization,
            api_keys=config.redact_api_keys,
            patterns=config.sensitive_patterns,
            secrets=secrets,
        )

    def add_secret(self, value: str | None) -> None:
        """Always mask ``value`` from now on (an API key learnt after start-up)."""
        if not value or len(value) < _MIN_SECRET or value in self._secrets:
            return
        with self._lock:
            # Longest first, so a secret that contains another is masked whole.
            self._secrets = tuple(sorted({*self._secrets, value}, key=len, reverse=True))
            self._secret_re = re.compile("|".join(re.escape(s) for s in self._secrets))

    def with_secrets(self, secrets: Iterable[str]) -> Redactor:
        """This redactor, also masking ``secrets`` (itself when it already knows them all)."""
        wanted = [s for s in secrets if s and len(s) >= _MIN_SECRET and s not in self._secrets]
        if not wanted:
            return self
        other = Redactor(
            authorization=self.authorization, api_keys=self.api_keys, patterns=self.patterns
        )
        for secret in (*self._secrets, *wanted):
            other.add_secret(secret)
        return other

    def __call__(self, text: str) -> str:
        """``text`` with every credential and sensitive match replaced by ``***``."""
        if not text:
            return text
        secret_re = self._secret_re
        if secret_re is not None:
            text = secret_re.sub(MASK, text)
        if self.authorization:
            text = _AUTH_HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3] or ''}{MASK}", text)
            text = _BEARER.sub(lambda m: f"{m[1]} {MASK}", text)
        if self.api_keys:
            text = _QUERY_KEY.sub(lambda m: m[1] + MASK, text)
            text = _KEY_ASSIGNMENT.sub(lambda m: m[1] + MASK, text)
            text = _URL_PASSWORD.sub(lambda m: f"{m[1]}{MASK}{m[2]}", text)
        for pattern in self.patterns:
            text = pattern.sub(MASK, text)
        return text

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string in it redacted (keys included), as a copy.

        Examples:
            >>> Redactor().value({"url": "/x?token=abc", "n": [1, "Bearer t"]})
            {'url': '/x?token=***', 'n': [1, 'Bearer ***']}
        """
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {self(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def headers(self, headers: Iterable[tuple[str, str]] | Mapping[str, str]) -> dict[str, str]:
        """HTTP headers fit to log: sensitive ones masked (when so configured), all redacted.

        Examples:
            >>> Redactor().headers({"Authorization": "Bearer sk-1", "Accept": "*/*"})
            {'Authorization': '***', 'Accept': '*/*'}
        """
        items = headers.items() if isinstance(headers, Mapping) else headers
        out: dict[str, str] = {}
        for name, value in items:
            masked = self.authorization and name.lower() in SENSITIVE_HEADERS
            out[name] = MASK if masked else self(value)
        return out


def cut_body(text: str, limit: int, total: int | None = None) -> str:
    """``text`` cut to ``limit`` bytes of UTF-8, saying how long the whole was.

    Args:
        text: The (redacted) body, or its start.
        limit: Bytes to show at most.
        total: The whole body's size in bytes, when ``text`` is only its start.

    Examples:
        >>> cut_body("héllo world", 6)
        'héllo... (12 bytes in all)'
        >>> cut_body("short", 100)
        'short'
    """
    raw = text.encode()
    size = max(len(raw), total or 0)
    if size <= limit:
        return text
    return raw[:limit].decode(errors="ignore") + f"... ({size} bytes in all)"
