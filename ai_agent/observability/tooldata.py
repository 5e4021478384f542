"""What a tool call's result tells about the call: chars read, K, retrieved items, attempts.

These are the telemetry items of the notes-assistant flow, read from any ToolResult by shape, so
any tool that returns the same shapes is described the same way:

- ``k``: ``meta.k``, else the call's ``k`` argument (retrieval K);
- ``items``: the ``data`` list of a ``{ok, data: [{path, score, snippet, section}], took_ms}``
  result (find_similar's), as path, score, section and snippet;
- ``chars``: the length of the text the tool returned (``content`` as text, or its ``text``
  field, as read_note gives);
- ``attempts``: how many runs the call took when it was retried (``meta.attempts``);
- ``took_ms``: the tool's own timing, when it reports one; ``code``: the error code, if any.

Examples:
    >>> call = {"id": "c1", "name": "find_similar", "args": {"queries": ["tide"], "k": 5}}
    >>> result = {"status": "ok", "content": {"ok": True, "took_ms": 2.5, "data": [
    ...     {"path": "tides.md", "section": "Tides", "score": 0.82, "snippet": "High tide..."}]}}
    >>> facts = tool_telemetry(call, result)
    >>> facts["k"], facts["item_count"], facts["items"][0]["path"]
    (5, 1, 'tides.md')
    >>> tool_telemetry({"id": "c2", "name": "read_note", "args": {}},
    ...                {"status": "ok", "content": {"text": "x" * 40}})["chars"]
    40
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from ai_agent.state import ToolCall, ToolResult

__all__ = ["RetrievedItem", "ToolTelemetry", "tool_telemetry"]


class RetrievedItem(TypedDict, total=False):
    """One retrieved item of a search tool's result."""

    path: str
    section: str | None
    score: float
    snippet: str


class ToolTelemetry(TypedDict, total=False):
    """The telemetry items of one tool call (only those the result has)."""

    k: int
    items: list[RetrievedItem]
    item_count: int
    chars: int
    attempts: int
    took_ms: float
    code: str


def _items(content: Any) -> list[RetrievedItem] | None:
    data = content.get("data") if isinstance(content, Mapping) else None
    if not isinstance(data, list) or not all(isinstance(d, Mapping) for d in data):
        return None
    if not any("path" in d for d in data):
        return None
    items: list[RetrievedItem] = []
    for d in data:
        item = RetrievedItem(path=str(d.get("path", "")))
        if d.get("section") is not None:
            item["section"] = str(d["section"])
        if isinstance(d.get("score"), int | float):
            item["score"] = round(float(d["score"]), 4)
        if d.get("snippet") is not None:
            item["snippet"] = str(d["snippet"])
        items.append(item)
    return items


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        return str(content["text"])
    return None


def tool_telemetry(call: ToolCall, result: ToolResult) -> ToolTelemetry:
    """The telemetry items of a tool call (see the module docstring)."""
    out = ToolTelemetry()
    meta: Mapping[str, Any] = result.get("meta") or {}
    args: Mapping[str, Any] = call.get("args") or {}
    k = meta.get("k", args.get("k"))
    if isinstance(k, int) and not isinstance(k, bool):
        out["k"] = k
    content = result.get("content")
    items = _items(content)
    if items is not None:
        out["items"] = items
        out["item_count"] = len(items)
    text = _text(content)
    if text is not None:
        out["chars"] = len(text)
    if isinstance(meta.get("attempts"), int):
        out["attempts"] = int(meta["attempts"])
    took = content.get("took_ms") if isinstance(content, Mapping) else None
    if isinstance(took, int | float) and not isinstance(took, bool):
        out["took_ms"] = float(took)
    if meta.get("code"):
        out["code"] = str(meta["code"])
    return out
