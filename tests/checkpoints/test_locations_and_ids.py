"""Database locations and thread ids: the one parser of each, and what they refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from ai_agent import Agent
from ai_agent.checkpoints.store import (
    MAX_THREAD_ID_CHARS,
    check_thread_id,
    new_thread_id,
    resolve_location,
)
from ai_agent.config import AgentSettings
from ai_agent.errors import ConfigError, InvalidThreadIdError


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("runs/c.sqlite", Path("runs/c.sqlite")),
        ("sqlite:///tmp/c.sqlite", Path("/tmp/c.sqlite")),
        ("SQLite://rel.sqlite", Path("rel.sqlite")),
        (Path("p.sqlite"), Path("p.sqlite")),
        ("postgresql://u:pw@h/db", "postgresql://u:pw@h/db"),
        ("postgres://h/db", "postgres://h/db"),
        (":memory:", Path(":memory:")),
    ],
)
def test_paths_and_supported_urls(given: str | Path, expected: str | Path) -> None:
    assert resolve_location(given) == expected


@pytest.mark.parametrize(
    ("given", "scheme"),
    [
        ("mysql://user:hunter22@host/db", "mysql"),
        ("MySQL://user:hunter22@host/db", "mysql"),
        ("file:///tmp/x.sqlite", "file"),
        ("mongodb+srv://u:hunter22@cluster/db", "mongodb+srv"),
    ],
)
def test_other_urls_are_refused_without_echoing_them(given: str, scheme: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_location(given)
    assert str(caught.value) == (
        f"unsupported database URL scheme {scheme!r}: give a SQLite file path, "
        "sqlite:///path/to/file.sqlite, or a postgresql:// URL"
    )


def test_an_empty_location_is_refused() -> None:
    with pytest.raises(ConfigError, match="the database location is empty"):
        resolve_location("  ")


def test_the_agent_takes_locations_through_the_same_parser(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unsupported database URL scheme 'mysql'"):
        Agent(settings=AgentSettings(), checkpoint_path="mysql://u:hunter22@h/db")
    with pytest.raises(ConfigError, match="unsupported database URL scheme 'redis'"):
        Agent(settings=AgentSettings(), checkpoint_url="redis://h")
    assert list(tmp_path.rglob("*hunter22*")) == []


@pytest.mark.parametrize(
    "thread_id", ["a", "0", "t-42", "order.2024:07_x", "A" * MAX_THREAD_ID_CHARS, new_thread_id()]
)
def test_thread_ids_that_fit(thread_id: str) -> None:
    assert check_thread_id(thread_id) == thread_id


@pytest.mark.parametrize(
    ("thread_id", "problem"),
    [
        ("", "invalid thread id '': it is empty"),
        ("A" * 129, "invalid thread id '" + "A" * 40 + "'...: it is 129 characters long"),
        ("a\x1b[2Jb", "invalid thread id 'a\\x1b[2Jb': '\\x1b' is not allowed"),
        ("a\tb", "invalid thread id 'a\\tb': '\\t' is not allowed"),
        ("a/b", "invalid thread id 'a/b': '/' is not allowed"),
        ("a\\b", "invalid thread id 'a\\\\b': '\\\\' is not allowed"),
        (".x", "invalid thread id '.x': it starts with '.'"),
        ("_x", "invalid thread id '_x': it starts with '_'"),
        ("ü", "invalid thread id 'ü': 'ü' is not allowed"),
        (7, "invalid thread id of type int: it is not text (int)"),
        (None, "invalid thread id of type NoneType: it is not text (NoneType)"),
    ],
)
def test_thread_ids_that_do_not(thread_id: object, problem: str) -> None:
    with pytest.raises(InvalidThreadIdError) as caught:
        check_thread_id(thread_id)
    assert str(caught.value) == (
        f"{problem}; a thread id is 1 to 128 characters of letters, digits, '.', '_', ':' and "
        "'-', starting with a letter or a digit"
    )
