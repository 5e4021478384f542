"""Always-allow rules in words, for the places people read them (``ai-agent rules``, the console).

What a rule means and what it can never allow is in `ai_agent.tools.rules`; the rows are in the
run store (`ai_agent.checkpoints.rules`).
"""

from __future__ import annotations

import json

from ai_agent.context import AllowRule
from ai_agent.tools.rules import describe_rule, rule_problem

__all__ = ["rule_allows"]


def rule_allows(rule: AllowRule) -> str:
    """What a stored rule lets through, in words; for a row the engine does not use, why not.

    Examples:
        >>> from ai_agent.tools.policy import args_hash
        >>> rule = {"id": 2, "tool": "write_file", "scope": "args", "thread_id": None,
        ...         "args_hash": args_hash({"path": "a"}), "args": {"path": "a"},
        ...         "category": "modification", "confirmed": False, "problem": None}
        >>> rule_allows(rule)
        'write_file with these exact arguments, in any run: {"path": "a"}'
        >>> rule_allows({**rule, "args_hash": "x"})
        'NOT USED: rule 2 is for some arguments but holds no digest of them'
    """
    problem = rule_problem(rule)
    if problem is not None:
        return f"NOT USED: {problem}"
    text = describe_rule(rule)
    if rule["scope"] == "args":
        text += f": {json.dumps(rule['args'], sort_keys=True, ensure_ascii=False)}"
    return text
