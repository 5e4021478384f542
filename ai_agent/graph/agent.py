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

from ai_agent.graph.core import AgentCore
from ai_agent.graph.export import ExportMixin
from ai_agent.graph.history import HistoryMixin
from ai_agent.graph.inspection import InspectionMixin
from ai_agent.graph.prune import PruneMixin
from ai_agent.graph.replay import ReplayMixin
from ai_agent.graph.streaming import StreamingMixin
from ai_agent.graph.tools_mixin import ToolsMixin
from ai_agent.graph.toolsmaker_mixin import ToolsmakerMixin
from ai_agent.graph.worker import WorkerMixin

__all__ = ["Agent"]


class Agent(
    ToolsmakerMixin,
    ToolsMixin,
    WorkerMixin,
    StreamingMixin,
    ExportMixin,
    InspectionMixin,
    ReplayMixin,
    HistoryMixin,
    PruneMixin,
    AgentCore,
):
    """Runs tasks through the nine-stage pipeline, pausing at the gate and resuming later.

    An Agent holds configuration and collaborators, never run data: every run lives in the
    checkpoint database under its thread id, so any Agent built the same way, in any process,
    can resume it. Use it as an async context manager (``async with Agent(...) as agent``) to
    keep the database, the model client and the MCP servers open across runs; without one,
    each call opens and closes what it needs.

    The methods come from feature mixins over `ai_agent.graph.core.AgentCore`: MCP servers
    (``agent.mcp``), generated tools (the toolsmaker: ``build_dynamic_tool``,
    ``approve_dynamic_tool``, ``activate_tool_version``...), tool management
    (``register_tool``, ``call_tool``, ``tool_output``...),
    checkpoints and forks (``history``, ``fork``), ``replay``, the inspection helpers (``get_*``,
    ``timeline``), pictures (``run_report``, ``export_html``), ``prune``, and the plan queue
    served by workers (``submit_plan``).

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
            settings' ``mcp_servers``; each is a toolset whose tools join the catalog when it
            starts (see `ai_agent.tools.mcp` and docs/mcp.md).
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
