"""The Agent: a facade over collaborators with one job each, passed explicitly.

The runner (graph/runner.py) runs and resumes, with the run contexts of graph/contexts.py; the
streams (graph/streaming.py) stream; the run archive (graph/archive.py) keeps the runs; the
tools (graph/tooling.py, graph/tool_methods.py) equip them. Each public method of a
collaborator that the Agent offers is one line here (graph/delegation.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from ai_agent.accounting import UsageTracker
from ai_agent.checkpoints.store import Location, RunStoreProtocol
from ai_agent.compaction import CompactionStrategy
from ai_agent.config import AgentSettings, McpServerConfig, load_settings
from ai_agent.context import ApprovalPolicy, Event, Hooks
from ai_agent.errors import AgentError
from ai_agent.graph.archive import RunArchive
from ai_agent.graph.contexts import RunContexts
from ai_agent.graph.database import RunDatabase, locate_database
from ai_agent.graph.delegation import archive_method, delegated
from ai_agent.graph.events import rendering
from ai_agent.graph.options import engine_state, memory_sqlite_path, run_policy
from ai_agent.graph.pipeline import Pipeline, PipelineBuilder, as_pipeline, merged_hooks
from ai_agent.graph.result import RunResult
from ai_agent.graph.runner import PipelineRunner
from ai_agent.graph.secrets import add_database_password, settings_secrets
from ai_agent.graph.streaming import Streams, StreamSinks
from ai_agent.graph.subagents import Subagents
from ai_agent.graph.tool_methods import ToolMethods
from ai_agent.graph.tool_pins import StoredToolPins
from ai_agent.graph.tooling import AgentTools, toolsmaker_paths
from ai_agent.models.resolve import check_backend, read_model_argument
from ai_agent.observability import DurationMetrics, Telemetry
from ai_agent.observability.logs import engine_logger
from ai_agent.state import UserPlan
from ai_agent.tools.mcp.manager import gather_servers

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from ai_agent.tools.maker import ToolsmakerRegistry

__all__ = ["Agent"]

log = engine_logger("ai_agent.agent")

T = TypeVar("T")
E = TypeVar("E")
_UNSET: Any = object()


class Agent:
    """Runs tasks through the nine-stage pipeline, pausing at the gate and resuming later.

    An Agent holds configuration and collaborators, never run data: every run lives in the
    checkpoint database under its thread id, so any Agent built the same way, in any process,
    can resume it. Use it as an async context manager (``async with Agent(...) as agent``) to
    keep the database, the model client and the MCP servers open across runs; without one,
    each call opens and closes what it needs.

    Running and resuming are the runner's (`ai_agent.graph.runner.PipelineRunner`), streaming
    the streams' (`ai_agent.graph.streaming.Streams`). Everything about stored runs is the run
    archive's (``agent.archive``, a `ai_agent.graph.archive.RunArchive`): checkpoints and forks
    (``history``, ``fork``), ``replay``, the inspection helpers (``get_*``, ``timeline``),
    pictures (``run_report``, ``export_html``), ``prune``, and the plan queue served by workers
    (``submit_plan``, ``serve_plan``). Its tools are another collaborator
    (`ai_agent.graph.tooling.AgentTools`): MCP servers (``agent.mcp``), generated tools (the
    toolsmaker: ``build_dynamic_tool``, ``approve_dynamic_tool``, ``activate_tool_version``...),
    tool management (``register_tool``, ``call_tool``, ``tool_output``...; see
    `ai_agent.graph.tool_methods.ToolMethods`). The Agent's methods of those names are theirs.

    Args:
        model: A LangChain chat model (``ScriptedModel``, ``ChatOpenAI``...), ``"scripted:PATH"``
            for a JSON script, a model id for the configured server, or None for the settings'.
        tools: Catalog names (tools, groups such as ``files``, globs such as ``fs.*``) and/or
            tools in any supported form (ToolSpec, ``@tool`` function, BaseTool, pydantic model,
            LangChain tool) to activate; other built-ins stay in the catalog, available to a
            plan. See `ai_agent.tools.building`.
        system_prompt: Sent first on every model call (never stored in state).
        max_iterations: Cycles before the run stops with a summary.
        gate_threshold: Severity at which the gate intervenes (0..1).
        checkpoint_path: The SQLite database of checkpoints and the run store.
            ``":memory:"`` keeps them for as long as this Agent lives, in this process.
        hooks: A ``Hooks`` (or a dict of hook functions) replacing stage defaults.
        settings: ``AgentSettings``; loaded from env and files when not given.
        backend: ``"openai"`` (any OpenAI-compatible server) or ``"local"`` (built-in llama.cpp).
        gate_profile: ``interactive`` (0.60), ``default`` (0.70) or ``batch`` (0.90).
        execute_all_tool_calls: Run every call of a draft, not just the first.
        approvals: Approval policy per tool category (auto / confirm / approve / deny), over
            the settings' ``approvals`` and the defaults (read_only and note_taking auto,
            modification approve, external confirm).
        unattended: Trusted batch mode: approvals, first-use gates and escalations are granted,
            ``deny`` still holds.
        memory_path: JSONL file persist appends to (None: do not write it).
        memory_sqlite: Also keep a searchable SQLite memory that recall uses.
        on_event: Called with progress events (stage started/finished, tool running...).
        workdir: Directory tools treat as their working directory, and the file sandbox's base
            unless ``tool_config.files.base_dir`` names another.
        compaction_strategy: A custom `CompactionStrategy` used instead of the configured one.
        checkpoint_url: A ``postgresql://`` URL (or a SQLite path) for the checkpoints and the
            run store, in place of ``checkpoint_path``; needs the ``postgres`` extra. Default:
            the settings' ``checkpoint_url``, then their ``checkpoint_path``.
        tracer_provider: The OpenTelemetry ``TracerProvider`` that gets the spans when
            ``observability.enable_otel_instrumentation`` is on (default: the global provider).
        mcp_servers: MCP servers (``McpServerConfig`` or dicts of its shape) besides the
            settings' ``mcp_servers``; each is a toolset whose tools join the catalog when it
            starts (see `ai_agent.tools.mcp` and docs/mcp.md).
        mcp_config: A YAML, JSON or TOML file of MCP servers (or a list of them), read now.
        toolsmaker_dir: Where generated tools are kept (default: the settings'
            ``tool_config.toolsmaker.dir``, ``.agents/toolsmaker``).
        toolsmaker_audit_path: The toolsmaker's audit log (default: toolsmaker_dir/audit.jsonl).
        checkpointer: Any LangGraph saver for the checkpoints, opened and closed by its owner;
            the run store stays at ``checkpoint_path`` (see docs/compatibility.md).
        output_type: The type the final answer must fit (a pydantic model, dataclass, TypedDict
            or JSON Schema dict); ``RunResult.output`` is then typed (docs/typed-outputs.md).
        pipeline: Your own workflow (a `PipelineBuilder` or its `Pipeline`; docs/workflows.md).

    Examples:
        >>> import asyncio
        >>> from ai_agent.testing import ScriptedModel
        >>> ask = {"name": "calculator", "args": {"expression": "19.5% of 349"}}
        >>> model = ScriptedModel([{"tool_calls": [ask]}, {"text": "It is 68.055."}])
        >>> agent = Agent(model=model, tools=["calculator"], checkpoint_path=":memory:",
        ...               memory_path=None)
        >>> result = asyncio.run(agent.run("calc 19.5% of 349"))
        >>> result.status, result.final_text
        ('completed', 'It is 68.055.')
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
        output_type: Any = None,
        pipeline: Pipeline | PipelineBuilder | None = None,
        _database: RunDatabase | None = None,
    ) -> None:
        # To build it again on a parent's database (a subagent): first, before any other local.
        self._arguments = {k: v for k, v in locals().items() if k not in ("self", "_database")}
        s = settings if settings is not None else load_settings()
        self.settings = s
        # Every secret this Agent knows: masked in all that its runs store and print, logs and
        # spans included (graph/secrets.py says where).
        self.secrets = settings_secrets(s)
        # Per Agent: its ids, redaction (knowing its secrets), spans, metrics and listeners.
        self.telemetry = Telemetry.from_settings(
            s, tracer_provider=tracer_provider, secrets=self.secrets
        )
        # A subagent built for a parent runs in the parent's database, which the parent closes.
        self._owns_database = _database is None
        self.database: Location = (
            _database.location if _database else locate_database(checkpoint_path, checkpoint_url, s)
        )
        self._db = _database or RunDatabase(  # the run store and the checkpointer: the runs'
            self.database, s.lease_seconds, checkpointer, as_pipeline(pipeline)
        )
        self.checkpoint_path = (
            self.database if isinstance(self.database, Path) else Path(s.checkpoint_path)
        )
        add_database_password(self.secrets, self.database)  # never in a log line
        # Validated (and files read) now, so a bad server is a usage error; each is a toolset
        # of the Agent's tools, started when a span needs it.
        self.mcp_servers = gather_servers(s.mcp_servers, mcp_config, mcp_servers)
        self.hooks = merged_hooks(hooks, self._db.pipeline)  # the pipeline's hooks join them
        memory = s.memory_path if memory_path is _UNSET else memory_path
        sqlite = s.memory_sqlite if memory_sqlite is None else memory_sqlite
        memory_db = memory_sqlite_path(memory, self.checkpoint_path) if sqlite else None
        self.toolsmaker_dir, self.toolsmaker_audit_path = toolsmaker_paths(
            s, toolsmaker_dir, toolsmaker_audit_path
        )
        # Every path the engine keeps state in, computed once: the tools never reach them.
        self.protected = engine_state(
            s,
            self.database,
            workdir=workdir,
            memory=memory,
            memory_sqlite=memory_db,
            toolsmaker_dir=self.toolsmaker_dir,
            audit_log=self.toolsmaker_audit_path,
        )
        self.backend = check_backend(backend or s.backend)
        # A "scripted:PATH" script is read now: a bad file is a usage error, not a failed run.
        model_arg = read_model_argument(model)
        self.policy = run_policy(
            s,
            system_prompt=system_prompt,
            max_iterations=max_iterations,
            gate_threshold=gate_threshold,
            gate_profile=gate_profile,
            execute_all_tool_calls=execute_all_tool_calls,
            approvals=approvals,
            unattended=unattended,
            memory=memory,
            workdir=workdir,
            output_type=output_type,
        )
        # The tools (graph/tooling.py): the catalog of toolsets, the tools new runs start with,
        # the MCP servers, the toolsmaker; opened for each span by the runner.
        self._tools = AgentTools(
            Subagents.claim(tools) if tools is not None else s.tools,
            settings=s,
            policy=self.policy,
            secrets=self.secrets,
            workdir=workdir,
            protected=self.protected,
            servers=self.mcp_servers,
            toolsmaker_dir=self.toolsmaker_dir,
            toolsmaker_audit_path=self.toolsmaker_audit_path,
            on_event=rendering(on_event),
            # Each server's tool definitions, pinned on first use in this database's run store.
            pins=StoredToolPins(self._db),
        )
        self.registry = self._tools.registry
        self.initial_tools = self._tools.initial
        self.mcp = self._tools.mcp
        """The Agent's MCP servers: status, health, start/stop, adding servers at run time."""
        self._tool_methods = ToolMethods(self._tools, self._db)
        sinks: StreamSinks = {}  # a stream's sink by its run's thread id
        self._contexts = RunContexts(
            self._db,
            s,
            policy=self.policy,
            hooks=self.hooks,
            registry=self.registry,
            secrets=self.secrets,
            telemetry=self.telemetry,
            model=model_arg,
            backend=self.backend,
            on_event=on_event,
            compaction_strategy=compaction_strategy,
            memory_sqlite=memory_db,
            streams=sinks,
        )
        self.usage_tracker = self._contexts.usage_tracker
        self._runner = PipelineRunner(
            self._db,
            s,
            policy=self.policy,
            tools=self._tools,
            contexts=self._contexts,
            secrets=self.secrets,
            telemetry=self.telemetry,
            on_drive=self._note_thread,
        )
        # Everything about stored runs: history, inspection, replay, prune, export, the plan
        # queue. It drives runs (replay, queued plans) through the runner.
        self.archive = RunArchive(
            self._db,
            s,
            catalog=self.registry,
            policy=self.policy,
            initial_tools=self.initial_tools,
            runner=self._runner,
            counter=self._contexts.token_counter,
            compaction=self._contexts.compaction_window,
        )
        self._streams = Streams(self.run, self.resume, self._closing, sinks)
        self._open_lock = asyncio.Lock()
        # Children (graph/subagents.py): their tools bound to this Agent, their runs in its db.
        self._subagents = Subagents(self._db, self, self.registry, s.budget)

    @classmethod
    def from_settings(cls, settings: AgentSettings, **overrides: Any) -> Self:
        """An Agent configured entirely from ``settings`` (keyword overrides win)."""
        return cls(settings=settings, **overrides)

    # Running (graph/runner.py) and streaming (graph/streaming.py) ------------------------------
    run = delegated("_runner", PipelineRunner.run)
    resume = delegated("_runner", PipelineRunner.resume)
    astream = delegated("_streams", Streams.astream)
    astream_resume = delegated("_streams", Streams.astream_resume)
    stream = delegated("_streams", Streams.stream)
    stream_resume = delegated("_streams", Streams.stream_resume)
    generation_params = delegated("_contexts", RunContexts.generation_params)

    def run_sync(self, task: str, **kwargs: Any) -> RunResult:
        """``run`` for code without an event loop (opens and closes everything itself)."""
        return asyncio.run(self._closing(self.run(task, **kwargs)))

    def resume_sync(
        self, thread_id: str, plan: UserPlan | Mapping[str, Any] | None = None
    ) -> RunResult:
        """``resume`` for code without an event loop."""
        return asyncio.run(self._closing(self.resume(thread_id, plan)))

    # Subagents (graph/subagents.py) ---------------------------------------------------------
    as_tool = delegated("_subagents", Subagents.as_tool)
    delegate = delegated("_subagents", Subagents.delegate)

    def _note_thread(self, thread_id: str) -> None:
        self.archive.last_thread = thread_id  # the archive's default thread

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
        """Close what the agent opened: toolsets, the model's client, databases, a local server.

        Runs still in flight on this Agent (a stream left by ``break``, a task cancelled and
        not awaited) are cancelled and wound down first: they stay resumable.
        """
        try:
            await self._runner.settle()
            await self._subagents.aclose()
            await self._tools.aclose()
        finally:
            try:
                await self._contexts.aclose()
            finally:
                if self._owns_database:  # a subagent's is its parent's
                    await self._db.aclose()

    async def _closing(self, coro: Awaitable[T]) -> T:
        try:
            return await coro
        finally:
            await self.aclose()

    @property
    def store(self) -> RunStoreProtocol:
        """The run store (runs, leases, journal, plans), opened on first use."""
        return self._db.store

    # The run archive (graph/archive.py): each method is the archive's -----------------------
    get_state = archive_method(RunArchive.get_state)
    get_result = archive_method(RunArchive.get_result)
    history = archive_method(RunArchive.history)
    ahistory = archive_method(RunArchive.ahistory)
    fork = archive_method(RunArchive.fork)
    afork = archive_method(RunArchive.afork)
    get_system_prompt = archive_method(RunArchive.get_system_prompt)
    get_message_history = archive_method(RunArchive.get_message_history)
    get_active_tools = archive_method(RunArchive.get_active_tools)
    get_agent_state = archive_method(RunArchive.get_agent_state)
    get_context_state = archive_method(RunArchive.get_context_state)
    get_token_usage = archive_method(RunArchive.get_token_usage)
    get_token_breakdown = archive_method(RunArchive.get_token_breakdown)
    get_usage_history = archive_method(RunArchive.get_usage_history)
    get_cost_estimate = archive_method(RunArchive.get_cost_estimate)
    timeline = archive_method(RunArchive.timeline)
    get_execution_trace = archive_method(RunArchive.get_execution_trace)
    run_report = archive_method(RunArchive.run_report)
    export_html = archive_method(RunArchive.export_html)
    prune = archive_method(RunArchive.prune)
    replay = archive_method(RunArchive.replay)
    submit_plan = archive_method(RunArchive.submit_plan)
    list_plans = archive_method(RunArchive.list_plans)
    serve_plan = archive_method(RunArchive.serve_plan)

    get_agent_usage = delegated("usage_tracker", UsageTracker.report)

    # The tools (graph/tooling.py, graph/tool_methods.py) ---------------------------------------
    # A method with **options names its self: typed through Any, its signature kept as it is.
    register_tool = delegated("_tool_methods", cast(Any, ToolMethods.register_tool))
    unregister_tool = delegated("_tool_methods", ToolMethods.unregister_tool)
    disable_tools = delegated("_tool_methods", ToolMethods.disable_tools)
    enable_tools = delegated("_tool_methods", ToolMethods.enable_tools)
    tool_groups = delegated("_tool_methods", ToolMethods.tool_groups)
    list_tools = delegated("_tool_methods", ToolMethods.list_tools)
    call_tool = delegated("_tool_methods", ToolMethods.call_tool)
    tool_output = delegated("_tool_methods", ToolMethods.tool_output)
    set_tools = delegated("_tool_methods", ToolMethods.set_tools)
    add_tool = delegated("_tool_methods", cast(Any, ToolMethods.add_tool))
    remove_tool = delegated("_tool_methods", ToolMethods.remove_tool)
    create_tool_build_request_from_intent = delegated(
        "_tool_methods", ToolMethods.create_tool_build_request_from_intent
    )
    build_dynamic_tool = delegated("_tool_methods", ToolMethods.build_dynamic_tool)
    build_dynamic_tool_from_intent = delegated(
        "_tool_methods", ToolMethods.build_dynamic_tool_from_intent
    )
    approve_dynamic_tool = delegated("_tool_methods", ToolMethods.approve_dynamic_tool)
    reject_dynamic_tool = delegated("_tool_methods", ToolMethods.reject_dynamic_tool)
    activate_tool_version = delegated("_tool_methods", ToolMethods.activate_tool_version)
    rollback_tool = delegated("_tool_methods", ToolMethods.rollback_tool)

    @property
    def toolsmaker(self) -> ToolsmakerRegistry:
        """The `ai_agent.tools.maker.ToolsmakerRegistry` over this Agent's registry.

        Its options, ``toolsmaker_dir`` and ``toolsmaker_audit_path``, are arguments of the
        constructor. Nothing of it is imported before it is needed.
        """
        return self._tools.toolsmaker
