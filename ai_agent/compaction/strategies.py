"""The five built-in compaction strategies (spec 5.7.2).

Each removes or summarizes *candidate* blocks only (see `ai_agent.compaction.base`), oldest
or least useful first, until the conversation fits its budget. A strategy that cannot reach the
budget on its own leaves the rest to the compactor, which then drops the oldest candidates and,
as a last resort, shortens oversized tool results.

Examples:
    >>> sorted(BUILTIN_STRATEGIES)
    ['hybrid', 'importance_scoring', 'selective_pruning', 'sliding_window', 'summarize_older']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ai_agent.compaction.base import Block, CompactionInput, CompactionResult, CompactionStrategy
from ai_agent.errors import AgentError
from ai_agent.state import Message

__all__ = [
    "BUILTIN_STRATEGIES",
    "Hybrid",
    "ImportanceScoring",
    "SelectivePruning",
    "SlidingWindow",
    "SummarizeOlder",
    "summary_message",
]

SUMMARY_PREFIX = "Summary of the earlier conversation (compacted):\n"
_SUMMARY_CUT = " [... the rest of this summary was cut by compaction]"
_CUT_TOKENS = 16  # the cut mark, and a margin for the estimate


def summary_message(text: str) -> Message:
    """The message that stands in for summarized blocks."""
    return Message(role="user", content=SUMMARY_PREFIX + text.strip(), kind="summary")


class SlidingWindow:
    """Drop the oldest candidate blocks until the conversation fits."""

    name = "sliding_window"

    async def compact(self, data: CompactionInput) -> CompactionResult:
        """Drop oldest first."""
        drop = data.drop_until_fits(data.candidates)
        return CompactionResult(data.assemble(drop), removed=len(drop))


class SelectivePruning:
    """Drop completed tool call/result pairs, oldest first; other messages stay."""

    name = "selective_pruning"

    async def compact(self, data: CompactionInput) -> CompactionResult:
        """Drop finished tool exchanges."""
        pairs = [b for b in data.candidates if b.tool_pair]
        drop = data.drop_until_fits(pairs)
        return CompactionResult(
            data.assemble(drop), removed=len(drop), detail=f"{len(drop)} tool exchange(s)"
        )


class SummarizeOlder:
    """Summarize every candidate block into one message; recent blocks stay verbatim.

    Without a model (or when the model fails) it falls back to dropping the oldest blocks.
    """

    name = "summarize_older"

    async def compact(self, data: CompactionInput) -> CompactionResult:
        """Replace the older blocks with a model-written summary."""
        older = data.candidates
        if not older:
            return CompactionResult(data.assemble(set()))
        drop = {b.index for b in older}
        summaries = await _summaries(data, drop)
        if summaries is None:
            result = await SlidingWindow().compact(data)
            result.detail = "no summary (model unavailable); dropped the oldest blocks"
            return result
        return CompactionResult(
            data.assemble(drop, summaries=summaries),
            summarized=sum(len(b.messages) for b in older),
            detail=f"summarized {len(older)} block(s){_in(summaries)}",
        )


class ImportanceScoring:
    """The model scores each candidate block; the lowest scored go first.

    Without usable scores (no model, a failed call, an unreadable answer) the oldest go first.
    """

    name = "importance_scoring"

    async def compact(self, data: CompactionInput) -> CompactionResult:
        """Drop what the model finds least important."""
        candidates = data.candidates
        scores = await _scores(data, candidates)
        detail = "model scores" if scores is not None else "no scores; oldest first"
        ranked = _rank(candidates, scores or _recency(candidates))
        drop = data.drop_until_fits(ranked)
        return CompactionResult(data.assemble(drop), removed=len(drop), detail=detail)


class Hybrid:
    """A weighted mix: recency, tool-pair pruning and model importance rank the candidates.

    Each candidate gets ``sum(weight * score)`` over the weighted components, every score in
    0..1: ``sliding_window`` (newer is higher), ``selective_pruning`` (0 for a completed tool
    exchange, 1 otherwise) and ``importance_scoring`` (the model's score; asked only when
    weighted). The lowest go first until the conversation fits. When ``summarize_older`` has a
    weight, what goes is summarized into one message instead of dropped.
    """

    name = "hybrid"

    async def compact(self, data: CompactionInput) -> CompactionResult:
        """Rank by the weighted scores; drop or summarize the lowest."""
        weights, candidates = data.weights, data.candidates
        components = {
            "sliding_window": _recency(candidates),
            "selective_pruning": [0.0 if b.tool_pair else 1.0 for b in candidates],
        }
        if weights.get("importance_scoring", 0) > 0:
            scores = await _scores(data, candidates)
            components["importance_scoring"] = scores or _recency(candidates)
        total = [
            sum(weights.get(name, 0.0) * values[i] for name, values in components.items())
            for i in range(len(candidates))
        ]
        ranked = _rank(candidates, total)
        if weights.get("summarize_older", 0) <= 0:
            drop = data.drop_until_fits(ranked)
            return CompactionResult(data.assemble(drop), removed=len(drop), detail="weighted")
        return await _summarize_ranked(data, ranked)


async def _summarize_ranked(data: CompactionInput, ranked: list[Block]) -> CompactionResult:
    # Leave room for the summary itself: assume it may take up to a tenth of the budget.
    drop = data.drop_until_fits(ranked, extra_tokens=max(1, data.budget // 10))
    gone = [b for b in data.blocks if b.index in drop]
    summaries = await _summaries(data, drop) if gone else None
    if summaries is None:
        return CompactionResult(data.assemble(drop), removed=len(drop), detail="weighted")
    return CompactionResult(
        data.assemble(drop, summaries=summaries),
        summarized=sum(len(b.messages) for b in gone),
        detail=f"weighted; summarized {len(gone)} block(s){_in(summaries)}",
    )


def _recency(blocks: Sequence[Block]) -> list[float]:
    """0 for the oldest candidate, 1 for the newest."""
    if len(blocks) < 2:
        return [1.0] * len(blocks)
    last = len(blocks) - 1
    return [i / last for i in range(len(blocks))]


def _rank(blocks: Sequence[Block], scores: Sequence[float]) -> list[Block]:
    """Lowest score first; ties go oldest first."""
    order = sorted(range(len(blocks)), key=lambda i: (scores[i], i))
    return [blocks[i] for i in order]


async def _summaries(data: CompactionInput, drop: set[int]) -> dict[int, Message] | None:
    """A summary of each run of the ``drop`` blocks (`CompactionInput.runs`), by its first block.

    Each run is summarized on its own, so a summary stands where what it tells happened; the
    runs are split by kept blocks only (the task, the latest plan, what a ranking kept), a few
    model calls at most for ``summarize_older``. Each summary gets its share of the room the
    kept blocks leave, and is cut to it (`_fitted`). None when any summary is missing (no
    model, a failed call, an empty answer): the caller then drops instead.
    """
    runs = data.runs(drop)
    if data.model is None or not runs:
        return None
    kept = sum(b.tokens for b in data.blocks if b.index not in drop)
    share = (data.budget - kept) // len(runs)
    out: dict[int, Message] = {}
    for run in runs:
        try:
            text = await data.model.summarize(run)
        except AgentError:
            return None
        if not text.strip():
            return None
        out[run[0].index] = _fitted(data, summary_message(text), share)
    return out


def _fitted(data: CompactionInput, summary: Message, room: int) -> Message:
    """``summary`` cut to ``room`` tokens (its head kept, marked) when the model made it longer.

    A summary over the budget would be the oldest block the compactor drops next, taking with
    it everything it stood for while the record says it was summarized. When the room cannot
    hold even the head of it, it is left whole for the compactor to decide.
    """
    for _ in range(4):  # the cut is estimated from the text's own characters per token
        tokens = data.count([summary])
        if tokens <= room:
            return summary
        content = summary["content"]
        keep = int(len(content) * max(0, room - _CUT_TOKENS) / tokens)
        if keep <= len(SUMMARY_PREFIX):
            return summary
        summary = Message(**{**summary, "content": content[:keep] + _SUMMARY_CUT})
    return summary


def _in(summaries: Mapping[int, Message]) -> str:
    """What a record's detail adds when the summaries are several (runs around kept blocks)."""
    return f" in {len(summaries)} summaries" if len(summaries) > 1 else ""


async def _scores(data: CompactionInput, blocks: Sequence[Block]) -> list[float] | None:
    if data.model is None or not blocks:
        return None
    try:
        scores = await data.model.score(blocks)
    except AgentError:
        return None
    return scores if len(scores) == len(blocks) else None


BUILTIN_STRATEGIES: dict[str, Callable[[], CompactionStrategy]] = {
    "sliding_window": SlidingWindow,
    "summarize_older": SummarizeOlder,
    "selective_pruning": SelectivePruning,
    "importance_scoring": ImportanceScoring,
    "hybrid": Hybrid,
}
