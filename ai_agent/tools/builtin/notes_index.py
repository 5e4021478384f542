"""The notes index: Markdown notes split into sections and chunks, with tags, kept fresh.

A note's sections are its ATX headings (``#`` to ``######``); text before the first heading is a
section without a name. Long sections are cut into chunks of about ``chunk_chars`` at paragraph
boundaries. Tags come from the YAML front matter (``tags: [a, b]``) and from inline ``#tag``
words. The index is rebuilt when any note's size or modification time changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError
from ai_agent.tools.builtin.walk import walk

__all__ = ["Chunk", "Note", "NotesIndex", "Section", "parse_note"]

NOTE_SUFFIXES = (".md", ".markdown")
# A heading's hashes and the rest of its line; the closing hashes and blanks are cut off in
# `_heading`, not by the pattern: a lazy title before `[ \t#]*$` backtracks quadratically over
# a long run of blanks that does not end the line (a 900 kB line took half an hour).
_HEADING = re.compile(r"(#{1,6})[ \t]+([^\n]+)")
_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*(?:\n|\Z)", re.DOTALL)
_TAG = re.compile(r"(?<![\w#&])#([A-Za-z][\w/-]*)")


@dataclass(frozen=True, slots=True)
class Section:
    """One heading's part of a note (``title`` is '' for text before any heading)."""

    title: str
    level: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Note:
    """A parsed note."""

    path: str
    text: str
    tags: frozenset[str]
    sections: tuple[Section, ...]

    def section(self, name: str) -> Section | None:
        """The first section whose title matches ``name`` (case-insensitively)."""
        wanted = name.strip().lstrip("#").strip().lower()
        for s in self.sections:
            if s.title.lower() == wanted:
                return s
        return None

    def section_text(self, section: Section) -> str:
        """The section's text.

        Its heading line and its body, up to the next heading of the same or a higher level.
        """
        end = len(self.text)
        after = False
        for s in self.sections:
            if s is section:
                after = True
                continue
            if after and s.level <= section.level and s.level > 0:
                end = s.start
                break
        return self.text[section.start : end].strip("\n")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a section: what the ranker scores and what a search returns."""

    path: str
    section: str
    text: str
    tags: frozenset[str] = field(default_factory=frozenset)


def _heading(line: str) -> tuple[int, str] | None:
    """A heading line's level and title (None: not a heading), in time linear in the line.

    The title keeps at least its first character: ``#### ##`` is a heading titled ``#``.
    """
    match = _HEADING.fullmatch(line.rstrip("\n"))
    if match is None:
        return None
    rest = match.group(2)
    return len(match.group(1)), (rest.rstrip(" \t#") or rest[:1]).strip()


def _tags(front: dict[str, Any], body: str) -> frozenset[str]:
    found: set[str] = set()
    raw = front.get("tags")
    if isinstance(raw, str):
        raw = [t for t in re.split(r"[,\s]+", raw) if t]
    if isinstance(raw, list):
        # Scalars only: a tag that is a list or a map is no tag, and YAML aliases can make one
        # that prints as gigabytes from a few hundred bytes ("billion laughs").
        tags = (t for t in raw if isinstance(t, str | int | float))
        found.update(str(t).lstrip("#").lower() for t in tags)
    for line in body.splitlines():
        if _heading(line) is None:
            found.update(t.lower() for t in _TAG.findall(line))
    return frozenset(found)


def _front_matter(text: str) -> tuple[dict[str, Any], int]:
    match = _FRONT.match(text)
    if not match:
        return {}, 0
    import yaml  # with the first note that has front matter, not with the catalog

    try:
        data = yaml.safe_load(match.group(1))
    # A note's metadata never fails its search: nested thousands deep, PyYAML recurses; a date
    # that does not exist (2023-02-29) or an integer of 5,000 digits is a ValueError.
    except (yaml.YAMLError, RecursionError, ValueError, OverflowError):
        data = None
    return (data if isinstance(data, dict) else {}), match.end()


def parse_note(path: str, text: str) -> Note:
    r"""Sections and tags of a Markdown note.

    Examples:
        >>> note = parse_note("a.md", "---\ntags: [ml]\n---\nIntro #draft\n# Setup\nsteps\n")
        >>> sorted(note.tags), [s.title for s in note.sections]
        (['draft', 'ml'], ['', 'Setup'])
    """
    front, offset = _front_matter(text)
    sections: list[Section] = []
    starts: list[tuple[int, int, str]] = [(offset, 0, "")]
    position = 0
    in_fence = False
    for line in text.splitlines(keepends=True):
        if position >= offset:
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            heading = None if in_fence else _heading(line)
            if heading:
                starts.append((position, *heading))
        position += len(line)
    for i, (start, level, title) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        if level == 0 and not text[start:end].strip():
            continue
        sections.append(Section(title=title, level=level, start=start, end=end))
    return Note(path=path, text=text, tags=_tags(front, text[offset:]), sections=tuple(sections))


def _chunks(note: Note, size: int) -> list[Chunk]:
    out: list[Chunk] = []
    for section in note.sections:
        body = note.text[section.start : section.end]
        if section.level:
            body = body.split("\n", 1)[1] if "\n" in body else ""
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", body) if p.strip()]
        current = ""
        for paragraph in paragraphs:
            if current and len(current) + len(paragraph) + 2 > size:
                out.append(Chunk(note.path, section.title, current, note.tags))
                current = ""
            rest = paragraph
            while len(rest) > size:
                out.append(Chunk(note.path, section.title, rest[:size], note.tags))
                rest = rest[size:]
            current = f"{current}\n\n{rest}" if current else rest
        if current:
            out.append(Chunk(note.path, section.title, current, note.tags))
    return out


class NotesIndex:
    """The chunks of every note under the sandbox root, rebuilt when a note changes."""

    def __init__(self, sandbox: Sandbox, *, chunk_chars: int = 1200) -> None:
        self.box = sandbox
        self.chunk_chars = chunk_chars
        self._signature: tuple[tuple[str, int, int], ...] | None = None
        self.chunks: list[Chunk] = []
        self.version = 0

    def _files(self) -> tuple[tuple[str, int, int], ...]:
        found = []
        for entry in walk(self.box, (), max_depth=None, descend=lambda rel: not _hidden(rel)):
            name = entry.name.lower()
            if entry.kind == "file" and name.endswith(NOTE_SUFFIXES) and not _hidden(entry.rel):
                found.append((entry.rel, entry.size, entry.mtime_ns))
        return tuple(found)

    def refresh(self) -> list[Chunk]:
        """The chunks, re-reading the notes when any of them changed."""
        files = self._files()
        if files != self._signature:
            chunks: list[Chunk] = []
            for rel, _, _ in files:
                note = self.read(rel)
                if note is not None:
                    chunks += _chunks(note, self.chunk_chars)
            self.chunks, self._signature = chunks, files
            self.version += 1
        return self.chunks

    def read(self, rel: str) -> Note | None:
        """A note by its path below the root, or None when it cannot be read."""
        try:
            return self.load(rel)
        except SandboxError:
            return None

    def load(self, rel: str) -> Note:
        """A note by its path below the root.

        Raises:
            SandboxError: it cannot be read (the code says why).
        """
        data = self.box.read_bytes(self.box.resolve(rel))
        return parse_note(rel, data.decode("utf-8", "replace"))


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/"))
