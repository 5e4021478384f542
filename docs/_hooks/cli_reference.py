"""MkDocs hook: the command-line reference page gets every command's ``--help``, at build time.

The text comes from the real parser (``ai_agent.cli``), so the page cannot drift from the options.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- cli-help -->"


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)  # argparse wraps to the terminal's width
    try:
        yield
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def cli_help() -> str:
    """Markdown: one section per command, its help text in a code block."""
    from ai_agent.cli import _parser

    with _columns(80):  # fits the page's code block without scrolling
        parser, _ = _parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parts = ["## ai-agent", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, command in sub.choices.items():
            parts += [
                f"## ai-agent {name}",
                "",
                "```text",
                command.format_help().rstrip(),
                "```",
                "",
            ]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Replace the marker of the command-line page with the generated help."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_help())
