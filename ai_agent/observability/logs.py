r"""Logging: standard ``logging`` under ``ai_agent.*``, redacted, with correlation ids.

The library never configures logging on its own: importing it or building an Agent adds no
handler and changes no level. An application either routes the ``ai_agent`` logger as it routes
any other, or calls `configure_logging` (the command line does, for ``--log-level`` and
``--log-json``) to get a stderr handler with the formats of ``LoggingConfig``:

- text: ``2025-01-02T10:00:00.123Z INFO  ai_agent.models [thread=... run=... stage=draft it=1
  req=...] model call llama3.2: 812+64 tokens in 812 ms``;
- JSON (``structured = true``): one object a line with ``ts``, ``level``, ``logger``,
  ``message``, the correlation ids and the event's fields (``tool``, ``duration_ms``, ``k``,
  ``items``...).

What goes in at which level (spec 6.2.1):

=======  ======================================================================================
DEBUG    request and response headers (redacted) and, when opted in, bodies cut to
         ``body_size_limit``; stage starts and ends; tool arguments; retrieved items (path,
         score, snippet)
INFO     each HTTP request's method, URL and status; runs started and ended; model calls
         (tokens, duration); tool calls (status, duration, chars read, K); gate pause and resume;
         compaction
WARNING  retries of model and tool calls with their backoff; slow responses; a failing listener
         or collector
ERROR    failed runs; model calls that failed for good (connection failures included)
=======  ======================================================================================

Both formats keep a record to one line whatever the message quotes: the text format shows
control, bidi and invisible characters (newlines too) as escapes (`ai_agent.visible.visible`),
and indents a traceback's lines under the record, so only a record's first line starts at the
margin; the JSON format writes them as JSON escapes. A model's or a tool's text in a message
can neither drive the terminal the log is read in nor forge another record.

Every record the engine makes is redacted before it leaves the engine (see
`ai_agent.observability.redaction`): message, fields and traceback, whatever handler the
application attaches. `CorrelationFilter` adds the ids of the current run, stage, model call
and tool call to records (attach it to your own handlers to tag third-party records too).

Examples:
    >>> import io
    >>> out = io.StringIO()
    >>> handler = configure_logging(stream=out, level="INFO")
    >>> engine_logger("ai_agent.demo").info("GET %s", "/v1/models?api_key=sk-123")
    >>> out.getvalue().split(" ", 1)[1]
    'INFO    ai_agent.demo GET /v1/models?api_key=***\n'
    >>> unconfigure_logging()
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from ai_agent.observability._scope import SCOPE
from ai_agent.observability.redaction import Redactor, cut_body
from ai_agent.visible import json_visible, visible

if TYPE_CHECKING:
    from ai_agent.config import LoggingConfig

__all__ = [
    "ROOT_LOGGER",
    "CorrelationFilter",
    "EngineLogger",
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
    "engine_logger",
    "logging_configured",
    "unconfigure_logging",
]

ROOT_LOGGER = "ai_agent"
# Record attributes the engine sets: its records are already redacted; the event's fields.
_REDACTED = "ai_agent_redacted"
_FIELDS = "ai_agent_fields"
_IDS = "ai_agent_ids"
_ID_ATTRIBUTES = (
    "thread_id",
    "run_id",
    "stage",
    "stage_id",
    "iteration",
    "step",
    "request_id",
    "tool_call_id",
    "trace_id",
    "span_id",
)
# Frames between the engine's call (log.info(...)) and _emit: info -> _log -> _emit.
_CALLER_DEPTH = 3
# A traceback's text in a record at most: its message may quote a server's error page whole.
_TRACEBACK_BYTES = 16384


@functools.cache
def _default_redactor() -> Redactor:
    """For records made outside any run: the default patterns, no known secrets."""
    return Redactor.from_config(None)


def current_redactor() -> Redactor:
    """The redactor of the current run (it knows the run's secrets), else the default one."""
    scope = SCOPE.get()
    return scope.redactor if scope is not None else _default_redactor()


class EngineLogger:
    """The engine's logger: redacts message, fields and traceback before any handler sees them.

    ``fields`` are the event's structured data (a JSON-like mapping), kept on the record for
    `JsonFormatter`. ``exc`` attaches an exception's traceback, redacted. ``redactor``
    replaces the current run's redactor; ``secrets`` are masked besides (a caller used outside a
    run knows its own key). Nothing is formatted unless the level is enabled.
    """

    __slots__ = ("logger",)

    def __init__(self, name: str) -> None:
        self.logger = logging.getLogger(name)

    def enabled(self, level: int) -> bool:
        """Whether records of ``level`` would be handled (guard costly arguments with it)."""
        return self.logger.isEnabledFor(level)

    def debug(self, msg: str, *args: object, **options: Any) -> None:
        """Log at DEBUG."""
        self._log(logging.DEBUG, msg, args, **options)

    def info(self, msg: str, *args: object, **options: Any) -> None:
        """Log at INFO."""
        self._log(logging.INFO, msg, args, **options)

    def warning(self, msg: str, *args: object, **options: Any) -> None:
        """Log at WARNING."""
        self._log(logging.WARNING, msg, args, **options)

    def error(self, msg: str, *args: object, **options: Any) -> None:
        """Log at ERROR."""
        self._log(logging.ERROR, msg, args, **options)

    def _log(
        self,
        level: int,
        msg: str,
        args: tuple[object, ...],
        *,
        fields: Mapping[str, Any] | None = None,
        exc: BaseException | None = None,
        redactor: Redactor | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        if self.logger.isEnabledFor(level):
            redact = redactor or current_redactor()
            if secrets:
                redact = redact.with_secrets(secrets)
            self._emit(level, msg, args, fields, exc, redact)

    def _emit(
        self,
        level: int,
        msg: str,
        args: tuple[object, ...],
        fields: Mapping[str, Any] | None,
        exc: BaseException | None,
        redact: Redactor,
    ) -> None:
        try:
            text = msg % args if args else msg
        except (TypeError, ValueError):
            text = f"{msg} {args!r}"
        frame = sys._getframe(_CALLER_DEPTH)
        extra: dict[str, Any] = {_REDACTED: True}
        if fields:
            extra[_FIELDS] = redact.value(fields)
        record = self.logger.makeRecord(
            self.logger.name,
            level,
            frame.f_code.co_filename,
            frame.f_lineno,
            redact(text),
            (),
            None,
            frame.f_code.co_name,
            extra,
        )
        if exc is not None:
            text = redact("".join(traceback.format_exception(exc)).rstrip())
            record.exc_text = cut_body(text, _TRACEBACK_BYTES)
        self.logger.handle(record)


def engine_logger(name: str) -> EngineLogger:
    """The engine's logger called ``name`` (under ``ai_agent``)."""
    return EngineLogger(name)


class CorrelationFilter(logging.Filter):
    """Adds the current ids to every record it sees, as attributes (empty when unset).

    ``%(thread_id)s``, ``%(run_id)s``, ``%(stage)s``, ``%(request_id)s``, ``%(tool_call_id)s``...
    then work in any format string. Never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Tag ``record``; always True."""
        scope = SCOPE.get()
        ids = scope.ids() if scope is not None else {}
        for name in _ID_ATTRIBUTES:
            if not hasattr(record, name):
                setattr(record, name, ids.get(name, ""))
        setattr(record, _IDS, ids)
        return True


class _Formatter(logging.Formatter):
    def __init__(self, *, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor or _default_redactor()

    def message(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        # Engine records are redacted at the source; others (third-party loggers routed here)
        # get the configured patterns at least.
        return text if getattr(record, _REDACTED, False) else self.redact(text)

    def exception_text(self, record: logging.LogRecord) -> str:
        if record.exc_info and not record.exc_text:
            record.exc_text = self.redact(self.formatException(record.exc_info))
        return record.exc_text or ""

    def redact(self, text: str) -> str:
        """A record not redacted at its source, masked with the current run's keys too.

        Records of plain ``logging`` loggers (engine modules that do not log through
        `EngineLogger`, libraries routed here) may quote a key the run knows (an MCP server's
        stderr, an exception's text): the configured patterns alone do not know it.
        """
        scope = SCOPE.get()
        if scope is not None:
            text = scope.redactor.secrets.text(text)
        return self.redactor(text)

    @staticmethod
    def timestamp(record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TextFormatter(_Formatter):
    """``<time> <LEVEL> <logger> [<ids>] <message>``, the ids when a CorrelationFilter set them."""

    _SHOWN = (
        ("thread_id", "thread"),
        ("run_id", "run"),
        ("stage", "stage"),
        ("iteration", "it"),
        ("request_id", "req"),
        ("tool_call_id", "call"),
    )

    def format(self, record: logging.LogRecord) -> str:
        """One line (plus the traceback, if any), with nothing hidden in it."""
        ids: Mapping[str, Any] = getattr(record, _IDS, {})
        shown = " ".join(f"{label}={ids[key]}" for key, label in self._SHOWN if key in ids)
        line = visible(
            f"{self.timestamp(record)} {record.levelname:<7} {record.name} "
            f"{f'[{shown}] ' if shown else ''}{self.message(record)}"
        )
        exc = self.exception_text(record)
        return f"{line}\n{_indented(visible(exc, 'lines'))}" if exc else line


def _indented(traceback_text: str) -> str:
    """A traceback under its record, every line indented.

    An exception's message may hold newlines and text of a model's, a tool's or a server's:
    indented, none of its lines can start at the margin and pose as a record of its own.
    """
    return "\n".join(f"  {line}" for line in traceback_text.split("\n"))


class JsonFormatter(_Formatter):
    """One JSON object a line: ``ts``, ``level``, ``logger``, ``message``, ids, fields, ``exc``."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        data: dict[str, Any] = {
            "ts": self.timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": self.message(record),
        }
        data.update(getattr(record, _IDS, {}))
        fields = getattr(record, _FIELDS, None)
        if fields:
            for key, value in fields.items():
                data.setdefault(key, value)
        exc = self.exception_text(record)
        if exc:
            data["exc"] = exc
        return json_visible(json.dumps(data, ensure_ascii=False, default=str))


class _EngineHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler configure_logging installs.

    Without a stream it writes to the current ``sys.stderr`` (looked up on every record, so a
    replaced stderr is followed).
    """

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__(stream)
        self._follow_stderr = stream is None

    def emit(self, record: logging.LogRecord) -> None:
        if self._follow_stderr:
            self.stream = sys.stderr
        super().emit(record)


def configure_logging(
    config: LoggingConfig | None = None,
    *,
    stream: TextIO | None = None,
    level: str | int | None = None,
    structured: bool | None = None,
) -> logging.Handler:
    """Send the engine's logs to ``stream`` (default stderr) in the format ``config`` asks for.

    Configures the ``ai_agent`` logger only (never the root logger): one handler, text or JSON,
    with the correlation filter when ``include_correlation_id`` is on, and the logger's level.
    Calling it again replaces the handler it added before.

    Args:
        config: The logging settings (``AgentSettings().logging``); defaults when None.
        stream: Where to write (default: ``sys.stderr``).
        level: Overrides ``config.level``.
        structured: Overrides ``config.structured`` (JSON lines).

    Returns:
        The handler added.
    """
    if config is None:
        from ai_agent.config import LoggingConfig

        config = LoggingConfig()
    logger = logging.getLogger(ROOT_LOGGER)
    _remove_handlers(logger)
    handler = _EngineHandler(stream)
    redactor = Redactor.from_config(config)
    json_lines = config.structured if structured is None else structured
    handler.setFormatter(
        JsonFormatter(redactor=redactor) if json_lines else TextFormatter(redactor=redactor)
    )
    if config.include_correlation_id:
        handler.addFilter(CorrelationFilter())
    logger.addHandler(handler)
    chosen = config.level if level is None else level
    logger.setLevel(chosen.upper() if isinstance(chosen, str) else chosen)
    return handler


def unconfigure_logging() -> None:
    """Remove the handler `configure_logging` added and reset the ``ai_agent`` level."""
    logger = logging.getLogger(ROOT_LOGGER)
    _remove_handlers(logger)
    logger.setLevel(logging.NOTSET)


@contextmanager
def logging_configured(
    config: LoggingConfig | None = None, **options: Any
) -> Iterator[logging.Handler]:
    """`configure_logging` for the block; the ``ai_agent`` logger is restored after it."""
    logger = logging.getLogger(ROOT_LOGGER)
    level, handlers = logger.level, list(logger.handlers)
    try:
        yield configure_logging(config, **options)
    finally:
        _remove_handlers(logger)
        for handler in handlers:
            if handler not in logger.handlers:
                logger.addHandler(handler)
        logger.setLevel(level)


def _remove_handlers(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        if isinstance(handler, _EngineHandler):
            logger.removeHandler(handler)
            handler.close()
