"""Regular expressions over text someone else wrote, fed the inputs that made them backtrack.

Each pattern took super-linear time on one shape of input (seconds to hours at sizes the engine
accepts). The work runs in a daemon thread joined for at most 60 s: a bound on a hang, not a
timing; the assertions are on the results. A regex call holds the GIL until it returns, so the
join could not end during one call of hours: each test repeats calls that took seconds each on
the old patterns (minutes in all), instead of making one call of hours.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from typing import TypeVar

import pytest
from pydantic import ValidationError

from ai_agent.config import McpServerConfig
from ai_agent.observability.redaction import Redactor
from ai_agent.tools.builtin.patterns import GitIgnore, Glob
from ai_agent.tools.maker.code_check import check_code
from ai_agent.tools.maker.records import ValidationReport
from ai_agent.url_passwords import mask_url_passwords

T = TypeVar("T")


def bounded(work: Callable[[], T]) -> T:
    """``work()``'s result, from a daemon thread given 60 s (a hang fails, not a slow run)."""
    out: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # re-raised below, in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "still running after 60 s: the pattern backtracks"
    if errors:
        raise errors[0]
    return out[0]


def test_redaction_url_password_on_dotted_words() -> None:
    # observability.redaction: "a.a.a..." is one run of scheme characters with no "://"; the
    # old pattern scanned it again from every letter (16,000 characters: 1 s; 32,000: 4 s).
    text = "a." * 16_000 + " https://user:pw@host/x"
    masked = bounded(lambda: [Redactor()(text) for _ in range(40)])
    assert set(masked) == {"a." * 16_000 + " https://user:***@host/x"}


def test_config_errors_url_password_on_a_long_hyphenated_value() -> None:
    # config.errors: a value shown in a config error, "a-a-a-..." from a config file (32,000
    # characters: 3 s). It masks with the redactor's pattern (url_passwords).
    text = "a-" * 16_000 + " 1.ftp://me:secret@h"
    shown = bounded(lambda: [mask_url_passwords(text, "***") for _ in range(40)])
    assert set(shown) == {"a-" * 16_000 + " 1.ftp://me:***@h"}


def test_config_mcp_references_on_repeated_unclosed_defaults() -> None:
    # config.mcp: "${a:-" repeated with no "}" after; every start scanned to the end in vain
    # (16,000 characters: 0.4 s; 64,000: 6 s).
    value = "${a:-" * 13_000

    def refused(args: list[str]) -> str:
        with pytest.raises(ValidationError, match="malformed") as caught:
            McpServerConfig(name="s", command="srv", args=args)
        return type(caught.value).__name__

    assert set(bounded(lambda: [refused([value]) for _ in range(30)])) == {"ValidationError"}
    assert bounded(lambda: refused(["${b}" + value])) == "ValidationError"
    closed = bounded(lambda: McpServerConfig(name="s", command="srv", args=[value + "}"]))
    assert closed.args == [value + "}"]


def test_maker_code_check_format_field_with_many_allowed_dunders() -> None:
    # tools.maker.code_check: a model-written string "{" then "__init__ " 7,000 times and no "}":
    # every "__" restarted a scan to the end of the field (64,000 characters: over 1 s).
    hostile = "{" + "__init__ " * 7_000
    reaching = "{0.__init__ " + "__init__ " * 7_000 + "}"

    def check(text: str) -> list[str]:
        report = ValidationReport()
        check_code(ast.parse(f"def execute():\n    return {text!r}\n"), (), (), report)
        return report.errors

    for errors in bounded(lambda: [check(hostile) for _ in range(100)]):
        assert not any("format string" in e for e in errors)
    assert any("format string reaches a dunder" in e for e in bounded(lambda: check(reaching)))


@pytest.mark.parametrize(("stars", "length", "calls"), [(4, 255, 10), (5, 128, 20)])
def test_builtin_patterns_glob_with_many_stars_on_a_long_file_name(
    stars: int, length: int, calls: int
) -> None:
    # tools.builtin.patterns: a model's glob "*a*a*a*a*b" on a 255-character name of "a"s took
    # 13 s, with five stars 10 s on 128 characters (each "*" a [^/]* backtracking on the others).
    glob = Glob("*a" * stars + "*b")
    name = "a" * length
    assert bounded(lambda: [glob.match(name) for _ in range(calls)]) == [False] * calls
    assert bounded(lambda: glob.match(name + "b")) is True


def test_builtin_patterns_gitignore_line_with_many_stars_on_a_long_name() -> None:
    # tools.builtin.patterns: a .gitignore in a checked-out repository, read by the search tools
    # (the same 13 s a line).
    rules = GitIgnore.parse("*a*a*a*a*b\n")
    path = "x/" + "a" * 255
    verdicts = bounded(lambda: [rules.ignored(path, is_dir=False) for _ in range(10)])
    assert verdicts == [None] * 10
    assert bounded(lambda: rules.ignored(path + "b", is_dir=False)) is True


def test_builtin_patterns_glob_with_a_run_of_double_stars_on_a_deep_path() -> None:
    # tools.builtin.patterns: "**/**/**/**/x" on 256 directories took 7 s.
    glob = Glob("**/" * 4 + "x")
    deep = "a/" * 256
    assert bounded(lambda: [glob.match(deep + "y") for _ in range(20)]) == [False] * 20
    assert bounded(lambda: glob.match(deep + "x")) is True


def test_builtin_patterns_glob_with_double_stars_between_parts_on_a_deep_path() -> None:
    # tools.builtin.patterns: "**/a/**/a/**/a/**/x" on 64 directories took 0.4 s, growing as
    # depth**4 (about two minutes on 256); one more "**/a/" multiplied it again by the depth.
    glob = Glob("**/a/" * 6 + "**/x")
    deep = "a/" * 256
    assert bounded(lambda: [glob.match(deep + "y") for _ in range(20)]) == [False] * 20
    assert bounded(lambda: glob.match(deep + "x")) is True
    assert not Glob("**/a/" * 6 + "**/x").match("a/" * 5 + "x")  # six a's needed, five given


def test_builtin_patterns_gitignore_line_with_double_stars_on_a_deep_path() -> None:
    # The same in a .gitignore (anchored, and unanchored with ".*/" in front): six double stars
    # took 0.03 s on 32 directories and 0.4 s on 48, growing as depth**6.
    rules = GitIgnore.parse("a/" + "**/a/" * 5 + "**/x\n" + "**/a/" * 5 + "**/y\n")
    deep = "a/" * 256
    verdicts = bounded(lambda: [rules.ignored(deep + "z", is_dir=False) for _ in range(10)])
    assert verdicts == [None] * 10
    assert bounded(lambda: rules.ignored(deep + "x", is_dir=False)) is True
    assert bounded(lambda: rules.ignored(deep + "y", is_dir=False)) is True
