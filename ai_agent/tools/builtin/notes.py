"""The notes tools of the notes-assistant flow: ``find_similar`` and ``read_note``.

Both work on a folder of Markdown notes, through a sandbox rooted at that folder (symlinks out of
it are never followed), and are READ_ONLY.

- ``find_similar(queries, k=20, filter={folder, tag})`` returns ``{ok, data: [{path, section,
  score, snippet}], took_ms}``: the ``k`` best chunks by relevance with MMR diversity (see
  `ai_agent.tools.builtin.notes_rank`).
- ``read_note(path, section=None, start=None, end=None, max_chars=...)`` returns ``{ok, text,
  meta}``: the note or one section, optionally a character range ``[start, end)`` of it, clipped
  to ``max_chars`` with a hint saying how to read on (``start=...``) or which sections exist.

Their schemas come from the signatures of the two functions `notes_tools` makes, whose defaults
are the settings' (``k``, ``read_max_chars``).
"""

from __future__ import annotations

import hashlib
import importlib
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ai_agent.config import NotesConfig
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.notes_index import NOTE_SUFFIXES, Note, NotesIndex
from ai_agent.tools.builtin.notes_queries import search_queries
from ai_agent.tools.builtin.notes_rank import Embed, rank, words
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError
from ai_agent.tools.builtin.typed import builtin_spec
from ai_agent.tools.schema import Omittable, json_schema_of
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = ["NotesTools", "load_embedding", "note_id", "notes_tools"]

_SNIPPET = 240
_MAX_READ = 50_000


class _NoteFilter(BaseModel):
    # Which notes find_similar searches: a folder (with its subfolders) and a tag. Private, so
    # no docstring: pydantic would show it to the model as the filter's description.
    model_config = ConfigDict(extra="forbid")

    folder: Omittable[str] = None
    tag: Omittable[str] = None


# The filter's schema in place, as the model always saw it (pydantic would put it under $defs
# and point there, which small models follow worse).
_Filter = Annotated[_NoteFilter, WithJsonSchema(json_schema_of(_NoteFilter))]
_Offset = Annotated[int, Field(ge=0)]


def load_embedding(path: str) -> Embed:
    """The embedding function an import path (``package.module:function``) names.

    Raises:
        ValueError: the module or the function cannot be found, or it is not callable.

    Examples:
        >>> load_embedding("math:fsum")([0.5, 0.5])
        1.0
    """
    module_name, _, attr = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split(".") if attr else []:
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load the embedding function {path!r}: {exc}") from None
    if not callable(target):
        raise ValueError(f"the embedding function {path!r} is not callable")
    embed: Embed = target
    return embed


def note_id(path: str) -> str:
    """The id a note is cited by: ``n`` and six hex digits of its path's SHA-256 (stable).

    Examples:
        >>> note_id("tides.md")
        'nc0175c'
    """
    return "n" + hashlib.sha256(path.encode("utf-8")).hexdigest()[:6]


def _cite_hint(first: str) -> str:
    return f"cite a note you use by its id in brackets, e.g. [{first}]"


def _snippet(text: str, queries: list[str]) -> str:
    flat = " ".join(text.split())
    terms = {w for q in queries for w in words(q) if len(w) > 2}
    lowered = flat.lower()
    hits = [lowered.find(t) for t in terms if t in lowered]
    start = max(0, min(hits) - _SNIPPET // 4) if hits else 0
    piece = flat[start : start + _SNIPPET]
    return ("..." if start else "") + piece + ("..." if start + _SNIPPET < len(flat) else "")


class NotesTools:
    """find_similar and read_note over one notes folder."""

    def __init__(
        self,
        folder: str | Path,
        config: NotesConfig,
        embed: Embed | None = None,
        *,
        protected: ProtectedPaths | None = None,
        allow_hard_links: bool = False,
    ) -> None:
        self.config = config
        self.box = Sandbox(
            folder,
            allowed_extensions=(*NOTE_SUFFIXES, ".txt"),
            protected=protected,
            allow_hard_links=allow_hard_links,
        )
        self.index = NotesIndex(self.box, chunk_chars=config.chunk_chars)
        self.embed = embed or (load_embedding(config.embedding) if config.embedding else None)

    # find_similar ----------------------------------------------------------------------------
    def find_similar(
        self,
        queries: list[str],
        k: int,
        *,
        folder: str | None = None,
        tag: str | None = None,
        question: str = "",
    ) -> ToolResult:
        """The ``find_similar`` tool: the ``k`` chunks of the notes that best match the queries.

        Args:
            queries: What to look for (blank ones are left out, those past ``max_queries``
                dropped: see `search_queries`).
            k: How many chunks, at most (1 to 100).
            folder: Only notes in this folder (or below it).
            tag: Only notes with this tag.
            question: The person's question, searched when ``generated_queries`` is off.
        """
        started = time.perf_counter()
        chosen = search_queries(queries, question, self.config)
        queries = chosen.queries
        if not queries:
            return _error("BAD_ARGUMENTS", "queries must be a non-empty list of strings")
        k = max(1, min(k, 100))
        try:
            chunks = self.index.refresh()
        except SandboxError as exc:
            return _error(exc.code, f"the notes folder cannot be read: {exc}")
        folder = (folder or "").strip("/")
        tag = (tag or "").lstrip("#").lower()
        # The index's document frequencies are those of all its chunks: of a filtered part,
        # the ranker counts them.
        df = None if folder or tag else self.index.vocabulary.df
        if folder:
            chunks = [c for c in chunks if c.path == folder or c.path.startswith(folder + "/")]
        if tag:
            chunks = [c for c in chunks if tag in c.tags]
        ranked = rank(
            queries,
            chunks,
            k=k,
            mmr_lambda=self.config.mmr_lambda,
            min_chars=self.config.min_chunk_chars,
            embed=self.embed,
            df=df,
        )
        data = [
            {
                "id": note_id(r.chunk.path),
                "path": r.chunk.path,
                "section": r.chunk.section or None,
                "score": r.score,
                "snippet": _snippet(r.chunk.text, queries),
            }
            for r in ranked
        ]
        took = round((time.perf_counter() - started) * 1000, 1)
        content: dict[str, Any] = {"ok": True, "data": data, "took_ms": took}
        meta: dict[str, Any] = {"k": k, "queries": queries, "chunks": len(chunks)}
        if ranked:
            content["cite"] = _cite_hint(note_id(ranked[0].chunk.path))
            meta["sources"] = [self._source(r.chunk.path, r.chunk.section or None) for r in ranked]
        if chosen.note:
            # In the content: the model reads it with the results (meta is for people).
            content["note"] = meta["note"] = chosen.note
        return ToolResult(status="ok", content=content, meta=meta)

    def _source(self, path: str, section: str | None) -> dict[str, Any]:
        """What a result drew on (`ai_agent.state.Source`): the note's id, path and file URI."""
        uri = (self.box.base / path).as_uri()
        return {"id": note_id(path), "path": path, "section": section, "uri": uri}

    # read_note -------------------------------------------------------------------------------
    def read_note(
        self,
        path: str,
        section_name: str | None = None,
        start: int | None = None,
        end: int | None = None,
        max_chars: int | None = None,
    ) -> ToolResult:
        """The ``read_note`` tool: a note, a section or a character range, clipped.

        Args:
            path: The note, relative to the notes folder.
            section_name: Only this section (by its title).
            start: The first character to read (default: the first).
            end: The character to stop before (default: the end).
            max_chars: At most this many characters (default: the settings' read_max_chars).
        """
        try:
            target = self.box.resolve(path)
        except SandboxError as exc:
            return _error(exc.code, str(exc))
        rel = self.box.display(target.path)
        try:
            note = self.index.load(rel)
        except SandboxError as exc:
            if exc.code != "NOT_FOUND":
                return _error(exc.code, str(exc))
            return _error("NOT_FOUND", f"no readable note at {path!r} in the notes folder")
        text, section = note.text, None
        if section_name:
            section = note.section(section_name)
            if section is None:
                names = ", ".join(repr(s.title) for s in note.sections if s.title) or "none"
                return _error(
                    "NOT_FOUND",
                    f"{rel} has no section {section_name!r}; its sections are: {names}",
                )
            text = note.section_text(section)
        title = section.title if section else None
        limit = max(1, min(max_chars or self.config.read_max_chars, _MAX_READ))
        return self._clip(rel, text, title, note, (max(0, start or 0), end, limit))

    def _clip(
        self,
        rel: str,
        text: str,
        section: str | None,
        note: Note,
        window: tuple[int, int | None, int],
    ) -> ToolResult:
        """``text[start:end]``, at most ``limit`` characters of it, with a hint when clipped."""
        start, end, limit = window
        total = len(text)
        stop = total if end is None else max(start, min(end, total))
        piece = text[start:stop]
        clipped = len(piece) > limit
        meta: dict[str, Any] = {
            "id": note_id(rel),
            "path": rel,
            "section": section,
            "start": start,
            "end": start + min(len(piece), limit),
            "total_chars": total,
            "clipped": clipped,
        }
        if clipped:
            piece = piece[:limit]
            others = [s.title for s in note.sections if s.title and s.title != section]
            hint = (
                f"clipped to {limit} of {stop - start} characters; continue with "
                f"start={start + limit}"
            )
            if others and section is None:
                hint += ", or read one section: " + ", ".join(others[:12])
            meta["hint"] = hint
            piece += f"\n[{hint}]"
        return ToolResult(
            status="ok",
            content={"ok": True, "text": piece, "meta": meta, "cite": _cite_hint(meta["id"])},
            meta={"sources": [self._source(rel, section)]},
        )


def _error(code: str, message: str) -> ToolResult:
    return ToolResult(status="error", error=message, meta={"code": code})


def notes_tools(
    folder: str | Path,
    config: NotesConfig,
    embed: Embed | None = None,
    *,
    protected: ProtectedPaths | None = None,
    allow_hard_links: bool = False,
) -> list[ToolSpec]:
    r"""``find_similar`` and ``read_note`` over ``folder``.

    Args:
        folder: The notes folder.
        config: Ranking and reading settings.
        embed: An embedding function ``embed(texts) -> vectors`` (default: the lexical ranker,
            or ``config.embedding``).
        protected: The engine's own state, never read as a note.
        allow_hard_links: Read notes that have more than one hard link.

    Examples:
        >>> import asyncio, tempfile, pathlib
        >>> from ai_agent.tools import ToolRegistry
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "tides.md").write_text("# Tides\n\nHigh tide comes twice a day.\n")
        >>> reg = ToolRegistry(notes_tools(folder, NotesConfig()))
        >>> call = {"id": "1", "name": "find_similar", "args": {"queries": ["high tide"]}}
        >>> hits = asyncio.run(reg.execute(call, {}))["content"]["data"]
        >>> [(h["path"], h["section"]) for h in hits]
        [('tides.md', 'Tides')]
    """
    t = NotesTools(folder, config, embed, protected=protected, allow_hard_links=allow_hard_links)

    def found(result: ToolResult) -> str:
        if result["status"] != "ok":
            return f"find_similar: {result.get('error')}"
        content = result.get("content") or {}
        meta = result.get("meta") or {}
        line = (
            f"find_similar: {len(content.get('data', []))} hit(s) for "
            f"{', '.join(repr(q) for q in meta.get('queries', []))} (K={meta.get('k')}, "
            f"{content.get('took_ms')} ms)"
        )
        return line + (f"; {meta['note']}" if meta.get("note") else "")

    def read(result: ToolResult) -> str:
        if result["status"] != "ok":
            return f"read_note: {result.get('error')}"
        meta = (result.get("content") or {}).get("meta", {})
        where = meta.get("path", "") + (f" #{meta['section']}" if meta.get("section") else "")
        part = f"{meta.get('start')}..{meta.get('end')} of {meta.get('total_chars')} chars"
        return f"read_note {where}: {part}{' (clipped)' if meta.get('clipped') else ''}"

    def find_similar(
        queries: Annotated[list[str], Field(min_length=1)],
        k: Annotated[int, Field(ge=1, le=100)] = config.k,
        filter: Omittable[_Filter] = None,
        *,
        ctx: dict[str, Any],
    ) -> ToolResult:
        """Search the notes for passages similar to one or more queries; returns the best K
        chunks (path, section, score, snippet), diverse rather than repetitive.
        """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
        # The schema says nothing of max_queries: it is the same, to the byte, whatever the
        # settings (recorded runs replay only while it is); the result's note tells the model.
        wanted = filter or _NoteFilter()
        question = str(ctx.get("task") or "")
        return t.find_similar(queries, k, folder=wanted.folder, tag=wanted.tag, question=question)

    def read_note(
        path: str,
        section: Omittable[str] = None,
        start: Omittable[_Offset] = None,
        end: Omittable[_Offset] = None,
        max_chars: Annotated[int, Field(ge=1, le=_MAX_READ)] = config.read_max_chars,
    ) -> ToolResult:
        """Read a note, or one section of it, or a character range; long text is clipped to
        max_chars with a hint on how to read on.
        """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
        return t.read_note(path, section, start, end, max_chars)

    def searching(args: dict[str, Any]) -> str:
        # The call's status line ("Searching... K=20"): K as the search will use it.
        queries = args.get("queries")
        shown = [q for q in queries if isinstance(q, str)] if isinstance(queries, list) else []
        what = ", ".join(repr(q[:60]) for q in shown[: config.max_queries])
        k = args.get("k", config.k)
        return f"Searching the notes... K={k}" + (f" for {what}" if what else "")

    def reading(args: dict[str, Any]) -> str:
        section = args.get("section")
        return f"Reading {args.get('path')!r}" + (f" #{section}" if section else "") + "..."

    read_only = ToolCategory.READ_ONLY
    return [
        builtin_spec(
            find_similar,
            category=read_only,
            group="notes",
            format_result=found,
            preview=searching,
        ),
        builtin_spec(
            read_note, category=read_only, group="notes", format_result=read, preview=reading
        ),
    ]
