"""The short lines a person sees while tools run: a plan line per tool phase, a status per call.

The notes-assistant flow shows a short "plan" line before the tools of a turn run (it masks
their latency, and says what is coming) and one status line per tool run ("Searching the
notes... K=20"). Both travel on `ai_agent.events.ToolStarted` (``plan`` on the first call of a
phase, ``status`` on every call); the CLI prints them on stderr (`ai_agent.cli._live`).
"""

from __future__ import annotations

from ai_agent.state import RunState

__all__ = ["plan_line", "status_line"]

_LONGEST = 160  # a status line, not a paragraph


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= _LONGEST else line[: _LONGEST - 3] + "..."


def plan_line(state: RunState) -> str:
    r"""What this turn's tool phase will do: the model's own words with its calls, else the tools.

    Examples:
        >>> decision = {"action": "tool", "text": "", "calls": [
        ...     {"id": "c1.0", "name": "find_similar", "args": {}},
        ...     {"id": "c1.1", "name": "read_note", "args": {}}]}
        >>> plan_line({"decision": decision})
        'find_similar, then read_note'
        >>> plan_line({"decision": dict(decision, text="I will search your notes.\nThen...")})
        'I will search your notes.'
    """
    decision = state.get("decision")
    if decision is None:
        return ""
    said = _first_line(str(decision.get("text") or ""))
    if said:
        return said
    names = list(dict.fromkeys(c["name"] for c in decision.get("calls", [])))
    return _first_line(", then ".join(names))


def status_line(tool: str, preview: str) -> str:
    r"""A call's status line: the first line of its tool's own preview (scrubbed, bounded).

    A tool without a preview of its own has the engine's ``name({arguments})``: no status line
    (the CLI says "running NAME"), rather than arguments a person did not ask to see.

    Examples:
        >>> status_line("find_similar", "Searching the notes... K=20 for 'tide'\n")
        "Searching the notes... K=20 for 'tide'"
        >>> status_line("calculator", 'calculator({"expression": "2+2"})')
        ''
    """
    return "" if preview.startswith(f"{tool}(") else _first_line(preview)
