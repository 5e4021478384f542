r"""Redaction: what the engine stores, prints, logs or puts in spans never carries a credential.

`SecretValues` holds the literal secret values an Agent knows (every ``SecretStr`` setting, the
backend key, MCP header values, the values of the environment variables its tools need) and
masks them wherever they occur: in model text, tool arguments and output, events, the run store
and logs (see docs/security.md, "Secrets"). A `Redactor` masks, in this order:

1. those secret values, always, whatever the settings say: the design's invariant is that no key
   ever reaches a log;
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

import base64
import binascii
import hashlib
import json
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, quote_plus

from ai_agent.url_passwords import CREDENTIAL_QUERY_NAMES, mask_url_passwords

if TYPE_CHECKING:
    from ai_agent.config import LoggingConfig

__all__ = [
    "MASK",
    "MIN_SECRET_CHARS",
    "SENSITIVE_HEADERS",
    "Redactor",
    "SecretValues",
    "StreamMask",
    "cut_body",
    "elide_media",
]

MASK = "***"
SENSITIVE_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
# Shorter values are too likely to occur in ordinary text ("ollama", "true", a word) to be masked
# everywhere: a short "secret" would wreck every answer that mentions it. The configuration warns
# about a secret shorter than this (`SecretValues.too_short`).
MIN_SECRET_CHARS = 8
T = TypeVar("T")
Source = Callable[[], Iterable[str]]

# A name's quotes may be escaped (\"api_key\": \"...\"): JSON inside a JSON string, as a tool
# call's arguments travel in a request body. The value stops at a backslash, so the escape of
# its closing quote stays whole.
_QUOTE = r"""(?:\\?["'])?"""
_AUTH_HEADER = re.compile(
    rf"(?i)\b((?:proxy-)?authorization|x-api-key|api-key)({_QUOTE}\s*[:=]\s*{_QUOTE})"
    r"((?:bearer|basic|token)\s+)?[^\s\"'\\,;}]+"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*")
_QUERY_KEY = re.compile(rf"(?i)([?&;](?:{CREDENTIAL_QUERY_NAMES})=)[^&\s#\"'<>]*")
_KEY_ASSIGNMENT = re.compile(
    r"(?i)(\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
    rf"{_QUOTE}\s*[:=]\s*{_QUOTE})"
    r"[^\s\"'\\,;}&]+"
)


# What other JSON encoders escape that Python's does not: Go's encoding/json (Ollama, many
# proxies) writes & < > as \u0026 \u003c \u003e (some encoders with upper-case hex), PHP and
# some Java encoders write / as \/.
_HTML_SAFE = (
    {"&": r"\u0026", "<": r"\u003c", ">": r"\u003e"},
    {"&": r"\u0026", "<": r"\u003C", ">": r"\u003E"},
)
_SLASH = {"/": r"\/"}


def _json_forms(text: str) -> set[str]:
    r"""``text`` as it sits inside a JSON string, as the encoders servers use write it.

    With and without escapes of non-ASCII characters, HTML-safe (``&<>`` as ``\u`` escapes)
    and with ``/`` escaped, alone and together. Only the characters ``text`` holds are tried,
    so a key without any of them has the two forms of Python's encoder.
    """
    forms = {json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}
    tables: list[dict[str, str]] = []
    if any(c in text for c in "&<>"):
        tables += _HTML_SAFE
    if "/" in text:
        tables += [_SLASH, *(table | _SLASH for table in tables)]
    return forms | {"".join(t.get(c, c) for c in form) for form in forms for t in tables}


def _forms(value: str) -> set[str]:
    r"""The ways ``value`` shows up in text the engine handles.

    The value itself in both Unicode normal forms, as it sits inside a JSON string (as Python's
    and other servers' encoders write it, see `_json_forms`), one JSON level deeper (a tool
    call's arguments are a JSON string inside the server's reply, a tool's JSON may hold JSON as
    a string: a ``"``, a ``\`` or a ``\u`` escape is escaped again there) and percent-encoded
    (a URL path or query). Base64, hex, a changed case or a value cut in parts are not among them.
    """
    forms: set[str] = set()
    for text in {value, unicodedata.normalize("NFC", value), unicodedata.normalize("NFD", value)}:
        in_json = _json_forms(text)
        forms |= {
            text,
            *in_json,
            *(_json_string(form) for form in in_json if "\\" in form or '"' in form),
            quote(text, safe=""),
            quote(text),
            quote_plus(text),
        }
    return forms


def _json_string(text: str) -> str:
    r"""``text`` inside a JSON string, as Python writes it (an escape in it is escaped again).

    Examples:
        >>> print(_json_string(r'pw\"1\u00fc'))
        pw\\\"1\\u00fc
    """
    return json.dumps(text)[1:-1]


def _spans(text: str, forms: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where any form occurs in ``text``: sorted, overlapping occurrences merged into one span.

    Every occurrence counts, overlapping ones too, so two secrets that share characters in the
    text are masked whole (a leftmost-first regex would leave the tail of the second). ``forms``
    are sorted longest first.
    """
    if not forms or len(text) < len(forms[-1]):
        return []
    found = []
    for form in forms:
        if form not in text:  # the common case, and the cheapest test
            continue
        start = text.find(form)
        while start >= 0:
            found.append((start, start + len(form)))
            start = text.find(form, start + 1)
    if not found:
        return found
    found.sort()
    merged: list[tuple[int, int]] = []
    for start, end in found:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span replaced by the mask (``text`` itself when there is none)."""
    if not spans:
        return text
    out, at = [], 0
    for start, end in spans:
        out += [text[at:start], MASK]
        at = end
    out.append(text[at:])
    return "".join(out)


def _scrub(value: Any, forms: tuple[str, ...]) -> Any:
    """``value`` with every form masked in its strings (keys too); unchanged parts are reused.

    Nothing is copied until something changes: scrubbing clean data (a run's every state update
    and event) allocates nothing.
    """
    if isinstance(value, str):
        if len(value) < len(forms[-1]):  # most keys and words: too short to hold a secret
            return value
        return _masked(value, _spans(value, forms))
    if isinstance(value, dict):
        return _scrub_dict(value, forms)
    if isinstance(value, list | tuple):
        items: list[Any] | None = None
        for index, item in enumerate(value):
            new = _scrub(item, forms)
            if items is None and new is not item:
                items = list(value[:index])
            if items is not None:
                items.append(new)
        if items is None:
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


def _scrub_dict(value: dict[Any, Any], forms: tuple[str, ...]) -> dict[Any, Any]:
    out: dict[Any, Any] | None = None
    for index, (key, item) in enumerate(value.items()):
        new_key, new_item = _scrub(key, forms), _scrub(item, forms)
        if out is None and (new_key is not key or new_item is not item):
            out = dict(list(value.items())[:index])
        if out is not None:
            out[new_key] = new_item
    return value if out is None else out


class SecretValues:
    """Literal secret values, masked as ``***`` wherever they occur in text or JSON data.

    Values shorter than `MIN_SECRET_CHARS` are ignored. Besides the values added, ``sources``
    (functions returning values) are asked at every `refresh`, so a key exported after the Agent
    was built, or an MCP header resolved when its server connects, is masked from the next
    refresh on. Reading them costs more than masking (the environment is read whole), so the
    Agent refreshes where new data comes in: at the start of a run or resume, after every model
    reply and after every tool call.

    Args:
        values: Values known now.
        sources: Functions giving more values, asked at each refresh.

    Examples:
        >>> values = SecretValues(["sk-canary-1234"])
        >>> values.text('{"key": "sk-canary-1234"} short')
        '{"key": "***"} short'
        >>> values.scrub({"args": ["x sk-canary-1234 y"], "n": 1})
        {'args': ['x *** y'], 'n': 1}
    """

    def __init__(self, values: Iterable[str | None] = (), *, sources: Iterable[Source] = ()):
        self._lock = threading.Lock()
        self._values: tuple[str, ...] = ()
        self._sources: tuple[Source, ...] = tuple(sources)
        # The values as of the last refresh and their masked forms (None: refresh at next use).
        self._cached: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        for value in values:
            self.add(value)

    @staticmethod
    def too_short(value: str) -> bool:
        """True when ``value`` is too short to be masked (see `MIN_SECRET_CHARS`)."""
        return len(value) < MIN_SECRET_CHARS

    def add(self, value: str | None) -> bool:
        """Mask ``value`` from now on; False when it is empty or too short to mask."""
        if not value or self.too_short(value):
            return False
        with self._lock:
            if value not in self._values:
                self._values = (*self._values, value)
                self._cached = None
        return True

    def add_source(self, source: Source) -> None:
        """Ask ``source`` for more values at every refresh (and now)."""
        with self._lock:
            self._sources = (*self._sources, source)
            self._cached = None

    def refresh(self) -> None:
        """Ask the sources again; their values are masked from now on."""
        found = set(self._values)
        for source in self._sources:
            found.update(v for v in source() if v and not self.too_short(v))
        values = tuple(sorted(found, key=lambda v: (-len(v), v)))
        cached = self._cached
        if cached is None or cached[0] != values:
            forms = {form for value in values for form in _forms(value)}
            self._cached = (values, tuple(sorted(forms, key=lambda f: (-len(f), f))))

    def _current(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        cached = self._cached
        if cached is None:
            self.refresh()
            cached = self._cached
        assert cached is not None  # refresh always sets it
        return cached

    def values(self) -> tuple[str, ...]:
        """Every value masked now, longest first."""
        return self._current()[0]

    def _forms(self) -> tuple[str, ...]:
        return self._current()[1]

    def __bool__(self) -> bool:
        return bool(self.values())

    def extended(self, values: Iterable[str]) -> SecretValues:
        """These values and ``values`` (itself when it already masks them all)."""
        known = set(self.values())
        wanted = [v for v in values if v and not self.too_short(v) and v not in known]
        if not wanted:
            return self
        return SecretValues(wanted, sources=[self.values])

    def text(self, text: str) -> str:
        """``text`` with every secret value masked."""
        forms = self._forms() if text else ()
        return _masked(text, _spans(text, forms)) if forms else text

    def cut_text(self, text: str) -> str:
        """``text`` masked, when its end was cut off: a tail that may begin a secret is masked too.

        Examples:
            >>> SecretValues(["sk-canary-1234"]).cut_text("the key is sk-can")
            'the key is ***'
        """
        forms = self._forms() if text else ()
        cut = _secret_start(text, forms) if forms else len(text)
        return self.text(text[:cut]) + (MASK if cut < len(text) else "")

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where secrets lie in ``text``: sorted, overlapping ones merged (for text in pieces)."""
        forms = self._forms() if text else ()
        return _spans(text, forms) if forms else []

    def scrub(self, value: T) -> T:
        """A JSON-like value with every secret masked in its strings and keys.

        What has nothing to mask is returned as it is (the same objects), so scrubbing clean
        data costs no copies.
        """
        forms = self._forms()
        return _scrub(value, forms) if forms else value

    def stream(self) -> StreamMask:
        """A mask for text that arrives in pieces (token deltas, live tool output)."""
        return StreamMask(self)


class StreamMask:
    """Masks secrets in a text that arrives in chunks, whatever the cuts.

    A chunk's text goes out at once, except a tail that could be the start of a secret: that is
    held until the next chunk shows whether the secret follows (then it goes out masked), or
    until `flush` at the end of the stream.

    Examples:
        >>> stream = SecretValues(["sk-canary-1234"]).stream()
        >>> stream.feed("the key is sk-can"), stream.feed("ary-1234."), stream.flush()
        ('the key is ', '***.', '')
    """

    def __init__(self, values: SecretValues) -> None:
        self.values = values
        self._held = ""

    def feed(self, chunk: str) -> str:
        """The text that may go out now (masked), holding back what could start a secret."""
        text = self._held + chunk
        forms = self.values._forms()
        spans = _spans(text, forms)
        cut = _secret_start(text, forms)
        for start, end in spans:
            if start < cut < end:  # a whole secret spans the cut: hold it all
                cut = start
                break
        self._held = text[cut:]
        return _masked(text[:cut], [s for s in spans if s[1] <= cut])

    def flush(self) -> str:
        """The end of the stream: what was held, masked."""
        text, self._held = self._held, ""
        return self.values.text(text)


def _secret_start(text: str, forms: tuple[str, ...]) -> int:
    """Where the tail of ``text`` that could begin a secret starts (``len(text)``: nowhere)."""
    longest = max((len(f) for f in forms), default=0)
    for at in range(max(0, len(text) - longest + 1), len(text)):
        tail = text[at:]
        if any(len(f) > len(tail) and f.startswith(tail) for f in forms):
            return at
    return len(text)


class Redactor:
    """Masks credentials and sensitive patterns in text; callable on a string.

    Args:
        authorization: Mask authorization headers and bearer tokens.
        api_keys: Mask credentials in query strings and ``api_key`` assignments.
        patterns: Regular expressions whose every match is masked.
        secrets: Literal values always masked (API keys): values, or a `SecretValues` to
            share (the Agent's, which learns more values as it goes).
    """

    def __init__(
        self,
        *,
        authorization: bool = True,
        api_keys: bool = True,
        patterns: Iterable[str | re.Pattern[str]] = (),
        secrets: Iterable[str] | SecretValues = (),
    ) -> None:
        self.authorization = authorization
        self.api_keys = api_keys
        self.patterns = tuple(re.compile(p) if isinstance(p, str) else p for p in patterns)
        self.secrets = secrets if isinstance(secrets, SecretValues) else SecretValues(secrets)

    @classmethod
    def from_config(
        cls, config: LoggingConfig | None = None, secrets: Iterable[str] | SecretValues = ()
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
        self.secrets.add(value)

    def with_secrets(self, secrets: Iterable[str]) -> Redactor:
        """This redactor, also masking ``secrets`` (itself when it already knows them all)."""
        values = self.secrets.extended(secrets)
        if values is self.secrets:
            return self
        return Redactor(
            authorization=self.authorization,
            api_keys=self.api_keys,
            patterns=self.patterns,
            secrets=values,
        )

    def __call__(self, text: str) -> str:
        """``text`` with every credential and sensitive match replaced by ``***``."""
        if not text:
            return text
        text = self.secrets.text(text)
        if self.authorization:
            text = _AUTH_HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3] or ''}{MASK}", text)
            text = _BEARER.sub(lambda m: f"{m[1]} {MASK}", text)
        if self.api_keys:
            text = _QUERY_KEY.sub(lambda m: m[1] + MASK, text)
            text = _KEY_ASSIGNMENT.sub(lambda m: m[1] + MASK, text)
            text = mask_url_passwords(text, MASK)
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


# A run of base64 this long in a logged body is an image or audio clip (or another blob): logs
# show its size and digest, never the bytes (shorter runs, ids and hashes, stay as they are).
_BLOB = re.compile(r"[A-Za-z0-9+/]{256,}={0,2}")


def elide_media(text: str) -> str:
    """``text`` with every long base64 run (an image's data URL...) as its size and digest.

    Examples:
        >>> elide_media('{"url": "data:image/png;base64,' + "A" * 400 + '"}')
        '{"url": "data:image/png;base64,<base64: 300 bytes, sha256 d13d4a8b3b8a>"}'
    """

    def short(match: re.Match[str]) -> str:
        try:
            raw = base64.b64decode(match[0], validate=True)
        except (binascii.Error, ValueError):
            return match[0]
        return f"<base64: {len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()[:12]}>"

    return _BLOB.sub(short, text)
