"""The pipeline for LangGraph's own tools: ``langgraph dev``, LangGraph Studio, the Agent Server.

``langgraph.json`` at the project's root names `graph`. It is compiled without a checkpointer
because the server brings its own. Studio draws the nine stages and their input, output and state
schemas from it. A run needs the engine's context (the model, the tools, the hooks and the run
store travel in `ai_agent.context.RunContext`, not in state), so runs start through
`ai_agent.Agent` or the CLI, not from Studio's input form. That context is collaborators, not
JSON, so it has no JSON schema: the server is told there is no context schema (with one, its
``/schemas`` endpoint fails as a whole).
"""

from __future__ import annotations

from ai_agent.graph.build import build_graph

__all__ = ["graph"]

graph = build_graph().copy(update={"context_schema": None})
