"""A run read with its own pipeline's channels, or without them and saying so.

A pipeline of the user's (`ai_agent.graph.pipeline`) stores state fields of its own and runs
nodes of its own; LangGraph keeps each in a channel of the checkpoint. Reading the run needs
the graph that has those channels: the engine's nine stages read the run's engine fields (its
status, trace, messages, answer) but not the rest. So ``show``, ``history`` and ``export``
take ``--pipeline`` as ``run`` and ``resume`` do; without it they still read the run, and
`UnreadChannels` names what they could not read (``RunDatabase.unread_channels``), so they can say ``--pipeline`` shows it.

Examples:
    >>> unread = UnreadChannels.of(["messages", "reviews", "branch:to:review"], {"messages"})
    >>> unread.note()
    "made by a pipeline of its own (node review; state field reviews), read here with the engine's stages: give its --pipeline MODULE:NAME to show them"
    >>> own_fields({"task": "t", "reviews": ["ok"]})
    {'reviews': ['ok']}
"""  # noqa: E501 - a doctest's output is one line

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ai_agent.state import STAGES, RunState

__all__ = ["ENGINE_CHANNELS", "UnreadChannels", "own_fields"]

# LangGraph's channel that triggers a node; the rest of its own channels start with "__".
_NODE = "branch:to:"
_ENGINE_FIELDS = frozenset(RunState.__annotations__)

ENGINE_CHANNELS = _ENGINE_FIELDS | {_NODE + stage for stage in STAGES}
"""The channels of the engine's own pipeline that `UnreadChannels` looks at: its state fields
and its stages' triggers (``tests/graph/test_stored_state.py`` holds them to the compiled
graph's)."""


def own_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """The run state's fields that are a pipeline's own (not the engine's), in their order."""
    return {k: v for k, v in values.items() if k not in _ENGINE_FIELDS}


@dataclass(frozen=True, slots=True)
class UnreadChannels:
    """The nodes and state fields of a run that the graph reading it does not have."""

    nodes: tuple[str, ...]
    fields: tuple[str, ...]

    @classmethod
    def of(cls, stored: Iterable[str], known: Collection[str]) -> UnreadChannels | None:
        """What of the ``stored`` channels is not ``known``; None when nothing is."""
        nodes, fields = [], []
        for name in sorted(set(stored) - set(known)):
            if name.startswith(_NODE):
                nodes.append(name.removeprefix(_NODE))
            elif ":" not in name and not name.startswith("__"):
                fields.append(name)
        return cls(tuple(nodes), tuple(fields)) if nodes or fields else None

    def note(self) -> str:
        """The line a reader prints: what it could not read, and how to read it."""
        parts = [
            f"{what}{'s' if len(names) > 1 else ''} {', '.join(names)}"
            for what, names in (("node", self.nodes), ("state field", self.fields))
            if names
        ]
        return (
            f"made by a pipeline of its own ({'; '.join(parts)}), read here with the engine's "
            "stages: give its --pipeline MODULE:NAME to show them"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON data (``--json``, the HTML export)."""
        return {"nodes": list(self.nodes), "fields": list(self.fields), "note": self.note()}
