"""``ai-agent ui``: the console in a browser (see `ai_agent.console`).

It binds to loopback and prints a URL with a fresh random token. Another address needs both
``--allow-remote`` and a token of the person's own (``--token-file``): a console reachable from
the network with a token printed to one terminal would be a console for whoever reads it.

The console answers gates, so like ``ai-agent worker`` it needs the tools and model the runs
were made with (``--tools``, ``--model`` or ``--app module:factory``), unless ``--no-worker``
leaves serving the answers to an ``ai-agent worker`` elsewhere.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ai_agent.cli._common import (
    Parents,
    UsageError,
    build_agent,
    require_database,
    run_closing,
)
from ai_agent.cli._numbers import amount_arg, count_arg
from ai_agent.visible import visible

__all__ = ["add_commands"]

TOKEN_FILE_LIMIT = 4096


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``ui``."""
    ui = sub.add_parser(
        "ui",
        parents=[parents.common, parents.runner],
        help="open the console: runs, the inbox of paused runs, answers in the browser",
        description="Serve the console on loopback with a random token in the printed URL. "
        "Answers are queued and served by the console's worker (or, with --no-worker, by an "
        "ai-agent worker), with the run's lease, as `ai-agent resume --queue` does.",
    )
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    ui.add_argument(
        "--port", type=count_arg(0), default=8765, help="port (8765; 0 for any free one)"
    )
    ui.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other than loopback (needs --token-file)",
    )
    ui.add_argument(
        "--token-file",
        metavar="FILE",
        help="the console's token, read from this file (required with --allow-remote)",
    )
    ui.add_argument(
        "--no-worker",
        action="store_true",
        help="only queue answers; an `ai-agent worker` on the database serves them",
    )
    ui.add_argument(
        "--poll",
        type=amount_arg(positive=True),
        default=1.0,
        metavar="SECONDS",
        help="queue and live poll (1)",
    )
    ui.add_argument(
        "--request-timeout",
        type=amount_arg(positive=True),
        default=10.0,
        metavar="SECONDS",
        help="time a client has to send a whole request (10; raise it for slow links)",
    )
    ui.add_argument(
        "--app",
        metavar="MODULE:FACTORY",
        help="build the Agent with your own factory(checkpoint_url) (for your own tools)",
    )
    ui.set_defaults(handler=_ui)


def _ui(args: argparse.Namespace) -> int:
    try:
        from ai_agent.console import MIN_TOKEN_CHARS, ConsoleServer, is_loopback, new_token
    except ImportError as exc:
        raise UsageError(
            f"ai-agent ui needs the console extra ({exc.name} is missing): "
            "pip install 'ai-agent[console]'"
        ) from None
    if args.port > 65535:
        raise UsageError(f"--port must be between 0 and 65535 (got {args.port})")
    remote = not is_loopback(args.host)
    if remote and not (args.allow_remote and args.token_file):
        raise UsageError(
            f"--host {visible(args.host)} is not loopback: the console answers gates, so "
            "serving it to the network needs --allow-remote and a token of your own "
            "(--token-file FILE)"
        )
    token = _token_file(args.token_file, MIN_TOKEN_CHARS) if args.token_file else new_token()
    from ai_agent.cli.worker import load_app

    agent = load_app(args.app, args.db) if args.app else build_agent(args, on_event=None)
    require_database(agent.archive.database)
    server = ConsoleServer(
        agent,
        token,
        host=args.host,
        port=args.port,
        worker=not args.no_worker,
        poll=args.poll,
        request_seconds=args.request_timeout,
    )

    def ready(url: str) -> None:
        where = (
            f"{url}?token={token}"
            if not args.token_file
            else f"{url} (sign in with ?token= and the token in {visible(args.token_file)})"
        )
        print(f"console: {where}", flush=True)
        print(
            f"serving {agent.archive.database.describe()}; Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )

    import asyncio  # the console's loop; not at start-up, which needs none

    try:
        run_closing(agent, server.serve(ready))
    except OSError as exc:
        raise UsageError(
            f"cannot serve on {visible(args.host)}:{args.port}: {exc.strerror}"
        ) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 0
    return 0


def _token_file(path: str, minimum: int) -> str:
    from ai_agent.datafiles import read_text
    from ai_agent.errors import ConfigError

    text = read_text(
        path,
        what=f"the token file {path}",
        max_bytes=TOKEN_FILE_LIMIT,
        error=ConfigError,
        limit_hint="a token is one line",
    ).strip()
    if len(text) < minimum or any(c.isspace() for c in text):
        raise UsageError(
            f"the token in {path} must be one word of at least {minimum} characters "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return text
