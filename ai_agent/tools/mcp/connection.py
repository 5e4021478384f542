"""One MCP server, kept connected: start, discover, call, health-check, restart once, stop.

The session of a server lives in a task of its own (the MCP transports are anyio task groups,
which must be entered and left by the same task), started by `McpConnection.start` and
ended by `McpConnection.stop`. Calls use the session from any task.

Lifecycle:

- **start**: ``${VAR}`` expanded (a missing variable: `McpEnvError`),
  the transport opened, ``initialize`` and ``tools/list`` answered, all within
  ``startup_timeout``. A 401/403 is `McpAuthError`; anything else that
  stops it is `McpConnectError`, with the server's last stderr lines.
- **health**: before a call, a session known to be broken (the process exited, the connection
  closed) or suspect (its last call timed out and it does not answer a ping) is restarted. While
  a streamable HTTP call is in flight, a ping every ``health_interval`` seconds notices a server
  that died (that transport alone would wait for the timeout).
- **crash mid-call**: the call returns a typed error (``MCP_SERVER_CRASHED``: its outcome is
  unknown), the server is restarted, and the next call runs on the new session. Restarts are
  limited to ``max_restarts`` per run (`McpConnection.reset_restarts`); past that the
  server stays down and its calls fail at once with a clear message.
- **timeout**: a call that takes longer than ``timeout`` returns a ``TIMEOUT`` error at the
  limit, and the server is sent a cancellation for it.
- **stop**: the session is closed; a stdio server's stdin is closed, then its process group gets
  SIGTERM and SIGKILL (see `ai_agent.tools.mcp.stdio`): nothing outlives the connection.

No key ever reaches a message, a log line or a result: everything leaving is scrubbed of the
server's secrets (`ai_agent.tools.mcp.resolve`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from mcp import types as mcp_types

from ai_agent.errors import McpConnectError, McpServerError
from ai_agent.state import ToolResult
from ai_agent.tools.mcp.adapt import convert_result
from ai_agent.tools.mcp.diagnose import closed, describe, invalid_reply, start_error
from ai_agent.tools.mcp.redact import Redact, swap_filter
from ai_agent.tools.mcp.resolve import Resolved, resolve
from ai_agent.tools.mcp.session import (
    Live,
    exit_text,
    exited,
    list_tools,
    open_session,
    scrub_tools,
)
from ai_agent.tools.mcp.status import McpServerStatus, ServerState

if TYPE_CHECKING:
    from ai_agent.config import McpServerConfig

__all__ = ["McpConnection"]

log = logging.getLogger("ai_agent.tools.mcp")
T = TypeVar("T")

_STDERR_LINES = 40
_SHOWN_STDERR = 6
_PING_LIMIT = 5.0


class _SessionEndedError(Exception):
    """The session of a call ended while the call waited for its reply."""


class McpConnection:
    """The connection to one MCP server (see the module docstring).

    Args:
        config: The server's configuration.
        on_tools: Awaited with the server's tools after every (re)start and when the server
            says its tool list changed (the toolset checks their pins, then offers them).
        on_event: Called with a line about the lifecycle (started, restarted, stopped, failed).
        grace: Seconds a stdio server gets to exit after its stdin closes, and after SIGTERM.
        health_interval: Seconds between the pings that watch a streamable HTTP call.
    """

    def __init__(
        self,
        config: McpServerConfig,
        *,
        on_tools: Callable[[list[mcp_types.Tool]], Awaitable[None]] | None = None,
        on_event: Callable[[str], None] | None = None,
        grace: float = 2.0,
        health_interval: float = 2.0,
    ) -> None:
        self.config = config
        self.name = config.name
        self.on_tools = on_tools
        self._on_event = on_event
        self.grace = grace
        self.health_interval = health_interval
        self.state: ServerState = "stopped"
        self.error: McpServerError | None = None
        self.restarts = 0
        self._budget = config.max_restarts
        self._live: Live | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._generation = 0
        self._broken: str | None = None
        self._suspect = False
        self._stopping = False
        self._resolved: Resolved | None = None
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._background: set[asyncio.Task[Any]] = set()
        self._refreshing: asyncio.Task[None] | None = None
        self._refresh_again = False
        self._filter: Redact | None = None

    # Status ----------------------------------------------------------------------------------
    @property
    def tools(self) -> list[mcp_types.Tool]:
        """The tools the running server listed (empty when it is not running)."""
        return list(self._live.tools) if self._live is not None else []

    @property
    def pid(self) -> int | None:
        """The process id of a running stdio server."""
        live = self._live
        return live.process.pid if live is not None and live.process is not None else None

    @property
    def secrets(self) -> tuple[str, ...]:
        """This server's secret values, as last resolved.

        They are kept after the server stops: the model may still repeat one.
        """
        return self._resolved.secrets if self._resolved is not None else ()

    @property
    def secret_env(self) -> tuple[str, ...]:
        """Names of the environment variables holding this server's secrets (once resolved)."""
        return self._resolved.secret_env if self._resolved is not None else ()

    @property
    def target(self) -> str:
        """The command line or URL, secrets scrubbed."""
        return self._resolved.target if self._resolved is not None else self.config.target

    def status(self) -> McpServerStatus:
        """Where the server stands."""
        live = self._live
        return McpServerStatus(
            name=self.name,
            transport=str(self.config.transport),
            target=self.target,
            state=self.state,
            pid=self.pid,
            server=live.server if live is not None else None,
            tools=[t.name for t in live.tools] if live is not None else [],
            restarts=self.restarts,
            started_ms=live.started_ms if live is not None else None,
            error=str(self.error) if self.error is not None else None,
            error_code=self.error.issue_code if self.error is not None else None,
        )

    def reset_restarts(self) -> None:
        """A new run begins: the server may be restarted ``max_restarts`` times again."""
        self._budget = self.config.max_restarts

    def _event(self, text: str) -> None:
        log.info("%s", text)
        if self._on_event is not None:
            self._on_event(text)

    def _scrub(self, text: str) -> str:
        return self._resolved.scrubber.text(text) if self._resolved is not None else text

    # Start and stop --------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the server unless it is running; raise McpServerError when it cannot be used."""
        async with self._lock:
            if self._live is not None and self._broken is None:
                return
            await self._start_locked()

    async def stop(self) -> None:
        """Close the session and end the server process (idempotent).

        A server that failed to start keeps its error, for ``status()`` to show.
        """
        async with self._lock:
            was_running = self._live is not None
            await self._halt()
            if was_running or self.state != "failed":
                self.state, self.error = "stopped", None
            self._redact(None)
            if was_running:
                self._event(f"MCP server {self.name!r} stopped")

    async def _start_locked(self) -> None:
        await self._halt()
        self.state = "starting"
        self._stderr.clear()
        started = time.perf_counter()
        try:
            resolved = resolve(self.config)
        except McpServerError as exc:
            self._fail(exc)
            raise
        self._resolved = resolved
        self._redact(resolved)
        ready: asyncio.Future[Live] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(
            self._serve(resolved, ready, self._stop), name=f"mcp server {self.name}"
        )
        try:
            async with asyncio.timeout(self.config.startup_timeout):
                live = await asyncio.shield(ready)
        except TimeoutError:
            await self._halt(cancel=True)
            error: McpServerError = McpConnectError(
                self._scrub(
                    f"MCP server {self.name!r} did not finish starting within "
                    f"{self.config.startup_timeout:g}s (start, initialize, list its tools)"
                    f"{self._stderr_hint()}; check that it is an MCP server, or raise "
                    "startup_timeout if it is slow to start"
                ),
                server=self.name,
            )
            self._fail(error)
            raise error from None
        except Exception as exc:
            error = await start_error(
                exc, resolved, self.config, scrub=self._scrub, stderr_hint=self._stderr_hint()
            )
            await self._halt(cancel=True)
            self._fail(error)
            raise error from None
        self._generation += 1
        live.generation = self._generation
        live.started_ms = round((time.perf_counter() - started) * 1000, 1)
        self._live, self._broken, self._suspect = live, None, False
        self.state, self.error = "running", None
        pid = f", pid {live.process.pid}" if live.process is not None else ""
        self._event(
            f"MCP server {self.name!r} started ({self.config.transport}{pid}, "
            f"{len(live.tools)} tools, {live.started_ms:.0f} ms)"
        )
        if self.on_tools is not None:
            await self.on_tools(live.tools)

    def _redact(self, resolved: Resolved | None) -> None:
        """Put this connection's log filter in place (None: take it away)."""
        scrubber = resolved.scrubber if resolved and resolved.secrets else None
        self._filter = swap_filter(self._filter, scrubber)

    def _fail(self, error: McpServerError) -> None:
        self.state, self.error, self._live = "failed", error, None
        self._event(f"MCP server {self.name!r} failed: {error}")

    async def _halt(self, *, cancel: bool = False) -> None:
        """End the serving task (and with it the session and the process).

        A running session is asked to close (``cancel`` False) and gets time to; a start that
        failed or timed out is cancelled at once (it is not listening for the stop).
        """
        for pending in list(self._background):
            pending.cancel()
        self._background.clear()
        task, self._task = self._task, None
        live, self._live = self._live, None
        if live is not None:
            for watcher in live.watch:
                watcher.cancel()
        if task is None:
            return
        self._stopping = True
        try:
            if self._stop is not None:
                self._stop.set()
            if cancel:
                task.cancel()
            # asyncio.wait, not await: the task's own cancellation must not look like ours.
            done, _ = await asyncio.wait({task}, timeout=3 * self.grace + 2)
            if not done:  # pragma: no cover - the transports close within the grace
                task.cancel()
                await asyncio.wait({task})
        finally:
            self._stopping = False

    async def _serve(
        self, resolved: Resolved, ready: asyncio.Future[Live], stop: asyncio.Event
    ) -> None:
        """The task that holds the session open until ``stop`` is set or the session dies."""
        live: Live | None = None
        try:
            async with open_session(
                resolved,
                connect_timeout=self.config.startup_timeout,
                grace=self.grace,
                on_message=self._on_message,
                on_stderr=self._on_stderr,
            ) as (session, process):
                init = await session.initialize()
                tools = scrub_tools(await list_tools(session), resolved)
                info = init.serverInfo
                server = self._scrub(f"{info.name} {info.version}")
                live = Live(session, tools, process, server=server)
                ready.set_result(live)
                await stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                # The session died on its own; the next call finds out and restarts it.
                self._broken = self._scrub(f"lost its connection ({describe(exc)})")
                log.debug("MCP server %r: the session ended: %s", self.name, self._broken)
        finally:
            if live is not None:
                live.ended.set()

    def _on_stderr(self, line: str) -> None:
        line = self._scrub(line.rstrip())
        if line:
            self._stderr.append(line)
            log.debug("MCP server %r stderr: %s", self.name, line)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            # Something the transport could not read; the session goes on.
            log.debug("MCP server %r: %s", self.name, self._scrub(describe(message)))
            return
        if isinstance(getattr(message, "root", None), mcp_types.ToolListChangedNotification):
            # One refresh at a time, and one more after the notifications that came during
            # it: a task (and a tools/list) per notification let a server that sends them
            # without end fill the loop with requests.
            self._refresh_again = True
            if self._refreshing is None or self._refreshing.done():
                task = asyncio.create_task(self._refresh_while_asked())
                self._refreshing = task
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    async def _refresh_while_asked(self) -> None:
        while self._refresh_again:
            self._refresh_again = False
            await self._refresh_tools()

    async def _refresh_tools(self) -> None:
        live = self._live
        if live is None:
            return
        try:
            async with asyncio.timeout(self.config.timeout):
                tools = scrub_tools(await list_tools(live.session), self._resolved)
        except Exception as exc:
            why = self._scrub(describe(exc))
            log.debug("MCP server %r: listing tools failed: %s", self.name, why)
            return
        if tools == live.tools:  # told of a change that is none: nothing to say or redo
            return
        live.tools = tools
        self._event(f"MCP server {self.name!r} changed its tools ({len(tools)} now)")
        if self.on_tools is not None:
            await self.on_tools(tools)

    def _stderr_hint(self) -> str:
        lines = list(self._stderr)[-_SHOWN_STDERR:]
        return f"; its last output: {' | '.join(lines)}" if lines else ""

    # Calls -----------------------------------------------------------------------------------
    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Call one of the server's tools; every outcome is a ToolResult, never an exception.

        Errors carry ``meta.code``: ``MCP_TOOL_ERROR`` (the tool said so), ``TIMEOUT``,
        ``MCP_SERVER_CRASHED`` (the server died during the call; it is restarted),
        ``MCP_PROTOCOL_ERROR``, or the code of the reason the server is unavailable (``AUTH``,
        ``MISSING_ENV``, ``MCP_UNAVAILABLE``).
        """
        try:
            live = await self._ready_for_call()
        except McpServerError as exc:
            return self._unavailable(exc, tool)
        request: list[int] = []
        try:
            async with asyncio.timeout(self.config.timeout):
                result = await self._watched(live, self._call_tool(live, tool, args, request))
        except TimeoutError:
            return await self._timed_out(live, tool, request)
        except Exception as exc:
            if invalid_reply(exc):
                return self._error(
                    tool,
                    "MCP_PROTOCOL_ERROR",
                    f"MCP server {self.name!r} answered {tool} with a reply that is not valid "
                    f"MCP ({describe(exc)}); the tool may have run, so check its effect before "
                    "calling it again",
                )
            if not closed(exc):
                return self._error(
                    tool,
                    "MCP_PROTOCOL_ERROR",
                    f"MCP server {self.name!r} rejected the call of {tool}: {describe(exc)}",
                )
            return await self._crashed(live, tool, exc)
        outcome = convert_result(result, server=self.name, tool=tool)
        return self._scrubbed(outcome)

    async def _call_tool(
        self, live: Live, tool: str, args: dict[str, Any], request: list[int]
    ) -> mcp_types.CallToolResult:
        # The id the session gives this request (taken, with no await in between, just before
        # the session takes it), so a timed-out call can be cancelled on the server.
        next_id = getattr(live.session, "_request_id", None)
        if isinstance(next_id, int):
            request.append(next_id)
        return await live.session.call_tool(tool, args)

    async def _watched(self, live: Live, call: Awaitable[T]) -> T:
        """Await a call, failing it at once when its session ends.

        On streamable HTTP a ping goes out every ``health_interval`` seconds while the call
        waits: that transport would wait for a reply that never comes when the server dies
        mid-call, but a ping to a dead server fails to connect, which ends the session.
        """
        task = asyncio.ensure_future(call)
        ended = asyncio.ensure_future(live.ended.wait())
        pinging = self.config.transport == "streamable_http"
        try:
            while True:
                done, _ = await asyncio.wait(
                    {task, ended},
                    timeout=self.health_interval if pinging else None,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if task in done:
                    return task.result()
                if ended in done:
                    raise _SessionEndedError(self._broken or "the session ended")
                pinger = asyncio.create_task(self._ping(live))
                live.watch.add(pinger)
                pinger.add_done_callback(live.watch.discard)
        finally:
            for pending in (task, ended):
                if not pending.done():
                    pending.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await pending

    async def _ping(self, live: Live, limit: float = _PING_LIMIT) -> bool:
        """True when the server answered a ping in time."""
        try:
            async with asyncio.timeout(limit):
                await live.session.send_ping()
        except Exception:
            return False
        return True

    async def ping(self) -> float | None:
        """Milliseconds a running server took to answer a ping; None when it did not answer."""
        live = self._live
        if live is None:
            return None
        started = time.perf_counter()
        if not await self._ping(live, min(_PING_LIMIT, self.config.timeout)):
            return None
        return round((time.perf_counter() - started) * 1000, 2)

    async def _ready_for_call(self) -> Live:
        """The live session, starting or restarting the server first when needed."""
        async with self._lock:
            live = self._live
            if live is None:
                if self.state != "failed":
                    await self._start_locked()
                elif self._budget <= 0 and self.error is not None:
                    raise self.error  # it says why; retrying every call would only repeat it
                else:
                    await self._restart("could not be started before")
            elif self._broken is not None or exited(live):
                await self._restart(self._broken or exit_text(live))
            elif self._suspect:
                self._suspect = False
                if not await self._ping(live, min(_PING_LIMIT, self.config.timeout)):
                    await self._restart("stopped answering (a call timed out and a ping too)")
            if self._live is None:  # pragma: no cover - the starts above raise instead
                raise McpConnectError(f"MCP server {self.name!r} is not running", server=self.name)
            return self._live

    async def _restart(self, why: str) -> None:
        """Restart within the budget, or raise saying why not (lock held)."""
        if self._budget <= 0:
            error = McpConnectError(
                self._scrub(
                    f"MCP server {self.name!r} {why}; it is restarted at most "
                    f"{self.config.max_restarts} time(s) per run (max_restarts), so it stays "
                    f"down for the rest of this run{self._stderr_hint()}"
                ),
                server=self.name,
            )
            await self._halt()
            self._fail(error)
            raise error
        self._budget -= 1
        self.restarts += 1
        self._event(f"MCP server {self.name!r} {why}; restarting it")
        await self._start_locked()

    async def _timed_out(self, live: Live, tool: str, request: list[int]) -> ToolResult:
        self._suspect = True
        if request:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await live.session.send_notification(
                        mcp_types.ClientNotification(
                            mcp_types.CancelledNotification(
                                params=mcp_types.CancelledNotificationParams(
                                    requestId=request[0], reason="timed out"
                                )
                            )
                        )
                    )
        seconds = self.config.timeout
        result = self._error(
            tool,
            "TIMEOUT",
            f"ToolTimeoutError: MCP server {self.name!r} did not answer {tool} within "
            f"{seconds:g}s; the call was cancelled. Try a smaller request, or raise the "
            "server's timeout",
        )
        result["meta"].update(error_type="ToolTimeoutError", timeout_s=seconds)
        return result

    async def _crashed(self, live: Live, tool: str, exc: BaseException) -> ToolResult:
        """The connection died during a call: restart (once) and say the outcome is unknown."""
        if self._stopping or self.state == "stopped":
            return self._error(
                tool,
                "MCP_SERVER_STOPPED",
                f"MCP server {self.name!r} was stopped while {tool} was running; its outcome is "
                "unknown",
            )
        if live.process is not None and live.process.returncode is None:
            # Its stdout closed a moment before the exit is seen: wait for the exit code.
            with anyio.move_on_after(1.0):
                await live.process.wait()
        if exited(live):
            why = exit_text(live)
        elif isinstance(exc, _SessionEndedError):
            why = str(exc)
        else:
            why = f"closed the connection ({describe(exc)})"
        restarted, note = True, "It was restarted: call again if the action is still needed."
        async with self._lock:
            if self._live is live:  # not restarted yet by another call that saw the same crash
                self._broken = why
                try:
                    await self._restart(why)
                except McpServerError as error:
                    restarted, note = False, str(error)
        result = self._error(
            tool,
            "MCP_SERVER_CRASHED",
            f"MCPServerCrashed: MCP server {self.name!r} {why} during {tool}; the call's "
            f"outcome is unknown. {note}",
        )
        result["meta"]["restarted"] = restarted
        return result

    def _unavailable(self, exc: McpServerError, tool: str) -> ToolResult:
        code = exc.issue_code if exc.issue_code != "TOOL_ERROR" else "MCP_UNAVAILABLE"
        return self._error(tool, code, str(exc))

    def _error(self, tool: str, code: str, text: str) -> ToolResult:
        return ToolResult(
            status="error",
            error=self._scrub(text),
            meta={"code": code, "mcp_server": self.name, "mcp_tool": tool},
        )

    def _scrubbed(self, result: ToolResult) -> ToolResult:
        if self._resolved is None or not self._resolved.secrets:
            return result
        return self._resolved.scrubber.scrub(result)
