"""The Agent: runs, pauses and resumes tasks; composed from the core and its feature mixins.

Example:
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
from ai_agent.graph.mcp_mixin import McpMixin
from ai_agent.graph.prune import PruneMixin
from ai_agent.graph.replay import ReplayMixin
from ai_agent.graph.streaming import StreamingMixin
from ai_agent.graph.tools_mixin import ToolsMixin
from ai_agent.graph.toolsmaker_mixin import ToolsmakerMixin
from ai_agent.graph.worker import WorkerMixin

__all__ = ["Agent"]


class Agent(
    McpMixin,
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

    See :class:`ai_agent.graph.core.AgentCore` for the constructor's arguments. Feature mixins
    are listed before the core in the bases: MCP servers (``agent.mcp``), generated tools (the
    toolsmaker: ``build_dynamic_tool``, ``approve_dynamic_tool``, ``activate_tool_version``...;
    options ``toolsmaker_dir`` and ``toolsmaker_audit_path``), tool management
    (``register_tool``, ``call_tool``, ``tool_output``...), checkpoints and forks (``history``,
    ``fork``), ``replay``, the inspection helpers (``get_*``, ``timeline``), pictures
    (``run_report``, ``export_html``), ``prune``, and the plan queue served by workers
    (``submit_plan``); each builds on the ones after it.
    """
