"""The examples a build request carries as its tests: their shape, and judging one result.

A request's ``tests`` is a short list of examples, each ``{"args": {...}, "expect": {...}}``
(the result's fields, compared for equality on the fields given) or ``{"args": {...},
"expect_error": "substring"}`` (the call fails and its error contains the text). They come
from a person or a model, so every part is checked and bounded here (`check_tests`, called by
the validator); running them confined is `ai_agent.tools.maker.trials`.

Examples:
    >>> check_tests([{"args": {"text": "a b"}, "expect": {"words": 2}}])
    []
    >>> check_tests([{"args": {}, "expect": {}, "expect_error": "x"}])
    ['tests[1]: give either expect or expect_error, not both']
    >>> judge({"args": {}, "expect": {"words": 2}}, {"status": "ok", "content": {"words": 3}})
    'field words: expected 2, got 3'
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_TESTS", "check_tests", "judge", "result_value"]

MAX_TESTS = 10
_MAX_TEST_CHARS = 4_000  # one example as JSON
_MAX_ERROR_TEXT = 500
_KEYS = ("args", "expect", "expect_error")
_SHOWN = 80


def check_tests(tests: Any) -> list[str]:
    """What is wrong with a request's ``tests`` (nothing: an empty list).

    Args:
        tests: The field as the requester sent it (anything).

    Returns:
        One message per problem, each naming ``tests`` and the example (1-based).
    """
    if isinstance(tests, (str, bytes)) or not isinstance(tests, (list, tuple)):
        return ["tests must be a list of examples ({args, expect} or {args, expect_error})"]
    problems = []
    if len(tests) > MAX_TESTS:
        problems.append(
            f"tests: at most {MAX_TESTS} examples (got {len(tests)}); keep the telling ones"
        )
    for number, test in enumerate(tests[:MAX_TESTS], start=1):
        problems += [f"tests[{number}]: {p}" for p in _check_one(test)]
    return problems


def _check_one(test: Any) -> list[str]:
    if not isinstance(test, dict):
        return ["an example is an object {args, expect} or {args, expect_error}"]
    unknown = sorted(str(k)[:_SHOWN] for k in test if k not in _KEYS)
    if unknown:
        return [f"unknown key(s) {', '.join(unknown)}; use {', '.join(_KEYS)}"]
    try:
        size = len(json.dumps(test, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError):
        return ["it is not JSON data (numbers, texts, lists, objects)"]
    except RecursionError:
        return ["it is nested too deeply"]
    if size > _MAX_TEST_CHARS:
        return [f"it is {size} characters as JSON; at most {_MAX_TEST_CHARS}"]
    problems = []
    if not isinstance(test.get("args"), dict):
        problems.append("args must be an object of the tool's arguments ({} for none)")
    problem = _check_expectation(test)
    return problems + ([problem] if problem else [])


def _check_expectation(test: dict[str, Any]) -> str | None:
    has_expect, has_error = "expect" in test, "expect_error" in test
    if has_expect and has_error:
        return "give either expect or expect_error, not both"
    if has_expect:
        good = isinstance(test["expect"], dict) and bool(test["expect"])
        return None if good else "expect must be an object of the result's fields and values"
    if not has_error:
        return "say what should happen: expect {field: value} or expect_error 'text'"
    text = test["expect_error"]
    if not isinstance(text, str) or not text.strip():
        return "expect_error must be a text the error contains"
    if len(text) > _MAX_ERROR_TEXT:
        return f"expect_error is longer than {_MAX_ERROR_TEXT} characters"
    return None


def result_value(content: Any) -> Any:
    """A result's content as data: a text holding a JSON object is that object.

    Args:
        content: The ``content`` of a tool's ok result.

    Returns:
        The object, or the content unchanged.
    """
    if isinstance(content, str):
        try:
            parsed = json.loads(content)
        except ValueError:
            return content
        return parsed if isinstance(parsed, dict) else content
    return content


def judge(test: dict[str, Any], result: dict[str, Any]) -> str | None:
    """Why a result does not match its example, or None when it does.

    Args:
        test: A checked example.
        result: The ToolResult of running it (``status``, ``content``, ``error``).

    Returns:
        The first mismatch, in words; None when the example passed.
    """
    error = str(result.get("error") or "")
    if "expect_error" in test:
        wanted = str(test["expect_error"])
        if result.get("status") != "error":
            return f"it succeeded; expected an error containing {_short(wanted)}"
        return None if wanted in error else f"its error does not contain {_short(wanted)}"
    if result.get("status") != "ok":
        return f"it failed: {error[:_MAX_ERROR_TEXT]}"
    return _compare(test["expect"], result_value(result.get("content")))


def _compare(expected: dict[str, Any], value: Any) -> str | None:
    """The first field of ``expected`` the result's ``value`` lacks or differs in."""
    if not isinstance(value, dict):
        return f"the result is not an object with fields but {type(value).__name__} {_short(value)}"
    for field, wanted in expected.items():
        name = _short(field, quote=False)
        if field not in value:
            return f"field {name}: missing from the result"
        if value[field] != wanted:
            return f"field {name}: expected {_short(wanted)}, got {_short(value[field])}"
    return None


def _short(value: Any, *, quote: bool = True) -> str:
    text = json.dumps(value, ensure_ascii=False) if quote else str(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
