"""What ``run_bash`` lets a command do: allow and deny lists, the environment, destructive commands.

- Allow and deny lists name programs and are checked on every command of the *parsed* command
  line (`ai_agent.tools.builtin.shellparse`); a line that cannot be fully read is refused while a
  list is configured. With a list configured, ``PATH`` cannot be changed either.
- The environment is the agent's minus anything that looks like a secret (``*KEY*``,
  ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``..., ``MAMBA_*``) and minus variables that hijack the
  shell or an ordinary program (``BASH_ENV``, ``BASH_FUNC_*``, ``LD_*``, ``PYTHONPATH``,
  ``GIT_SSH_COMMAND``, ``GIT_CONFIG_*``, ``PAGER``...); a call's ``env`` or the command line's
  own assignments add variables, never those.
- Destructive commands (``rm``, ``dd``, ``git reset --hard``, overwriting redirections...) and
  command lines that cannot be read are escalated: they wait for a person even where shell
  commands would otherwise run unasked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ai_agent.config import BashToolConfig
from ai_agent.tools.builtin.refusal import require_os_text
from ai_agent.tools.builtin.sandbox import SandboxError
from ai_agent.tools.builtin.shellparse import Parsed, parse_command

__all__ = ["CommandPolicy"]

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^MAMBA_", re.IGNORECASE)
# Variables that make the shell, the dynamic loader or an ordinary program run code the caller
# chose: an allowed `git` or `python3` would run a hidden `rm` that neither the lists nor the
# destructive-command check ever see.
_HIJACK = re.compile(
    r"^(BASH_ENV|ENV|BASH_FUNC_.*|SHELLOPTS|BASHOPTS|PS4|IFS|PROMPT_COMMAND|GLOBIGNORE|CDPATH"
    r"|LD_.*|GCONV_PATH|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PYTHONUSERBASE|PYTHONPYCACHEPREFIX"
    r"|PERL5OPT|PERL5LIB|PERLLIB|PERL5DB|RUBYOPT|RUBYLIB|NODE_OPTIONS|NODE_PATH"
    r"|GIT_SSH|GIT_SSH_COMMAND|GIT_EXEC_PATH|GIT_PAGER|GIT_EDITOR|GIT_ASKPASS|SSH_ASKPASS"
    r"|GIT_EXTERNAL_DIFF|GIT_PROXY_COMMAND|GIT_TEMPLATE_DIR|GIT_CONFIG|GIT_CONFIG_.*"
    r"|PAGER|MANPAGER|EDITOR|VISUAL|LESSOPEN|LESSCLOSE|BROWSER)\Z"
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DESTRUCTIVE = frozenset(
    (
        "rm",
        "rmdir",
        "unlink",
        "shred",
        "dd",
        "truncate",
        "wipefs",
        "fdisk",
        "sfdisk",
        "parted",
        "mkswap",
        "kill",
        "killall",
        "pkill",
        "reboot",
        "shutdown",
        "halt",
        "poweroff",
        "sudo",
        "doas",
        "crontab",
    )
)
_HARMLESS_TARGETS = frozenset(("/dev/null", "/dev/stdout", "/dev/stderr"))


def _destructive(parsed: Parsed) -> list[str]:
    """Why the commands could destroy data or stop processes (empty when they look safe)."""
    reasons: list[str] = []
    for cmd in parsed.commands:
        name, args = cmd.name, cmd.args
        if name in _DESTRUCTIVE or name.startswith("mkfs"):
            reasons.append(f"{name} {' '.join(args)}".strip())
        elif name in ("chmod", "chown", "chgrp") and any(a in ("-R", "--recursive") for a in args):
            reasons.append(f"{name} -R")
        elif name == "find" and "-delete" in args:
            reasons.append("find -delete")
        elif name == "git" and _destructive_git(args):
            reasons.append(f"git {' '.join(args)}")
        reasons.extend(
            f"overwrites {target or 'a file'} ({op})"
            for op, target in cmd.redirects
            if _overwrites(op, target)
        )
    return reasons


_DESCRIPTOR = re.compile(r"(?:[0-9]+-?|-)\Z")


def _overwrites(op: str, target: str) -> bool:
    """Whether a redirection truncates a file.

    ``>``, ``>|`` and ``&>`` always name a file (``> 2`` writes a file called 2); ``>&`` names a
    descriptor only when its word is digits (``>&2``, ``>&3-``) or ``-``, and with any other word
    it is ``&>`` (``>& notes.txt`` truncates notes.txt).
    """
    if target in _HARMLESS_TARGETS:
        return False
    if op in (">", ">|", "&>"):
        return True
    return op == ">&" and not _DESCRIPTOR.match(target)


def _destructive_git(args: list[str]) -> bool:
    if not args:
        return False
    sub, rest = args[0], set(args[1:])
    return (
        (sub == "reset" and "--hard" in rest)
        or (sub == "clean" and any(a.startswith("-") and "f" in a for a in rest))
        or (sub == "push" and bool(rest & {"-f", "--force", "--force-with-lease"}))
        or (sub == "branch" and "-D" in rest)
        or (sub == "checkout" and "--" in rest)
    )


# Builtins that set a variable named by an argument: ``export LD_PRELOAD=x`` is no assignment
# word, yet sets (and exports) it; ``read``, ``printf -v`` and ``getopts`` set one that
# ``export NAME`` or ``set -a`` then hands to every program.
_DECLARING = frozenset(("export", "declare", "typeset", "local", "readonly"))
_READ_OPTIONS_WITH_VALUE = frozenset("adinNptu")
_DEFAULT_ASSIGNMENT = re.compile(r"\$\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*:?=")


def _names_set(command: str, parsed: Parsed) -> list[str]:
    """Every variable name the command line sets: assignments, builtins, ``${NAME:=value}``."""
    words = [*parsed.assignments]
    for cmd in parsed.commands:
        if cmd.name in _DECLARING:
            words += [a for a in cmd.args if not a.startswith(("-", "+"))]
        elif cmd.name == "read":
            words += _read_names(cmd.args)
        elif cmd.name == "printf":
            words += _printf_names(cmd.args)
        elif cmd.name in ("getopts", "mapfile", "readarray") and cmd.args:
            words.append(cmd.args[-1])
    words += _DEFAULT_ASSIGNMENT.findall(command)
    return [w.split("=", 1)[0].split("[", 1)[0].rstrip("+") for w in words]


def _printf_names(args: list[str]) -> list[str]:
    """The name ``printf -v NAME`` (or ``-vNAME``) sets."""
    for at, arg in enumerate(args):
        if arg.startswith("-v"):
            return [arg[2:] or (args[at + 1] if at + 1 < len(args) else "")]
        if not arg.startswith("-"):
            return []
    return []


def _read_names(args: list[str]) -> list[str]:
    """The names ``read [-options] NAME...`` sets (an option's value is not one)."""
    names: list[str] = []
    takes_value = False
    for arg in args:
        if takes_value:
            takes_value = False
        elif arg.startswith("-") and len(arg) > 1:
            takes_value = arg[-1] in _READ_OPTIONS_WITH_VALUE
            if arg[-1] == "a":  # -a NAME: the array's name is the value
                takes_value = False
        else:
            names.append(arg)
    return names


def _base_env(pass_env: list[str]) -> dict[str, str]:
    """The agent's environment without secrets and shell hijackers (``pass_env`` is kept)."""
    keep = set(pass_env)
    return {
        k: v
        for k, v in os.environ.items()
        if k in keep or not (_SECRET_NAME.search(k) or _HIJACK.match(k))
    }


class CommandPolicy:
    """What ``run_bash`` lets a command do, and which commands a person must see first.

    Args:
        config: The allow and deny lists, ``pass_env`` and ``confirm_destructive``.
    """

    def __init__(self, config: BashToolConfig) -> None:
        self.allow = frozenset(config.allow)
        self.deny = frozenset(config.deny)
        self.pass_env = list(config.pass_env)
        self.confirm_destructive = config.confirm_destructive

    @property
    def listed(self) -> bool:
        """True when an allow or deny list is configured."""
        return bool(self.allow or self.deny)

    def refusal(self, command: str, env: dict[str, Any] | None) -> str | None:
        """Why the command may not run at all under the lists, or None."""
        parsed = parse_command(command)
        if self.listed and parsed.unverifiable:
            return (
                "the command cannot be checked against the allow/deny list because it uses "
                f"{', '.join(parsed.unverifiable)}; write it without those constructs"
            )
        for name in parsed.programs:
            if not name:
                continue
            if name in self.deny:
                return f"{name!r} is on the deny list"
            if self.allow and name not in self.allow:
                allowed = ", ".join(sorted(self.allow))
                return f"{name!r} is not on the allow list (allowed: {allowed})"
        names = _names_set(command, parsed) + list(env or {})
        for name in names:
            if _HIJACK.match(name) or (self.listed and name == "PATH"):
                return f"the command may not set {name}"
        return None

    def escalate(self, command: str) -> str | None:
        """Why a person must see this command first, or None (destructive or unreadable)."""
        if not self.confirm_destructive:
            return None
        parsed = parse_command(command)
        if parsed.unverifiable:
            return (
                "run_bash: the command cannot be fully read ("
                + ", ".join(parsed.unverifiable)
                + "); a person should check it"
            )
        reasons = _destructive(parsed)
        if reasons:
            return "run_bash: destructive command: " + "; ".join(reasons)
        return None

    def env(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        """The command's environment: the agent's, filtered, plus ``extra`` (the call's ``env``).

        Raises:
            SandboxError: BAD_ARGUMENTS for a name that is not a shell name, or a NUL in a value.
        """
        env = _base_env(self.pass_env)
        for name, value in (extra or {}).items():
            if not _ENV_NAME.match(name):
                raise SandboxError("BAD_ARGUMENTS", f"env name {name!r} is not a valid name")
            if "\x00" in value:
                raise SandboxError("BAD_ARGUMENTS", f"env {name} must be a string without NUL")
            require_os_text(value, f"env {name}")
            env[name] = value
        return env
