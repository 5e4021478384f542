"""Untrusted text made visible: nothing a terminal acts on survives, and nothing can be hidden."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_agent.visible import MODES, VisibleStream, escape_hidden, hidden, json_visible, visible

# What the attacks of issue 15 use: terminal controls and the characters that reorder or hide.
HOSTILE = (
    "\x1b\x9b\r\x08\x7f\x00\x07\t\n\x0b\x0c\u202e\u202a\u202d\u2066\u2067\u2068\u2069"
    "\u200e\u200f\u061c\u200b\u200c\u200d\u2028\u2029\ufeff\u00ad\u3164\ufe0f\U000e0041"
)
KEPT = {"line": "", "lines": "\n", "text": "\n\t\u200c\u200d\ufe0e\ufe0f"}

# Any text at all, weighted towards what the escaping has to get right.
texts = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=()),  # surrogates too
        st.sampled_from([*HOSTILE, "\\", "x", "u", "U", "n", "r", "t", "1", "b", "f", "\udc80"]),
    ),
)
modes = st.sampled_from(MODES)

_TOKEN = re.compile(r"(\\+)(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[ntr])?", re.S)
_SHORT = {"n": "\n", "t": "\t", "r": "\r"}


def decode(shown: str, mode: str) -> str:
    """The inverse of `visible`: a run of backslashes before an escape is doubled, plus one."""
    short = {k: v for k, v in _SHORT.items() if v not in KEPT[mode]}

    def one(match: re.Match[str]) -> str:
        run, body = match.group(1), match.group(2)
        if body is None or (len(body) == 1 and body not in short):
            return match.group(0)
        if len(run) % 2 == 0:
            return run[: len(run) // 2] + body
        escaped = short[body] if len(body) == 1 else chr(int(body[1:], 16))
        return run[: len(run) // 2] + escaped

    return _TOKEN.sub(one, shown)


def test_the_attacks_of_the_issue_show_as_escapes() -> None:
    command = "echo hello\x1b[2K\r rm -rf victim"
    assert visible(command) == r"echo hello\x1b[2K\r rm -rf victim"
    assert visible("a\u202eb\x9bc\x08d\x7fe") == r"a\u202eb\x9bc\x08d\x7fe"
    assert visible("tag\U000e0041") == r"tag\U000e0041"
    assert visible("lone \udc80 surrogate") == r"lone \udc80 surrogate"


def test_a_typed_escape_and_the_real_character_differ() -> None:
    typed, real = visible(r"echo \x1b"), visible("echo \x1b")
    assert (typed, real) == (r"echo \\x1b", r"echo \x1b")
    # A backslash before a real control character is doubled too, so the run stays readable.
    assert visible("\\\x1b") == r"\\\x1b"
    # Backslashes that cannot be read as an escape are left as they are.
    assert visible(r"C:\Users\me \d+ \\server") == r"C:\Users\me \d+ \\server"


def test_the_modes_keep_newlines_and_tabs_where_they_are_layout() -> None:
    text = "one\ttwo\nthree\u200dfour\r\n"
    assert visible(text, "text") == "one\ttwo\nthree\u200dfour\\r\n"
    assert visible(text, "lines") == "one\\ttwo\nthree\\u200dfour\\r\n"
    assert visible(text, "line") == r"one\ttwo\nthree\u200dfour\r\n"
    # In prose a typed \n stays as typed: a real newline never becomes \n there.
    assert visible(r"print('a\n')", "text") == r"print('a\n')"
    assert visible(r"print('a\n')", "line") == r"print('a\\n')"
    with pytest.raises(ValueError, match="mode"):
        visible("x", "html")  # type: ignore[arg-type]


def test_visible_text_is_returned_as_it_is() -> None:
    for text in (
        "plain ascii",
        "naïve café",
        "日本語のテキスト",
        "emoji 👨\u200d👩\u200d👧 ❤\ufe0f",
        "",
    ):
        assert visible(text, "text") == text
    assert visible("non\u00a0breaking and\u3000ideographic spaces") == (
        "non\u00a0breaking and\u3000ideographic spaces"
    )


@given(texts, modes)
def test_nothing_hidden_survives(text: str, mode: str) -> None:
    shown = visible(text, mode)  # type: ignore[arg-type]
    left = {c for c in shown if hidden(c)} - set(KEPT[mode])
    assert not left
    assert all(unicodedata.category(c) != "Cc" for c in shown if c not in KEPT[mode])


@given(texts, modes)
def test_it_is_injective_decoding_gives_back_the_text(text: str, mode: str) -> None:
    assert decode(visible(text, mode), mode) == text  # type: ignore[arg-type]


@given(texts, texts, modes)
def test_distinct_texts_look_distinct(a: str, b: str, mode: str) -> None:
    if a != b:
        assert visible(a, mode) != visible(b, mode)  # type: ignore[arg-type]


@given(texts, st.lists(st.integers(min_value=0, max_value=40), max_size=8), modes)
def test_a_stream_shows_what_the_whole_text_shows(text: str, cuts: list[int], mode: str) -> None:
    stream = VisibleStream(mode)  # type: ignore[arg-type]
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[i:j] for i, j in zip([0, *points], [*points, len(text)], strict=True)]
    shown = "".join(stream.feed(p) for p in pieces) + stream.flush()
    assert shown == visible(text, mode)  # type: ignore[arg-type]


def test_a_stream_holds_back_only_a_backslash_whose_doubling_is_not_decided() -> None:
    stream = VisibleStream("text")
    assert stream.feed("echo \\") == "echo "
    assert stream.feed("\x1b[2K done") == r"\\\x1b[2K done"
    assert stream.feed("\\x1") == ""
    assert stream.feed("b and more text") == r"\\x1b and more text"
    assert stream.feed("a line\\\n") == "a line\\\n"  # a newline after it decides at once
    assert stream.feed("end\\") == "end"
    assert stream.flush() == "\\"
    assert stream.flush() == ""
    assert stream.feed("two \\\\") == "two "  # the whole run waits
    assert stream.feed("\x1b") == r"\\\\\x1b"
    with pytest.raises(ValueError, match="mode"):
        VisibleStream("html")  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
)


@given(json_values)
def test_json_stays_the_same_value_with_nothing_hidden(value: object) -> None:
    for indent in (None, 2):
        encoded = json_visible(json.dumps(value, indent=indent, ensure_ascii=False))
        assert json.loads(encoded) == value
        assert not [c for c in encoded if hidden(c) and c != "\n"]


def test_json_keeps_readable_text_readable() -> None:
    encoded = json_visible(json.dumps({"a": "日本\u202eé\x7f\U000e0041"}, ensure_ascii=False))
    assert encoded == '{"a": "日本\\u202eé\\u007f\\udb40\\udc41"}'


@given(texts, modes)
def test_the_net_escapes_what_is_left_and_leaves_rendered_text_alone(text: str, mode: str) -> None:
    shown = visible(text, mode)  # type: ignore[arg-type]
    assert escape_hidden(shown) == shown
    netted = escape_hidden(text)
    assert not {c for c in netted if hidden(c)} - set(KEPT["text"])
    if "\\" not in text:  # without backslashes to double it escapes as visible does
        assert netted == visible(text, "text")
