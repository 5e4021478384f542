"""RunContexts: the factory of run contexts, and the model resources they share.

Every run, resume, replay and plan served gets its `RunContext` here (`RunContexts.context`):
the model caller (built when first needed, with the local server it may start), wrapped in the
recorders of `ai_agent.graph.recording` and the masks of `ai_agent.graph.secrets`; the tools the
same way; the event sink (the ``on_event`` callback, the log, the listeners, a stream); the
token meter with the Agent's one counter and compactor; the SQLite memory. A replay passes its
own model and tools. Nothing here runs the graph: that is the runner's
(`ai_agent.graph.runner.PipelineRunner`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ai_agent.accounting import RunMeter, UsageTracker
from ai_agent.checkpoints import SqliteMemory
from ai_agent.checkpoints.store_memory import StoreMemory, open_store_memory
from ai_agent.compaction import CompactionStrategy, Compactor
from ai_agent.config import AgentSettings, BudgetConfig, ModelBackendSettings
from ai_agent.context import (
    Event,
    Hooks,
    ModelCaller,
    ModelEvents,
    RunContext,
    RunPolicy,
    ToolBox,
    reporting,
)
from ai_agent.events import LifecycleEvent, ProgressEvent
from ai_agent.graph.database import RunDatabase
from ai_agent.graph.events import rendering
from ai_agent.graph.observed import ObservedModel, ObservedToolBox
from ai_agent.graph.recording import (
    BoundedToolBox,
    RecordingModel,
    RecordingToolBox,
    generation_params,
)
from ai_agent.graph.secrets import ScrubbedEvents, ScrubbedModel, ScrubbedToolBox
from ai_agent.graph.streaming import StreamSinks
from ai_agent.models.resolve import BackendName, resolve_model, summary_caller
from ai_agent.observability import Telemetry
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.redaction import SecretValues
from ai_agent.state import Issue, ToolResult
from ai_agent.tokens import TokenCounter
from ai_agent.tools.model_summary import OutputSummarizer
from ai_agent.tools.registry import ToolRegistry
from ai_agent.tools.toolsets.child import ChildToolset

if TYPE_CHECKING:
    from pathlib import Path

    from ai_agent.checkpoints.store import RunStoreProtocol

__all__ = ["RunContexts"]

log = engine_logger("ai_agent.agent")


class RunContexts:
    """The run contexts of one Agent, and the model, counter, compactor and memory they share.

    Args:
        database: The run store the recorders write to.
        settings: The Agent's settings.
        policy: The Agent's run policy.
        hooks: The Agent's hooks.
        registry: The catalog runs see (through a view that pins one snapshot per cycle).
        secrets: What every recorder and sink masks.
        telemetry: The Agent's spans, metrics and listeners.
        model: The Agent's ``model`` argument, read (`ai_agent.models.resolve.read_model_argument`).
        backend: The checked backend name.
        on_event: The Agent's ``on_event`` callback.
        compaction_strategy: A custom compaction strategy.
        memory_sqlite: The SQLite memory's file, when the Agent keeps one.
        streams: The sinks of the runs being streamed, by thread id (written by `Streams`).
    """

    def __init__(
        self,
        database: RunDatabase,
        settings: AgentSettings,
        *,
        policy: RunPolicy,
        hooks: Hooks,
        registry: ToolRegistry,
        secrets: SecretValues,
        telemetry: Telemetry,
        model: Any,
        backend: BackendName,
        on_event: Callable[[Event], None] | None,
        compaction_strategy: CompactionStrategy | None,
        memory_sqlite: Path | None,
        streams: StreamSinks,
    ) -> None:
        self._db = database
        self.settings = settings
        self.policy = policy
        self.hooks = hooks
        self.registry = registry
        self.secrets = secrets
        self.telemetry = telemetry
        self._model_arg = model
        self.backend = backend
        self._on_event = on_event
        self._compaction_strategy = compaction_strategy
        self._memory_sqlite = memory_sqlite
        self._streams = streams
        self.usage_tracker = UsageTracker()
        # A subagent's run limited to what its parent has left (graph/subagents.py), by thread.
        self.budget_caps: dict[str, BudgetConfig] = {}
        self._memory: SqliteMemory | StoreMemory | None = None
        self._caller: ModelCaller | None = None
        self._backend: ModelBackendSettings | None = None
        self._summary_caller: ModelCaller | None = None
        self._counter: TokenCounter | None = None
        self._compactor: Compactor | None = None
        self._local: Any = None

    @property
    def store(self) -> RunStoreProtocol:
        """The run store the recorders write to."""
        return self._db.store

    async def aclose(self) -> None:
        """Close the model's clients, stop a local server, close the SQLite memory."""
        for caller in (self._caller, self._summary_caller):
            closer = getattr(caller, "aclose", None)
            if closer is not None:
                await closer()
        self._caller = self._summary_caller = None
        if self._local is not None:
            server, self._local = self._local, None
            await server.stop()
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    async def model(self) -> ModelCaller:
        """The live model caller (built when first needed)."""
        if self._caller is None:
            self._caller = await self._make_caller()
        return self._caller

    async def _make_caller(self) -> ModelCaller:
        resolved = await resolve_model(
            self._model_arg,
            backend=self.backend,
            settings=self.settings,
            secrets=self.secrets,
            http_log=self.telemetry.http_log(),
            on_event=rendering(self._on_event),
        )
        self._local, self._backend = resolved.local, resolved.backend
        return resolved.caller

    def _memory_store(self) -> SqliteMemory | StoreMemory | None:
        if self._memory is None and self.settings.memory_store is not None:
            # LangGraph's BaseStore, when the settings name one (in place of the SQLite memory).
            self._memory = open_store_memory(self.settings.memory_store.get_secret_value())
        elif self._memory_sqlite is not None and self._memory is None:
            self._memory = SqliteMemory(self._memory_sqlite)
        return self._memory

    def generation_params(self) -> dict[str, Any]:
        """The generation parameters recorded with every model request (never credentials)."""
        return generation_params(self._model_arg, self.backend, self.settings.model_backend)

    def _stream_sink(self, thread_id: str) -> Callable[[ProgressEvent], None] | None:
        """Who consumes the run of ``thread_id`` as a stream (``Agent.astream``); None: nobody."""
        # The run context of this thread sends its (masked) events there too, and the model
        # streams its token deltas.
        return self._streams.get(thread_id)

    def _emitter(
        self, stream: Callable[[ProgressEvent], None] | None = None
    ) -> Callable[[ProgressEvent], None]:
        """The run's event sink: the ``on_event`` callback, the listeners, the stream.

        Each event is one object that all of them receive (``on_event`` its dict). The run
        context masks secrets in front of it (`ScrubbedEvents`), for all of them.
        """
        on_event, listeners = rendering(self._on_event), self.telemetry.listeners

        def emit(event: ProgressEvent) -> None:
            if on_event is not None:
                try:
                    on_event(event)
                except Exception as exc:
                    # A user's callback must not kill the run it watches.
                    log.warning("the on_event callback failed; the run goes on", exc=exc)
            if isinstance(event, LifecycleEvent):
                listeners.publish(event)
            if stream is not None:
                stream(event)

        return emit

    async def context(
        self,
        thread_id: str,
        *,
        model: ModelCaller | None = None,
        tools: ToolBox | None = None,
        issues: Sequence[Issue] = (),
    ) -> RunContext:
        """The run context; every model and tool call through it is recorded in the run store.

        A replay passes its own ``model`` and ``tools`` (which serve recorded replies). A run
        sees the registry through a view that pins one snapshot per cycle; ``issues`` (found
        by the span's toolsets) are raised by the first draft instead of asking the model.
        """
        caller = model if model is not None else await self.model()
        secrets, stream = self.secrets, self._stream_sink(thread_id)
        secrets.refresh()  # MCP servers may have connected, keys been exported
        emit = ScrubbedEvents(self._emitter(stream), secrets)
        # The model reports retries to every run, token deltas only while someone consumes them
        # (so plain runs work with servers whose streaming is broken).
        model_events = ModelEvents(emit, tokens=stream is not None)
        # Secrets are masked inside the recorders: what is recorded is what enters state.
        recorded = RecordingModel(
            ScrubbedModel(reporting(caller, model_events), secrets),
            self.store,
            thread_id,
            self.generation_params(),
            scrub=secrets.scrub,
        )
        # Bounded below the recorder (and above the mask, so the kept full text is masked
        # too): the recording and the journal hold what the run keeps, and a large output's
        # full text is stored once, in the outputs.
        if self._counter is None:  # the tokenizer's ranks load in a thread, off the event loop
            await asyncio.to_thread(self.token_counter, self._counted_model(caller))
        meter = self._meter(thread_id, caller, replaying=model is not None)
        bounded = BoundedToolBox(
            ScrubbedToolBox(tools if tools is not None else self.registry.view(), secrets),
            self.store,
            thread_id,
            self.policy.max_output_chars,
            self.policy.output_summary,
            summarizer=self._output_summarizer(meter, recorded),
            media_inputs=self.policy.media_inputs,
            max_media_bytes=self.policy.max_media_bytes,
        )
        return RunContext(
            thread_id=thread_id,
            model=ObservedModel(recorded, self._model_label(caller)),
            tools=ObservedToolBox(RecordingToolBox(bounded, self.store, thread_id)),
            journal=self.store,
            hooks=self.hooks,
            policy=self.policy,
            emit=emit,
            memory=self._memory_store(),
            meter=meter,
            model_events=model_events,
            scrub=secrets.scrub,
            # A replay brings its own model and hears no start-up issues.
            take_issues=_taking(issues if model is None else ()),
            outputs=self.store,  # clipped tool outputs, for tool_output
            # Always-allow rules for a run; a replay follows its recording, never a rule.
            rules=self.store if model is None else None,
            release_child=self._child_releaser(thread_id) if model is None else None,
        )

    def _child_releaser(self, thread_id: str) -> Callable[[str, str], Awaitable[ToolResult | None]]:
        """Cancels the child of one of this run's calls (see `RunContext.release_child`)."""

        async def release(tool: str, call_id: str) -> ToolResult | None:
            for toolset in self.registry.toolsets():
                if isinstance(toolset, ChildToolset) and any(
                    spec.name == tool for spec in toolset.tools()
                ):
                    return await toolset.release(call_id, thread_id)
            return None

        return release

    def _output_summarizer(self, meter: RunMeter, recorded: ModelCaller) -> OutputSummarizer | None:
        """Who writes a long tool output's summary (``output_summary = "model"``), else None.

        The summarization model when the settings name one (a replay has none: its own model
        serves the recording), else the run's model; recorded either way, and each reply's
        usage is recorded by the run's meter, so it counts in usage and budget.
        """
        policy = self.policy
        if policy.output_summary != "model":
            return None
        return OutputSummarizer(
            model=meter.summarizer or recorded,
            timeout=policy.output_summary_timeout,
            input_chars=policy.output_summary_input_chars,
            on_reply=lambda reply, iteration, request: meter.record_call(
                reply, iteration, request, "output_summary"
            ),
        )

    def _model_label(self, caller: ModelCaller) -> str:
        """The model's name in spans, metrics and logs."""
        return str(
            getattr(caller, "model_name", "")
            or self.generation_params().get("model")
            or self.settings.model_backend.model
        )

    def token_counter(self, model: str | None = None) -> TokenCounter:
        """The Agent's token counter (one per Agent: its per-message cache is shared by runs)."""
        if self._counter is None:
            s = self.settings
            self._counter = TokenCounter(s.token_tracking, model=model or s.model_backend.model)
        return self._counter

    def _counted_model(self, caller: ModelCaller) -> str:
        """The model whose tokenizer counts a run's tokens: the caller's, else the settings'."""
        return str(getattr(caller, "model_name", "") or self.settings.model_backend.model)

    def compaction_window(self) -> tuple[int, int] | None:
        """The compactor's trigger and target, once a run made it (the settings' before)."""
        if self._compactor is None:
            return None
        return self._compactor.trigger, self._compactor.target

    def _meter(self, thread_id: str, caller: ModelCaller, *, replaying: bool = False) -> RunMeter:
        """Token accounting for one run: shared counter and compactor, its own running count.

        A replay compacts with the replay's model (which serves the recorded summaries), never a
        live summarization model.
        """
        s = self.settings
        name = self._counted_model(caller)
        counter = self.token_counter(name)
        summarizer = None if replaying else self._summarizer()
        if summarizer is not None:
            label = self._model_label(summarizer)
            recorded = RecordingModel(
                ScrubbedModel(summarizer, self.secrets),
                self.store,
                thread_id,
                self.generation_params(),
                scrub=self.secrets.scrub,
            )
            summarizer = ObservedModel(recorded, label)
        if self._compactor is None:
            self._compactor = Compactor(
                s.context,
                counter,
                strategy=self._compaction_strategy,
                context_window=s.model_backend.context_window,
                reserve=s.model_backend.max_tokens or 0,
            )
        return RunMeter(
            counter=counter,
            model_name=name,
            compactor=self._compactor,
            budget=self.budget_caps.get(thread_id, s.budget),
            summarizer=summarizer,
            expected_completion=s.model_backend.max_tokens,
            tracker=self.usage_tracker,
            thread_id=thread_id,
        )

    def _summarizer(self) -> ModelCaller | None:
        """The model for summaries and scores: None means the run's own model."""
        wanted = self.settings.context.summarization_model
        if wanted == "same" or self._backend is None:
            return None
        if self._summary_caller is None:
            self._summary_caller = summary_caller(
                self._backend, wanted, self.settings, self.secrets, self.telemetry.http_log()
            )
        return self._summary_caller


def _taking(issues: Sequence[Issue]) -> Callable[[], list[Issue]]:
    """A run's ``take_issues``: the issues once, then nothing (a resume finds them again)."""
    pending = list(issues)

    def take_issues() -> list[Issue]:
        taken = list(pending)
        pending.clear()
        return taken

    return take_issues
