r"""Untrusted text made visible: what a person reads is what the text holds.

A model writes commands, answers and tool arguments; tools and MCP servers write outputs, names
and descriptions. Printed raw, such text can drive the terminal: ``ESC [2K`` and a carriage
return erase what came before, so ``echo hello\x1b[2K\r rm -rf victim`` shows as ``rm -rf
victim`` or, cleverer, as ``echo hello``; a right-to-left override (U+202E) reverses what
follows; zero-width and tag characters add bytes nobody sees. `visible` renders every such
character as an escape (``\x1b``, ``\r``, ``\u202e``) and leaves the rest of the text alone.

What counts as hidden (`hidden`): control characters (C0 but for the layout the mode keeps,
DEL, C1), format characters (bidi embeddings, overrides, isolates and marks, zero-width
characters, the soft hyphen, tags), lone surrogates, the line and paragraph separators, and the
other default-ignorable code points (Hangul fillers, variation selectors...), which render as
nothing. Ordinary spaces of other scripts (no-break, ideographic) show as spaces and stay.

Three modes, for the three kinds of place text is shown in:

======  =============================================================================
line    one line: a table cell, a name, a status line, a log record. Everything hidden
        is escaped, newlines and tabs too, so no line can pose as another.
lines   exact text over several lines: a gate prompt, a preview, an error. Real
        newlines stay line breaks; tabs, CR and every zero-width character are escaped.
text    prose and output: an answer, a tool's output, generated code. Newlines and tabs
        stay, and so do the joiners (ZWJ, ZWNJ) and emoji presentation selectors that
        Persian, Indic scripts and emoji need (they join glyphs; they cannot move, erase
        or hide any).
======  =============================================================================

Nothing can be hidden in what `visible` returns, because it is injective: distinct texts give
distinct results. An escape starts with a backslash, so a backslash typed in the text is doubled
wherever it would otherwise read as the start of one (``echo \x1b`` typed shows as ``echo
\\x1b``; a real ESC shows as ``echo \x1b``). Other backslashes (``C:\Users``, ``\d+``) stay as
typed, so paths, regexes and code in answers read as written.

Apply it once, where text leaves for a terminal, a page or a log line, never to stored data: the
escaping of text already escaped doubles its backslashes. JSON output needs none of this (JSON
has its own escapes): `json_visible` only makes sure the hidden characters that ``json.dumps``
leaves raw (DEL, C1, bidi...) are written as JSON escapes, the same value for any JSON reader.

Examples:
    >>> print(visible("echo hello\x1b[2K\r rm -rf victim"))
    echo hello\x1b[2K\r rm -rf victim
    >>> print(visible("total: \u202e01$ ,ecnalab"))
    total: \u202e01$ ,ecnalab
    >>> print(visible(r"typed \x1b") + " / " + visible("real \x1b"))
    typed \\x1b / real \x1b
    >>> visible("line one\n\tline two\r", "text")
    'line one\n\tline two\\r'
    >>> stream = VisibleStream("text")
    >>> stream.feed("abc\\") + stream.feed("\x07") + stream.flush()
    'abc\\\\\\x07'
    >>> json_visible('{"a": "\u202e"}')
    '{"a": "\\u202e"}'
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from typing import Literal, get_args

__all__ = [
    "MODES",
    "Mode",
    "VisibleStream",
    "escape_hidden",
    "hidden",
    "json_visible",
    "link_target",
    "visible",
]

Mode = Literal["line", "lines", "text"]
MODES: tuple[Mode, ...] = get_args(Mode)

# Control, format, surrogate, line and paragraph separator.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties) outside those categories too:
# they render as nothing (Hangul fillers, variation selectors, reserved ignorables).
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_KEEP: dict[Mode, frozenset[str]] = {
    "line": frozenset(),
    "lines": frozenset("\n"),
    "text": frozenset("\n\t\u200c\u200d\ufe0e\ufe0f"),
}
_SHORT = {"\t": "t", "\n": "n", "\r": "r"}
# What may follow a backslash in an escape of each mode (the short ones only for characters the
# mode escapes): a typed backslash before such text is doubled, so it never reads as an escape.
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_HEX = "|".join(f"{letter}[0-9a-fA-F]{{{n}}}" for letter, n in _HEX_DIGITS.items())
_ESCAPE_BODY = {
    mode: re.compile(_HEX + "|[" + "".join(v for k, v in _SHORT.items() if k not in keep) + "]")
    for mode, keep in _KEEP.items()
}


def _outside(kept: str) -> str:
    """A pattern for runs of what is neither printable ASCII nor the ASCII layout ``kept``."""
    return rf"[^\x20-\x7e{kept}]+"


# Per mode, runs of backslashes and runs of what needs a look: the rest is copied as it is.
_SPECIAL = {
    mode: re.compile(r"\\+|" + _outside("".join(sorted(c for c in keep if c.isascii()))))
    for mode, keep in _KEEP.items()
}
_NET = re.compile(_outside("\t\n"))
_JSON_SPECIAL = re.compile(_outside("\n"))


def hidden(char: str) -> bool:
    """Whether a terminal would act on ``char`` or show nothing for it (see the module)."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES or bool(_IGNORABLE.match(char))


@functools.lru_cache(maxsize=4096)
def _shown(char: str, keep: frozenset[str]) -> str:
    """One character as shown: itself, or its escape (cached: text repeats its characters)."""
    return char if char in keep or not hidden(char) else _escape(char)


def _escape(char: str) -> str:
    code = ord(char)
    if char in _SHORT:
        return "\\" + _SHORT[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _plain(run: str) -> bool:
    """Whether a run hides nothing (the common case: letters of other scripts, emoji)."""
    return run.isprintable() and not _IGNORABLE.search(run)


def _run(run: str, keep: frozenset[str]) -> str:
    """A run of characters outside printable ASCII, with its hidden ones escaped."""
    if _plain(run):
        return run
    return "".join([_shown(c, keep) for c in run])


def _starts_escape(text: str, at: int, mode: Mode) -> bool:
    """Whether what ``visible`` shows from ``at`` on starts like the body of an escape."""
    if at >= len(text):
        return False
    first = text[at]
    return (first not in _KEEP[mode] and hidden(first)) or bool(_ESCAPE_BODY[mode].match(text, at))


def visible(text: str, mode: Mode = "line") -> str:
    """``text`` with every hidden character shown as an escape (see the module for the modes).

    Args:
        text: Untrusted text (from a model, a tool, a server, a stored run).
        mode: ``"line"`` (one line: escape newlines too), ``"lines"`` (exact text, real
            newlines kept) or ``"text"`` (prose and output: newlines, tabs and joiners kept).

    Returns:
        Text without control, bidi or invisible characters (but those ``mode`` keeps), from
        which the original can be read back exactly.

    Raises:
        ValueError: ``mode`` is not one of `MODES`.
    """
    if mode not in _KEEP:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    keep, out, last = _KEEP[mode], [], 0
    for match in _SPECIAL[mode].finditer(text):
        out.append(text[last : match.start()])
        run = match.group()
        if run[0] == "\\":
            out.append(run * 2 if _starts_escape(text, match.end(), mode) else run)
        else:
            out.append(_run(run, keep))
        last = match.end()
    out.append(text[last:])
    return "".join(out)


def escape_hidden(text: str) -> str:
    r"""Only the hidden characters of ``text`` escaped (``text`` mode's layout kept).

    The net under `visible` at an output stream: a character that reaches the stream still
    hidden (from a path that did not render its text) is escaped; backslashes are left alone,
    so text `visible` already rendered passes unchanged. Unlike `visible` it is not injective
    (a typed ``\x1b`` and a real ESC look the same): use it as the last line of defence only.

    Examples:
        >>> print(escape_hidden("typed \\x1b, real \x1b; " + visible("typed \\x1b, real \x1b")))
        typed \x1b, real \x1b; typed \\x1b, real \x1b
    """
    return _NET.sub(lambda m: _run(m.group(), _KEEP["text"]), text)


class VisibleStream:
    """`visible` over text that arrives in pieces (a streamed answer, live tool output).

    Each piece is shown as soon as it can be: only a backslash run near the end of what has
    arrived waits, because whether it is doubled depends on what comes next. What all the
    pieces show, with `flush` at the end, is exactly what `visible` shows for the whole text.
    """

    def __init__(self, mode: Mode = "text") -> None:
        if mode not in _KEEP:
            raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
        self.mode: Mode = mode
        self._held = ""

    def feed(self, piece: str) -> str:
        """What can be shown of the text so far; the rest waits for the next piece."""
        text = self._held + piece
        cut = _settled(text)
        self._held = text[cut:]
        return visible(text[:cut], self.mode)

    def flush(self) -> str:
        """The rest, at the end of the stream."""
        text, self._held = self._held, ""
        return visible(text, self.mode)


def _settled(text: str) -> int:
    """How much of ``text`` no later piece can change.

    All but a last backslash run whose doubling the characters after it do not decide yet. An
    earlier run is settled: the backslash of the later one already decides whether an escape
    body follows it (no escape body holds a backslash).
    """
    last = text.rfind("\\")
    if last < 0 or _decided(text[last + 1 :]):
        return len(text)
    start = last
    while start > 0 and text[start - 1] == "\\":
        start -= 1
    return start


def _decided(after: str) -> bool:
    """Whether ``after`` (what follows a backslash run so far) decides if an escape body starts.

    One character does, unless it is ``x``, ``u`` or ``U``: then enough hex digits, or one
    character that is not a hex digit, do.
    """
    if not after:
        return False
    digits = _HEX_DIGITS.get(after[0])
    if digits is None:
        return True
    following = after[1 : digits + 1]
    return len(following) == digits or not all(c in string.hexdigits for c in following)


def _json_run(match: re.Match[str]) -> str:
    run = match.group()
    return run if _plain(run) else "".join(_json_escape(c) if hidden(c) else c for c in run)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells a code point above the BMP as a UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_visible(encoded: str) -> str:
    r"""A JSON document with its hidden characters written as JSON escapes.

    The same value for any JSON reader, and nothing a terminal acts on. ``json.dumps`` escapes
    C0 but leaves DEL, C1, the bidi controls and other format characters raw (with
    ``ensure_ascii=True`` it escapes every non-ASCII character, which makes text in other
    scripts unreadable). Hidden characters only occur inside JSON strings, where a ``\uXXXX``
    escape means the same character; the layout newlines of ``indent`` stay.

    Args:
        encoded: ``json.dumps(..., ensure_ascii=False)`` output.
    """
    return _JSON_SPECIAL.sub(_json_run, encoded)


_LINK_SCHEMES = ("file://", "http://", "https://")


def link_target(uri: object) -> str | None:
    r"""``uri`` as the target of a link a person may open, or None when it may not be one.

    Only ``file://``, ``http://`` and ``https://`` URIs of printable ASCII (no space, no control
    character: nothing that could end a terminal's link sequence or an HTML attribute early)
    and at most 4,000 characters are targets; anything else (``javascript:``, a ``data:`` URI,
    an escape sequence) is not a link, whoever wrote it.

    Examples:
        >>> link_target("file:///notes/tides.md")
        'file:///notes/tides.md'
        >>> [link_target(u) for u in ("javascript:alert(1)", "file:///a\x1b]8;;x", "http://a b")]
        [None, None, None]
    """
    if not isinstance(uri, str) or not 0 < len(uri) <= 4000:
        return None
    if not uri.lower().startswith(_LINK_SCHEMES):
        return None
    return uri if all(0x20 < ord(c) < 0x7F for c in uri) else None
