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
from dataclasses import dataclass

__all__ = ["GitIgnore", "glob_regex"]


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
                chunks[-1].append(_char_class(body.replace("\\", "\\\\")))
                i = end
        else:
            chunks[-1].append(re.escape(c))
        i += 1
    if len(chunks) == 1:
        return "".join(chunks[0])
    head, *middle, tail = ("".join(chunk) for chunk in chunks)
    return head + "".join(f"(?>[^/]*?{m})" for m in middle) + "[^/]*" + tail


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


def glob_regex(pattern: str, *, recursive: bool = True, hidden: bool = False) -> re.Pattern[str]:
    """A regex matching the relative ``/`` paths that ``pattern`` matches.

    Args:
        pattern: The glob, relative (``src/**/*.py``).
        recursive: When False, ``**`` is a plain ``*`` (one segment).
        hidden: Wildcards match a leading dot too (gitignore's rule, not the shell's).

    Examples:
        >>> bool(glob_regex("**/*.py").match("a/b/c.py")), bool(glob_regex("*.py").match("a/c.py"))
        (True, False)
        >>> bool(glob_regex("src/**").match("src/x/y"))
        True
        >>> bool(glob_regex("f?[0-9].txt").match("fa1.txt"))
        True
    """
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    out: list[str] = []
    guard = "" if hidden else r"(?!\.)"
    visible = guard + "[^/]+"
    # "**/**" is "**" (the same paths), and a run of them backtracks in O(depth**run).
    parts = [p for i, p in enumerate(parts) if not (recursive and i and p == "**" == parts[i - 1])]
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**" and recursive:
            out.append(f"{visible}(?:/{visible})*" if last else f"(?:{visible}/)*")
            continue
        segment = "*" if part == "**" else part
        out.append(("" if segment.startswith(".") else guard) + _segment(segment))
        out.append("" if last else "/")
    return re.compile("".join(out) + r"\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Rule:
    regex: re.Pattern[str]
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
    def parse(cls, text: str) -> GitIgnore:
        """Rules from the text of a ``.gitignore``."""
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
            anchored = "/" in line
            body = line.lstrip("/")
            glob = glob_regex(body, hidden=True).pattern.removesuffix(r"\Z")
            prefix = "" if anchored else "(?:.*/)?"
            regex = re.compile(prefix + glob + r"\Z", re.DOTALL)
            rules.append(_Rule(regex, negate, directory_only))
        return cls(rules)

    def ignored(self, rel: str, *, is_dir: bool) -> bool | None:
        """True/False when a rule decides ``rel``; None when no rule matches."""
        verdict: bool | None = None
        for rule in self._rules:
            if rule.directory_only and not is_dir:
                continue
            if rule.regex.match(rel):
                verdict = not rule.negate
        return verdict
