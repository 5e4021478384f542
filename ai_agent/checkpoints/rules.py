"""The always-allow rules people made (``agent_rules``): stored, listed, revoked, read by act.

A rule is made where a plan is applied to a paused run (`ai_agent.tools.rules.new_rules`), once
per gate and call however often that happens (``rule_key`` is unique); revoking one keeps its row
with the time (``revoked_at``), so the list shows what was allowed and until when. What a rule
means, and what it can never allow, is in `ai_agent.tools.rules`.

A row is read as hostile input: a value of the wrong type or a part that is not JSON makes an
`AllowRule` that carries its ``problem`` instead of raising, so a listing still shows it (to be
revoked) and act never uses it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ai_agent.checkpoints._sql import SqlStore, threaded
from ai_agent.errors import RunError

if TYPE_CHECKING:  # a TypedDict: the reads need not import the run context's module
    from ai_agent.context import AllowRule

__all__ = [
    "POSTGRES_TYPES",
    "RULES_DDL",
    "RULE_COLUMNS",
    "SQLITE_TYPES",
    "RuleStore",
    "allow_rule",
]

RULE_COLUMNS = (
    "id, tool, scope, thread_id, args_hash, args, category, confirmed, source, created_at, "
    "revoked_at"
)

# Additive (``ai_agent.checkpoints.schema._ADDITIVE``): created when missing at any version; an
# older ai-agent does not read it, and so asks a person where a rule would have answered. No index
# beyond the key's: a store holds a handful of rules, read by tool, and the table stays one page.
SQLITE_TYPES = {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL"}
POSTGRES_TYPES = {
    "id": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    "real": "DOUBLE PRECISION",
}

RULES_DDL = (
    """CREATE TABLE IF NOT EXISTS agent_rules (
        id {id},
        tool TEXT NOT NULL,
        scope TEXT NOT NULL,
        thread_id TEXT,
        args_hash TEXT,
        args TEXT,
        category TEXT NOT NULL,
        confirmed INTEGER NOT NULL,
        source TEXT NOT NULL,
        rule_key TEXT NOT NULL UNIQUE,
        created_at {real} NOT NULL,
        revoked_at {real}
    )""",
)


def allow_rule(row: Sequence[Any]) -> AllowRule:
    """An `AllowRule` from a row of `RULE_COLUMNS`; a row it cannot read carries the reason.

    Examples:
        >>> row = (3, "note", "tool", None, None, None, "read_only", 0, "run r", 1.0, None)
        >>> (allow_rule(row)["scope"], allow_rule(row)["problem"])
        ('tool', None)
        >>> allow_rule((3, "note", "tool", None, None, "{", "read_only", 0, "r", 1.0, None))[
        ...     "problem"]
        'rule 3 cannot be read (its arguments are not a JSON object)'
    """
    rule_id = row[0] if isinstance(row[0], int) else -1
    rule: AllowRule = {
        "id": rule_id,
        "tool": str(row[1]),
        "scope": cast(Any, str(row[2])),
        "thread_id": row[3] if isinstance(row[3], str) else None,
        "args_hash": row[4] if isinstance(row[4], str) else None,
        "args": None,
        "category": str(row[6]),
        "confirmed": row[7] == 1,
        "source": str(row[8]),
        "created_at": float(row[9]) if isinstance(row[9], int | float) else 0.0,
        "revoked_at": float(row[10]) if isinstance(row[10], int | float) else None,
        "problem": None,
    }
    why = _unreadable(row)
    if why is None and row[5] is not None:
        try:
            args = json.loads(row[5])
        except (TypeError, ValueError, RecursionError):
            args = None
        if isinstance(args, dict):
            rule["args"] = args
        else:
            why = "its arguments are not a JSON object"
    if why is not None:
        rule["problem"] = f"rule {rule_id} cannot be read ({why})"
    return rule


def _unreadable(row: Sequence[Any]) -> str | None:
    """What about a row's types is wrong (a database edited by hand, or another program)."""
    if not isinstance(row[0], int):
        return "its id is not a number"
    if not isinstance(row[1], str) or not row[1]:
        return "it names no tool"
    if row[7] not in (0, 1):
        return "its confirmation is neither 0 nor 1"
    if row[3] is not None and not isinstance(row[3], str):
        return "its run is not a thread id"
    return None


class RuleStore(SqlStore):
    """The always-allow rules part of the run store (see the module docstring)."""

    @threaded
    def add_rule(self, rule: dict[str, Any]) -> AllowRule:
        """Store a rule (`ai_agent.tools.rules.NewRule`); the same rule again is the stored one."""
        with self._tx() as session:
            session.execute(
                "INSERT INTO agent_rules (tool, scope, thread_id, args_hash, args, category, "
                "confirmed, source, rule_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (rule_key) DO NOTHING",
                (
                    rule["tool"],
                    rule["scope"],
                    rule["thread_id"],
                    rule["args_hash"],
                    None if rule["args"] is None else json.dumps(rule["args"], sort_keys=True),
                    rule["category"],
                    1 if rule["confirmed"] else 0,
                    rule["source"],
                    rule["key"],
                    time.time(),
                ),
            )
            row = session.one(
                f"SELECT {RULE_COLUMNS} FROM agent_rules WHERE rule_key = ?",  # noqa: S608 - fixed text
                (rule["key"],),
            )
        return allow_rule(row)

    @threaded
    def list_rules(self, *, revoked: bool = False) -> list[AllowRule]:
        """The rules, newest first; with ``revoked``, the revoked ones too."""
        where = "" if revoked else " WHERE revoked_at IS NULL"
        rows = self._all(f"SELECT {RULE_COLUMNS} FROM agent_rules{where} ORDER BY id DESC")  # noqa: S608 - fixed text
        return [allow_rule(r) for r in rows]

    @threaded
    def rules_for(self, tool: str) -> list[AllowRule]:
        """The rules of ``tool`` that are not revoked, oldest first (unreadable ones with why)."""
        rows = self._all(
            f"SELECT {RULE_COLUMNS} FROM agent_rules WHERE tool = ? AND revoked_at IS NULL "  # noqa: S608 - fixed text
            "ORDER BY id",
            (tool,),
        )
        return [allow_rule(r) for r in rows]

    @threaded
    def revoke_rule(self, rule_id: int) -> AllowRule:
        """Revoke a rule: from now on it lets nothing through.

        Raises:
            RunError: no rule has this id, or it was revoked already.
        """
        with self._tx() as session:
            changed = session.execute(
                "UPDATE agent_rules SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (time.time(), rule_id),
            ).rowcount
            row = session.one(
                f"SELECT {RULE_COLUMNS} FROM agent_rules WHERE id = ?",  # noqa: S608 - fixed text
                (rule_id,),
            )
        if row is None:
            raise RunError(f"there is no rule {rule_id}; `ai-agent rules list` shows the rules")
        if changed != 1:
            raise RunError(f"rule {rule_id} was revoked already")
        return allow_rule(row)
