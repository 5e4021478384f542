"""Glob patterns and .gitignore rules, compiled to regular expressions over ``/`` paths.

Glob: ``*`` and ``?`` stay within one path segment, ``[...]`` is a character class (``[!...]``
negates), ``**`` as a whole segment matches any number of segments (zero included, or one or
more at the end). As in the shell, a wildcard does not match a leading dot: hidden files and
directories are matched only by patterns that spell the dot. Gitignore
follows git's rules for the common cases: ``#`` comments, ``!`` negation (the last matching rule
wins), a trailing ``/`` for directories only, a ``/`` anywhere but the end anchors the pattern
to the .gitignore's directory, otherwise it matches at any depth.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["GitIgnore", "Glob"]


def _segment(text: str) -> str:
    """The regex of one path segment's glob (no ``/`` in ``text``).

    Each ``*`` but the last is an atomic, lazy ``[^/]*?`` up to the literal chunk after it: the
    earliest place of a chunk is always a right one, as nothing in a segment matches ``/``.
    Plain ``[^/]*`` for each star backtracks in O(n**stars): ``*a*a*a*a*b`` took 13 s on one
    255-character file name.
    """
    chunks: list[list[str]] = [[]]
    i = 0
    while i < len(text):
        c = text[i]
        if c == "*":
            if chunks[-1] or len(chunks) == 1:  # a run of stars is one star
                chunks.append([])
        elif c == "?":
            chunks[-1].append("[^/]")
        elif c == "[":
            end = text.find("]", i + 2 if text[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end == -1:
                chunks[-1].append(re.escape(c))
            else:
                body = text[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                chunks[-1].append(_char_class(_class_body(body)))
                i = end
        else:
            chunks[-1].append(re.escape(c))
        i += 1
    if len(chunks) == 1:
        return "".join(chunks[0])
    head, *middle, tail = ("".join(chunk) for chunk in chunks)
    return head + "".join(f"(?>[^/]*?{m})" for m in middle) + "[^/]*" + tail


def _class_body(body: str) -> str:
    r"""A glob class's body as a regex class's: ``\`` literal, and ``[ & ~ |`` escaped.

    Python reads ``[[``, ``&&``, ``~~`` and ``||`` in a class as the start of a future set
    syntax and warns (a FutureWarning on the terminal for a model's glob); escaped, each is the
    character it was already taken as.
    """
    return re.sub(r"([\\\[&~|])", r"\\\1", body)


def _char_class(body: str) -> str:
    """``[body]``, or a class that matches nothing when the body is not a valid one.

    A reversed range (``[z-a]``) matches no character in git's and fnmatch's rules; left as it
    is it would fail to compile, and one such line in a .gitignore would break every search.
    """
    try:
        re.compile(f"[{body}]")
    except re.error:
        return "(?!)"
    # Never "/" (git's rule too), so a segment stays one segment, which _segment relies on.
    return f"(?!/)[{body}]"


class Glob:
    """A compiled glob: ``match(path)`` says whether a relative ``/`` path matches it.

    With at most one ``**`` (nearly every glob and ``.gitignore`` rule) it is one regular
    expression over the whole path, which backtracks only over where that ``**`` ends. With
    more, the path is matched a segment at a time, with the set of places in the pattern each
    prefix can reach (a ``**`` may stay where it is or move on): at most segments times parts
    steps of one segment each. One expression backtracked in O(depth**k) for ``k`` double
    stars between other parts: ``**/a/**/a/**/a/**/x`` took 0.4 s on 64 directories, about
    two minutes on 256. The walk is the slower way for the rest (7 against 0.5 us a path for
    ``**/*.py``), and the search tools match every path they walk.

    Args:
        pattern: The glob, relative (``src/**/*.py``).
        recursive: When False, ``**`` is a plain ``*`` (one segment).
        hidden: Wildcards match a leading dot too (gitignore's rule, not the shell's).

    Examples:
        >>> Glob("**/*.py").match("a/b/c.py"), Glob("*.py").match("a/c.py")
        (True, False)
        >>> Glob("src/**").match("src/x/y"), Glob("src/**").match("src")
        (True, False)
        >>> Glob("f?[0-9].txt").match("fa1.txt")
        True
    """

    __slots__ = ("_any", "_parts", "_whole")

    def __init__(self, pattern: str, *, recursive: bool = True, hidden: bool = False) -> None:
        guard = "" if hidden else r"(?!\.)"
        visible = guard + "[^/]+"  # one segment a ``**`` spans
        sources: list[str | None] = []  # each part's regex; None: a ``**``
        for part in (p for p in pattern.split("/") if p not in ("", ".")):
            if part == "**" and recursive:
                if not sources or sources[-1] is not None:  # "**/**" is "**"
                    sources.append(None)
                continue
            segment = "*" if part == "**" else part
            sources.append(("" if segment.startswith(".") else guard) + _segment(segment))
        self._any = re.compile(visible, re.DOTALL)
        self._parts = [None if s is None else re.compile(s, re.DOTALL) for s in sources]
        self._whole: re.Pattern[str] | None = None
        if sources.count(None) <= 1:
            pieces = [
                (f"{visible}(?:/{visible})*" if i == len(sources) - 1 else f"(?:{visible}/)*")
                if source is None
                else source + ("" if i == len(sources) - 1 else "/")
                for i, source in enumerate(sources)
            ]
            self._whole = re.compile("".join(pieces) + r"\Z", re.DOTALL)

    def match(self, path: str) -> bool:
        """Whether ``path`` (relative, ``/``-separated, no trailing ``/``) matches."""
        if self._whole is not None:
            return self._whole.match(path) is not None
        parts, end = self._parts, len(self._parts)
        places = self._onwards({0})
        for segment in path.split("/") if path else ():
            reached: set[int] = set()
            for place in places:
                if place == end:
                    continue
                part = parts[place]
                if part is None:
                    if self._any.fullmatch(segment):
                        # A "**" stays to take more; one at the end has now taken its one.
                        reached.add(place)
                        if place == end - 1:
                            reached.add(end)
                elif part.fullmatch(segment):
                    reached.add(place + 1)
            if not reached:
                return False
            places = self._onwards(reached)
        return end in places

    def _onwards(self, places: set[int]) -> set[int]:
        """``places`` and those after a ``**`` taking no segment (not one at the end)."""
        parts, last = self._parts, len(self._parts) - 1
        # One step is enough: "**/**" was made one "**", so the next part is a segment's.
        return places | {place + 1 for place in places if place < last and parts[place] is None}


@dataclass(frozen=True, slots=True)
class _Rule:
    glob: Glob
    negate: bool
    directory_only: bool


class GitIgnore:
    r"""The ignore rules of one ``.gitignore``, for paths relative to its directory.

    Examples:
        >>> rules = GitIgnore.parse("build/\n*.log\n!keep.log\n/top.txt\n")
        >>> rules.ignored("build", is_dir=True), rules.ignored("x/a.log", is_dir=False)
        (True, True)
        >>> rules.ignored("keep.log", is_dir=False), rules.ignored("x/top.txt", is_dir=False)
        (False, None)
    """

    def __init__(self, rules: list[_Rule]) -> None:
        self._rules = rules

    @classmethod
    def parse(cls, text: str, *, check: Callable[[], object] | None = None) -> GitIgnore:
        """Rules from the text of a ``.gitignore``.

        ``check`` is called before each rule is compiled, and may raise to stop: a megabyte of
        rules (a file the tools read, written by anyone) takes some twenty seconds.
        """
        rules = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate or line.startswith("\\"):
                line = line[1:]
            directory_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            if all(part in ("", ".") for part in line.split("/")):
                continue  # "." or "./.": no path is one (a rule of none matched none before)
            # A "/" anywhere but the end anchors the rule; otherwise it matches at any depth.
            body = line.lstrip("/") if "/" in line else "**/" + line
            if check is not None:
                check()
            rules.append(_Rule(Glob(body, hidden=True), negate, directory_only))
        return cls(rules)

    def ignored(self, rel: str, *, is_dir: bool) -> bool | None:
        """True/False when a rule decides ``rel``; None when no rule matches."""
        verdict: bool | None = None
        for rule in self._rules:
            if rule.directory_only and not is_dir:
                continue
            if rule.glob.match(rel):
                verdict = not rule.negate
        return verdict
