"""The sources the final answer cites: its ``[id]`` markers resolved against what tools returned.

A tool says what a result drew on in its ``meta["sources"]`` (`ai_agent.state.Source`: the
notes tools give every note they return an id, its path and section, and a ``file://`` URI).
The answer names a source in brackets, by id (``[n1f3a2c]``), by path (``[tides.md]``) or by
path and section (``[tides.md#Tides]``), several in one pair separated by commas. Only sources
some tool of this run returned are citations: a marker naming anything else stays text and
cites nothing, so a model cannot make the answer link to a file or a site no tool gave it.
Each citation carries the sentences that cite it (its claims), in the answer's order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ai_agent.state import Citation, Source, ToolOutcome
from ai_agent.visible import link_target

__all__ = ["citations_of", "sources_of"]

_MARKER = re.compile(r"\[([^\[\]\n]{1,300})\]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_LONGEST = 300  # characters of a claim kept (a sentence is short; an answer's paragraph is not)


def _text(value: Any, limit: int = 1000) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= limit else None


def _source(raw: Any) -> Source | None:
    if not isinstance(raw, dict):
        return None
    sid, path = _text(raw.get("id"), 200), _text(raw.get("path"))
    if sid is None or path is None:
        return None
    section, uri = _text(raw.get("section")), link_target(raw.get("uri"))
    return Source(id=sid, path=path, section=section, uri=uri)


def sources_of(results: Iterable[ToolOutcome]) -> dict[str, Source]:
    """Every source the run's successful tool results name, by each name a marker may use.

    Examples:
        >>> outcome = {"result": {"status": "ok", "meta": {"sources": [
        ...     {"id": "n1", "path": "tides.md", "section": "Tides", "uri": "javascript:x"}]}}}
        >>> sorted(sources_of([outcome]))
        ['n1', 'tides.md', 'tides.md#Tides']
        >>> sources_of([outcome])["n1"]["uri"] is None
        True
    """
    found: dict[str, Source] = {}
    for outcome in results:
        result = outcome["result"]
        meta = result.get("meta") if result.get("status") == "ok" else None
        raw = meta.get("sources") if isinstance(meta, dict) else None
        for item in raw if isinstance(raw, list) else []:
            source = _source(item)
            if source is None:
                continue
            names = [source["id"], source["path"]]
            if source.get("section"):
                names.append(f"{source['path']}#{source['section']}")
            for name in names:
                found.setdefault(name, source)
    return found


def citations_of(text: str, results: Iterable[ToolOutcome]) -> list[Citation]:
    """The sources ``text`` cites, in the order it first cites them, each with its claims.

    Examples:
        >>> outcome = {"result": {"status": "ok", "meta": {"sources": [
        ...     {"id": "n1", "path": "tides.md", "section": "Tides"},
        ...     {"id": "n2", "path": "moon.md"}]}}}
        >>> answer = "High tide comes twice a day [n1]. The moon pulls it [moon.md, n1]. [x.md]"
        >>> [(c["id"], c["claims"]) for c in citations_of(answer, [outcome])]
        ... # doctest: +NORMALIZE_WHITESPACE
        [('n1', ['High tide comes twice a day [n1].', 'The moon pulls it [moon.md, n1].']),
         ('n2', ['The moon pulls it [moon.md, n1].'])]
    """
    sources = sources_of(results)
    cited: dict[str, Citation] = {}
    if not sources:
        return []
    for sentence in _SENTENCE.split(text):
        claim = sentence.strip()[:_LONGEST]
        for marker in _MARKER.findall(sentence):
            for name in re.split(r"[,;]", marker):
                source = sources.get(name.strip())
                if source is None:
                    continue
                citation = cited.setdefault(
                    source["id"],
                    Citation(
                        id=source["id"],
                        path=source["path"],
                        section=source.get("section"),
                        uri=source.get("uri"),
                        claims=[],
                    ),
                )
                if claim not in citation["claims"]:
                    citation["claims"].append(claim)
    return list(cited.values())
