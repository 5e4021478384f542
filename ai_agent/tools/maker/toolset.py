"""GeneratedToolset: the active generated tools as one toolset.

The toolsmaker (`ai_agent.tools.maker.registry.ToolsmakerRegistry`) mounts one in the runtime
registry and puts each version it activates, rolls back to or loads at start-up there; the
registry's catalog then holds generated and static tools side by side, and a run pins both
per cycle. A generated tool never takes the name of a tool from another source (the toolsmaker
refuses it first).

Examples:
    >>> from ai_agent.tools import ToolRegistry, ToolSpec
    >>> generated = GeneratedToolset()
    >>> registry = ToolRegistry(toolsets=[generated])
    >>> _ = generated.add(ToolSpec("shout", lambda a, c: "HI", description="Shout."))
    >>> registry.owner("shout") is generated
    True
"""

from __future__ import annotations

from ai_agent.tools.toolsets.functions import FunctionToolset

__all__ = ["GeneratedToolset"]


class GeneratedToolset(FunctionToolset):
    """The runtime ToolSpecs of the active generated versions (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(name="generated")
