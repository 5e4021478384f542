"""Tool results: normalising what tools return, scrubbing secrets, the model's text, clipping.

Results end up in checkpointed state, so everything here produces plain JSON data; and results
cross the boundary from a tool (which may hold an API key) to the run (which must never), so every
string in them passes the `Scrubber` first (the engine's `SecretValues`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from ai_agent.context import OutputStore
from ai_agent.observability.redaction import MASK, SecretValues
from ai_agent.state import MediaPart, ToolCall, ToolResult
from ai_agent.tools.extractive import HEADER_START, extractive_summary
from ai_agent.tools.media import MediaKind, describe, media_part, unreadable
from ai_agent.tools.model_summary import MODEL_HEADER_START, OutputSummarizer, model_header

__all__ = [
    "REDACTED",
    "OutputSummary",
    "Scrubber",
    "bound_output",
    "cap_summary",
    "clip_text",
    "default_summary",
    "is_bounded",
    "labelled",
    "model_text",
    "normalise",
    "schema_violation",
    "to_jsonable",
]

REDACTED = MASK
# How a tool output longer than max_output_chars is made shorter (tool_config.output_summary).
OutputSummary = Literal["extractive", "clip", "model"]
_ERROR_PREFIX = "Error: "
_MARKER_END = " ...]\n"
_SUMMARY_CHARS = 2000
# The keys a ToolResult has: a dict with any other key is a tool's data (a web API's
# ``{"status": "ok", "results": [...]}``), kept whole as content, never read as a result whose
# unknown keys are dropped.
_RESULT_KEYS = ToolResult.__required_keys__ | ToolResult.__optional_keys__
# The tool-oversight spec's result shape, read as a result only when it has nothing else.
_SPEC_KEYS = frozenset({"success", "data", "error_message"})
# The longest marker line `clip_text` writes in `bound_output` (its note names the thread and
# the kept output twice): a text that claims the shape with a longer "marker" is not bounded.
_MARKER_MAX = 2000
# An int with more bits than this may have more digits than Python turns into text
# (sys.get_int_max_str_digits); only those are tried, so ordinary numbers cost nothing.
_SMALL_INT_BITS = 4000


def to_jsonable(value: Any) -> Any:
    """``value`` as JSON data (what strict checkpoint serialization accepts).

    Examples:
        >>> import datetime
        >>> to_jsonable({"when": datetime.date(2024, 1, 2), "xs": (1, 2)})
        {'when': '2024-01-02', 'xs': [1, 2]}
    """
    return to_jsonable_python(value, fallback=str)


def _check_numbers(value: Any) -> None:
    """Raise ValueError for an int too long to write as text (JSON, the model's text).

    Such an int passes ``to_jsonable`` unchanged and would fail later, where the result is
    written out (the trace line, the checkpoint), as the engine's error ending the run. Raised
    here, it ends the call as the tool's error (``BAD_RESULT``) instead. A walk with a stack of
    its own: JSON data may nest deeper than Python's recursion limit.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and item.bit_length() > _SMALL_INT_BITS:
            try:
                str(item)
            except ValueError:
                raise ValueError(
                    f"an integer of more than {sys.get_int_max_str_digits():,} digits; return "
                    "it as text"
                ) from None


def _fields(outcome: Any) -> frozenset[Any] | None:
    """The names of an object's fields when it has a fixed set (dict, pydantic model, dataclass)."""
    if isinstance(outcome, dict):
        return frozenset(outcome)
    if isinstance(outcome, BaseModel):
        return frozenset(type(outcome).model_fields)
    if dataclasses.is_dataclass(outcome) and not isinstance(outcome, type):
        return frozenset(f.name for f in dataclasses.fields(outcome))
    return None


def _from_spec_style(outcome: Any) -> ToolResult | None:
    """The tool-oversight spec's result shape: ``success``, ``data``, ``error_message``.

    Only when that is all it has: ``{"success": true, "data": [...], "next_page": 2}`` is a
    tool's data, which taken as a result would lose its ``next_page`` without a sign.
    """
    fields = _fields(outcome)
    if fields is not None and not fields <= _SPEC_KEYS:
        return None
    if isinstance(outcome, dict):
        success, data, error = (
            outcome.get("success"),
            outcome.get("data"),
            outcome.get("error_message"),
        )
    elif hasattr(outcome, "success") and hasattr(outcome, "data"):
        success, data = outcome.success, outcome.data
        error = getattr(outcome, "error_message", None)
    else:
        return None
    if not isinstance(success, bool):
        return None
    if success:
        return ToolResult(status="ok", content=to_jsonable(data))
    return ToolResult(status="error", error=str(error or "the tool failed"), content=None)


def _is_result(outcome: Any) -> bool:
    """Whether a tool returned a ToolResult: a dict of a result's status and keys only."""
    return (
        isinstance(outcome, dict)
        and outcome.get("status") in ("ok", "error", "skipped")
        and outcome.keys() <= _RESULT_KEYS
    )


def _media_fields(parts: Any) -> list[tuple[MediaKind, str, str]]:
    """The (kind, MIME type, base64 data) of each well-formed part a tool returned."""
    found: list[tuple[MediaKind, str, str]] = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        kind, mime, data = part.get("kind"), part.get("mime_type"), part.get("data")
        if kind in ("image", "audio") and isinstance(mime, str) and isinstance(data, str):
            found.append((kind, mime, data))
    return found


def _add_descriptions(result: ToolResult, parts: list[MediaPart], lost: list[str]) -> None:
    """Each part's line at the end of a text result: what a model that reads no media gets."""
    text = result.get("content")
    if text is None or isinstance(text, str):
        # An MCP result describes its parts already, where each block was.
        lines = [*map(describe, parts), *lost]
        missing = [line for line in lines if line not in (text or "")]
        result["content"] = "\n".join([*([text] if text else []), *missing])


def _add_media(result: ToolResult, fields: list[tuple[MediaKind, str, str]]) -> None:
    """A tool's media parts, rebuilt from each part's kind, type and data, onto ``result``.

    A size or digest is never taken on the tool's word, and a part that is not an image or
    audio is left out. One whose data is not base64 is left out too, but its line says so:
    dropped without a word, the model would answer as if the tool had shown nothing.
    """
    parts = [media_part(*f) for f in fields]
    kept = [p for p in parts if p is not None]
    if kept:
        result["media"] = kept
    lost = [unreadable(f[0], f[1]) for f, p in zip(fields, parts, strict=True) if p is None]
    if kept or lost:
        _add_descriptions(result, kept, lost)


def normalise(outcome: Any) -> ToolResult:
    """Accept what tools commonly return and turn it into a ToolResult of JSON data.

    A dict is a result when its ``status`` is one and it has no key a result does not have;
    any other dict is the tool's data, kept whole as ``content``.

    Raises:
        ValueError: the value cannot be written as JSON (an int of too many digits), which the
            registry reports as the tool's ``BAD_RESULT``.

    Examples:
        >>> normalise({"status": "ok", "content": 3})
        {'status': 'ok', 'content': 3}
        >>> normalise([1, 2])
        {'status': 'ok', 'content': [1, 2]}
        >>> normalise({"success": False, "data": None, "error_message": "down"})
        {'status': 'error', 'error': 'down', 'content': None}
        >>> normalise({"status": "ok", "results": [1]})["content"]
        {'status': 'ok', 'results': [1]}
    """
    result = _normalised(outcome)
    _check_numbers(result)
    return result


def _normalised(outcome: Any) -> ToolResult:
    """`normalise` before its check of the numbers."""
    if _is_result(outcome):
        result = ToolResult(status=outcome["status"])
        if "content" in outcome:
            result["content"] = to_jsonable(outcome["content"])
        if "error" in outcome:
            error = outcome["error"]
            result["error"] = None if error is None else str(error)
        if "meta" in outcome:
            meta = to_jsonable(outcome["meta"])
            result["meta"] = meta if isinstance(meta, dict) else {"value": meta}
        if isinstance(outcome.get("summary"), str):
            result["summary"] = outcome["summary"]
        if outcome.get("media"):
            _add_media(result, _media_fields(outcome["media"]))
        return result
    converted = _from_spec_style(outcome)
    if converted is not None:
        return converted
    if isinstance(outcome, BaseModel):
        return ToolResult(status="ok", content=outcome.model_dump(mode="json"))
    return ToolResult(status="ok", content=to_jsonable(outcome))


# The tool layer's name for the engine's one secret mask (`ai_agent.observability.redaction`).
Scrubber = SecretValues


def labelled(result: ToolResult, name: str, category: str | None) -> ToolResult:
    """``result`` naming the tool it is of and that tool's category (None: no such tool).

    Both come from the catalog, never from what a tool returned (`normalise` keeps neither), so a
    tool cannot claim another's name or a milder category.

    Examples:
        >>> labelled({"status": "ok", "content": 1}, "echo", "read_only")
        {'status': 'ok', 'content': 1, 'tool_name': 'echo', 'category': 'read_only'}
        >>> labelled({"status": "error"}, "gone", None)
        {'status': 'error', 'tool_name': 'gone'}
    """
    named = ToolResult(**result)
    named["tool_name"] = name
    if category is not None:
        named["category"] = category
    return named


def model_text(result: ToolResult) -> str:
    """The text the model sees for a result.

    Examples:
        >>> model_text({"status": "error", "error": "no such file"})
        'Error: no such file'
        >>> model_text({"status": "ok", "content": {"n": 1}})
        '{"n": 1}'
    """
    if result["status"] == "error":
        return f"{_ERROR_PREFIX}{result.get('error') or 'the tool failed'}"
    content = result.get("content")
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def default_summary(name: str, result: ToolResult) -> str:
    """The trace line of a result when the tool has no ``format_result`` of its own.

    Examples:
        >>> default_summary("calculator", {"status": "ok", "content": "4"})
        'calculator: 4'
    """
    text = model_text(result).strip().replace("\n", " ")
    return f"{name}: {text[:160]}{'...' if len(text) > 160 else ''}"


def cap_summary(text: str) -> str:
    """A tool's own summary, bounded so a chatty ``format_result`` cannot bloat the trace."""
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 3] + "..."


def clip_text(text: str, limit: int, *, note: str) -> str:
    r"""Keep the head and the tail of ``text`` (two thirds and one third of ``limit``).

    The middle is replaced by one marker line holding ``note`` and how much was cut, so the model
    sees both the start (headers, first matches) and the end (errors, totals) of a long output.

    Examples:
        >>> clip_text("a" * 30 + "b" * 30, 30, note="see ref x")
        'aaaaaaaaaaaaaaaaaaaa\n[... 30 of 60 characters clipped; see ref x ...]\nbbbbbbbbbb'
    """
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    marker = f"\n[... {cut} of {len(text)} characters clipped; {note}{_MARKER_END}"
    return text[:head] + marker + (text[-tail:] if tail else "")


async def bound_output(
    outputs: OutputStore | None,
    where: tuple[str, int, ToolCall],
    text: str,
    result: ToolResult,
    limit: int,
    method: OutputSummary = "extractive",
    *,
    summarizer: OutputSummarizer | None = None,
    task: str = "",
) -> tuple[str, ToolResult]:
    """Bound what the model (and the run) keeps of a result; its full text goes to ``outputs``.

    A ``text`` (the result as the model reads it) longer than ``limit`` is kept whole, once, in
    the output store, and the result is replaced by one whose text is a summary of it that says
    it is one and names the kept output: ``extractive`` (some of its own lines, chosen the same
    way every time, see `extractive_summary`), ``model`` (written by ``summarizer``, see
    `ai_agent.tools.model_summary`; extractive, saying why, when it fails) or ``clip`` (its
    head and tail, see `clip_text`; also what an extractive summary falls back to when none
    fits). Everything else the run
    stores of the call (checkpoints, the journal, the recorded call) holds the bounded result,
    so a large output takes its size once. A result bounded already (`is_bounded`) comes back as
    it is: bounding twice would summarize the summary and overwrite the kept output with it.

    Args:
        outputs: Where the full text is kept (None: it is not kept, and the text says so).
        where: The run's thread id, the iteration and the call.
        text: The result as the model reads it (the tool box's ``format_result``).
        result: The result.
        limit: The longest text kept in the run (``max_output_chars``).
        method: How the text is made shorter (``tool_config.output_summary``).
        summarizer: Writes a ``model`` summary (None: there is no model to ask here).
        task: The run's task, which the summarizing model is told.

    Returns:
        The text the model gets and the result the run keeps.
    """
    if len(text) <= limit or is_bounded(text, result, limit):
        return text, result
    thread_id, iteration, call = where
    ref = None
    if outputs is not None:
        ref = await outputs.save_output(thread_id, iteration, call, text)
    note = (
        f"the full output is kept as {ref} (ai-agent output {thread_id} {ref})"
        if ref
        else "the full output was not kept"
    )
    note += "; narrow the request to see the rest"
    meta = dict(result.get("meta") or {})
    meta.update(clipped=True, full_chars=len(text), output_ref=ref)
    clipped = None
    if method == "model":
        clipped, note = await _model_summary(summarizer, where, text, limit, note, task, meta)
    if clipped is None and method != "clip":
        clipped = extractive_summary(text, limit, note=note)
        meta["summary"] = "extractive"
    if clipped is None:
        clipped = clip_text(text, limit, note=note)
        meta["summary"] = "clip"
    bounded = ToolResult(**result)
    bounded["meta"] = meta
    if result["status"] == "error":
        # model_text adds the prefix back: the bounded result reads exactly as ``clipped``.
        bounded["error"] = clipped.removeprefix(_ERROR_PREFIX)
    else:
        bounded["content"] = clipped
    return clipped, bounded


async def _model_summary(
    summarizer: OutputSummarizer | None,
    where: tuple[str, int, ToolCall],
    text: str,
    limit: int,
    note: str,
    task: str,
    meta: dict[str, Any],
) -> tuple[str | None, str]:
    """The model's summary under its header (None when it failed) and the note to go on with.

    ``meta`` gets ``summary`` ("model"), the usage of the call (``summary_usage``, whenever the
    model answered) or, on failure, why (``summary_failure``), which the fallback's note says.
    """
    if summarizer is None:
        failure = "no model to write it here"
    else:
        header = model_header(len(text), len(text.splitlines()), note)
        made = await summarizer.summarize(
            text, room=limit - len(header), tool=where[2]["name"], task=task, iteration=where[1]
        )
        if made.usage is not None:
            meta["summary_usage"] = made.usage
        if made.text is not None:
            meta["summary"] = "model"
            return header + made.text, note
        failure = made.failure or "no summary"
    meta["summary_failure"] = failure
    return None, f"{note}; the model's summary failed ({failure})"


def is_bounded(text: str, result: ToolResult, limit: int) -> bool:
    """Whether ``text`` is what `bound_output` made of a longer text for this ``limit``.

    Told by the shape `clip_text` gives (head, marker, tail) and the result's ``full_chars``,
    not by the thread it was made in: a replay serves the recorded, bounded result to a new
    thread, and its text must reach the model unchanged.

    Examples:
        >>> text, result = "x" * 500, {"status": "ok", "content": "x" * 500}
        >>> import asyncio
        >>> shown, kept = asyncio.run(bound_output(None, ("t", 1, {}), text, result, 200))
        >>> is_bounded(shown, kept, 200), is_bounded(text, result, 200)
        (True, False)
    """
    meta = result.get("meta") or {}
    full = meta.get("full_chars")
    if meta.get("clipped") is not True or not isinstance(full, int) or "output_ref" not in meta:
        return False
    starts = {"extractive": HEADER_START, "model": MODEL_HEADER_START}.get(str(meta.get("summary")))
    if starts is not None:
        # Any text under the limit with the header is harmless to keep as it is.
        return len(text) <= limit and text.startswith(f"{starts}{full:,}-character ")
    head = limit * 2 // 3
    tail = limit - head
    start = f"\n[... {full - head - tail} of {full} characters clipped; "
    if text[head : head + len(start)] != start:
        return False
    # Searched only as far as a marker line reaches: a tool's result may claim this shape in
    # its meta, and a "marker" of megabytes would bring all of them to the model unbounded.
    end = text.find(_MARKER_END, head + len(start), head + _MARKER_MAX)
    return end >= 0 and len(text) == end + len(_MARKER_END) + tail


def schema_violation(name: str, problems: list[str], *, retry: bool | None = None) -> ToolResult:
    """The result of a call whose arguments do not fit the schema (nothing was run).

    ``retry`` True: the model is asked to repair the call (its one repair attempt); False: that
    attempt is used up; None: no advice (a direct call).

    Examples:
        >>> schema_violation("read_file", ["path: Field required"], retry=True)["error"]
        ... # doctest: +ELLIPSIS
        'SchemaViolation: the arguments for read_file ... Call read_file again with corrected...'
    """
    advice = {
        True: f" Call {name} again with corrected arguments.",
        False: " The one repair attempt is used up; the call was not run.",
        None: "",
    }[retry]
    meta: dict[str, Any] = {
        "code": "SCHEMA_VIOLATION",
        "error_type": "SchemaViolation",
        "problems": list(problems),
    }
    if retry is not None:
        meta["retry"] = retry
    return ToolResult(
        status="error",
        error=f"SchemaViolation: the arguments for {name} do not match its schema: "
        f"{'; '.join(problems)}.{advice}",
        meta=meta,
    )
