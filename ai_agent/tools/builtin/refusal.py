"""The refusal a file or process boundary raises: `SandboxError`, with a code for the result.

Below the file sandbox (`ai_agent.tools.builtin.sandbox`, which names it in its ``__all__``)
and the engine's protected paths (`ai_agent.tools.builtin.protected`), which both raise it, so
neither imports the other for it.
"""

from __future__ import annotations

__all__ = ["SandboxError"]


class SandboxError(Exception):
    """A path or file operation the sandbox refuses; ``code`` goes into the result's meta."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
