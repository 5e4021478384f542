"""Command line for the local backend: ``python -m ai_agent.local {fetch,serve}``.

``fetch`` downloads and verifies the model once and prints its path (CI runs it to fill the cache
before the tests). ``serve`` runs llama.cpp's server in the foreground; it is what
`LocalModelServer` starts as its child process.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ai_agent.errors import LocalBackendError
from ai_agent.local.model_files import ensure_model
from ai_agent.local.serve import main as serve_main

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``fetch`` or ``serve`` command.

    Args:
        argv: The arguments after the program name; None reads ``sys.argv``.

    Returns:
        The exit code: 0 on success, 1 when the model cannot be prepared, 2 for bad usage, and
        the codes of `ai_agent.local.serve.serve` for a server that does not start.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["serve"]:
        # serve.py parses its own arguments: it also runs as a script without this package.
        return serve_main(args[1:])
    parsed = _parser().parse_args(args)
    return _fetch(parsed.cache_dir)


def _fetch(cache_dir: Path | None) -> int:
    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        path = ensure_model(cache_dir, progress=progress)
    except LocalBackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ai_agent.local", description="The built-in local model backend."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser(
        "fetch", help="download and verify the model once; print its path on stdout"
    )
    fetch.add_argument("--cache-dir", type=Path, help="cache directory (default: user cache)")
    commands.add_parser(
        "serve", help="run the llama.cpp server in the foreground (see `serve --help`)"
    )
    return parser


if __name__ == "__main__":
    sys.exit(main())
