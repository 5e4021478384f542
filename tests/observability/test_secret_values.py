"""SecretValues: the literal secret values a run knows, masked wherever they occur.

One object masks them for everything the engine stores or prints (state, recorded calls, the run
store, events, logs): these tests pin what it covers (the value, its JSON and URL encodings, its
Unicode normal forms, overlapping and nested secrets, text cut into stream chunks) and what it
does not (values shorter than the floor, base64).
"""

from __future__ import annotations

import base64
import json
import os
import unicodedata
from urllib.parse import quote, quote_plus

import pytest

from ai_agent.observability import Redactor
from ai_agent.observability.redaction import MIN_SECRET_CHARS, SecretValues

SECRET = "sk-canary-4e1d9b7a"


def test_values_shorter_than_the_floor_are_never_masked() -> None:
    assert MIN_SECRET_CHARS == 8
    values = SecretValues(["ollama", "", "1234567", "12345678"])
    # A short "secret" (a local server's placeholder key) would wreck every text it occurs in.
    assert values.text("ollama 1234567 12345678") == "ollama 1234567 ***"
    assert values.values() == ("12345678",)
    assert not SecretValues(["ollama"])
    assert SecretValues.too_short("1234567") and not SecretValues.too_short("12345678")
    assert values.add("another-long-one") is True
    assert values.add("short") is False
    assert values.add(None) is False


def test_overlapping_secrets_are_masked_as_one_span() -> None:
    values = SecretValues(["abcdefgh12", "12345678xy"])
    # Leftmost-first matching would mask the first and leave "345678xy" of the second.
    assert values.text("<abcdefgh12345678xy>") == "<***>"
    assert values.text("abcdefgh12 and 12345678xy") == "*** and ***"


@pytest.mark.parametrize("order", [1, -1])
def test_a_secret_inside_another_is_masked_whole(order: int) -> None:
    inner, outer = "sk-canary-1234", "sk-canary-1234-extended"
    values = SecretValues([inner, outer][::order])
    assert values.text(f"{outer} / {inner} / {inner}x") == "*** / *** / ***x"


def test_repeated_and_adjacent_occurrences() -> None:
    values = SecretValues([SECRET])
    assert values.text(SECRET * 2) == "******"  # adjacent, not overlapping: two masks
    assert values.text(f"{SECRET} {SECRET}") == "*** ***"


def test_a_unicode_secret_in_either_normal_form_and_in_json() -> None:
    secret = "clé-пароль-42"
    values = SecretValues([secret])
    assert values.text(f"x {secret} y") == "x *** y"
    assert values.text(unicodedata.normalize("NFD", secret)) == "***"
    assert values.text(json.dumps({"k": secret})) == '{"k": "***"}'  # \u escapes
    assert values.text(json.dumps({"k": secret}, ensure_ascii=False)) == '{"k": "***"}'


def test_json_and_url_encodings_are_masked_but_base64_is_not() -> None:
    secret = 'p@ss"w/rd+key=1 x'
    values = SecretValues([secret])
    assert values.text(json.dumps({"k": secret})) == '{"k": "***"}'
    assert values.text("https://h/?q=" + quote(secret, safe="")) == "https://h/?q=***"
    assert values.text("q=" + quote_plus(secret)) == "q=***"
    encoded = base64.b64encode(secret.encode()).decode()
    assert values.text(encoded) == encoded  # documented as not covered


def test_scrub_copies_only_what_changes() -> None:
    values = SecretValues([SECRET])
    clean = {"a": [1, "x", None], "b": {"c": 2.5}}
    assert values.scrub(clean) is clean
    dirty = {"a": [f"{SECRET}!"], SECRET: 2, "n": (1, SECRET), "same": ["x"]}
    out = values.scrub(dirty)
    assert out == {"a": ["***!"], "***": 2, "n": (1, "***"), "same": ["x"]}
    assert out["same"] is dirty["same"]
    assert dirty["a"] == [f"{SECRET}!"]  # the original is left alone
    assert SecretValues().scrub(dirty) is dirty


def test_sources_are_read_at_each_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    values = SecretValues()
    values.add_source(lambda: [os.environ.get("LATE_KEY", "")])
    assert not values
    assert values.text("value-set-later") == "value-set-later"
    monkeypatch.setenv("LATE_KEY", "value-set-later")  # exported after a pause, say
    values.refresh()
    assert values
    assert values.text("value-set-later") == "***"
    values.add("added-directly")  # an added value needs no refresh
    assert values.text("added-directly value-set-later") == "*** ***"


def test_extended_values_follow_the_base() -> None:
    base = SecretValues(["first-secret"])
    more = base.extended(["second-secret", "no"])
    assert base.extended(["first-secret"]) is base
    base.add("learnt-later-1")
    more.refresh()
    assert more.text("first-secret second-secret learnt-later-1") == "*** *** ***"
    assert base.text("second-secret") == "second-secret"


def test_the_redactor_masks_the_shared_values() -> None:
    values = SecretValues()
    redact = Redactor(secrets=values)
    assert redact.secrets is values
    values.add(SECRET)
    assert redact(f"key {SECRET}") == "key ***"


@pytest.mark.parametrize("size", range(1, 12))
def test_a_stream_never_lets_a_secret_through_however_it_is_cut(size: int) -> None:
    other = "other-secret-99"
    values = SecretValues([SECRET, other])
    text = f"before {SECRET} mid {SECRET}{SECRET} sk-canary-4e end other-secret-9 {other}"
    stream = values.stream()
    pieces = [stream.feed(text[i : i + size]) for i in range(0, len(text), size)]
    pieces.append(stream.flush())
    assert "".join(pieces) == values.text(text)
    assert stream.flush() == ""


def test_a_stream_holds_back_only_what_could_start_a_secret() -> None:
    stream = SecretValues([SECRET]).stream()
    assert stream.feed("hello ") == "hello "
    assert stream.feed("say sk-can") == "say "
    assert stream.feed("dy") == "sk-candy"
    assert stream.feed("sk-canary-4e1d") == ""
    assert stream.feed("9b7a and more") == "*** and more"
    assert stream.flush() == ""
    assert SecretValues().stream().feed("anything") == "anything"


def test_a_stream_holds_a_whole_secret_that_another_may_overlap() -> None:
    stream = SecretValues(["abcdefgh12", "12345678xy"]).stream()
    # "abcdefgh12" is whole, but its "12" may begin the other: both are held, then masked as one.
    assert stream.feed("<abcdefgh12") == "<"
    assert stream.feed("345678xy>") == "***>"
