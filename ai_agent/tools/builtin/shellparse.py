r"""Reading a bash command line well enough to know every program it would run.

An allowlist checked against the first word of a command string is no check at all: ``ls; rm -rf
x``, ``ls && rm x``, ``ls | sh``, ``echo $(rm x)``, ``echo `rm x```, ``ls\nrm x`` all start with
``ls``. So the command is tokenised the way bash does it (quotes, escapes, operators, comments),
split into simple commands at every operator and newline, and every command substitution
(``$(...)``, backticks, also inside double quotes) and process substitution (``<(...)``) is parsed
recursively. Wrappers that run another program (``env``, ``sudo``, ``timeout``, ``xargs``,
``find -exec``, ``bash -c``, ``eval``...) contribute the wrapped program too.

What cannot be read statically (a program name built from ``$VAR`` or a glob, ``case``,
function definitions, here-documents, arithmetic, ``env -S``...) is reported in
`Parsed.unverifiable`; with an allow or deny list configured such a command is refused,
never guessed at.

This is a policy filter, not a sandbox: it decides which commands may be *attempted*. What a
permitted program then does is confined only by the OS sandbox (bubblewrap) when that is on.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

__all__ = ["Command", "Parsed", "parse_command"]

_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECTS = ("&>>", "&>", ">>", ">|", ">&", "<&", "<<<", "<<", "<>", ">", "<")
_REDIRECT_FD = re.compile(r"(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})(?=[<>])")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_KEEP_GOING = frozenset(("if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"))
_CLOSERS = frozenset(("fi", "done", "}", "esac", "]]"))
_UNREADABLE = frozenset(("case", "function", "coproc", "select"))
_SHELLS = frozenset(("bash", "sh", "dash", "zsh", "ksh", "mksh", "busybox"))
# Wrapper -> options that take a value (the wrapped program follows the options).
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset(("-u", "--unset", "-C", "--chdir")),
    "sudo": frozenset(("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group")),
    "doas": frozenset(("-u", "-C")),
    "nice": frozenset(("-n", "--adjustment")),
    "nohup": frozenset(),
    "setsid": frozenset(),
    "stdbuf": frozenset(("-i", "-o", "-e")),
    "timeout": frozenset(("-s", "--signal", "-k", "--kill-after")),
    "time": frozenset(("-f", "-o")),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset(("-a",)),
    "xargs": frozenset(
        (
            "-a",
            "-d",
            "-E",
            "-e",
            "-I",
            "-i",
            "-L",
            "-l",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-lines",
            "--replace",
        )
    ),
    "watch": frozenset(("-n", "--interval", "-d")),
    "chroot": frozenset(),
    "ionice": frozenset(("-c", "-n", "-p")),
    "strace": frozenset(("-e", "-o", "-p", "-s", "-u")),
    "flock": frozenset(("-w", "--wait", "--timeout", "-E", "--conflict-exit-code")),
}
# Wrappers whose first positional argument is not the program (timeout's duration...).
_SKIP_POSITIONAL = {"timeout": 1, "chroot": 1, "flock": 1}


@dataclass
class Command:
    """One simple command: its program (as written), arguments, assignments and redirections."""

    program: str
    args: list[str] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The program's base name (``/usr/bin/rm`` -> ``rm``)."""
        return os.path.basename(self.program)


@dataclass
class Parsed:
    """Every command a command line would run, and what could not be read."""

    commands: list[Command] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)

    @property
    def programs(self) -> list[str]:
        """Base names of every program, in order."""
        return [c.name for c in self.commands]


@dataclass
class _Word:
    text: str
    dynamic: bool = False  # holds an expansion ($VAR, glob, ~) whose value is unknown


class _Lexer:
    """Tokens of one command line; substitutions found on the way are parsed into ``parsed``."""

    def __init__(self, source: str, parsed: Parsed, depth: int) -> None:
        self.s, self.i, self.parsed, self.depth = source, 0, parsed, depth
        self.tokens: list[tuple[str, _Word | str]] = []
        self._last_dynamic = False  # the last double-quoted part held an expansion

    def problem(self, what: str) -> None:
        if what not in self.parsed.unverifiable:
            self.parsed.unverifiable.append(what)

    def run(self) -> list[tuple[str, _Word | str]]:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t":
                self.i += 1
            elif c == "#" and self._word_start():
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
            elif self._operator():
                continue
            else:
                self.tokens.append(("word", self._word()))
        return self.tokens

    def _word_start(self) -> bool:
        return self.i == 0 or self.s[self.i - 1] in " \t\n;&|()"

    def _operator(self) -> bool:
        rest = self.s[self.i :]
        # "2>f" and "{fd}>f" (bash picks a descriptor and stores it in fd): the number or the
        # {name} is part of the redirection, never the program.
        number = _REDIRECT_FD.match(rest) if self._word_start() else None
        offset = number.end() if number else 0
        for op in _REDIRECTS:
            if rest.startswith(op, offset):
                if op == "<<":
                    self.problem("here-document")
                if rest.startswith(("<(", ">("), offset):
                    return False  # process substitution: part of a word
                self.tokens.append(("redirect", op))
                self.i += offset + len(op)
                return True
        for op in _OPERATORS:
            if rest.startswith(op):
                if op == "(" and rest.startswith("(("):
                    self.problem("arithmetic command (( ))")
                self.tokens.append(("op", op))
                self.i += len(op)
                return True
        return False

    def _word(self) -> _Word:
        out: list[str] = []
        dynamic = False
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t\n;&|()<>" and not self._substitution_start():
                break
            dynamic = self._part(c, out) or dynamic
        return _Word("".join(out), dynamic)

    def _part(self, c: str, out: list[str]) -> bool:
        """Consume one piece of a word; True when it makes the word's value unknown."""
        special = {
            "\\": self._escaped,
            "'": self._single_quoted,
            '"': self._double,
            "`": self._tick,
            "$": self._expansion,
            "<": self._process,  # _word only gets here for "<(" and ">("
            ">": self._process,
        }.get(c)
        if special is not None:
            return special(out)
        out.append(c)
        self.i += 1
        return c in "*?[" or (c == "~" and len(out) == 1)

    def _escaped(self, out: list[str]) -> bool:
        nxt = self.s[self.i + 1 : self.i + 2]
        if nxt != "\n":  # a backslash-newline joins lines
            out.append(nxt)
        self.i += 2
        return False

    def _single_quoted(self, out: list[str]) -> bool:
        end = self.s.find("'", self.i + 1)
        if end == -1:
            self.problem("unterminated quote")
            end = len(self.s)
        out.append(self.s[self.i + 1 : end])
        self.i = end + 1
        return False

    def _double(self, out: list[str]) -> bool:
        out.append(self._double_quoted())
        return self._last_dynamic

    def _tick(self, out: list[str]) -> bool:
        self._backtick()
        return True

    def _expansion(self, out: list[str]) -> bool:
        return self._dollar()

    def _process(self, out: list[str]) -> bool:
        self.i += 1
        self._parenthesised("process substitution")
        return True

    def _substitution_start(self) -> bool:
        return self.s[self.i] in "<>" and self.s[self.i + 1 : self.i + 2] == "("

    def _double_quoted(self) -> str:
        self.i += 1
        out: list[str] = []
        self._last_dynamic = False
        while self.i < len(self.s) and self.s[self.i] != '"':
            c = self.s[self.i]
            if c == "\\" and self.s[self.i + 1 : self.i + 2] in ('"', "\\", "$", "`", "\n"):
                out.append(self.s[self.i + 1])
                self.i += 2
            elif c == "`":
                self._backtick()
                self._last_dynamic = True
            elif c == "$":
                self._last_dynamic = self._dollar() or self._last_dynamic
            else:
                out.append(c)
                self.i += 1
        if self.i >= len(self.s):
            self.problem("unterminated quote")
        self.i += 1
        return "".join(out)

    def _dollar(self) -> bool:
        """Handle an expansion at ``$``; True when it makes the word's value unknown."""
        rest = self.s[self.i :]
        if rest.startswith("$(("):
            self.i += 1
            self._parenthesised("arithmetic expansion")
            return True
        if rest.startswith("$("):
            self.i += 1
            self._parenthesised(None)
            return True
        if rest.startswith("${"):
            end = self._matching(self.i + 1, "{", "}")
            body = self.s[self.i + 2 : end]
            if "$(" in body or "`" in body:
                self.problem("command substitution inside ${...}")
            if body.endswith("@P"):  # prompt expansion runs the $(...) held in the value
                self.problem("prompt expansion ${...@P}")
            self.i = end + 1
            return True
        if rest.startswith("$'"):
            self.problem("$'...' quoting")
            end = self.s.find("'", self.i + 2)
            self.i = len(self.s) if end == -1 else end + 1
            return True
        name = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])", rest)
        if name:
            self.i += name.end()
            return True
        self.i += 1
        return False

    def _matching(self, start: int, open_: str, close: str) -> int:
        depth, i = 0, start
        while i < len(self.s):
            c = self.s[i]
            if c == "\\":
                i += 2
                continue
            if c == "'":
                end = self.s.find("'", i + 1)
                i = len(self.s) if end == -1 else end + 1
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        self.problem(f"unbalanced {open_}{close}")
        return len(self.s) - 1

    def _parenthesised(self, unreadable: str | None) -> None:
        """``(...)`` at ``self.i``: a substitution, parsed as a command line of its own."""
        end = self._matching(self.i, "(", ")")
        inner = self.s[self.i + 1 : end]
        self.i = end + 1
        if unreadable and unreadable.startswith("arithmetic"):
            if "$(" in inner or "`" in inner:
                self.problem("command substitution inside arithmetic")
            return
        _parse_into(inner, self.parsed, self.depth + 1)

    def _backtick(self) -> None:
        end = self.i + 1
        while end < len(self.s) and self.s[end] != "`":
            end += 2 if self.s[end] == "\\" else 1
        if end >= len(self.s):
            self.problem("unterminated backtick")
        inner = self.s[self.i + 1 : end].replace("\\`", "`")
        self.i = end + 1
        _parse_into(inner, self.parsed, self.depth + 1)


class _Splitter:
    """Groups tokens into simple commands and applies the grammar's reserved words."""

    def __init__(self, tokens: list[tuple[str, _Word | str]], parsed: Parsed, depth: int) -> None:
        self.tokens, self.parsed, self.depth = tokens, parsed, depth

    def run(self) -> None:
        self.current: list[_Word] = []
        self.assignments: list[str] = []
        self.redirects: list[tuple[str, str]] = []
        self.skip_until_do = False
        self.after_time = False
        i = 0
        while i < len(self.tokens):
            kind, value = self.tokens[i]
            i += 1
            if kind == "redirect":
                i = self._redirect(str(value), i)
            elif kind == "op":
                if value == "(" and self.current:
                    _problem(self.parsed, "function definition")
                self._flush()
            elif isinstance(value, _Word):
                self._word(value)
        self._flush()

    def _redirect(self, op: str, i: int) -> int:
        """Record a redirection and its target word; returns the index after them."""
        target = self.tokens[i][1] if i < len(self.tokens) else ""
        if isinstance(target, _Word):
            self.redirects.append((op, target.text))
            return i + 1
        self.redirects.append((op, ""))
        return i

    def _word(self, value: _Word) -> None:
        if self.skip_until_do:  # the words of "for NAME in WORDS;" are data, not commands
            self.skip_until_do = value.text != "do"
            return
        if not self.current and self._leading(value):
            return
        self.current.append(value)

    def _leading(self, value: _Word) -> bool:
        """Handle a word in command position that is not the program; True when consumed."""
        text = value.text
        after_time, self.after_time = self.after_time, text == "time" and not value.dynamic
        if after_time and text.startswith("-") and not value.dynamic:
            return True  # the time keyword's own option (time -p CMD): CMD is the program
        if _ASSIGNMENT.match(text):
            self.assignments.append(text)
            return True
        if value.dynamic:
            return False
        if text == "for":
            self.skip_until_do = True
            return True
        if text in _UNREADABLE:
            _problem(self.parsed, f"'{text}' construct")
            return True
        return text in _KEEP_GOING or text in _CLOSERS

    def _flush(self) -> None:
        self._emit(self.current, self.assignments, self.redirects)
        self.current, self.assignments, self.redirects = [], [], []
        self.after_time = False

    def _emit(
        self, words: list[_Word], assignments: list[str], redirects: list[tuple[str, str]]
    ) -> None:
        self.parsed.assignments.extend(assignments)
        if not words:
            if redirects:
                self.parsed.commands.append(Command("", [], list(assignments), list(redirects)))
            return
        head = words[0]
        if head.dynamic:
            _problem(self.parsed, f"a program name that is computed ({head.text or '$...'})")
        command = Command(head.text, [w.text for w in words[1:]], list(assignments), redirects)
        self.parsed.commands.append(command)
        _unwrap(command, words[1:], self.parsed, self.depth)


def _problem(parsed: Parsed, what: str) -> None:
    if what not in parsed.unverifiable:
        parsed.unverifiable.append(what)


def _wrapped(name: str, words: list[_Word], parsed: Parsed) -> list[_Word]:
    """The words of the command a wrapper runs (empty when it runs none)."""
    takes_value = _WRAPPERS[name]
    skip = _SKIP_POSITIONAL.get(name, 0)
    i = 0
    while i < len(words):
        text = words[i].text
        if name == "env" and (text == "-S" or text.startswith("--split-string")):
            _problem(parsed, "env -S")
            return []
        if text == "--":
            i += 1
            break
        if text.startswith("-") and len(text) > 1:
            i += _option_words(name, text, takes_value, parsed)
            continue
        if name == "env" and _ASSIGNMENT.match(text):
            parsed.assignments.append(text)
            i += 1
            continue
        if skip:
            skip -= 1
            i += 1
            continue
        break
    return words[i:]


def _option_words(name: str, text: str, takes_value: frozenset[str], parsed: Parsed) -> int:
    """How many words a wrapper's option takes: 2 when its value is the next word.

    Short options combine (``sudo -iu bob``, ``exec -la NAME``): the first letter that takes a
    value takes the rest of the word, or the next word when it is the last letter.
    """
    if text in takes_value:
        return 2
    if text.startswith("--") or len(text) < 3:
        return 1
    for j, letter in enumerate(text[1:], start=1):
        if name == "env" and letter == "S":
            _problem(parsed, "env -S")
        if f"-{letter}" in takes_value:
            return 2 if j == len(text) - 1 else 1
    return 1


# Builtins that keep text to run as a command line later: trap's action and an alias's value
# are read like eval's text; hash -p (a name for another program), mapfile -C (a callback run
# as code) and enable -f (a builtin loaded from a shared object) cannot be read.
_CODE_OPTION = {"hash": "p", "mapfile": "C", "readarray": "C", "enable": "f"}


def _stored_code(name: str, words: list[_Word], parsed: Parsed, depth: int) -> None:
    if name == "alias":
        code = [(w, w.text.split("=", 1)[1]) for w in words if "=" in w.text]
    elif name == "trap":
        rest = [w for w in words if w.text not in ("-l", "-p", "--")]
        has_action = len(rest) >= 2 and (rest[0].dynamic or rest[0].text not in ("", "-"))
        code = [(rest[0], rest[0].text)] if has_action else []
    else:
        letter = _CODE_OPTION[name]
        if any(w.text[:1] == "-" and w.text[1:2] != "-" and letter in w.text for w in words):
            _problem(parsed, f"{name} -{letter}, which runs or names commands the line hides")
        return
    for word, text in code:
        if word.dynamic:
            _problem(parsed, f"{name} of computed text")
        else:
            _parse_into(text, parsed, depth + 1)


def _unwrap(command: Command, words: list[_Word], parsed: Parsed, depth: int) -> None:
    """Add the commands a wrapper, a shell -c, eval or find -exec would run."""
    name = command.name
    if name in ("alias", "trap") or name in _CODE_OPTION:
        _stored_code(name, words, parsed, depth)
    elif name == "watch":
        _watch(words, parsed, depth)
    elif name in _WRAPPERS:
        if name == "flock" and any(w.text in ("-c", "--command") for w in words):
            _problem(parsed, "flock -c")
            return
        inner = _wrapped(name, words, parsed)
        if inner:
            _nested_command(inner, parsed, depth)
    elif name in _SHELLS:
        _shell_script(name, words, parsed, depth)
    elif name == "eval":
        if any(w.dynamic for w in words):
            _problem(parsed, "eval of computed text")
        else:
            _parse_into(" ".join(w.text for w in words), parsed, depth + 1)
    elif name == "find":
        _find_exec(words, parsed, depth)


def _watch(words: list[_Word], parsed: Parsed, depth: int) -> None:
    """``watch ARGS``: the arguments are joined into one line, which runs with ``sh -c``."""
    inner = _wrapped("watch", words, parsed)
    if any(w.dynamic for w in inner):
        _problem(parsed, "watch of computed text")
    elif inner:
        _parse_into(" ".join(w.text for w in inner), parsed, depth + 1)


def _shell_script(name: str, words: list[_Word], parsed: Parsed, depth: int) -> None:
    """``bash -c SCRIPT``: parse SCRIPT (a computed one cannot be checked)."""
    for i, w in enumerate(words):
        flags = w.text[1:] if w.text.startswith("-") and not w.text.startswith("--") else ""
        if "c" in flags:
            script = words[i + 1] if i + 1 < len(words) else None
            if script is None or script.dynamic:
                _problem(parsed, f"{name} -c with a computed script")
            else:
                _parse_into(script.text, parsed, depth + 1)
            return


def _nested_command(words: list[_Word], parsed: Parsed, depth: int) -> None:
    splitter = _Splitter([("word", w) for w in words], parsed, depth + 1)
    splitter.run()


def _find_exec(words: list[_Word], parsed: Parsed, depth: int) -> None:
    i = 0
    while i < len(words):
        if words[i].text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            if end > i + 1:
                _nested_command(words[i + 1 : end], parsed, depth)
            i = end
        i += 1


_MAX_DEPTH = 8


def _parse_into(source: str, parsed: Parsed, depth: int) -> None:
    if depth > _MAX_DEPTH:
        _problem(parsed, "substitutions nested too deeply")
        return
    tokens = _Lexer(source, parsed, depth).run()
    _Splitter(tokens, parsed, depth).run()


def parse_command(source: str) -> Parsed:
    r"""Every program a bash command line would run, and what could not be read.

    Examples:
        >>> parse_command("ls -l && echo \"$(rm -rf x)\" | sh").programs
        ['rm', 'ls', 'echo', 'sh']
        >>> parse_command("timeout 5 env A=1 python3 -c 'print(1)'").programs
        ['timeout', 'env', 'python3']
        >>> parse_command("$CMD x").unverifiable
        ['a program name that is computed ($...)']
    """
    parsed = Parsed()
    _parse_into(source, parsed, 0)
    return parsed
