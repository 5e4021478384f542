"""``ai-agent rules``: the always-allow rules people made, listed and revoked.

A rule is made by a plan that approves a call with ``always_allow`` (``ai-agent resume THREAD
--approve ID --always args``, a plan file, the console). ``rules list`` shows each with what it
allows, where it was made and, for a row that cannot be used (changed by hand), why; ``rules
revoke ID`` ends one: from then on the gate asks again.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from ai_agent.cli._common import Parents, UsageError, archive_of, run_closing, run_listing
from ai_agent.cli._printing import format_table, print_json, stored_minute
from ai_agent.visible import visible

__all__ = ["add_commands"]


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``rules list`` and ``rules revoke``."""
    rules = sub.add_parser(
        "rules",
        parents=[parents.common],
        help="list or revoke the always-allow rules",
        description="The always-allow rules of one database: calls they match run without "
        "asking a person. Made by plans (always_allow), revoked here or in the console.",
    )
    actions = rules.add_subparsers(dest="rules_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", parents=[parents.common], help="list the rules")
    listing.add_argument("--all", action="store_true", help="the revoked rules too")
    listing.set_defaults(handler=_list)
    revoke = actions.add_parser("revoke", parents=[parents.common], help="revoke a rule")
    revoke.add_argument("rule", type=_rule_id, help="the rule's id (rules list shows it)")
    revoke.set_defaults(handler=_revoke)


def _rule_id(text: str) -> int:
    # ASCII digits only: ``str.isdigit`` also takes "\u0661" (an Arabic-Indic one), which int()
    # reads as 1, so `rules revoke` of it revoked rule 1, and "\u00b2" (²), which int() refuses.
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise argparse.ArgumentTypeError(
            f"a rule's id is a number, such as 3, in the digits 0-9 (got {text[:20]!r})"
        )
    return int(text)


def _what(rule: Any) -> str:
    from ai_agent.graph import rule_allows

    allows: str = rule_allows(rule)  # the package's lazy name: typed here
    return allows


def _clipped(text: str, width: int) -> str:
    """``text``, cut after ``width`` characters with "…" to say so.

    The cut must show: an ``args`` rule's command padded with spaces would otherwise read as
    its harmless start (``echo tidy``) with the rest (``; rm -rf ~``) silently gone. ``--json``
    shows it whole.
    """
    return text if len(text) <= width else text[:width] + "\u2026"


def _list(args: argparse.Namespace) -> int:
    archive = archive_of(args, listing=True)
    rules = run_listing(archive, lambda: archive.store.list_rules(revoked=args.all))
    if args.json:
        print_json(rules)
        return 0
    if not rules:
        print("no rules")
        return 0
    rows = [
        (
            str(r["id"]),
            r["tool"],
            _clipped(_what(r), 80),
            _clipped(r["source"], 50),
            stored_minute(r["created_at"]),
            stored_minute(r["revoked_at"]),
        )
        for r in rules
    ]
    print(format_table(("rule", "tool", "allows", "made at", "made", "revoked"), rows))
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from ai_agent.errors import RunError

    archive = archive_of(args, listing=True)
    try:
        # A write: not through `run_listing`, which may run its read a second time.
        rule = run_closing(contextlib.aclosing(archive), archive.store.revoke_rule(args.rule))
    except RunError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print_json(rule)
    else:
        # The rule's words are its row's (any program with the database may have written it).
        what = visible(f"{rule['id']} ({_what(rule)})")
        print(f"revoked rule {what}; the gate asks again for such calls")
    return 0
