"""The refusal a file or process boundary raises: `SandboxError`, with a code for the result.

Below the file sandbox (`ai_agent.tools.builtin.sandbox`, which names it in its ``__all__``)
and the engine's protected paths (`ai_agent.tools.builtin.protected`), which both raise it, so
neither imports the other for it.
"""

from __future__ import annotations

import os

__all__ = ["SandboxError", "require_os_text"]


class SandboxError(Exception):
    """A path or file operation the sandbox refuses; ``code`` goes into the result's meta."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def require_os_text(text: str, what: str, code: str = "BAD_ARGUMENTS") -> None:
    """Refuse text the OS cannot take (a path, a command, an environment value).

    JSON can carry a lone surrogate (U+D800 to U+DFFF written alone), which no file name or
    argument can hold; left to the OS call it is a UnicodeEncodeError there, and a file tool
    would call it a wrong encoding. U+DC80 to U+DCFF are fine: they stand for the bytes of a
    name that is not UTF-8 (``os.fsdecode``).
    """
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise SandboxError(
            code,
            f"{what} holds {bad!r}, half of a character (a lone surrogate), which no file name, "
            "command or variable can hold; send the whole character",
        ) from None
