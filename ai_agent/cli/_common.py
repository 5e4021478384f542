"""What every command shares: parent options, settings, building the Agent, printing results.

Text from a model, a tool, an MCP server or a stored run is untrusted: it is rendered with
`ai_agent.visible.visible` where it is put into output, in the mode of the place (``line`` for a
table cell, a name or a status line; ``lines`` for a prompt or an error; ``text`` for an answer
or a tool's output), and `guarded_output` escapes whatever still reaches stdout or stderr hidden.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO, TypeVar, cast

from ai_agent.cli._numbers import count_arg
from ai_agent.cli._printing import streaming
from ai_agent.visible import escape_hidden, visible

if TYPE_CHECKING:
    from ai_agent.config import AgentSettings
    from ai_agent.graph import Agent, RunArchive, RunDatabase, RunResult

__all__ = [
    "EXIT",
    "Parents",
    "UsageError",
    "archive_of",
    "build_agent",
    "database_of",
    "exit_code",
    "guarded_output",
    "logging_for",
    "output_closed",
    "report_error",
    "require_database",
    "run_closing",
    "run_listing",
    "settings_of",
    "sigterm_as_ctrl_c",
    "stdout_closed",
    "thread_arg",
]

EXIT = {
    "completed": 0,
    "failed": 1,
    "usage": 2,
    "paused": 3,
    "cancelled": 4,
    "busy": 5,
    "diverged": 6,
    "max_iterations": 7,
    "forked": 0,
    # The reader of stdout went away (``ai-agent show ID | head``): 128 + SIGPIPE, the status a
    # shell shows for a tool the signal ended (``seq 1 100000 | head -1``), so a ``pipefail``
    # script tells it apart from a failure as it does for them. The command exits rather than
    # dying of the signal, so what it holds (a database, a thread's lease) is closed first.
    "closed": 141,
}


def exit_code(result: RunResult) -> int:
    """The exit code a run's result stands for (docs/workflow.md, "Exit codes").

    The stop reason comes first where it says more than the status: a replay that diverged, a
    run that ran out of cycles without finishing.
    """
    if result.divergence is not None:
        return EXIT["diverged"]
    if result.stop_reason == "max_iterations":
        return EXIT["max_iterations"]
    return EXIT[result.status]


T = TypeVar("T")


class UsageError(Exception):
    """A command-line mistake: printed as one line, exit code 2."""


class Parents(NamedTuple):
    """Shared option groups, used as argparse parents.

    A named tuple, not a dataclass: ``dataclasses`` imports ``inspect``, which the parser that
    every command (``--help`` too) builds would pay for.
    """

    common: argparse.ArgumentParser
    runner: argparse.ArgumentParser

    @classmethod
    def build(cls) -> Parents:
        common = argparse.ArgumentParser(add_help=False)
        common.add_argument(
            "--db",
            metavar="PATH_OR_URL",
            help="checkpoint database: a SQLite file (default .agents/checkpoints.sqlite) or a "
            "postgresql:// URL",
        )
        common.add_argument("--config", help="a config file (.toml, .yaml, .json) to load")
        common.add_argument("--json", action="store_true", help="print machine-readable JSON")
        common.add_argument(
            "--links",
            choices=["auto", "always", "never"],
            default="auto",
            help="the answer's cited sources as clickable terminal links (OSC 8): auto = when "
            "stdout is a terminal and TERM is not dumb; never = plain paths",
        )
        common.add_argument(
            "--debug", action="store_true", help="show tracebacks of internal errors"
        )
        common.add_argument(
            "--log-level",
            type=str.upper,
            choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
            help="log the engine's work to stderr at this level (DEBUG adds headers, and bodies "
            "when the settings opt in)",
        )
        common.add_argument(
            "--log-json",
            action="store_true",
            help="log JSON lines (with correlation ids) to stderr; INFO unless --log-level says",
        )
        runner = argparse.ArgumentParser(add_help=False)
        runner.add_argument("--model", help="model id on the server, or scripted:PATH for a script")
        runner.add_argument("--base-url", help="OpenAI-compatible server URL (ending in /v1)")
        runner.add_argument(
            "--backend",
            choices=["openai", "local"],
            help="'local' starts the built-in llama.cpp server with a small model",
        )
        runner.add_argument("--threshold", type=float, help="gate threshold, 0..1")
        runner.add_argument(
            "--profile",
            choices=["interactive", "default", "batch"],
            help="gate profile: interactive 0.60, default 0.70, batch 0.90",
        )
        runner.add_argument("--max-iterations", type=count_arg(0), help="cycles before stopping")
        runner.add_argument("--system-prompt", help="system prompt for every model call")
        runner.add_argument(
            "--tools",
            default="",
            help="comma-separated tools to activate: names, groups (files, search, shell, web, "
            "notes, math) or globs (fs.*)",
        )
        runner.add_argument(
            "--mcp-config",
            action="append",
            default=[],
            metavar="FILE",
            help="MCP servers to use (YAML/JSON/TOML, see docs/mcp.md), besides those of the "
            "settings; repeatable",
        )
        runner.add_argument(
            "--approval",
            action="append",
            default=[],
            metavar="CATEGORY=POLICY",
            help="approval policy of a tool category (read_only, note_taking, modification, "
            "external) = auto, confirm, approve or deny; repeatable",
        )
        runner.add_argument(
            "--output-schema",
            metavar="FILE",
            help="a JSON Schema (of an object) the final answer must fit; the answer is printed "
            "as JSON (docs/typed-outputs.md)",
        )
        runner.add_argument(
            "--pipeline",
            metavar="MODULE:NAME",
            help="your own workflow: a Pipeline or PipelineBuilder importable as "
            "package.module:name (docs/workflows.md); give it to resume the run too",
        )
        runner.add_argument("--trace", action="store_true", help="print the structured trace")
        runner.add_argument("--quiet", action="store_true", help="no live status lines on stderr")
        live = runner.add_mutually_exclusive_group()
        live.add_argument(
            "--stream",
            action="store_true",
            help="show the answer as it is written and tool output as it comes (the default "
            "when stdout is a terminal)",
        )
        live.add_argument(
            "--no-stream",
            action="store_true",
            help="do not stream: ask the model for whole replies, print the answer at the end",
        )
        runner.add_argument(
            "--yes",
            action="store_true",
            help="unattended: grant approvals (denied categories stay denied)",
        )
        return cls(common=common, runner=runner)


def stdout_closed() -> bool:
    """Whether nobody reads stdout any more (a pipe or socket whose other end is closed).

    Told by the descriptor itself, not by the error: a broken pipe to a tool's subprocess or an
    MCP server is the engine's problem to report, not a reason to stop quietly.
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a test or a library
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def output_closed() -> int:
    """Stop quietly once the reader of stdout went away, as Unix tools do; the exit code.

    stdout is pointed at the null device, so the interpreter's last flush of what is still
    buffered cannot fail again (Python would print "Exception ignored ... BrokenPipeError" and
    exit with 120).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return EXIT["closed"]


def report_error(exc: Exception, *, debug: bool) -> int:
    """Print one line for an error and return its exit code.

    An error's text may quote a model's or a tool's (a path, a command, a server's message).
    """
    from ai_agent.errors import AgentError, ConfigError, RunError, ThreadBusyError

    text = visible(str(exc), "lines")
    if isinstance(exc, ThreadBusyError):
        print(f"busy: {text}", file=sys.stderr)
        return EXIT["busy"]
    if isinstance(exc, ConfigError | RunError):
        print(f"error: {text}", file=sys.stderr)
        return EXIT["usage"]
    if isinstance(exc, AgentError):
        print(f"error: {text}", file=sys.stderr)
        return EXIT["failed"]
    if debug:
        import traceback

        traceback.print_exception(exc)  # through guarded_output's net, like every write
    else:
        print(
            f"internal error: {type(exc).__name__}: {text} (run with --debug for details, "
            "and please report it)",
            file=sys.stderr,
        )
    return EXIT["failed"]


class TerminalStream:
    """stdout or stderr of a command: the net under the rendering of each command.

    Whatever is written, a character that is still hidden (a path that did not render its text,
    a traceback, a library's message) reaches the terminal as an escape (`escape_hidden`).
    Everything else (``isatty``, ``flush``, ``encoding``...) is the wrapped stream's.
    """

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        """Write ``text`` with its hidden characters escaped; returns ``len(text)``."""
        self.inner.write(escape_hidden(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextlib.contextmanager
def guarded_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as `TerminalStream` for the block."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = cast(TextIO, TerminalStream(out)), cast(TextIO, TerminalStream(err))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def settings_of(args: argparse.Namespace) -> AgentSettings:
    """Settings from the environment and files, with command-line overrides."""
    from ai_agent.config import AgentSettings, load_settings

    overrides: dict[str, Any] = {}
    if getattr(args, "base_url", None):
        overrides["model_backend"] = {"base_url": args.base_url}
    if getattr(args, "no_stream", False):
        overrides["streaming"] = {"stream_model_responses": False, "stream_tool_results": False}
    if getattr(args, "config", None):
        return AgentSettings.load(args.config, **overrides)
    return load_settings(**overrides)


def logging_for(args: argparse.Namespace) -> contextlib.AbstractContextManager[object]:
    """Engine logging to stderr for the command, when ``--log-level`` or ``--log-json`` asks.

    The settings' ``logging`` section shapes the records (redaction patterns, bodies, size limit,
    correlation ids); the options choose the level and the format. The ``ai_agent`` logger is
    restored when the command ends.
    """
    level, as_json = getattr(args, "log_level", None), getattr(args, "log_json", False)
    if not level and not as_json:
        return contextlib.nullcontext()
    from ai_agent.observability import logging_configured

    return logging_configured(
        settings_of(args).logging, level=level, structured=True if as_json else None
    )


def database_of(args: argparse.Namespace, *, must_exist: bool = True) -> RunDatabase:
    """The checkpoint database the command works on: a SQLite path or a ``postgresql://`` URL.

    ``--db``, else the settings' ``checkpoint_url``, else their ``checkpoint_path``. Only
    ``run`` may create a database (``must_exist=False``): every other command reads or
    continues what a run stored, so a missing file is a mistake in ``--db`` (or the settings),
    and opening it would leave an empty database behind.
    """
    from ai_agent.graph import RunDatabase

    database = RunDatabase.at(args.db, settings_of(args))
    if must_exist:
        require_database(database)
    return database


def archive_of(args: argparse.Namespace, *, listing: bool = False) -> RunArchive:
    """The run archive of the command's database, for reading runs without an Agent.

    With ``--pipeline``, the pipeline the runs were made with reads their checkpoints.

    Reading needs neither the model nor the tools: this imports the run store and the
    checkpointer only, not the model stack. When ``--db`` says where the database is and no
    ``--config`` is given, the settings are not read here: the archive reads the same ones
    (environment and files) if a view needs them, and a command that only lists (``listing``:
    runs, plans) or shows a run's steps never does.
    """
    from ai_agent.graph import RunArchive, RunDatabase

    settings = None if args.db and not (args.config and not listing) else settings_of(args)
    # A run of a pipeline of its own is read with that pipeline's channels (--pipeline).
    pipeline = _pipeline(getattr(args, "pipeline", None))
    archive = RunArchive(RunDatabase.at(args.db, settings, pipeline), settings)
    require_database(archive.database)
    return archive


def add_pipeline_option(command: argparse.ArgumentParser) -> None:
    """``--pipeline`` on a command that reads a run (``show``, ``history``, ``export``)."""
    command.add_argument(
        "--pipeline",
        metavar="MODULE:NAME",
        help="the pipeline the run was made with (docs/workflows.md): read it with that "
        "pipeline's nodes and state fields",
    )


def require_database(database: RunDatabase) -> None:
    """UsageError when the database is a SQLite file that does not exist (a URL always may)."""
    if not database.exists():
        raise UsageError(
            f"no checkpoint database at {database.describe()}; check --db (only `ai-agent run` "
            "creates a database)"
        )


def thread_arg(value: str) -> str:
    """An argparse ``type`` for thread ids: the engine's grammar, as a usage error."""
    from ai_agent.errors import InvalidThreadIdError
    from ai_agent.graph import check_thread_id

    try:
        return check_thread_id(value)
    except InvalidThreadIdError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_agent(args: argparse.Namespace, *, creates: bool = False, **overrides: Any) -> Agent:
    """The Agent the run-like commands use, configured from options and settings.

    Args:
        args: The parsed options.
        creates: Whether the command may create the database (``run`` only).
        overrides: Agent arguments that win over the options.
    """
    from ai_agent.config import MAX_ITERATIONS, split_tool_names
    from ai_agent.errors import ConfigError
    from ai_agent.graph import Agent

    settings = settings_of(args)
    try:
        tools = split_tool_names(getattr(args, "tools", "")) or None
    except ConfigError as exc:
        raise UsageError(f"--tools: {exc}") from None
    iterations = getattr(args, "max_iterations", None)
    if iterations is not None and not 1 <= iterations <= MAX_ITERATIONS:
        raise UsageError(
            f"--max-iterations must be at least 1 and at most {MAX_ITERATIONS:,} (got "
            f"{iterations:,})"
        )
    quiet = getattr(args, "quiet", False) or getattr(args, "json", False) or streaming(args)
    approvals = _approvals(getattr(args, "approval", []))
    options: dict[str, Any] = {
        "model": getattr(args, "model", None),
        "tools": tools,
        "system_prompt": getattr(args, "system_prompt", None),
        "max_iterations": iterations,
        "gate_threshold": getattr(args, "threshold", None),
        "gate_profile": getattr(args, "profile", None),
        "checkpoint_path": database_of(args, must_exist=not creates).location,
        "settings": settings,
        "backend": getattr(args, "backend", None),
        "unattended": getattr(args, "yes", False),
        "approvals": approvals or None,
        "on_event": None if quiet else status_printer(sys.stderr),
        "mcp_config": getattr(args, "mcp_config", None) or None,
        "pipeline": _pipeline(getattr(args, "pipeline", None)),
    }
    schema_file = getattr(args, "output_schema", None)
    if schema_file:
        options["output_type"] = _output_schema(schema_file)
    options.update(overrides)
    return Agent(**options)


# A JSON Schema a person writes is small; a larger file is a mistake, not a schema.
_MAX_SCHEMA_BYTES = 1_000_000


def _output_schema(path: str) -> Any:
    """The JSON Schema of ``--output-schema FILE`` (the Agent checks it describes an object)."""
    from ai_agent.datafiles import loads_json, read_text
    from ai_agent.errors import OutputSchemaError

    what = f"the output schema file {path}"
    text = read_text(path, what=what, max_bytes=_MAX_SCHEMA_BYTES, error=OutputSchemaError)
    schema = loads_json(text, what=what, error=OutputSchemaError)
    if not isinstance(schema, dict):
        raise OutputSchemaError(
            f"{what} holds a JSON {type(schema).__name__}, not a JSON Schema (an object such as "
            '{"type": "object", "properties": {...}})'
        )
    return schema


def _pipeline(spec: str | None) -> Any:
    """``--pipeline MODULE:NAME`` loaded (a usage error when it cannot be)."""
    if spec is None:
        return None
    from ai_agent.errors import ConfigError
    from ai_agent.graph import Pipeline

    try:
        return Pipeline.load(spec)
    except ConfigError as exc:
        raise UsageError(f"--pipeline: {exc}") from None


_CATEGORIES = ("read_only", "note_taking", "modification", "external")
_POLICIES = ("auto", "confirm", "approve", "deny")


def _approvals(items: Sequence[str]) -> dict[str, str]:
    """``--approval external=auto`` options as a policy mapping."""
    out: dict[str, str] = {}
    for item in items:
        category, _, policy = item.partition("=")
        if category.strip() not in _CATEGORIES or policy.strip() not in _POLICIES:
            raise UsageError(
                f"--approval {item!r}: use CATEGORY=POLICY with a category of "
                f"{', '.join(_CATEGORIES)} and a policy of {', '.join(_POLICIES)}"
            )
        out[category.strip()] = policy.strip()
    return out


async def _closing(owner: AbstractAsyncContextManager[Any], coro: Awaitable[T]) -> T:
    try:
        async with owner:
            return await coro
    finally:
        if isinstance(coro, Coroutine):  # never started when opening the database failed
            coro.close()


def run_closing(owner: AbstractAsyncContextManager[Any], coro: Awaitable[T]) -> T:
    """Run a coroutine of an Agent (or an archive) in a fresh event loop, closing it after."""
    import asyncio  # not at start-up: ``--help`` and the parser need no event loop

    return asyncio.run(_closing(owner, coro))


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM stops the command as Ctrl-C does, for a run that must be left resumable.

    Supervisors stop programs with SIGTERM (``timeout``, systemd, ``docker stop``), whose
    default ends the process on the spot: the run stayed ``running`` with its lease held, so
    ``resume`` from another machine was busy until the lease ran out. Passed to the SIGINT
    handler of the moment, it cancels the run (asyncio's runner), which records how it stopped
    and gives the lease back, and the command exits 130.
    """
    import signal
    import threading

    def on_sigterm(signum: int, frame: Any) -> None:
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):  # SIGINT ignored or default: stop as Ctrl-C would
            raise KeyboardInterrupt
        handler(signal.SIGINT, frame)

    if threading.current_thread() is not threading.main_thread():  # signals reach only it
        yield
        return
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_listing(archive: RunArchive, read: Callable[[], Awaitable[T]]) -> T:
    """Run a read of stored runs (``runs``, ``show``, ``history``...), closing the archive after.

    Unlike `run_closing`, the archive is not entered: entering opens its checkpointer, which
    loads LangGraph's checkpoint package (and the LangChain it imports), where the run store
    alone answers or the checkpoints are read without it (`ai_agent.graph.plain_reads`); a
    read that does need the checkpointer opens its own.

    ``read`` makes the read's coroutine. It runs without an event loop where it needs none
    (`ai_agent._loopless`: a local SQLite database read plainly), else, made again, in one.
    """
    from ai_agent._loopless import run_loopless

    async def closing() -> T:
        return await _closing(contextlib.aclosing(archive), read())

    return run_loopless(closing)


def status_printer(stream: TextIO) -> Any:
    """Live status lines: which stage runs, which tool, when we wait for the model."""

    def emit(event: Mapping[str, Any]) -> None:
        kind, it = event.get("type"), event.get("iteration", 0)
        if kind == "stage_started":
            text = f"[{it}] {event.get('stage')}"
        elif kind == "model_waiting":
            text = f"[{it}] draft: waiting for the model"
        elif kind == "tool_started":
            text = f"[{it}] act: running {visible(str(event.get('tool')))}"
        elif kind == "gate_paused":
            text = f"[{it}] gate: paused for a plan"
        elif kind == "node_paused":
            text = f"[{it}] {event.get('stage')}: paused for an answer"
        elif kind == "custom":
            text = f"[custom] {visible(json.dumps(event.get('data'), default=str))}"
        elif kind == "backend":
            text = f"[backend] {visible(str(event.get('detail')))}"
        elif kind == "mcp":
            text = f"[mcp] {visible(str(event.get('detail')))}"
        else:
            return
        print(text, file=stream, flush=True)

    return emit
