"""Secrets out of everything a run stores or prints.

An Agent keeps every secret value it knows in one `SecretValues`
(`ai_agent.observability.redaction`): the ``SecretStr`` settings, MCP header values and
secret-looking ``env`` entries (`ai_agent.config.AgentSettings.secret_values`), the backend key,
the local server's key, a database URL's password, the values its MCP servers resolved when they
connected, and the environment variables its tools need or that look secret. Those values that
can change while the Agent lives (the environment, MCP servers) are read again at the start of
every run and resume, after every model reply and after every tool call.

The values are masked (``***``) where data enters a run, so the checkpoints, the run store
(recorded calls, journal, outputs, runs), memory, exports and everything printed from them never
hold one:

- `ScrubbedModel`: the model's reply, text and tool-call arguments, before it is recorded or
  enters state. A tool the model passed a key to gets ``***`` in its place: state is what the
  act stage runs from, and the key reaches tools only through their environment;
- `ScrubbedToolBox`: a tool's result, its preview and its review, before they are recorded,
  journaled or shown to a person;
- the stage wrapper (``RunContext.scrub``, in `ai_agent.nodes._common`): every state update,
  whatever produced it (hooks, error messages, summaries), and the gate's report;
- `ScrubbedEvents`: the typed events (status lines, ``on_event``, listeners, ``Agent.astream``),
  every field of them, with streamed text (token deltas, live tool output) masked across its
  chunks;
- the Agent's runner (`ai_agent.graph.runner`): the task, a person's plan, the run store's rows;
- logs and spans: the telemetry's `Redactor` masks the same values.

The real values still go where they belong: the HTTP client's headers and the tools'
environment are never touched.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

from ai_agent.context import (
    CallerBase,
    ModelCall,
    ModelCaller,
    ModelReply,
    ToolBox,
    usage_is_counted,
)
from ai_agent.events import (
    ModelDelta,
    ProgressEvent,
    RunFinished,
    StageFinished,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)
from ai_agent.graph.toolboxes import DelegatingToolBox
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.redaction import MIN_SECRET_CHARS, SecretValues, StreamMask
from ai_agent.state import Message, ToolCall, ToolResult
from ai_agent.tools.snapshot import PREVIEW_CUT

if TYPE_CHECKING:
    from ai_agent.config import AgentSettings
    from ai_agent.context import CallReview

__all__ = ["ScrubbedEvents", "ScrubbedModel", "ScrubbedToolBox", "add_secret", "settings_secrets"]

log = engine_logger("ai_agent.agent")

E = TypeVar("E", bound=ProgressEvent)


def add_secret(values: SecretValues, value: str | None, where: str) -> None:
    """Mask ``value`` from now on; warn (naming ``where``, never the value) when it is too short."""
    if value and not values.add(value):
        log.warning(
            "the secret in %s is shorter than %d characters: too short to be masked in what "
            "runs store and print (it is still used where it belongs); use a longer one",
            where,
            MIN_SECRET_CHARS,
        )


def add_database_password(values: SecretValues, location: object) -> None:
    """Mask a database URL's password, a secret like the API key (a path has none).

    libpq reads it from the user info or from a ``password=`` query parameter, and a password
    holding ``/``, ``@`` or ``:`` is percent-encoded in the URL: the driver uses it decoded,
    and that is how a model or an error message would write it. Both forms are masked.
    """
    if not isinstance(location, str):
        return
    from ai_agent.config.secrets import url_passwords  # the settings' reader, loaded on use

    for password in url_passwords(location):
        add_secret(values, password, "the database URL's password")


def settings_secrets(settings: AgentSettings) -> SecretValues:
    """The secret values ``settings`` hold (see `AgentSettings.secret_values`)."""
    values = SecretValues()
    for where, value in settings.secret_values().items():
        add_secret(values, value, where)
    return values


class ScrubbedModel(CallerBase):
    """A ModelCaller whose replies have every secret masked (text and tool-call arguments).

    It is the innermost layer around every caller an Agent uses, so its reply is also where a
    ``ModelCaller`` of the user's own is held to the client's check of usage
    (`ai_agent.context.usage_is_counted`): counts no server could have made are dropped here,
    before the recording, the spans, the meter and the checkpoint see them.

    Other attributes (``model_name``, a replay player's ``last_source``) are the inner caller's.
    """

    def __init__(self, inner: ModelCaller, secrets: SecretValues) -> None:
        self.inner = inner
        self.secrets = secrets

    async def answer(self, call: ModelCall) -> ModelReply:
        """Call the inner model; mask its reply, and drop usage no server could have counted."""
        reply = await call.to(self.inner)
        self.secrets.refresh()  # new data comes in: mask with what is known now
        message: Message = self.secrets.scrub(reply["message"])
        usage = reply.get("usage")
        if usage and not usage_is_counted(usage):
            log.warning(
                "the model caller reported token usage no server could have counted (%.200s); "
                "the run's own estimate is used instead",
                self.secrets.text(repr(usage)),
            )
            reply = {**reply, "usage": {}}
        if message is reply["message"]:
            return reply
        return {**reply, "message": message}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class ScrubbedToolBox(DelegatingToolBox):
    """A ToolBox whose results, previews and reviews have every secret masked."""

    def __init__(self, inner: ToolBox, secrets: SecretValues) -> None:
        super().__init__(inner)
        self.secrets = secrets

    def preview(self, call: ToolCall) -> str:
        """The inner preview, masked (where it was cut, a key the cut ran through too)."""
        head, cut, rest = self.inner.preview(call).partition(PREVIEW_CUT)
        if not cut:
            return self.secrets.text(head)
        return self.secrets.cut_text(head) + cut + self.secrets.text(rest)

    def review(self, call: ToolCall) -> CallReview:
        """The inner review (an escalation's reason may quote the arguments), masked."""
        return self.secrets.scrub(self.inner.review(call))

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """Run the call in the inner tool box; mask its result."""
        result = await self.inner.execute(call, tool_ctx)
        self.secrets.refresh()  # the tool read its environment now: so do we
        return self.secrets.scrub(result)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


Chunk = ModelDelta | ToolOutput
"""An event whose ``text`` is a piece of a longer text (the model's reply, a tool's output)."""


def _stream_key(event: Chunk) -> tuple[str, ...]:
    """The stream a chunk belongs to: the model's text, or one output stream of one call."""
    if isinstance(event, ToolOutput):
        return ("tool", event.call_id, event.stream)
    return ("model",)


def _masked(event: E, secrets: SecretValues) -> E:
    """``event`` with every secret masked in its fields (itself when there is none)."""
    changed = {}
    for item in dataclasses.fields(event):
        value = getattr(event, item.name)
        masked = secrets.scrub(value)
        if masked is not value:
            changed[item.name] = masked
    return dataclasses.replace(event, **changed) if changed else event


class ScrubbedEvents:
    """An event sink that masks every secret before the events go on to ``sink``.

    A chunk of streamed text may end in the first part of a secret: that part is held back
    until the next chunk of its stream. Any other event first flushes what the streams hold
    (masked), so the output keeps its order and loses nothing, except the output of a tool call
    still running (calls of concurrent tools run together): its stream goes on after another
    call's events, and flushing it there let the first part of a key out, and the rest after,
    with a fresh mask that no longer knew what came before. It is flushed when its call
    finishes, or its stage or run ends.

    Args:
        sink: Where the masked events go.
        secrets: What to mask.
    """

    def __init__(self, sink: Callable[[ProgressEvent], None], secrets: SecretValues) -> None:
        self.sink = sink
        self.secrets = secrets
        self._streams: dict[tuple[str, ...], tuple[StreamMask, Chunk]] = {}
        # The tool calls started and not yet finished: their output streams may go on.
        self._running: set[str] = set()
        # Sync tools report output from worker threads while the run goes on in the loop.
        self._lock = threading.RLock()

    def __call__(self, event: ProgressEvent) -> None:
        """Mask one event and pass it on (a chunk: what of it may go out now)."""
        with self._lock:
            if not isinstance(event, Chunk):
                if isinstance(event, ToolStarted):
                    self._running.add(event.call_id)
                elif isinstance(event, ToolFinished):
                    self._running.discard(event.call_id)
                elif isinstance(event, StageFinished | RunFinished):
                    self._running.clear()
                self.flush(keep=self._running)
                self.sink(_masked(event, self.secrets))
                return
            key = _stream_key(event)
            mask = self._streams[key][0] if key in self._streams else self.secrets.stream()
            self._streams[key] = (mask, event)
            text = mask.feed(event.text)
            if text:
                self.sink(dataclasses.replace(event, text=text))

    def flush(self, keep: Collection[str] = ()) -> None:
        """Send what the streams hold back (masked): their text has ended.

        Args:
            keep: Tool calls whose output streams go on: theirs stay held.
        """
        with self._lock:
            ended = {k: v for k, v in self._streams.items() if not _goes_on(k, keep)}
            for key in ended:
                del self._streams[key]
            for mask, last in ended.values():
                rest = mask.flush()
                if rest:
                    self.sink(dataclasses.replace(last, text=rest))


def _goes_on(key: tuple[str, ...], running: Collection[str]) -> bool:
    """Whether the stream ``key`` is a running tool call's output, which goes on."""
    return key[0] == "tool" and key[1] in running
