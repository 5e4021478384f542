"""The notes index: Markdown notes split into sections and chunks, with tags, kept fresh.

A note's sections are its ATX headings (``#`` to ``######``); text before the first heading is a
section without a name. Long sections are cut into chunks of about ``chunk_chars`` at paragraph
boundaries. Tags come from the YAML front matter (``tags: [a, b]``) and from inline ``#tag``
words.

The index keeps each note's chunks, with their words counted (`Terms`), until the note changes:
a search re-reads, re-chunks and re-counts only the notes added or changed since the last one.
A note is unchanged while its size, modification and change times, inode and device are; a
note whose change time is within `RACY_NS` of the moment it was read could have changed again
in the same clock tick, so it is read again (and compared by its content's digest) until that
is no longer so, as git does with "racily clean" files. The change time is set by the kernel
on every write, rename and ``utime``: a note replaced by another of the same size and
modification time is read again.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ai_agent.tools.builtin.notes_terms import Terms, Vocabulary
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError
from ai_agent.tools.builtin.walk import walk

__all__ = ["RACY_NS", "Chunk", "Note", "NotesIndex", "Section", "parse_note"]

# How close to the moment a note was read its change time may be for the note to be read (and
# compared by digest) again on the next search: file times come from a coarse clock (a tick of
# up to 10 ms behind the system's) and, on a network filesystem, from the server's.
RACY_NS = 2_000_000_000

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
    # Its words, counted by the index when it made the chunk (None: the ranker counts them).
    terms: Terms | None = field(default=None, compare=False, repr=False)


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


# What tells a note's file from another: size, modification and change times, inode, device.
_Stamp = tuple[int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class _Indexed:
    """One note as the index holds it: the file it was read from, its digest and chunks."""

    stamp: _Stamp
    digest: bytes
    chunks: tuple[Chunk, ...]
    racy: bool  # changed close to when it was read: compare its content next time


class NotesIndex:
    """The chunks of every note under the sandbox root, each note re-read when it changes."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        chunk_chars: int = 1200,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.box = sandbox
        self.chunk_chars = chunk_chars
        self.chunks: list[Chunk] = []
        self.version = 0
        self.vocabulary = Vocabulary()
        self._clock = clock
        self._notes: dict[str, _Indexed] = {}
        # Sync tools run in threads: two searches at once must not both update the counts.
        self._lock = threading.Lock()

    def _files(self) -> list[tuple[str, _Stamp]]:
        found = []
        for entry in walk(self.box, (), max_depth=None, descend=lambda rel: not _hidden(rel)):
            name = entry.name.lower()
            if entry.kind == "file" and name.endswith(NOTE_SUFFIXES) and not _hidden(entry.rel):
                try:
                    info = os.stat(entry.name, dir_fd=entry.dir_fd, follow_symlinks=False)
                except FileNotFoundError:  # removed while we walk
                    continue
                stamp = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)
                found.append((entry.rel, stamp))
        return found

    def refresh(self) -> list[Chunk]:
        """The chunks, re-reading the notes added or changed since the last refresh."""
        with self._lock:
            started = self._clock()
            files = self._files()
            notes = {rel: self._note(rel, stamp, started) for rel, stamp in files}
            if notes.keys() != self._notes.keys() or any(
                notes[rel].chunks is not self._notes[rel].chunks for rel in notes
            ):
                self._count(notes)
                self.chunks = [c for rel, _ in files for c in notes[rel].chunks]
                self.version += 1
            self._notes = notes
            return self.chunks

    def _note(self, rel: str, stamp: _Stamp, started: int) -> _Indexed:
        known = self._notes.get(rel)
        if known is not None and known.stamp == stamp and not known.racy:
            return known
        racy = stamp[2] >= started - RACY_NS  # the change time: writes cannot set it
        data = self._bytes(rel)
        # A note that cannot be read has no chunks, as an empty one: the same digest will do.
        digest = hashlib.blake2b(data or b"", digest_size=16).digest()
        if known is not None and known.digest == digest:
            return _Indexed(stamp, digest, known.chunks, racy)
        note = None if data is None else parse_note(rel, data.decode("utf-8", "replace"))
        chunks = () if note is None else tuple(_chunks(note, self.chunk_chars))
        return _Indexed(stamp, digest, chunks, racy)

    def _count(self, notes: dict[str, _Indexed]) -> None:
        """Count the words of the new chunks (in the vocabulary), uncount those that left."""
        for rel, indexed in notes.items():
            known = self._notes.get(rel)
            if known is None or known.chunks is not indexed.chunks:
                notes[rel] = replace(indexed, chunks=tuple(map(self._counted, indexed.chunks)))
        for rel, known in self._notes.items():
            if rel not in notes or notes[rel].chunks is not known.chunks:
                for chunk in known.chunks:
                    if chunk.terms is not None:
                        self.vocabulary.release(chunk.terms)

    def _counted(self, chunk: Chunk) -> Chunk:
        return replace(chunk, terms=self.vocabulary.admit(f"{chunk.section} {chunk.text}"))

    def _bytes(self, rel: str) -> bytes | None:
        try:
            return self.box.read_bytes(self.box.resolve(rel))
        except SandboxError:
            return None

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
