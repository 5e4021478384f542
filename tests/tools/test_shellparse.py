"""The command-line reader behind run_bash's allow/deny lists: every program, however hidden."""

from __future__ import annotations

import pytest

from ai_agent.tools.builtin.shellparse import parse_command

PROGRAMS = [
    ("ls -l", ["ls"]),
    ("ls; rm x", ["ls", "rm"]),
    ("ls && rm x || echo no", ["ls", "rm", "echo"]),
    ("ls | sh", ["ls", "sh"]),
    ("ls |& tee f", ["ls", "tee"]),
    ("sleep 1 & rm x", ["sleep", "rm"]),
    ("ls\nrm x", ["ls", "rm"]),
    ("echo $(rm -rf x)", ["rm", "echo"]),
    ('echo "$(rm -rf x)"', ["rm", "echo"]),
    ("echo `rm x`", ["rm", "echo"]),
    ('echo "`rm x`"', ["rm", "echo"]),
    ("echo $(echo $(rm x))", ["rm", "echo", "echo"]),
    ("diff <(ls) >(rm x)", ["ls", "rm", "diff"]),
    ("(cd a && rm b)", ["cd", "rm"]),
    ("{ ls; rm x; }", ["ls", "rm"]),
    ("if true; then rm x; else ls; fi", ["true", "rm", "ls"]),
    ("while false; do rm x; done", ["false", "rm"]),
    ("for f in a b; do rm $f; done", ["rm"]),
    ("! rm x", ["rm"]),
    ("time rm x", ["rm"]),
    ('r"m" -rf x', ["rm"]),
    ("r\\m x", ["rm"]),
    ("'rm' x", ["rm"]),
    ("/bin/rm x", ["rm"]),
    ("X=1 Y=$(rm z) ls", ["rm", "ls"]),
    ("ls > out 2>&1 < in", ["ls"]),
    ("git status # ; rm x", ["git"]),
    ("echo 'a; rm x'", ["echo"]),
    ('echo "a; rm x"', ["echo"]),
    ("sudo -u bob rm x", ["sudo", "rm"]),
    ("env -i A=1 rm x", ["env", "rm"]),
    ("nice -n 5 nohup rm x", ["nice", "nohup", "rm"]),
    ("timeout -s KILL 5 rm x", ["timeout", "rm"]),
    ("xargs -n 1 rm", ["xargs", "rm"]),
    ("command rm x", ["command", "rm"]),
    ("exec rm x", ["exec", "rm"]),
    ("flock /tmp/l rm x", ["flock", "rm"]),
    ("bash -c 'ls; rm x'", ["bash", "ls", "rm"]),
    ("sh -ec 'rm x'", ["sh", "rm"]),
    ('eval "rm x"', ["eval", "rm"]),
    ("find . -name '*.tmp' -exec rm {} \\;", ["find", "rm"]),
    ("find . -execdir rm {} +", ["find", "rm"]),
    ("ls \\\n -l", ["ls"]),
    ("time -p rm x", ["rm"]),
    ("exec {fd}>f rm x", ["exec", "rm"]),
    ("{fd}<f rm x", ["rm"]),
    ("exec -la name rm x", ["exec", "rm"]),
    ("sudo -iu bob rm x", ["sudo", "rm"]),
    ("watch -n 1 'ls; rm x'", ["watch", "ls", "rm"]),
    ("trap 'rm x' EXIT; trap - EXIT; trap '' INT; trap -p", ["trap", "rm", "trap", "trap", "trap"]),
    ("alias ls='rm -i' ll=ls", ["alias", "rm", "ls"]),
    ("alias; hash -r; mapfile -t a < f", ["alias", "hash", "mapfile"]),
]


@pytest.mark.parametrize(("command", "programs"), PROGRAMS)
def test_every_program_is_found(command: str, programs: list[str]) -> None:
    parsed = parse_command(command)
    assert parsed.programs == programs
    assert parsed.unverifiable == []


UNVERIFIABLE = [
    ("$CMD x", "a program name that is computed"),
    ("${CMD} x", "a program name that is computed"),
    ("~/bin/tool", "a program name that is computed"),
    ("/bin/r? x", "a program name that is computed"),
    ('bash -c "$SCRIPT"', "bash -c with a computed script"),
    ("bash -c", "bash -c with a computed script"),
    ("eval $X", "eval of computed text"),
    ("case $x in a) rm;; esac", "'case' construct"),
    ("function f { rm x; }", "'function' construct"),
    ("f() { rm x; }; f", "function definition"),
    ("cat <<EOF\nrm x\nEOF", "here-document"),
    ("echo $((1 + $(rm x)))", "command substitution inside arithmetic"),
    ("(( x = 1 ))", "arithmetic command (( ))"),
    ("echo ${x:-$(rm y)}", "command substitution inside ${...}"),
    ("echo $'\\x72m'", "$'...' quoting"),
    ("env -S 'rm x'", "env -S"),
    ("flock l -c 'rm x'", "flock -c"),
    ("env -iS'rm x'", "env -S"),
    ("watch $X", "watch of computed text"),
    ('trap "$X" EXIT', "trap of computed text"),
    ("alias ls=$X", "alias of computed text"),
    ("hash -p /bin/rm ls", "hash -p, which runs"),
    ("mapfile -C 'rm x' a < f", "mapfile -C, which runs"),
    ("readarray -tC cb a", "readarray -C, which runs"),
    ("enable -f ./evil.so evil", "enable -f, which runs"),
    ("x='$(rm y)'; echo ${x@P}", "prompt expansion ${...@P}"),
    ("echo 'unterminated", "unterminated quote"),
    ('echo "unterminated', "unterminated quote"),
    ("echo `unterminated", "unterminated backtick"),
    ("echo $(unbalanced", "unbalanced ()"),
    ("e" + "$(x" * 12 + ")" * 12, "substitutions nested too deeply"),
]


@pytest.mark.parametrize(("command", "problem"), UNVERIFIABLE)
def test_what_cannot_be_read_is_reported(command: str, problem: str) -> None:
    problems = parse_command(command).unverifiable
    assert any(p.startswith(problem) for p in problems), problems


def test_assignments_and_redirections_are_recorded() -> None:
    parsed = parse_command("PATH=/evil env LD_PRELOAD=x ls > out.txt 2> /dev/null")
    assert parsed.assignments == ["PATH=/evil", "LD_PRELOAD=x"]
    ls = parsed.commands[-1]
    assert (ls.name, ls.redirects) == ("ls", [])
    env = parsed.commands[0]
    assert env.redirects == [(">", "out.txt"), (">", "/dev/null")]
    assert parse_command("> empty.txt").commands[0].redirects == [(">", "empty.txt")]
