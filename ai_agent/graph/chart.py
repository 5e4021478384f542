"""The engine's pipeline as LangGraph draws it in Mermaid, kept as text.

Drawing it takes the compiled graph, and compiling imports LangGraph's runtime and LangChain: a
second, where ``ai-agent export`` and ``ai-agent graph`` have a quarter of one. The pipeline's
nodes and edges change only with the code, so the drawing is kept here, and
``tests/graph/test_stored_state.py`` holds it equal to ``build_graph().get_graph().draw_mermaid()``.
"""

from __future__ import annotations

__all__ = ["PIPELINE_MERMAID"]

PIPELINE_MERMAID = """---
config:
  flowchart:
    curve: linear
---
graph TD;
\t__start__([<p>__start__</p>]):::first
\trecall(recall)
\tdraft(draft)
\tdecide(decide)
\tdiscover(discover)
\tact(act)
\treflect(reflect)
\tgate(gate)
\tfinalize(finalize)
\tpersist(persist)
\t__end__([<p>__end__</p>]):::last
\t__start__ --> recall;
\tact --> reflect;
\tdecide -.-> discover;
\tdecide -.-> finalize;
\tdiscover --> act;
\tdraft -.-> decide;
\tdraft -.-> gate;
\tfinalize -.-> gate;
\tfinalize -.-> persist;
\tgate -.-> act;
\tgate -.-> draft;
\tgate -.-> finalize;
\trecall --> draft;
\treflect --> gate;
\tpersist --> __end__;
\tclassDef default fill:#f2f0ff,line-height:1.2
\tclassDef first fill-opacity:0
\tclassDef last fill:#bfb6fc
"""
