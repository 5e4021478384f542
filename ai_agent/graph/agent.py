"""The Agent: runs, pauses and resumes tasks; composed from the core and its feature mixins.

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

from typing import Any

from ai_agent.graph.archive import RunArchive
from ai_agent.graph.core import AgentCore
from ai_agent.graph.driving import archive_method
from ai_agent.graph.mcp_mixin import McpMixin
from ai_agent.graph.streaming import StreamingMixin
from ai_agent.graph.tools_mixin import ToolsMixin
from ai_agent.graph.toolsmaker_mixin import ToolsmakerMixin

__all__ = ["Agent"]


class Agent(McpMixin, ToolsmakerMixin, ToolsMixin, StreamingMixin, AgentCore):
    """Runs tasks through the nine-stage pipeline, pausing at the gate and resuming later.

    An Agent holds configuration and collaborators, never run data: every run lives in the
    checkpoint database under its thread id, so any Agent built the same way, in any process,
    can resume it. Use it as an async context manager (``async with Agent(...) as agent``) to
    keep the database, the model client and the MCP servers open across runs; without one,
    each call opens and closes what it needs.

    Everything about stored runs is the run archive's (``agent.archive``, a
    `ai_agent.graph.archive.RunArchive`): checkpoints and forks (``history``, ``fork``),
    ``replay``, the inspection helpers (``get_*``, ``timeline``), pictures (``run_report``,
    ``export_html``), ``prune``, and the plan queue served by workers (``submit_plan``); the
    Agent's methods of those names are the archive's. The other methods come from feature
    mixins over `ai_agent.graph.core.AgentCore`: MCP servers (``agent.mcp``), generated tools
    (the toolsmaker: ``build_dynamic_tool``, ``approve_dynamic_tool``,
    ``activate_tool_version``...), tool management (``register_tool``, ``call_tool``,
    ``tool_output``...) and streaming (``astream``).

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
            settings' ``mcp_servers``; their tools join the catalog when they start (see
            `ai_agent.graph.mcp_mixin`).
        mcp_config: A YAML, JSON or TOML file of MCP servers (or a list of them), read now.
        toolsmaker_dir: Where generated tools are kept (default: the settings'
            ``tool_config.toolsmaker.dir``, ``.agents/toolsmaker``).
        toolsmaker_audit_path: The toolsmaker's audit log (default:
            ``toolsmaker_dir/audit.jsonl``).

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
    submit_plan = archive_method(RunArchive.submit_plan)
    """Queue a plan for a paused run (`RunArchive.submit_plan`)."""
    list_plans = archive_method(RunArchive.list_plans)
    """Plans in the queue (`RunArchive.list_plans`)."""

    def get_agent_usage(self) -> dict[str, Any]:
        """Totals of every model request this Agent made in this process, by thread and model."""
        tracker = self.usage_tracker
        return {
            "totals": dict(tracker.totals),
            "by_thread": {k: dict(v) for k, v in tracker.by_thread.items()},
            "by_model": {k: dict(v) for k, v in tracker.by_model.items()},
        }
