"""Where ``ai-agent worker`` sends log records: its own lines on stderr, the password hidden.

Imported when the worker starts (``logging`` is not loaded by the command line's start-up).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["log_lines", "logs_to"]


class _LogLines(logging.Handler):
    """Log records (psycopg's pool, the engine's own) as the worker's lines on stderr.

    Without it they reach stderr through `logging.lastResort`: plain text among ``--json``'s
    JSON lines, several lines a record when the driver's message runs on ("error connecting in
    'pool': ..." and a tab-indented hint), and a failed run's whole traceback in a status
    log, though the failure is told (once) as the plan's. The database's password is hidden in
    both modes; the traceback is shown only with --debug.
    """

    def __init__(self, line: Callable[[logging.LogRecord, str, str], None]) -> None:
        super().__init__(logging.WARNING)  # what lastResort would have shown
        self._line = line

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("ai_agent") and logging.getLogger("ai_agent").handlers:
            return  # --log-level / --log-json gave the engine's records a handler of their own
        try:
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            self._line(record, record.getMessage(), record.exc_text or "")
        except Exception:  # a log line never stops the worker
            self.handleError(record)


@contextlib.contextmanager
def logs_to(handler: logging.Handler) -> Iterator[None]:
    """Route the log records to ``handler`` while the worker runs (on the root logger)."""
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def log_lines(
    *,
    json_lines: bool,
    debug: bool,
    write: Callable[[dict[str, Any]], None],
    hide: Callable[[str], str],
) -> logging.Handler:
    """The handler: JSON objects through ``write`` (``--json``), else masked text lines."""

    def as_json(record: logging.LogRecord, message: str, exc: str) -> None:
        line = {"type": "log", "level": record.levelname, "logger": record.name}
        write({**line, "message": message, **({"error": exc} if exc and debug else {})})

    def as_text(record: logging.LogRecord, message: str, exc: str) -> None:
        shown = f"{message}\n{exc}" if exc and debug else message
        print(hide(shown), file=sys.stderr, flush=True)

    return _LogLines(as_json if json_lines else as_text)
