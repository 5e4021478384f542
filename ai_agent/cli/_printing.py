"""What the CLI prints: results, families of runs, tables, traces and timelines.

Every text that came from a model, a tool or a stored run passes `visible` before it is printed
(escape sequences and control characters shown, never sent to the terminal).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ai_agent.cli._links import format_sources, linked_answer, links_wanted
from ai_agent.visible import json_visible, visible

__all__ = [
    "format_table",
    "format_timeline",
    "format_trace",
    "print_family",
    "print_json",
    "print_pipeline",
    "print_result",
    "stored_minute",
    "streaming",
]

if TYPE_CHECKING:
    from ai_agent.graph import RunFamily, RunResult, UnreadChannels


def print_json(value: Any) -> None:
    """Machine output on stdout: the exact values, with hidden characters as JSON escapes.

    JSON has no NaN or Infinity, and SQLite keeps Infinity in a row edited by hand (a plan's or
    a rule's time set to 9e999): such a number is printed as null, as ``runs`` shows a time it
    cannot read, rather than as ``Infinity``, which JSON readers refuse.
    """
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:  # a float out of JSON's range somewhere: rare, so walked only then
        text = json.dumps(_finite(value), indent=2, ensure_ascii=False, default=str)
    print(json_visible(text))


def _finite(value: Any) -> Any:
    """``value`` with each NaN or infinite float (in dicts, lists and tuples) made None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def streaming(args: argparse.Namespace) -> bool:
    """Whether the command shows the run live (tokens and tool output as they arrive).

    ``--stream`` / ``--no-stream`` decide; by default a terminal gets the live view and a pipe
    gets the answer at the end. ``--json`` and ``--quiet`` never stream.
    """
    if getattr(args, "no_stream", False) or getattr(args, "json", False) or args.quiet:
        return False
    return bool(getattr(args, "stream", False) or sys.stdout.isatty())


def stored_minute(stamp: float | None) -> str:
    """A stored time to the minute (UTC); "unknown" for one no date has (a row edited to 9e999).

    Examples:
        >>> stored_minute(0.0), stored_minute(None), stored_minute(9e999)
        ('1970-01-01 00:00', '', 'unknown')
    """
    if stamp is None:
        return ""
    try:
        return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return "unknown"


def print_result(
    result: RunResult,
    *,
    as_json: bool = False,
    trace: bool = False,
    streamed: str = "",
    links: str = "auto",
) -> None:
    """A run's outcome: the answer on stdout, or the gate's prompt, or the error on stderr.

    ``streamed`` is the answer text already printed live; it is not printed again. The sources
    the answer cites follow it, as OSC 8 links where ``links`` (``--links``) and the terminal
    allow (`ai_agent.cli._links`), plain paths otherwise.
    """
    if as_json:
        print_json(result.to_dict())
        return
    if trace:
        print(format_trace(result.trace))
    linking = links_wanted(links, sys.stdout)
    # Links go past the net (`TerminalStream`), which would escape their ESC: every other part
    # of what is printed with them is made visible first, and their targets are checked URIs.
    out = getattr(sys.stdout, "inner", sys.stdout) if linking else sys.stdout
    answered = result.status in ("completed", "cancelled")
    if answered and (not streamed or streamed.strip() != (result.final_text or "").strip()):
        shown = visible(result.final_text or "", "text")
        print(linked_answer(shown, result.citations) if linking else shown, file=out)
    if answered and result.citations:
        print(format_sources(result.citations, links=linking), file=out)
    if result.stop_reason in ("token_limit", "ended_by_server"):
        print(_not_ended_by_the_model(result), file=sys.stderr)
    if result.status == "cancelled":
        why = "" if result.stop_reason in (None, "cancelled") else f": {result.stop_reason}"
        print(f"(cancelled{why})", file=sys.stderr)
    elif result.status == "paused" and result.gate:
        print(visible(result.gate["prompt"], "lines"))
    elif result.status == "paused" and result.interrupt:
        print(visible(result.interrupt.prompt, "lines"))
    elif result.status == "failed":
        print(f"error: {visible(str(result.error), 'lines')}", file=sys.stderr)


def _not_ended_by_the_model(result: RunResult) -> str:
    """The warning under an answer the server ended, not the model."""
    if result.stop_reason == "token_limit":
        return (
            "(the answer stopped at the model's token limit: it may be incomplete; raise "
            "max_tokens, MAMBA_MODEL_BACKEND__MAX_TOKENS, for a complete one)"
        )
    drafts = [line for line in result.trace if line.get("stage") == "draft"]
    why = str(drafts[-1].get("detail") or "").partition(": ")[2] if drafts else ""
    return (
        f"(the model server ended the answer, not the model (finish reason {visible(why)}): it "
        "may be incomplete or filtered; the server's own logs say why)"
    )


def print_family(family: RunFamily) -> None:
    """A child run's parent step, and the child runs (subagents') a run spawned."""

    def link(one: Any) -> str:
        at = f" at call {visible(str(one['call_id']))}" if one["call_id"] else ""
        return f"{visible(one['thread_id'])}{at} ({visible(str(one['status']))})"

    if family["parent"] is not None:
        print(f"child of {link(family['parent'])}")
    for child in family["children"]:
        print(f"child run {link(child)}")


def print_pipeline(fields: dict[str, Any], unread: UnreadChannels | None) -> None:
    """A pipeline's own state fields (``--pipeline``), or the line saying what it would show."""
    for name, value in fields.items():
        text = json_visible(json.dumps(value, ensure_ascii=False, default=str))
        print(f"{visible(name)}: {text if len(text) <= 200 else text[:199] + '…'}")
    if unread is not None:
        print(visible(unread.note()))


def format_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Rows as a plain-text table with aligned columns; each cell is shown as one line."""
    table = [tuple(head), *(tuple(visible(cell) for cell in r) for r in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table
    )


def format_trace(trace: Sequence[Any]) -> str:
    """The structured trace as a readable table."""
    rows = []
    for t in trace:
        gate = t.get("gate_score")
        rows.append(
            (
                str(t.get("stage", "")),
                str(t.get("iteration", "")),
                f"{t.get('duration_ms', 0):.1f}",
                str(t.get("tool") or ""),
                str(t.get("status", "")),
                "" if gate is None else f"{gate:.2f}",
                str(t.get("detail") or "")[:60].replace("\n", " "),
            )
        )
    return format_table(("stage", "iter", "ms", "tool", "status", "gate", "detail"), rows)


def format_timeline(timeline: Sequence[Any]) -> str:
    """A run's timeline (``Agent.timeline``) as a readable table."""
    rows = [
        (
            "" if t["step"] is None else str(t["step"]),
            t["stage"],
            str(t["iteration"]),
            f"{t['duration_ms']:.1f}",
            "" if t["tokens"] is None else str(t["tokens"]),
            t["tool"] or "",
            t["status"],
            "" if t["gate_score"] is None else f"{t['gate_score']:.2f}",
            t["detail"][:60].replace("\n", " "),
        )
        for t in timeline
    ]
    head = ("step", "stage", "iter", "ms", "tokens", "tool", "status", "gate", "detail")
    return format_table(head, rows)
