r"""The lines of a file for ``grep_search``, read a bounded block at a time, of any size.

A file is never held whole: blocks of 64 KiB are decoded as UTF-8 (bad bytes as U+FFFD) and
cut into lines exactly as ``str.splitlines`` cuts the whole text (``\r\n`` and every other
line break Python knows), so a line of a small file is the same line, with the same number, as
when files were read whole. A line longer than ``limit`` characters (a minified file, a log
without line breaks) is given in pieces of ``limit`` characters under its one number, and
counted in `Lines.split`: a match that spans two pieces is not found. Binary files (a NUL byte in
the first 8 KiB) give no lines at all (`Lines.binary`).

`Searcher` runs the pattern over those lines, each under what is left of the call's time budget.
A block whose lines, joined by ``\n``, the pattern does not match at all (in MULTILINE mode, so
``^`` and ``$`` still match at each line's ends) holds no matching line, when the pattern cannot
otherwise look past its own match (`context_free`): then each block is searched whole first, and
only the lines it points at one by one (a 140 MB log: 1 s instead of 16).
"""

from __future__ import annotations

import codecs
import os
import re
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ai_agent.tools.builtin.refusal import SandboxError

if TYPE_CHECKING:
    import regex

__all__ = ["BINARY_PROBE", "Block", "Found", "Lines", "Searcher", "context_free"]

BINARY_PROBE = 8192
_BLOCK = 1 << 16
_LINE_CHARS = 500  # of a line shown in a result
_BLOCK_TRY = 0.5  # seconds a search of a whole block may take before its lines are searched
# What may see past a match in a line, joined to others: \A, \Z, \G, lookarounds, the flags
# that change what a match is (reverse, fuzzy best match, POSIX, versions, Unicode words). An
# escaped "\\A" counts too: an exact reading is not needed, as saying no only costs time. ^ and
# $ are searched in MULTILINE mode, and a word boundary (\b) is safe: past either end of a line
# is no word character, and the "\n" that joins lines is none either.
_CONTEXT = re.compile(r"\\[AZzGK]|\(\?(?!:|P[<=]|[imsxau-]+[:)])")
_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")  # what str.splitlines cuts at


@dataclass(frozen=True, slots=True)
class Block:
    """Lines ``number``, ``number + 1``... of a file, without their line breaks.

    When not ``first``, ``texts`` is one later piece of line ``number`` (a line longer than the
    limit); the first piece of such a line comes as a line of its own.
    """

    number: int
    texts: list[str]
    first: bool = True


class Lines:
    r"""The lines of the open file ``fd``, read from its current offset, a block at a time.

    Args:
        fd: A descriptor of a regular file, open for reading.
        limit: The longest piece of a line given at once, in characters (at least 1).

    Examples:
        >>> import os, tempfile
        >>> fd, name = tempfile.mkstemp()
        >>> _ = os.write(fd, b"one\r\ntwo\nlong line\n"); _ = os.lseek(fd, 0, 0)
        >>> lines = Lines(fd, limit=4)
        >>> [(b.number, b.texts, b.first) for b in lines]  # doctest: +NORMALIZE_WHITESPACE
        [(1, ['one', 'two'], True), (3, ['long'], True), (3, [' lin'], False),
         (3, ['e'], False)]
        >>> lines.binary, lines.split
        (False, 1)
        >>> os.close(fd); os.remove(name)
    """

    def __init__(self, fd: int, *, limit: int) -> None:
        self._fd, self._limit = fd, max(limit, 1)
        self.split = 0  # lines longer than the limit, given in pieces
        self._head = b""
        while len(self._head) < BINARY_PROBE and (block := os.read(fd, _BLOCK)):
            self._head += block
        self.binary = b"\x00" in self._head[:BINARY_PROBE]

    def _blocks(self) -> Iterator[bytes | None]:
        """The file's blocks, the head first, then None at its end."""
        head, self._head = self._head, b""
        if head:
            yield head
        while block := os.read(self._fd, _BLOCK):
            yield block
        yield None

    def __iter__(self) -> Iterator[Block]:
        if self.binary:
            return
        limit = self._limit
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        number, carry, given = 1, "", 0  # given: pieces of line ``number`` given so far
        after_cr = False  # the text so far ends with "\r": a "\n" next is part of that break
        for block in self._blocks():
            text = decoder.decode(block or b"", final=block is None)
            if after_cr and text[:1] == "\n":
                text, after_cr = text[1:], False
            if text:
                after_cr = text[-1] == "\r"
            whole, carry = carry + text, ""
            lines = whole.splitlines()
            if block is not None and whole and whole[-1] not in _BREAKS:
                carry = lines.pop()  # the line goes on in the next block
            if lines and given:
                yield from self._pieces(number, lines.pop(0), given)
                number, given = number + 1, 0
            yield from self._complete(number, lines)
            number += len(lines)
            while len(carry) > limit:  # too long to wait for its end: give a piece now
                self.split += given == 0
                yield Block(number, [carry[:limit]], given == 0)
                carry, given = carry[limit:], given + 1

    def _complete(self, number: int, lines: list[str]) -> Iterator[Block]:
        """Whole lines from ``number`` on: one block, or runs and pieces around long lines."""
        limit = self._limit
        if not lines:
            return
        if max(map(len, lines)) <= limit:
            yield Block(number, lines)
            return
        run: list[str] = []
        for index, line in enumerate(lines):
            if len(line) <= limit:
                run.append(line)
                continue
            if run:
                yield Block(number + index - len(run), run)
                run = []
            self.split += 1
            yield from self._pieces(number + index, line, 0)
        if run:
            yield Block(number + len(lines) - len(run), run)

    def _pieces(self, number: int, line: str, given: int) -> Iterator[Block]:
        """What is left of line ``number`` once ``given`` pieces of it were given."""
        limit = self._limit
        for start in range(0, len(line), limit):
            yield Block(number, [line[start : start + limit]], given == 0 and start == 0)


def context_free(source: str) -> bool:
    r"""Whether a match of the pattern ``source`` in a line is a match in any text holding it.

    True when the pattern has no ``\A``, ``\Z``, lookaround or flag beyond ``imsxau``, which
    are what may look past the match itself (``\A`` matches at a line's start, not after a
    ``\n``); ``^`` and ``$`` are fine in MULTILINE mode.

    Examples:
        >>> context_free(r"(?i)^err(or)?\s+\d+$"), context_free(r"\Aerr"), context_free("(?<=a)b")
        (True, False, False)
    """
    return _CONTEXT.search(source) is None


@dataclass
class Found:
    """The matches so far, and whether more were left out."""

    items: list[Any] = field(default_factory=list)
    truncated: bool = False


class Searcher:
    """A compiled pattern run over the lines of one file after another, into `found`.

    Args:
        compiled: The pattern.
        blockwise: The pattern compiled with MULTILINE, when it is `context_free`: each block
            is searched whole first.
        context: Lines shown before and after each match (each cut to 500 characters).
        deadline: ``time.monotonic()`` past which the search raises TIMEOUT.
        max_results: Matches kept; one more sets ``found.truncated`` and ends the search.
    """

    def __init__(
        self,
        compiled: regex.Pattern[str],
        *,
        blockwise: regex.Pattern[str] | None,
        context: int,
        deadline: float,
        max_results: int,
    ) -> None:
        self.compiled, self.blockwise, self.context = compiled, blockwise, context
        self.deadline, self.max_results = deadline, max_results
        self.found = Found()
        self._recent: deque[str] = deque()  # the last lines met, as shown (set for each file)
        self._waiting: list[dict[str, Any]] = []  # matches still taking the lines after them
        self._hit = 0  # the last line that matched: a line in pieces matches once

    def _remaining(self) -> float:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise SandboxError(
                "TIMEOUT",
                "grep_search ran out of time; narrow the path or file_pattern, or "
                "simplify the pattern",
            )
        return remaining

    def _match(self, text: str) -> bool:
        try:
            return self.compiled.search(text, timeout=self._remaining()) is not None
        except TimeoutError:
            raise SandboxError(
                "TIMEOUT",
                "the pattern takes too long to match (catastrophic backtracking?); "
                "simplify it or pass regex=false",
            ) from None

    def _candidates(self, texts: list[str]) -> Iterator[int]:
        """The lines of ``texts`` (by index) that may match: those a search of them joined
        points at, one after the other; all of them for a pattern that is not `context_free`.

        A context-free match in a line is one in the joined text, so the joined text's first
        match never starts after the first matching line.
        """  # noqa: D205
        if self.blockwise is None or len(texts) == 1:
            yield from range(len(texts))
            return
        joined = "\n".join(texts)
        pos = index = 0
        while True:
            try:
                hit = self.blockwise.search(joined, pos, timeout=min(self._remaining(), _BLOCK_TRY))
            except TimeoutError:
                self.blockwise = None  # slower whole than line by line: lines from here on
                yield from range(index, len(texts))
                return
            if hit is None:
                return
            index += joined.count("\n", pos, hit.start())
            yield index
            pos = joined.find("\n", hit.start()) + 1
            if not pos:
                return
            index += 1

    def run(self, blocks: Iterable[Block], shown: str) -> None:
        """Add the matches in ``blocks`` (one file's, shown as ``shown``) to `found`."""
        self._recent, self._waiting, self._hit = deque(maxlen=self.context + 1), [], 0
        for block in blocks:
            if block.first and self._waiting:
                self._follow(block.texts)
            if not self.found.truncated:
                self._scan(block, shown)
            if self.found.truncated and not self._waiting:
                return  # read on past the last match only for the lines after it

    def _follow(self, texts: list[str]) -> None:
        """Give the lines ``texts`` to the matches still taking lines after them."""
        context = self.context
        for item in self._waiting:
            more = texts[: context - len(item["after"])]
            item["after"] += [t[:_LINE_CHARS] for t in more]
        self._waiting = [item for item in self._waiting if len(item["after"]) < context]

    def _scan(self, block: Block, shown: str) -> None:
        texts, context = block.texts, self.context
        if block.first:
            indices: Iterable[int] = self._candidates(texts)
        else:
            indices = () if block.number == self._hit else (0,)
        for index in indices:
            if not self._match(texts[index]):
                continue
            self._hit = block.number + index
            if len(self.found.items) >= self.max_results:
                self.found.truncated = True
                return
            item = {"path": shown, "line": self._hit, "text": texts[index][:_LINE_CHARS]}
            if context:
                item["before"] = self._before(texts, index, first=block.first)
                after = texts[index + 1 : index + 1 + context] if block.first else []
                item["after"] = [t[:_LINE_CHARS] for t in after]
                if len(after) < context:
                    self._waiting.append(item)
            self.found.items.append(item)
        if context and block.first:
            self._recent.extend(t[:_LINE_CHARS] for t in texts[-context - 1 :])

    def _before(self, texts: list[str], index: int, *, first: bool) -> list[str]:
        """The ``context`` lines before line ``index`` of ``texts`` (of the line ``recent``
        ends with, for a later piece of it).
        """  # noqa: D205
        context, recent = self.context, self._recent
        if not first:
            return list(recent)[:-1][-context:]
        before = [t[:_LINE_CHARS] for t in texts[max(0, index - context) : index]]
        need = context - len(before)
        return [*list(recent)[max(0, len(recent) - need) :], *before] if need else before
