"""Large texts stored once per database, by content hash, wherever they appear.

A long text that enters a run (a plan, a task, a model's answer, a tool output under the clip
limit) used to be stored again by every row that holds it: LangGraph's resume value and each task
write, every version of each channel that carries it, a list rewritten by compaction, and the
recorded model request. A 10 MB plan grew the database by 110 MB. Now any ``str`` (or ``bytes``)
of at least `TEXT_MIN_BYTES` bytes is kept in one row of ``agent_texts``, keyed by the SHA-256 of
its UTF-8 bytes, and every row that holds it names it instead:

    agent_texts   hash (hex SHA-256) -> body (the bytes)

    a row that names texts    its value with each large text replaced by a *mark*,
                              NUL + ``"ai-agent:"`` + kind + hash (kind ``s`` a str, ``b`` bytes),
                              and a ``texts`` column listing the hashes (JSON), NULL otherwise

The mark is unambiguous: a row is read through `paste` only when its ``texts`` column is set,
and when a value is `cut`, every string that *looks* like a mark (it starts with `MARK`, however
short) is stored as a text too, so in a value that was cut every string starting with `MARK` is
a mark. Only ``dict`` and ``list`` (and tuples, which the serializer writes as lists) are walked;
a text inside another object (a model class the serializer encodes itself) stays where it is.

Who uses the table: the delta checkpointer (values, list segments, task writes and skeletons:
``delta_*`` tables with a ``texts`` column) and the run store's message bodies (``agent_blobs``).
In one SQLite file (the default) they share it, so the plan a checkpoint holds and the plan the
recorded model request sent are one row. A text is deleted by `sweep` when no row in the file
names it any more: prune, delete and the run store's ``delete_calls`` sweep after they delete.

The threshold was measured (docs/performance.md): below about 4 KB the row and hash cost more
than the copies they save; values under it (nearly every value of a run) take the same path as
before, at the cost of one length comparison.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ai_agent.errors import StoreError

__all__ = [
    "MARK",
    "TABLE_DDL",
    "TEXT_MIN_BYTES",
    "TEXT_OWNERS",
    "Cut",
    "cut",
    "fetch",
    "index_ddl",
    "may_hold_large_text",
    "paste",
    "save",
    "sweep",
    "texts_column",
]

TEXT_MIN_BYTES = 4096
"""A ``str`` or ``bytes`` of at least this many bytes (UTF-8 for a str) is stored once by hash."""

MARK = "\x00ai-agent:"
"""How a mark starts. NUL never starts a text a person or a model writes; and see the module."""

_HASH_CHARS = 64

TABLE_DDL = "CREATE TABLE IF NOT EXISTS agent_texts (hash TEXT PRIMARY KEY, body BLOB NOT NULL)"
"""The shared table (SQLite; PostgreSQL spells the body BYTEA)."""

TEXT_OWNERS = (
    "delta_checkpoints",
    "delta_values",
    "delta_segments",
    "delta_writes",
    "agent_blobs",
)
"""Every table whose ``texts`` column names texts: what `sweep` consults."""


def index_ddl(table: str) -> str:
    """The index that lets `sweep` read a table's ``texts`` column without scanning the table.

    Partial: only rows that name a text are in it, so the rows of a run (nearly all of them)
    cost it nothing.
    """
    return f"CREATE INDEX IF NOT EXISTS {table}_texts ON {table} (texts) WHERE texts IS NOT NULL"


# Finding and replacing ------------------------------------------------------------------------
# msgpack writes a str of 2^16 bytes or more as 0xdb + 4 length bytes, a shorter one of at least
# 256 bytes as 0xda + 2 length bytes (bytes: 0xc6 and 0xc5); so a serialized value can hold a
# str of TEXT_MIN_BYTES or more only where one of these headers appears. Other bytes can look
# like a header too (inside a number, or a text): a match only means "walk the value to see".
_LARGE_HEADER = re.compile(
    b"[\xdb\xc6]|[\xda\xc5][" + re.escape(bytes([TEXT_MIN_BYTES >> 8])) + b"-\xff]"
)


def may_hold_large_text(blob: bytes) -> bool:
    """Whether a msgpack-serialized value may hold a large text (False: it certainly does not).

    Examples:
        >>> import ormsgpack
        >>> may_hold_large_text(ormsgpack.packb({"a": "x" * 100}))
        False
        >>> may_hold_large_text(ormsgpack.packb(["x" * TEXT_MIN_BYTES]))
        True
    """
    return len(blob) >= TEXT_MIN_BYTES and _LARGE_HEADER.search(blob) is not None


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


class Cut:
    """A value with its large texts taken out (see `cut`).

    Attributes:
        value: The value with a mark where each large text was.
        texts: Hash -> body of each text taken out.
    """

    __slots__ = ("texts", "value")

    def __init__(self) -> None:
        self.value: Any = None
        self.texts: dict[str, bytes] = {}

    @property
    def hashes(self) -> list[str]:
        """The hashes the value names, sorted (what a row's ``texts`` column lists)."""
        return sorted(self.texts)

    def _mark(self, kind: str, body: bytes) -> str:
        digest = _digest(body)
        self.texts[digest] = body
        return MARK + kind + digest

    def _walk(self, value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return self._str(value)
        if kind is bytes:
            return self._mark("b", value) if len(value) >= TEXT_MIN_BYTES else value
        if isinstance(value, dict):  # a subclass too (a resume's `PlanAnswer`): a plain dict
            return {k: self._walk(v) for k, v in value.items()}
        if kind is list or kind is tuple:
            return [self._walk(v) for v in value]
        return value

    def _str(self, value: str) -> str:
        chars = len(value)
        if chars >= TEXT_MIN_BYTES or value.startswith(MARK):
            return self._mark("s", value.encode())
        if chars * 4 >= TEXT_MIN_BYTES:  # UTF-8 takes up to 4 bytes a character
            body = value.encode()
            if len(body) >= TEXT_MIN_BYTES:
                return self._mark("s", body)
        return value


def cut(value: Any) -> Cut:
    """``value`` with every large text (and every string that looks like a mark) replaced.

    The value given is not changed; containers on the way to a text are copied.

    Examples:
        >>> done = cut({"plan": "y" * TEXT_MIN_BYTES, "n": 1})
        >>> done.value["plan"].startswith(MARK + "s"), done.value["n"], len(done.texts)
        (True, 1, 1)
    """
    done = Cut()
    done.value = done._walk(value)
    return done


def paste(value: Any, bodies: Mapping[str, bytes]) -> Any:
    """``value`` with every mark replaced by its text (the value is changed in place).

    Raises:
        StoreError: a mark names a text that is not in ``bodies``, or is not a mark.
    """
    kind = type(value)
    if kind is str:
        return _text(value, bodies) if value.startswith(MARK) else value
    if kind is dict:
        for key, item in value.items():
            value[key] = paste(item, bodies)
        return value
    if kind is list:
        for i, item in enumerate(value):
            value[i] = paste(item, bodies)
    return value


def _text(mark: str, bodies: Mapping[str, bytes]) -> str | bytes:
    kind, digest = mark[len(MARK) : len(MARK) + 1], mark[len(MARK) + 1 :]
    body = bodies.get(digest) if len(digest) == _HASH_CHARS else None
    if body is None or kind not in ("s", "b"):
        raise StoreError(
            f"a stored value names text {digest[:16] or '(none)'}..., which is not stored; "
            "the database was changed by something other than ai-agent"
        )
    if kind == "b":
        return body
    try:
        return body.decode()
    except UnicodeDecodeError:
        raise StoreError(
            f"stored text {digest[:16]}... is not UTF-8; the database was changed by something "
            "other than ai-agent"
        ) from None


def texts_column(hashes: Sequence[str]) -> str | None:
    """What a row's ``texts`` column holds: the hashes it names (None: it names none)."""
    return json.dumps(list(hashes), separators=(",", ":")) if hashes else None


def listed(column: str | bytes) -> list[str]:
    """The hashes a ``texts`` column lists.

    Raises:
        StoreError: the column is not a list of hashes.
    """
    try:
        hashes = json.loads(column)
    except (ValueError, TypeError) as exc:
        raise StoreError(f"a texts column is not readable ({exc})") from None
    if type(hashes) is not list or not all(type(h) is str for h in hashes):
        raise StoreError("a texts column does not list text hashes")
    return hashes


# The table ------------------------------------------------------------------------------------


def save(execute: Callable[..., Any], texts: Mapping[str, bytes]) -> None:
    """Store the texts that are not stored yet (inside the caller's write transaction).

    Looked up before being inserted, so a text already there is not sent to the database again;
    and inserted only if still missing, since on PostgreSQL another transaction may be storing
    the same text at the same time.
    """
    for digest, body in texts.items():
        if execute("SELECT 1 FROM agent_texts WHERE hash = ?", (digest,)).fetchone() is None:
            execute(
                "INSERT INTO agent_texts (hash, body) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING",
                (digest, body),
            )


def fetch(execute: Callable[..., Any], hashes: Iterable[str]) -> dict[str, bytes]:
    """The bodies of the texts with these hashes (a missing one is simply not in the answer)."""
    wanted = sorted(set(hashes))
    found: dict[str, bytes] = {}
    for i in range(0, len(wanted), 500):
        chunk = wanted[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for digest, body in execute(
            f"SELECT hash, body FROM agent_texts WHERE hash IN ({marks})",  # noqa: S608 - placeholders only
            chunk,
        ).fetchall():
            found[str(digest)] = bytes(body)
    return found


def sweep(execute: Callable[..., Any], owners: Iterable[str]) -> int:
    """Delete the texts no row of ``owners`` names any more; returns how many.

    Run inside the write transaction that deleted rows: a text and the row that names it are
    always written in one transaction, so no text can be added unseen meanwhile.

    Args:
        execute: The connection's or session's ``execute``.
        owners: The tables with a ``texts`` column in this database (some of `TEXT_OWNERS`).
    """
    used: set[str] = set()
    for table in owners:
        if table not in TEXT_OWNERS:  # pragma: no cover - a programming error
            raise ValueError(f"{table} does not name texts")
        for (column,) in execute(
            f"SELECT texts FROM {table} WHERE texts IS NOT NULL"  # noqa: S608 - fixed names
        ).fetchall():
            used.update(listed(column))
    gone = [h for (h,) in execute("SELECT hash FROM agent_texts").fetchall() if h not in used]
    for digest in gone:
        execute("DELETE FROM agent_texts WHERE hash = ?", (digest,))
    return len(gone)


def sqlite_owners(execute: Callable[..., Any]) -> list[str]:
    """The tables of a SQLite file that name texts (the checkpoints, the run store, or both)."""
    marks = ",".join("?" * len(TEXT_OWNERS))
    rows = execute(
        "SELECT m.name FROM sqlite_master AS m, pragma_table_info(m.name) AS c "  # noqa: S608 - placeholders only
        f"WHERE m.type = 'table' AND c.name = 'texts' AND m.name IN ({marks})",
        TEXT_OWNERS,
    ).fetchall()
    return [str(r[0]) for r in rows]
