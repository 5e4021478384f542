"""Reading structured data from outside: size, encoding and nesting limits, one error each."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from ai_agent.datafiles import MAX_DEPTH, check_depth, loads_json, parse_nested, read_text
from ai_agent.errors import ConfigError, InvalidPlanError


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_nested_past_the_parser_stack_is_one_clear_error() -> None:
    with pytest.raises(InvalidPlanError) as caught:
        loads_json(nested(100_000), what="the plan", error=InvalidPlanError)
    assert str(caught.value) == (
        f"the plan is nested more than {MAX_DEPTH} levels deep; flatten it"
    )


def test_the_depth_limit_is_exact() -> None:
    assert loads_json(nested(MAX_DEPTH), what="x") is not None
    with pytest.raises(ConfigError, match="nested more than 100 levels"):
        loads_json(nested(MAX_DEPTH + 1), what="x")
    objects = '{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    with pytest.raises(ConfigError, match="nested more than 100 levels"):
        loads_json(objects, what="x")


def test_json_errors_name_the_source() -> None:
    with pytest.raises(ConfigError, match=r"^x is not valid JSON: Expecting"):
        loads_json("{nope", what="x")
    with pytest.raises(ConfigError, match=r"^x is not UTF-8 text; give JSON text$"):
        loads_json(b"\xff\xfe\x00", what="x")
    with pytest.raises(ConfigError, match=r"^x is longer than 3 characters; shorten$"):
        loads_json("[1, 2]", what="x", max_chars=3, limit_hint="shorten")


def test_other_parsers_get_the_same_guard() -> None:
    deep_toml = "a = " + nested(100_000)
    with pytest.raises(ConfigError, match=r"^t is nested more than 100 levels deep"):
        parse_nested(tomllib.loads, deep_toml, what="t")
    assert parse_nested(json.loads, "[[1]]", what="t") == [[1]]


def test_shared_and_cyclic_values_are_walked_once(tmp_path: Path) -> None:
    shared: list[object] = [1, 2]
    for _ in range(30):  # 2**30 paths through 31 objects: walked path by path, it never ends
        shared = [shared, shared]
    check_depth({"a": shared}, what="v", max_depth=40)
    cycle: list[object] = []
    cycle.append(cycle)
    with pytest.raises(ConfigError, match="nested more than 5 levels"):
        check_depth(cycle, what="v", max_depth=5)


def test_read_text_refuses_large_binary_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"\x89PNG\r\n")
    with pytest.raises(InvalidPlanError) as caught:
        read_text(path, what="the plan file f.json", max_bytes=100, error=InvalidPlanError)
    assert str(caught.value) == (
        "the plan file f.json is not UTF-8 text (byte 0 is 0x89); is it a binary file? "
        "Give a text file"
    )
    path.write_text("x" * 2048)
    with pytest.raises(ConfigError, match=r"^f is larger than 1 KiB; raise it$"):
        read_text(path, what="f", max_bytes=1024, limit_hint="raise it")
    assert read_text(path, what="f", max_bytes=2048) == "x" * 2048
    with pytest.raises(ConfigError, match=r"^cannot read f: No such file or directory$"):
        read_text(tmp_path / "missing", what="f", max_bytes=10)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"a": 1, "b": {"c": 1, "c": 2}}', "the key 'c' is given twice in one object; keep one"),
        ('{"limit": NaN}', "NaN is not a JSON number; write a finite number"),
        ('{"limit": -Infinity}', "-Infinity is not a JSON number; write a finite number"),
        ('{"limit": 1e999}', "the number 1e999 is too large; write a finite number"),
    ],
)
def test_what_python_reads_beyond_json_is_refused(text: str, problem: str) -> None:
    # json.loads alone keeps the last of a repeated key and reads NaN, Infinity and 1e999 as
    # floats: a plan or a setting would silently mean something nobody wrote.
    with pytest.raises(InvalidPlanError) as caught:
        loads_json(text, what="the plan", error=InvalidPlanError)
    assert str(caught.value) == f"the plan is not valid JSON: {problem}"
    assert loads_json('{"x": 1.5e3, "y": -0.0}', what="the plan") == {"x": 1500.0, "y": -0.0}
