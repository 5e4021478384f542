"""The compaction plugin interface: blocks, the strategy protocol, and what a strategy returns.

A conversation is cut into *blocks* before any strategy sees it: an assistant message that calls
tools is one block with all of its tool results, so no strategy can keep a call and drop its
result (or the reverse), which would make the next request invalid. Every other message is a
block of its own.

Some blocks are *protected* and always kept verbatim: the task (``kind="task"``), the latest
plan from the gate (``kind="plan"``) and, with ``preserve_system_prompt``, any system message in
the conversation. The run's system prompt is not in the conversation at all (it is added on
every request), so it is always kept. The last ``preserve_recent_turns`` blocks are
*recent* and kept too. What is left are the *candidates* a strategy may drop or summarize.

A custom strategy is any object with a ``name`` and an async ``compact(data)``:

Examples:
    >>> class DropAll:
    ...     name = "drop_all"
    ...     async def compact(self, data):
    ...         drop = {b.index for b in data.candidates}
    ...         return CompactionResult(data.assemble(drop), removed=len(drop))
    >>> isinstance(DropAll(), CompactionStrategy)
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ai_agent.state import Message

__all__ = [
    "Block",
    "CompactionInput",
    "CompactionResult",
    "CompactionStrategy",
    "ModelHelper",
    "split_blocks",
]


@dataclass(frozen=True, slots=True)
class Block:
    """Messages that stay or go together.

    Attributes:
        index: Position among the blocks, oldest first.
        messages: The messages, in order.
        tokens: Their token count.
        protected: The task or the latest plan: never removed.
        tool_pair: A completed tool call with its results.
    """

    index: int
    messages: tuple[Message, ...]
    tokens: int
    protected: bool = False
    tool_pair: bool = False

    @property
    def text(self) -> str:
        """A readable rendering, for summaries and scoring."""
        return "\n".join(render(m) for m in self.messages)


def render(message: Message, limit: int = 2000) -> str:
    """One message as a line of text, cut to ``limit`` characters."""
    content = message.get("content") or ""
    if message["role"] == "tool":
        line = f"result of {message.get('name') or 'tool'}: {content}"
    else:
        line = f"{message['role']}: {content}"
        calls = message.get("tool_calls") or []
        if calls:
            line += " " + "; ".join(f"called {c['name']}({c['args']})" for c in calls)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def split_blocks(
    messages: Sequence[Message],
    count: Callable[[Sequence[Message]], int],
    *,
    protect_system: bool = True,
) -> list[Block]:
    """Cut a conversation into blocks; tool calls and their results stay together.

    The task, the latest plan and (with ``protect_system``) system messages are protected.
    """
    latest_plan = max((i for i, m in enumerate(messages) if m.get("kind") == "plan"), default=-1)
    groups: list[tuple[list[Message], bool, bool]] = []
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        joins = message["role"] == "tool" and message.get("tool_call_id") in open_calls
        if joins:
            groups[-1][0].append(message)
            open_calls.discard(message.get("tool_call_id", ""))
            continue
        calls = message.get("tool_calls") or []
        open_calls = {c["id"] for c in calls}
        protected = (
            message.get("kind") == "task"
            or i == latest_plan
            or (protect_system and message["role"] == "system")
        )
        groups.append(([message], protected, bool(calls)))
    return [
        Block(index=n, messages=tuple(ms), tokens=count(ms), protected=p, tool_pair=t)
        for n, (ms, p, t) in enumerate(groups)
    ]


class ModelHelper(Protocol):
    """What strategies may ask of a model: a summary, or importance scores."""

    async def summarize(self, blocks: Sequence[Block]) -> str:
        """One summary of the blocks, written by the model."""

    async def score(self, blocks: Sequence[Block]) -> list[float]:
        """The importance of each block, 0 to 10, by the model."""


@dataclass
class CompactionInput:
    """What a strategy works on.

    Attributes:
        blocks: The whole conversation, in blocks, oldest first.
        budget: Tokens the conversation may use (the target minus the system prompt and tools).
        recent: How many trailing blocks are kept verbatim.
        count: Token count of a list of messages.
        model: Summaries and scores from a model; None when no model is available.
        weights: The hybrid strategy's weights.
    """

    blocks: list[Block]
    budget: int
    recent: int
    count: Callable[[Sequence[Message]], int]
    model: ModelHelper | None = None
    weights: dict[str, float] = field(default_factory=dict)

    @property
    def candidates(self) -> list[Block]:
        """Blocks a strategy may remove: not protected, not among the recent ones."""
        cut = max(0, len(self.blocks) - self.recent)
        return [b for b in self.blocks[:cut] if not b.protected]

    @property
    def tokens(self) -> int:
        """Tokens of the whole conversation as it stands."""
        return sum(b.tokens for b in self.blocks)

    def assemble(
        self,
        drop: set[int],
        summary: Message | None = None,
        *,
        summaries: Mapping[int, Message] | None = None,
    ) -> list[Message]:
        """The conversation without the ``drop`` blocks; a summary takes the first one's place.

        ``summaries`` maps the first block of each run of dropped blocks (`runs`) to the summary
        of that run, which takes its place: each summary then stands where what it tells
        happened, between the same kept messages.
        """
        out: list[Message] = []
        placed = summary is None
        for block in self.blocks:
            if block.index in drop:
                if summaries is not None and block.index in summaries:
                    out.append(summaries[block.index])
                elif not placed and summary is not None:
                    out.append(summary)
                    placed = True
                continue
            out.extend(block.messages)
        return out

    def runs(self, drop: set[int]) -> list[list[Block]]:
        """The ``drop`` blocks in runs that no kept block separates, oldest first.

        One summary of blocks on both sides of a kept one (the latest plan, a message the
        ranking kept) would tell the model that what followed it came before it.
        """
        out: list[list[Block]] = []
        current: list[Block] = []
        for block in self.blocks:
            if block.index in drop:
                current.append(block)
            elif current:
                out.append(current)
                current = []
        if current:
            out.append(current)
        return out

    def drop_until_fits(self, order: Sequence[Block], extra_tokens: int = 0) -> set[int]:
        """Blocks from ``order`` to drop, first to last, until the rest fits the budget.

        None when dropping them all would still leave the conversation over the budget (the
        blocks that stay, a long plan say, are over it on their own): a dropped block is gone
        from the run for good, so it is not dropped for nothing.
        """
        total = self.tokens + extra_tokens
        if total - sum(b.tokens for b in order) > self.budget:
            return set()
        drop: set[int] = set()
        for block in order:
            if total <= self.budget:
                break
            drop.add(block.index)
            total -= block.tokens
        return drop


@dataclass
class CompactionResult:
    """A strategy's output: the new conversation and what it did."""

    messages: list[Message]
    removed: int = 0
    summarized: int = 0
    detail: str = ""


@runtime_checkable
class CompactionStrategy(Protocol):
    """A way to shrink a conversation. ``name`` is recorded in the compaction history."""

    name: str

    async def compact(self, data: CompactionInput) -> CompactionResult:
        """Shrink the conversation toward ``data.target``; say what was removed."""
