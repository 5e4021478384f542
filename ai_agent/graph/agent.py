"""The Agent: runs, pauses and resumes tasks; the core, its run archive, and its tools.

The archive's methods (stored runs, replay, the plan queue) are those of its run archive
(`ai_agent.graph.archive.RunArchive`); the tool methods (tool management, direct calls, the
toolsmaker) delegate to the Agent's tools (`ai_agent.graph.tooling.AgentTools`), the registry,
the toolsmaker and the run store.

Examples:
    >>> import asyncio, tempfile, os
    >>> from ai_agent.testing import ScriptedModel
    >>> async def demo():
    ...     with tempfile.TemporaryDirectory() as d:
    ...         ask = {"name": "calculator", "args": {"expression": "19.5% of 349"}}
    ...         model = ScriptedModel([{"tool_calls": [ask]}, {"text": "19.5% of 349 is 68.055"}])
    ...         agent = Agent(model=model, tools=["calculator"],
    ...                       checkpoint_path=os.path.join(d, "c.sqlite"), memory_path=None)
    ...         async with agent:
    ...             res = await agent.run("calc 19.5% of 349")
    ...         return res.status, res.final_text
    >>> asyncio.run(demo())
    ('completed', '19.5% of 349 is 68.055')
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from ai_agent.checkpoints.store import check_thread_id
from ai_agent.errors import UnknownOutputError
from ai_agent.graph.archive import RunArchive
from ai_agent.graph.core import AgentCore
from ai_agent.graph.streaming import StreamingMixin
from ai_agent.graph.tooling import ToolListing
from ai_agent.state import ToolResult
from ai_agent.tools.spec import ToolSpec

if TYPE_CHECKING:
    from ai_agent.tools.maker import (
        BuildRecord,
        BuildResult,
        ToolBuildRequest,
        ToolsmakerRegistry,
    )

__all__ = ["Agent", "archive_method"]

P = ParamSpec("P")
R = TypeVar("R")


def archive_method(
    method: Callable[Concatenate[RunArchive, P], R],
) -> Callable[Concatenate[Any, P], R]:
    """A method of the Agent that is the archive's method of the same name.

    The Agent keeps the archive's signature, docstring and examples (``help(agent.history)``),
    and whether it is a coroutine function; the call goes to ``self.archive``.
    """
    name = method.__name__

    def call(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return cast(R, getattr(self.archive, name)(*args, **kwargs))

    async def call_async(self: Any, *args: P.args, **kwargs: P.kwargs) -> Any:
        return await getattr(self.archive, name)(*args, **kwargs)

    delegate: Any = call_async if inspect.iscoroutinefunction(method) else call
    return cast(Callable[Concatenate[Any, P], R], functools.update_wrapper(delegate, method))


class Agent(StreamingMixin, AgentCore):
    """Runs tasks through the nine-stage pipeline, pausing at the gate and resuming later.

    An Agent holds configuration and collaborators, never run data: every run lives in the
    checkpoint database under its thread id, so any Agent built the same way, in any process,
    can resume it. Use it as an async context manager (``async with Agent(...) as agent``) to
    keep the database, the model client and the MCP servers open across runs; without one,
    each call opens and closes what it needs.

    Everything about stored runs is the run archive's (``agent.archive``, a
    `ai_agent.graph.archive.RunArchive`): checkpoints and forks (``history``, ``fork``),
    ``replay``, the inspection helpers (``get_*``, ``timeline``), pictures (``run_report``,
    ``export_html``), ``prune``, and the plan queue served by workers (``submit_plan``,
    ``serve_plan``); the Agent's methods of those names are the archive's. Its tools are
    another collaborator (`ai_agent.graph.tooling.AgentTools`): MCP servers (``agent.mcp``),
    generated tools (the toolsmaker: ``build_dynamic_tool``, ``approve_dynamic_tool``,
    ``activate_tool_version``...), tool management (``register_tool``, ``call_tool``,
    ``tool_output``...). Streaming (``astream``) is a mixin over
    `ai_agent.graph.core.AgentCore`, which runs and resumes.

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
        compaction_strategy: A custom `CompactionStrategy` used
            instead of the configured one.
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
        toolsmaker_audit_path: The toolsmaker's audit log (default:
            ``toolsmaker_dir/audit.jsonl``).
        checkpointer: Any LangGraph checkpoint saver to hold the checkpoints instead of the
            engine's own; the run store (runs, leases, journal, recorded calls) stays at
            ``checkpoint_path`` / ``checkpoint_url``. Its owner opens and closes it. See the
            LangGraph compatibility guide for what it does not give.

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

    # The run archive (graph/archive.py): each method is the archive's -----------------------
    get_state = archive_method(RunArchive.get_state)
    """The latest checkpointed state of a run (`RunArchive.get_state`)."""
    get_result = archive_method(RunArchive.get_result)
    """The RunResult of a stored run, as it stands now (`RunArchive.get_result`)."""
    history = archive_method(RunArchive.history)
    """The run's checkpoints, oldest first; blocking (`RunArchive.history`)."""
    ahistory = archive_method(RunArchive.ahistory)
    """``history`` for async code (`RunArchive.ahistory`)."""
    fork = archive_method(RunArchive.fork)
    """Copy a run up to a checkpoint into a new thread; blocking (`RunArchive.fork`)."""
    afork = archive_method(RunArchive.afork)
    """Copy a run up to a checkpoint into a new thread, ready to resume (`RunArchive.afork`)."""
    get_system_prompt = archive_method(RunArchive.get_system_prompt)
    """The system prompt a run was sent (`RunArchive.get_system_prompt`)."""
    get_message_history = archive_method(RunArchive.get_message_history)
    """The conversation, oldest first (`RunArchive.get_message_history`)."""
    get_active_tools = archive_method(RunArchive.get_active_tools)
    """The tools the model is offered now (`RunArchive.get_active_tools`)."""
    get_agent_state = archive_method(RunArchive.get_agent_state)
    """Where a run stands (`RunArchive.get_agent_state`)."""
    get_context_state = archive_method(RunArchive.get_context_state)
    """What the next draft would send, and its tokens (`RunArchive.get_context_state`)."""
    get_token_usage = archive_method(RunArchive.get_token_usage)
    """A run's token totals and cost (`RunArchive.get_token_usage`)."""
    get_token_breakdown = archive_method(RunArchive.get_token_breakdown)
    """Tokens of the context by component and tool (`RunArchive.get_token_breakdown`)."""
    get_usage_history = archive_method(RunArchive.get_usage_history)
    """Token usage per model request (`RunArchive.get_usage_history`)."""
    get_cost_estimate = archive_method(RunArchive.get_cost_estimate)
    """A run's cost (`RunArchive.get_cost_estimate`)."""
    timeline = archive_method(RunArchive.timeline)
    """A run's trace as a timeline (`RunArchive.timeline`)."""
    get_execution_trace = archive_method(RunArchive.get_execution_trace)
    """The timeline and every tool call (`RunArchive.get_execution_trace`)."""
    run_report = archive_method(RunArchive.run_report)
    """Everything the HTML page shows about a run (`RunArchive.run_report`)."""
    export_html = archive_method(RunArchive.export_html)
    """Write a run's page (`RunArchive.export_html`)."""
    prune = archive_method(RunArchive.prune)
    """Delete old checkpoints and recorded calls (`RunArchive.prune`)."""
    replay = archive_method(RunArchive.replay)
    """Re-execute a stored run into a new thread, in a span of the tools (`RunArchive.replay`)."""
    submit_plan = archive_method(RunArchive.submit_plan)
    """Queue a plan for a paused run (`RunArchive.submit_plan`)."""
    list_plans = archive_method(RunArchive.list_plans)
    """Plans in the queue (`RunArchive.list_plans`)."""
    serve_plan = archive_method(RunArchive.serve_plan)
    """Serve one queued plan, in a span of the tools (`RunArchive.serve_plan`)."""

    def get_agent_usage(self) -> dict[str, Any]:
        """Totals of every model request this Agent made in this process, by thread and model."""
        tracker = self.usage_tracker
        return {
            "totals": dict(tracker.totals),
            "by_thread": {k: dict(v) for k, v in tracker.by_thread.items()},
            "by_model": {k: dict(v) for k, v in tracker.by_model.items()},
        }

    # Tool management (graph/tooling.py) ------------------------------------------------------
    def register_tool(
        self, tool: Any, *, activate: bool = True, replace: bool = False, **options: Any
    ) -> ToolSpec:
        """Add a tool to the catalog (any supported form); active in new runs by default.

        Args:
            tool: A ToolSpec, ``@tool`` function, BaseTool, pydantic model with ``__call__``,
                LangChain tool, or typed function with a docstring.
            activate: Make it active in runs started from now on. Runs already going see it in
                their catalog from their next cycle; a plan can activate it there.
            replace: Replace a tool of the same name.
            **options: ``name``, ``namespace``, ``category``, ``group``, ``description``,
                ``requires_env``, ``timeout``.

        Raises:
            ToolRegistrationError: the tool is invalid or its name is taken.

        Examples:
            >>> from ai_agent import Agent, tool
            >>> @tool(category="read_only")
            ... def shout(text: str) -> str:
            ...     '''Upper-case a text.'''
            ...     return text.upper()
            >>> agent = Agent(checkpoint_path=":memory:", memory_path=None)
            >>> agent.register_tool(shout, namespace="fun").name
            'fun.shout'
        """
        return self._tools.register(tool, activate=activate, replace=replace, **options)

    def unregister_tool(self, name: str) -> ToolSpec:
        """Remove a tool from the catalog (and from the tools new runs start with)."""
        return self._tools.unregister(name)

    def disable_tools(self, *selectors: str) -> list[str]:
        """Hide tools (names, groups, namespaces, globs) from runs without removing them."""
        return self.registry.disable(list(selectors))

    def enable_tools(self, *selectors: str) -> list[str]:
        """Show disabled tools to runs again."""
        return self.registry.enable(list(selectors))

    def tool_groups(self) -> dict[str, list[str]]:
        """Group name -> tool names."""
        return self.registry.groups()

    def list_tools(self, *, include_disabled: bool = True) -> list[ToolListing]:
        """The catalog with each tool's category, effective policy and state, sorted by name."""
        return self._tools.listing(include_disabled=include_disabled)

    async def call_tool(
        self, name: str, args: dict[str, Any] | None = None, *, approved: bool = False
    ) -> ToolResult:
        """Run one tool directly, under the same policy a run applies.

        The tools are opened for the call (an MCP tool starts its server first). Where a run
        would wait for a person, the call raises instead; see `ai_agent.graph.tooling`.

        Args:
            name: The tool's name (or its wire name).
            args: Its arguments.
            approved: A person approved this call (needed where a run would wait for one).

        Returns:
            The full ToolResult (never clipped), with ``execution_time_ms`` and ``summary``.

        Raises:
            UnknownToolError: no enabled tool has this name; nothing runs.
            ToolPolicyViolation: the category's policy is ``deny``.
            ApprovalRequiredError: the policy (or the tool, for this call) needs a person and
                ``approved`` is False outside unattended mode. The message shows the preview.

        Examples:
            >>> import asyncio
            >>> from ai_agent import Agent
            >>> agent = Agent(checkpoint_path=":memory:", memory_path=None)
            >>> result = asyncio.run(agent.call_tool("calculator", {"expression": "19.5% of 349"}))
            >>> result["content"], result["summary"]
            ('68.055', 'calculator: 68.055')
        """
        return await self._tools.call(name, args, approved=approved)

    async def tool_output(self, thread_id: str, ref: str) -> str:
        """The full text of a tool output that was clipped in a run (``out-<iter>-<call id>``).

        Raises:
            UnknownOutputError: the run kept no output under that reference.
        """
        record = await self.store.get_output(check_thread_id(thread_id), ref)
        if record is None:
            kept = await self.store.list_outputs(thread_id)
            listed = ", ".join(kept) if kept else "none"
            raise UnknownOutputError(
                f"run {thread_id} kept no output {ref!r}; kept outputs: {listed}"
            )
        return record["content"]

    # The toolsmaker (method names from its spec; see docs/toolsmaker.md) ----------------------
    @property
    def toolsmaker(self) -> ToolsmakerRegistry:
        """The `ai_agent.tools.maker.ToolsmakerRegistry` over this Agent's registry.

        Its options, ``toolsmaker_dir`` and ``toolsmaker_audit_path``, are arguments of the
        constructor. Nothing of it is imported before it is needed.
        """
        return self._tools.toolsmaker

    def set_tools(self, tools: Iterable[Any] | str) -> list[str]:
        """Replace the tools new runs start with.

        Args:
            tools: Catalog names, groups, namespaces or globs (a list, or one comma-separated
                string), and/or tools in any supported form (registered first, replacing a
                tool of the same name).

        Returns:
            The names new runs start with, in order.

        Raises:
            ConfigError: an unknown name, or an object that is not a tool.
        """
        return self._tools.set_initial(tools)

    def add_tool(self, tool: Any, **options: Any) -> ToolSpec:
        """Register a tool and make it active in new runs (``register_tool`` with activate).

        Args:
            tool: A tool in any supported form.
            **options: ``register_tool``'s options (``name``, ``namespace``, ``replace``...).

        Returns:
            Its ToolSpec.

        Raises:
            ToolRegistrationError: an invalid tool, or a name taken (without ``replace``).
        """
        return self.register_tool(tool, activate=True, **options)

    def remove_tool(self, name: str) -> ToolSpec:
        """Remove a tool from the catalog (``unregister_tool``).

        For a generated tool this only affects this Agent: its version stays active on disk
        (``rollback`` or a newer version changes that) and is loaded again by the next Agent.

        Args:
            name: The tool's name.

        Returns:
            The ToolSpec that was removed.

        Raises:
            UnknownToolError: no tool has this name.
        """
        return self.unregister_tool(name)

    def create_tool_build_request_from_intent(self, intent: Mapping[str, Any]) -> ToolBuildRequest:
        """A build request from a structured intent.

        Args:
            intent: ``name``, ``purpose``, ``inputs``, ``outputs``, ``capabilities``,
                ``allowed_paths``, ``allowed_domains``, ``secrets``, ``risk`` and optionally
                ``code``.

        Returns:
            The `ai_agent.tools.maker.ToolBuildRequest`.

        Raises:
            ToolBuildError: not a mapping, unknown fields, or no name or purpose.
        """
        return self.toolsmaker.request_from_intent(intent)

    def build_dynamic_tool(self, request: ToolBuildRequest) -> BuildResult:
        """Build, validate and prepare a tool version for review.

        Args:
            request: What to build.

        Returns:
            The result: ``approval_required`` with the review artifact when it passed
            validation (an identical earlier build is reused), ``draft`` when it did not.

        Raises:
            ToolBuildError: a name that cannot name files.
        """
        return self.toolsmaker.build(request)

    def build_dynamic_tool_from_intent(self, intent: Mapping[str, Any]) -> BuildResult:
        """`create_tool_build_request_from_intent` then `build_dynamic_tool`.

        Args:
            intent: The structured intent.

        Returns:
            The build's result.

        Raises:
            ToolBuildError: not an intent.

        Examples:
            >>> import tempfile, os
            >>> from ai_agent import Agent
            >>> d = tempfile.mkdtemp()
            >>> agent = Agent(checkpoint_path=":memory:", memory_path=None, workdir=d,
            ...               toolsmaker_dir=os.path.join(d, "tm"))
            >>> built = agent.build_dynamic_tool_from_intent(
            ...     {"name": "shout", "purpose": "Echo a text.", "inputs": {"text": "string"}})
            >>> built.status.value
            'approval_required'
            >>> _ = agent.approve_dynamic_tool("shout", 1)
            >>> agent.activate_tool_version("shout", 1).name
            'shout'
            >>> "shout" in agent.initial_tools
            True
        """
        return self.toolsmaker.build_from_intent(intent)

    def approve_dynamic_tool(self, name: str, version: int) -> BuildRecord:
        """A person approved this version (``approval_required -> approved``).

        Args:
            name: The tool.
            version: The version.

        Returns:
            The updated build record.

        Raises:
            UnknownToolError: no such version.
            ToolTransitionError: it is not waiting for approval.
        """
        return self.toolsmaker.approve(name, version)

    def reject_dynamic_tool(self, name: str, version: int, reason: str = "") -> BuildRecord:
        """A person rejected this version (``approval_required -> rejected``, final).

        Args:
            name: The tool.
            version: The version.
            reason: Why (kept in the record and the audit log).

        Returns:
            The updated build record.

        Raises:
            UnknownToolError: no such version.
            ToolTransitionError: it is not waiting for approval.
        """
        return self.toolsmaker.reject(name, version, reason=reason or "rejected")

    def activate_tool_version(
        self, name: str, version: int, max_output_chars: int | None = None
    ) -> ToolSpec:
        """Activate an approved version: registered now, callable from runs' next cycle.

        It becomes active in new runs; a run already going gets it in its catalog from its next
        cycle (a plan can activate it there).

        Args:
            name: The tool.
            version: An approved version.
            max_output_chars: Cap of its result text (None: the Agent's ``max_output_chars``).

        Returns:
            Its runtime ToolSpec.

        Raises:
            ToolTransitionError: the version is not approved.
            ToolPolicyViolation: its code changed on disk since the review.
            ToolBuildError: a static tool holds the name.
        """
        return self._tools.activate_version(name, version, max_output_chars)

    def rollback_tool(self, name: str, version: int | None = None) -> ToolSpec:
        """Make an earlier activated version of a generated tool active again.

        Args:
            name: The tool.
            version: The version to return to (None: the one activated before the active one).

        Returns:
            That version's runtime ToolSpec (active in new runs).

        Raises:
            ToolTransitionError: nothing to roll back to.
        """
        return self._tools.rollback(name, version)
