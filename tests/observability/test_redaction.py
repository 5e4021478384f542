"""Redaction: credentials and sensitive patterns never reach a log line."""

from __future__ import annotations

import pytest

from ai_agent.config import LoggingConfig
from ai_agent.observability import Redactor
from ai_agent.observability.redaction import cut_body

SECRET = "sk-canary-91c2b7e4"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-1", "Authorization: Bearer ***"),
        ('{"authorization": "Bearer abc"}', '{"authorization": "Bearer ***"}'),
        ("proxy-authorization=Basic dXNlcjpw", "proxy-authorization=Basic ***"),
        ("x-api-key: k-123", "x-api-key: ***"),
        ("sent bearer tok_123== to it", "sent bearer *** to it"),
    ],
)
def test_authorization_values_are_masked(text: str, expected: str) -> None:
    assert Redactor()(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GET /v1?api_key=abc&n=1", "GET /v1?api_key=***&n=1"),
        ("https://h/x?key=AIza_123#top", "https://h/x?key=***#top"),
        ("/a?x=1&token=t0k", "/a?x=1&token=***"),
        ("/a?access_token=z&sig=s1", "/a?access_token=***&sig=***"),
        ('{"api_key": "sk-xyz"}', '{"api_key": "***"}'),
        ("api-key=abc rest", "api-key=*** rest"),
        ("a key=value in prose stays", "a key=value in prose stays"),
        ("postgresql://app:s3cr3t@db:5432/runs", "postgresql://app:***@db:5432/runs"),
        ("https://host:8443/v1 no userinfo", "https://host:8443/v1 no userinfo"),
    ],
)
def test_api_keys_in_query_strings_and_assignments_are_masked(text: str, expected: str) -> None:
    assert Redactor()(text) == expected


def test_the_flags_turn_the_pattern_groups_off_but_known_secrets_stay_masked() -> None:
    redact = Redactor(authorization=False, api_keys=False, secrets=[SECRET])
    text = f"Authorization: Bearer abc ?api_key=xyz and {SECRET}"
    assert redact(text) == "Authorization: Bearer abc ?api_key=xyz and ***"
    assert redact.headers({"Authorization": "Bearer abc"}) == {"Authorization": "Bearer abc"}
    assert redact.headers({"Authorization": f"Bearer {SECRET}"}) == {"Authorization": "Bearer ***"}


def test_custom_patterns_mask_the_whole_match() -> None:
    redact = Redactor.from_config(LoggingConfig(sensitive_patterns=[r"ssn:\d{3}-\d{4}"]))
    assert redact("user ssn:123-4567 ok") == "user *** ok"
    defaults = Redactor.from_config(None)
    assert defaults("password=hunter2 secret=s3") == "*** ***"


def test_secrets_learnt_later_are_masked_longest_first() -> None:
    redact = Redactor()
    redact.add_secret("abcdefgh")
    redact.add_secret("abcdefgh-longer")
    redact.add_secret("")  # nothing to mask
    redact.add_secret("abcdefg")  # too short to mask safely (MIN_SECRET_CHARS)
    assert redact("x abcdefgh-longer y abcdefgh z abcdefg") == "x *** y *** z abcdefg"


def test_with_secrets_adds_to_a_copy() -> None:
    base = Redactor(patterns=[r"pin=\d+"], secrets=["first-secret"])
    assert base.with_secrets(["first-secret", "no"]) is base
    extended = base.with_secrets(["second-secret"])
    assert extended("first-secret second-secret pin=12") == "*** *** ***"
    assert base("second-secret") == "second-secret"


def test_values_and_headers_are_redacted_recursively() -> None:
    redact = Redactor(secrets=[SECRET])
    value = {"url": "/x?token=t", SECRET: [1, f"Bearer {SECRET}", ("k", None)]}
    assert redact.value(value) == {"url": "/x?token=***", "***": [1, "Bearer ***", ["k", None]]}
    headers = [("Cookie", "session=1"), ("Accept", "text/plain"), ("X-Trace", SECRET)]
    assert redact.headers(headers) == {"Cookie": "***", "Accept": "text/plain", "X-Trace": "***"}


def test_empty_text_passes_through() -> None:
    assert Redactor(secrets=[SECRET])("") == ""


def test_bodies_are_cut_on_utf8_boundaries_with_their_size() -> None:
    assert cut_body("ééé", 3) == "é... (6 bytes in all)"
    assert cut_body("abc", 10, total=50) == "abc... (50 bytes in all)"
    assert cut_body("abc", 3) == "abc"
