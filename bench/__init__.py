"""The benchmark suite: every performance figure of the engine beside its baseline, in one run.

``uv run python -m bench`` runs it all (``--quick`` for a smaller run under a minute), prints a
table of ratios and writes ``bench-results/results.json`` and ``bench-results/growth.png``.
Each figure is measured against its baseline in the same process and run (LangGraph's
SqliteSaver, the same graph with no checkpointer, the tool function called bare, tiktoken on the
whole text), so the shared machine's noise largely cancels out of the ratios.
"""
