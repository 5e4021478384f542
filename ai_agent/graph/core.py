"""AgentCore: configuration, collaborators, resources, and run/resume of the nine-stage graph.

Streaming sits on top of running as a mixin over this core, composed into
`ai_agent.graph.agent.Agent`. The tools are a collaborator (`ai_agent.graph.tooling.AgentTools`):
every run, resume, replay, plan served and direct call opens them for its span
(`AgentCore._tool_session`). Everything about stored runs is the run archive's
(`ai_agent.graph.archive.RunArchive`), which the core creates with the run database it shares
and a `Runner` view of itself (``_ArchiveRunner``) to drive replays and queued plans, each in a
tool session of its own.

An Agent holds configuration and collaborators, never run data: every run lives in the checkpoint
database under its thread id, so any Agent built the same way, in any process, can resume it.

"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langgraph.errors import GraphRecursionError
from langgraph.types import Command
from pydantic import SecretStr

from ai_agent.accounting import RunMeter, UsageTracker
from ai_agent.checkpoints import SqliteMemory
from ai_agent.checkpoints.store import (
    Location,
    RunStoreProtocol,
    check_thread_id,
    describe_location,
    new_thread_id,
)
from ai_agent.checkpoints.versions import check_state_version, stamped
from ai_agent.compaction import CompactionStrategy, Compactor
from ai_agent.config import (
    MAX_ITERATIONS,
    AgentSettings,
    McpServerConfig,
    ModelBackendSettings,
    load_settings,
)
from ai_agent.context import (
    ApprovalPolicy,
    Event,
    Hooks,
    ModelCaller,
    ModelEvents,
    RunContext,
    RunPolicy,
    ToolBox,
    reporting,
)
from ai_agent.errors import (
    AgentError,
    ConfigError,
    InvalidPlanError,
    LeaseLostError,
    NothingPendingError,
    PlanRefusedError,
    PlanRequiredError,
    RunError,
    StorageFullError,
    UnknownThreadError,
)
from ai_agent.graph.archive import RunArchive
from ai_agent.graph.build import recursion_limit
from ai_agent.graph.database import RunDatabase, config_for, locate_database
from ai_agent.graph.events import RunFinished, RunStarted, lifecycle_event
from ai_agent.graph.observed import ObservedModel, ObservedToolBox
from ai_agent.graph.recording import (
    BoundedToolBox,
    RecordingModel,
    RecordingToolBox,
    generation_params,
)
from ai_agent.graph.result import RunResult, is_pending, result_of
from ai_agent.graph.secrets import (
    ScrubbedEvents,
    ScrubbedModel,
    ScrubbedToolBox,
    add_secret,
    settings_secrets,
)
from ai_agent.graph.tooling import AgentTools, toolsmaker_paths
from ai_agent.models.resolve import (
    check_backend,
    read_model_argument,
    resolve_model,
    summary_caller,
)
from ai_agent.nodes.gate import check_plan, check_token, parse_plan
from ai_agent.observability import DurationMetrics, Telemetry
from ai_agent.observability.logs import engine_logger
from ai_agent.state import GateReport, Issue, RunState, UserPlan, new_run_state
from ai_agent.tokens import TokenCounter
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.mcp.manager import gather_servers

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.types import StateSnapshot

    from ai_agent.checkpoints.runstore import Lease

__all__ = ["PROFILES", "AgentCore"]

log = engine_logger("ai_agent.agent")

PROFILES = {"interactive": 0.60, "default": 0.70, "batch": 0.90}
T = TypeVar("T")
E = TypeVar("E")
_UNSET: Any = object()


class AgentCore:
    """The core of `ai_agent.Agent`: configuration, collaborators, resources, run and resume.

    The constructor's arguments are documented on `ai_agent.Agent`.
    """

    def __init__(
        self,
        model: BaseChatModel | str | None = None,
        tools: Any = None,
        system_prompt: str | None = None,
        max_iterations: int | None = None,
        gate_threshold: float | None = None,
        checkpoint_path: str | Path | None = None,
        hooks: Hooks | Mapping[str, Callable[..., Any]] | None = None,
        *,
        settings: AgentSettings | None = None,
        backend: str | None = None,
        gate_profile: str | None = None,
        execute_all_tool_calls: bool | None = None,
        approvals: Mapping[str, ApprovalPolicy] | None = None,
        unattended: bool = False,
        memory_path: str | Path | None = _UNSET,
        memory_sqlite: bool | None = None,
        on_event: Callable[[Event], None] | None = None,
        workdir: str | Path = ".",
        compaction_strategy: CompactionStrategy | None = None,
        checkpoint_url: str | SecretStr | None = None,
        tracer_provider: Any = None,
        mcp_servers: Sequence[McpServerConfig | Mapping[str, Any]] | None = None,
        mcp_config: str | Path | Sequence[str | Path] | None = None,
        toolsmaker_dir: str | Path | None = None,
        toolsmaker_audit_path: str | Path | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
    ) -> None:
        s = settings if settings is not None else load_settings()
        self.settings = s
        # Every secret this Agent knows: masked in all that its runs store and print, logs and
        # spans included (graph/secrets.py says where).
        self.secrets = settings_secrets(s)
        # Per Agent: its ids, redaction (knowing its secrets), spans, metrics and listeners.
        self.telemetry = Telemetry.from_settings(
            s, tracer_provider=tracer_provider, secrets=self.secrets
        )
        self.database: Location = locate_database(checkpoint_path, checkpoint_url, s)
        # The run store and the checkpointer, shared by the runs and the archive.
        self._db = RunDatabase(
            self.database, lease_seconds=s.lease_seconds, checkpointer=checkpointer
        )
        self.checkpoint_path = (
            self.database if isinstance(self.database, Path) else Path(s.checkpoint_path)
        )
        if isinstance(self.database, str):
            # A database URL's password is a secret like the API key: never in a log line.
            password = urllib.parse.urlsplit(self.database).password
            add_secret(self.secrets, password, "the database URL's password")
        # Validated (and files read) now, so a bad server is a usage error; each is a toolset
        # of the Agent's tools, started when a span needs it.
        self.mcp_servers = gather_servers(s.mcp_servers, mcp_config, mcp_servers)
        self.hooks = hooks if isinstance(hooks, Hooks) else Hooks(**dict(hooks or {}))
        memory = s.memory_path if memory_path is _UNSET else memory_path
        self._memory_sqlite = s.memory_sqlite if memory_sqlite is None else memory_sqlite
        self.toolsmaker_dir, self.toolsmaker_audit_path = toolsmaker_paths(
            s, toolsmaker_dir, toolsmaker_audit_path
        )
        # Every path the engine keeps state in, computed once: the tools never reach them.
        self.protected = self._engine_state(workdir, memory)
        self.backend = check_backend(backend or s.backend)
        # A "scripted:PATH" script is read now: a bad file is a usage error, not a failed run.
        self._model_arg = read_model_argument(model)
        self.policy = RunPolicy(
            system_prompt=s.system_prompt if system_prompt is None else system_prompt,
            max_iterations=_iterations(
                s.max_iterations if max_iterations is None else max_iterations
            ),
            gate_threshold=_threshold(gate_threshold, gate_profile, s),
            execute_all_tool_calls=s.execute_all_tool_calls
            if execute_all_tool_calls is None
            else execute_all_tool_calls,
            approvals={
                **RunPolicy().approvals,
                **{str(k): v for k, v in s.approvals.items()},
                **dict(approvals or {}),
            },
            unattended=unattended or s.unattended,
            memory_path=None if memory is None else str(memory),
            workdir=str(workdir),
            stream_tool_results=s.streaming.stream_tool_results,
            stream_chunk_size=s.streaming.chunk_size,
            first_use_gate=s.tool_config.first_use_gate,
            max_output_chars=s.tool_config.max_output_chars,
        )
        self._on_event = on_event
        # The tools (graph/tooling.py): the catalog of toolsets, the tools new runs start with,
        # the MCP servers, the toolsmaker; opened for each span by _tool_session.
        self._tools = AgentTools(
            tools if tools is not None else s.tools,
            settings=s,
            policy=self.policy,
            secrets=self.secrets,
            workdir=workdir,
            protected=self.protected,
            servers=self.mcp_servers,
            toolsmaker_dir=self.toolsmaker_dir,
            toolsmaker_audit_path=self.toolsmaker_audit_path,
            on_event=on_event,
        )
        self.registry = self._tools.registry
        self.initial_tools = self._tools.initial
        self.mcp = self._tools.mcp
        """The Agent's MCP servers: status, health, start/stop, adding servers at run time."""
        self._memory: SqliteMemory | None = None
        self._caller: ModelCaller | None = None
        self._backend: ModelBackendSettings | None = None
        self._summary_caller: ModelCaller | None = None
        self._counter: TokenCounter | None = None
        self._compactor: Compactor | None = None
        self._compaction_strategy = compaction_strategy
        self.usage_tracker = UsageTracker()
        self._local: Any = None
        self._open_lock = asyncio.Lock()
        # Everything about stored runs: history, inspection, replay, prune, export, the plan
        # queue. It drives runs (replay, queued plans) through this runner.
        self.archive = RunArchive(
            self._db,
            s,
            catalog=self.registry,
            policy=self.policy,
            initial_tools=self.initial_tools,
            runner=_ArchiveRunner(self),
            counter=self._token_counter,
            compaction=self._compaction_window,
        )

    def _engine_state(self, workdir: str | Path, memory: str | Path | None) -> ProtectedPaths:
        """Every path this Agent keeps state in (see `ai_agent.tools.builtin.protected`)."""
        databases = [Path(self.settings.checkpoint_path)]
        if isinstance(self.database, Path):
            databases.append(self.database)
        if self._memory_sqlite:
            databases.append(self._memory_sqlite_path(memory))
        return ProtectedPaths.for_engine(
            workdir=workdir,
            databases=[d for d in databases if d.name != ":memory:"],
            memory=[memory] if memory is not None else [],
            toolsmaker_dir=self.toolsmaker_dir,
            audit_log=self.toolsmaker_audit_path,
        )

    def _memory_sqlite_path(self, memory: str | Path | None) -> Path:
        """The SQLite memory: next to the memory file, else next to the checkpoints."""
        return Path(memory or self.checkpoint_path).with_name("memory.sqlite")

    @classmethod
    def from_settings(cls, settings: AgentSettings, **overrides: Any) -> Self:
        """An Agent configured entirely from ``settings`` (keyword overrides win)."""
        return cls(settings=settings, **overrides)

    # Observability --------------------------------------------------------------------------
    def add_listener(self, listener: Callable[[E], object], *types: type[E]) -> Callable[[], None]:
        """Call ``listener`` with the lifecycle events of every run of this Agent.

        The events are those of `ai_agent.events.LifecycleEvent`: run start and end, stage
        start and end, model retries, tool calls, gate pause and resume, compaction. Listeners
        are called synchronously on the run's task (``ai_agent.observability.current_ids()``
        names the run); one that raises is logged at WARNING and the run goes on.

        Args:
            listener: A function of one event.
            *types: Only events of these types (default: all).

        Returns:
            A function that removes the listener.

        Examples:
            >>> from ai_agent import Agent, AgentSettings
            >>> from ai_agent.events import StageFinished
            >>> agent = Agent(settings=AgentSettings(_env_file=None))
            >>> remove = agent.add_listener(print, StageFinished)
            >>> remove()
        """
        return self.telemetry.listeners.add(listener, *types)

    def remove_listener(self, listener: Callable[..., object]) -> None:
        """Stop calling ``listener``."""
        self.telemetry.listeners.remove(listener)

    @property
    def metrics(self) -> DurationMetrics | None:
        """Durations of this Agent's runs, stages, model and tool calls.

        None when ``observability.metrics_enabled`` is off.
        """
        return self.telemetry.metrics

    def _stream_sink(self, thread_id: str) -> Callable[[Event], None] | None:
        """Who consumes the run of ``thread_id`` as a stream (``Agent.astream``); None: nobody."""
        return None

    def _emitter(self, stream: Callable[[Event], None] | None = None) -> Callable[[Event], None]:
        """The run's event sink: the ``on_event`` callback, the log, the listeners, the stream.

        The run context masks secrets in front of it (`ScrubbedEvents`), for all of them.
        """
        on_event, telemetry = self._on_event, self.telemetry

        def emit(event: Event) -> None:
            if on_event is not None:
                try:
                    on_event(event)
                except Exception as exc:
                    # A user's callback must not kill the run it watches.
                    log.warning("the on_event callback failed; the run goes on", exc=exc)
            telemetry.on_event(event)
            if telemetry.listeners:
                typed = lifecycle_event(event)
                if typed is not None:
                    telemetry.listeners.publish(typed)
            if stream is not None:
                stream(event)

        return emit

    # Resources ------------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        async with self._open_lock:
            await self._db.open()
        self._tools.hold()  # the toolsets stay open across the block's spans
        return self

    async def __aexit__(self, *exc: object) -> None:
        if exc[1] is None:
            await self.aclose()
            return
        try:
            await self.aclose()
        except AgentError as error:
            # The error that ended the block says what went wrong; one from closing (often the
            # same cause, such as a full disk) must not take its place.
            log.warning("closing the agent after an error failed too: %s", error)

    async def aclose(self) -> None:
        """Close what the agent opened: toolsets, the model's client, databases, a local server."""
        try:
            await self._tools.aclose()
        finally:
            await self._close_resources()

    def _tool_session(self) -> contextlib.AbstractAsyncContextManager[list[Issue]]:
        """The span of a run, resume, replay, plan served or direct call: the toolsets open.

        ``async with self._tool_session() as issues``: the issues (a required MCP server
        that could not start) go to the run's ``_context``.
        """
        return self._tools.session()

    async def _close_resources(self) -> None:
        for caller in (self._caller, self._summary_caller):
            closer = getattr(caller, "aclose", None)
            if closer is not None:
                await closer()
        self._caller = self._summary_caller = None
        await self._db.aclose()
        if self._local is not None:
            server, self._local = self._local, None
            await server.stop()
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    @property
    def store(self) -> RunStoreProtocol:
        """The run store (runs, leases, journal, plans), opened on first use."""
        return self._db.store

    def _graph(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """The compiled graph over the shared checkpointer, or a private one for this call."""
        return self._db.graph()

    async def _model(self) -> ModelCaller:
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
            on_event=self._on_event,
        )
        self._local, self._backend = resolved.local, resolved.backend
        return resolved.caller

    def _memory_store(self) -> SqliteMemory | None:
        if self._memory_sqlite and self._memory is None:
            self._memory = SqliteMemory(self._memory_sqlite_path(self.policy.memory_path))
        return self._memory

    def generation_params(self) -> dict[str, Any]:
        """The generation parameters recorded with every model request (never credentials)."""
        return generation_params(self._model_arg, self.backend, self.settings.model_backend)

    async def _context(
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
        caller = model if model is not None else await self._model()
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
        bounded = BoundedToolBox(
            ScrubbedToolBox(tools if tools is not None else self.registry.view(), secrets),
            self.store,
            thread_id,
            self.policy.max_output_chars,
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
            meter=self._meter(thread_id, caller, replaying=model is not None),
            model_events=model_events,
            scrub=secrets.scrub,
            # A replay brings its own model and hears no start-up issues.
            take_issues=_taking(issues if model is None else ()),
            outputs=self.store,  # clipped tool outputs, for tool_output
        )

    def _model_label(self, caller: ModelCaller) -> str:
        """The model's name in spans, metrics and logs."""
        return str(
            getattr(caller, "model_name", "")
            or self.generation_params().get("model")
            or self.settings.model_backend.model
        )

    def _token_counter(self, model: str | None = None) -> TokenCounter:
        """The Agent's token counter (one per Agent: its per-message cache is shared by runs)."""
        if self._counter is None:
            s = self.settings
            self._counter = TokenCounter(s.token_tracking, model=model or s.model_backend.model)
        return self._counter

    def _compaction_window(self) -> tuple[int, int] | None:
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
        name = str(getattr(caller, "model_name", "") or s.model_backend.model)
        counter = self._token_counter(name)
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
            budget=s.budget,
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

    # Running --------------------------------------------------------------------------------
    async def run(self, task: str, *, thread_id: str | None = None) -> RunResult:
        """Run a task until it finishes, fails, or pauses at the gate.

        Args:
            task: What to do, in plain language.
            thread_id: Id for the new run (default: a fresh one). It must not exist yet, and
                must follow the grammar of thread ids (``checkpoints.store.THREAD_ID_RULE``).

        Raises:
            RunError: the thread id is already taken.
            InvalidThreadIdError: the thread id breaks the grammar.
        """
        async with self._tool_session() as issues:
            if not task.strip():
                raise ConfigError("the task is empty; say what the agent should do")
            task = self._masked_task(task)  # after the span began: MCP secrets are known
            thread_id = new_thread_id() if thread_id is None else check_thread_id(thread_id)
            if await self.store.get_run(thread_id) is not None:
                raise RunError(
                    f"thread {thread_id} already exists; resume it instead of running it"
                )
            await self.store.create_run(thread_id, task)
            async with self._full_disk_stops(thread_id):
                lease = await self.store.acquire(thread_id)
                state = new_run_state(task, list(self.initial_tools))
                return await self._drive(thread_id, state, lease, issues=issues)

    def _masked_task(self, task: str) -> str:
        """The task as the run keeps it: a configured secret in it is masked, and we say so."""
        self.secrets.refresh()  # a key exported since the last run counts
        masked = self.secrets.text(task)
        if masked != task:
            log.warning(
                "the task holds a configured secret; the run sees and stores *** in its place "
                "(tools get keys through their environment, never through the task)"
            )
        return masked

    def run_sync(self, task: str, **kwargs: Any) -> RunResult:
        """``run`` for code without an event loop (opens and closes everything itself)."""
        return asyncio.run(self._closing(self.run(task, **kwargs)))

    async def resume(
        self, thread_id: str, plan: UserPlan | Mapping[str, Any] | None = None
    ) -> RunResult:
        """Continue a run: with a plan when it is paused at the gate, without after a crash.

        The arguments, the result and the errors are documented on `ai_agent.Agent.resume`.
        """
        self._db.require(check_thread_id(thread_id))  # before the store would create the file
        async with self._tool_session() as issues, self._full_disk_stops(thread_id):
            lease = await self.store.acquire(check_thread_id(thread_id))
            try:
                async with self._graph() as graph:
                    snapshot = await graph.aget_state(config_for(thread_id))
                command = await (
                    self._resume_input(thread_id, snapshot, plan)
                    if snapshot.values
                    else self._restart(thread_id, plan)
                )
                await self.store.update_run(thread_id, status="running")
            except BaseException:
                await self._release(lease)
                raise
            return await self._drive(thread_id, command, lease, issues=issues)

    @contextlib.asynccontextmanager
    async def _full_disk_stops(self, thread_id: str) -> AsyncIterator[None]:
        """A full database disk stops the run with an error that says how to continue it.

        The transaction that hit it was rolled back whole and every step before it is
        checkpointed, so ``resume`` continues from there once there is space. The run row is
        marked failed with the same message, when the disk still takes that small update.
        """
        try:
            yield
        except StorageFullError as exc:
            full = StorageFullError(exc.where, thread_id=thread_id)
            with contextlib.suppress(StorageFullError):
                await self.store.update_run(thread_id, status="failed", error=str(full))
            raise full from exc

    async def _release(self, lease: Lease) -> None:
        """Give the lease back; on a full disk it is left to run out (its holder is done)."""
        try:
            await self.store.release(lease)
        except StorageFullError:
            log.warning(
                "could not release the lease of thread %s (the database is full); another "
                "process can take the thread over once this one has exited or the lease ran out",
                lease.thread_id,
            )

    def resume_sync(
        self, thread_id: str, plan: UserPlan | Mapping[str, Any] | None = None
    ) -> RunResult:
        """``resume`` for code without an event loop."""
        return asyncio.run(self._closing(self.resume(thread_id, plan)))

    async def _resume_input(
        self,
        thread_id: str,
        snapshot: StateSnapshot,
        plan: UserPlan | Mapping[str, Any] | None,
        *,
        token_required: bool = False,
    ) -> Command[Any] | None:
        """The graph input that continues a run, once every check of a resume has passed.

        A plan's gate token is checked against the paused checkpoint's interrupt value (the
        report the person was handed), never against anything a plan's author could write;
        ``token_required`` (the plan queue) refuses a plan without one.
        """
        check_state_version(snapshot.metadata, f"run {thread_id}")
        self.secrets.refresh()  # a key exported while the run waited counts from here on
        if not snapshot.values and await self.store.get_run(thread_id) is None:
            raise self._unknown(thread_id)
        if snapshot.interrupts:
            report: GateReport = snapshot.interrupts[0].value
            if plan is None:
                raise PlanRequiredError(
                    f"run {thread_id} is paused at the gate and needs a plan:\n{report['prompt']}"
                )
            values = cast(RunState, snapshot.values)
            parsed = self._tools.with_new_tools(
                _read_plan(plan, token_required), values.get("active_tools", [])
            )
            self._check_plan_size(parsed)
            check_token(parsed, report, values, thread_id, required=token_required)
            check_plan(parsed, report, self.registry)
            # The resume value is stored with the checkpoint: a key in the instructions is not.
            return Command(resume=self.secrets.scrub(parsed.model_dump()))
        if is_pending(snapshot):
            # It stopped mid-step (a crash, a failure): continue from the last checkpoint. The
            # writes of the step's finished tasks are stored with it and are reused, not run
            # again; the journal keeps any half-done side-effecting call from running again
            # silently.
            if plan is not None:
                raise RunError(f"run {thread_id} is not waiting for a plan; resume it without one")
            return None
        status = snapshot.values.get("status", "finished")
        raise NothingPendingError(f"run {thread_id} has {status}; there is nothing to resume")

    def _check_plan_size(self, plan: UserPlan) -> None:
        """InvalidPlanError for a plan longer than ``max_plan_chars`` (the run stays paused).

        A plan is kept in the checkpoints, in the conversation and in the recorded requests: the
        limit keeps a mistaken paste (a log file as instructions) from filling the database.
        """
        limit = self.settings.max_plan_chars
        # The gate token is the engine's, attached on the way to the queue: count what was written.
        size = len(plan.model_dump_json(exclude={"gate_token"}))
        if size > limit:
            raise InvalidPlanError(
                f"the plan is {size:,} characters long, more than the {limit:,} allowed "
                "(max_plan_chars); shorten it (point to a file instead of pasting it), or raise "
                "the setting. The run is still paused"
            )

    async def _restart(self, thread_id: str, plan: UserPlan | Mapping[str, Any] | None) -> RunState:
        """The input of a run that has a run row but no checkpoint: its task, from the start.

        The row is written before the first checkpoint, so a crash in between leaves it alone.
        No stage has run without a checkpoint before it (checkpoints are written "sync"), so
        starting the task again repeats nothing.
        """
        record = await self.store.get_run(thread_id)
        if record is None:
            raise self._unknown(thread_id)
        if plan is not None:
            raise RunError(
                f"run {thread_id} stopped before its first step and is not waiting for a plan; "
                "resume it without one"
            )
        log.info("run %s has no checkpoint yet; starting its task from the beginning", thread_id)
        return new_run_state(record["task"], list(self.initial_tools))

    def _unknown(self, thread_id: str) -> UnknownThreadError:
        return UnknownThreadError(
            f"no run with thread id {thread_id} in {describe_location(self.database)}; "
            "`ai-agent runs` lists the runs there"
        )

    async def _drive(
        self,
        thread_id: str,
        graph_input: Any,
        lease: Lease,
        context: RunContext | None = None,
        *,
        issues: Sequence[Issue] = (),
    ) -> RunResult:
        self.archive.last_thread = thread_id
        async with self._holding(lease):
            return await self._invoke(thread_id, graph_input, context, issues=issues)

    @contextlib.asynccontextmanager
    async def _holding(self, lease: Lease) -> AsyncIterator[None]:
        """Keep the lease while the block runs, and give it back after.

        A heartbeat renews it every fifth of ``lease_seconds``. If the lease was lost anyway
        (this process stalled past it and another took the thread over), the block is
        cancelled at once and ends with LeaseLostError; its writes would be refused by the
        fencing regardless, but a tool still running must not start anything more.
        """
        runner = cast(asyncio.Task[Any], asyncio.current_task())
        lost: list[LeaseLostError] = []
        heartbeat = asyncio.create_task(self._heartbeat(lease, runner, lost))
        try:
            yield
        except asyncio.CancelledError:
            if not lost:
                raise
            runner.uncancel()
            raise lost[0] from None
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            await self._release(lease)

    async def _heartbeat(
        self, lease: Lease, runner: asyncio.Task[Any], lost: list[LeaseLostError]
    ) -> None:
        while True:
            await asyncio.sleep(self.settings.lease_seconds / 5)
            try:
                lease = await self.store.renew(lease)
            except LeaseLostError as exc:
                lost.append(exc)
                runner.cancel()
                return

    async def _invoke(
        self,
        thread_id: str,
        graph_input: Any,
        context: RunContext | None = None,
        *,
        issues: Sequence[Issue] = (),
    ) -> RunResult:
        # A fresh state starts a run; a Command (a plan) or None continues the thread: a
        # resume is a new run of the same thread, observed as its own run linked to the thread.
        resumed = not isinstance(graph_input, dict)
        listeners = self.telemetry.listeners
        with self.telemetry.run(thread_id, resumed=resumed) as run:
            listeners.publish(RunStarted(thread_id, run.run_id, resumed))
            try:
                result = await self._invoke_graph(thread_id, graph_input, context, issues)
            except BaseException as exc:
                listeners.publish(
                    RunFinished(
                        RunResult(status="failed", thread_id=thread_id, error=type(exc).__name__)
                    )
                )
                raise
            run.finish(
                result.status,
                error=result.error,
                iterations=result.iterations,
                usage=result.usage,
            )
            listeners.publish(RunFinished(result))
        return result

    async def _invoke_graph(
        self, thread_id: str, graph_input: Any, context: RunContext | None, issues: Sequence[Issue]
    ) -> RunResult:
        limit = recursion_limit(self.policy.max_iterations)
        try:
            context = context or await self._context(thread_id, issues=issues)
            async with self._graph() as graph:
                # "sync": each step's checkpoint is committed before the next step starts, so a
                # tool never has side effects ahead of the checkpoint that leads to it.
                await graph.ainvoke(
                    graph_input,
                    stamped(config_for(thread_id, limit, lease=self.store.held(thread_id))),
                    context=context,
                    durability="sync",
                )
                snapshot = await graph.aget_state(config_for(thread_id))
        except (StorageFullError, LeaseLostError):
            # Not a failure of the run: it continues once there is space again, or in the
            # process that took it over (and this one may not write to it any more).
            raise
        except (AgentError, GraphRecursionError) as exc:
            message = self.secrets.text(
                str(exc)
                if isinstance(exc, AgentError)
                else (f"the run exceeded {limit} steps; this is a bug in a hook or the engine")
            )
            await self.store.update_run(thread_id, status="failed", error=message)
            return RunResult(status="failed", thread_id=thread_id, error=message)
        except BaseException as exc:
            # Cancelled because the lease was lost: the run is not this process's to mark.
            with contextlib.suppress(LeaseLostError):
                await self.store.update_run(
                    thread_id, status="failed", error=f"{type(exc).__name__}"
                )
            raise
        result = result_of(thread_id, snapshot)
        await self.store.update_run(
            thread_id,
            status=result.status,
            final_text=result.final_text,
            gate=dict(result.gate) if result.gate else None,
        )
        return result

    async def _closing(self, coro: Awaitable[T]) -> T:
        try:
            return await coro
        finally:
            await self.aclose()


class _ArchiveRunner:
    """The archive's view of the runner (`ai_agent.graph.driving.Runner`): the core's methods."""

    def __init__(self, core: AgentCore) -> None:
        self.tool_session = core._tool_session
        self.context = core._context
        self.drive = core._drive
        self.holding = core._holding
        self.invoke = core._invoke
        self.resume_input = core._resume_input
        self.model = core._model
        self.generation_params = core.generation_params
        self.scrub = core.secrets.scrub
        self.hooks = core.hooks


def _ignore(event: Event) -> None:
    """No listener."""


def _taking(issues: Sequence[Issue]) -> Callable[[], list[Issue]]:
    """A run's ``take_issues``: the issues once, then nothing (a resume finds them again)."""
    pending = list(issues)

    def take_issues() -> list[Issue]:
        taken = list(pending)
        pending.clear()
        return taken

    return take_issues


def _read_plan(plan: UserPlan | Mapping[str, Any], token_required: bool) -> UserPlan:
    """The plan, validated. From the queue, a plan that is not even valid is refused.

    ``submit_plan`` queues only plans it validated, so an unreadable one in the queue was
    written there by something else: it is refused (and audited) like any plan without a token.
    """
    try:
        return parse_plan(plan)
    except InvalidPlanError as exc:
        if not token_required:
            raise
        raise PlanRefusedError(
            f"{exc}; a plan queued by Agent.submit_plan or `ai-agent resume THREAD --queue` is "
            "always valid, so this one was written into the queue by something else"
        ) from None


def _iterations(value: int) -> int:
    if not 1 <= value <= MAX_ITERATIONS:
        raise ConfigError(
            f"max_iterations must be at least 1 and at most {MAX_ITERATIONS:,} (got {value:,})"
        )
    return value


def _threshold(explicit: float | None, profile: str | None, settings: AgentSettings) -> float:
    if explicit is not None:
        if not 0.0 <= explicit <= 1.0:
            raise ConfigError(f"gate_threshold must be between 0 and 1 (got {explicit})")
        return explicit
    if profile is not None:
        if profile not in PROFILES:
            raise ConfigError(
                f"unknown gate profile {profile!r}; choose one of {', '.join(PROFILES)}"
            )
        return PROFILES[profile]
    return settings.effective_gate_threshold
