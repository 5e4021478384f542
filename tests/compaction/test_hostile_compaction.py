"""Compaction against what a model (or a long run) hands it: it keeps the order and the meaning.

A summary stands where what it summarizes happened, never before a person's plan that came
earlier; a summary the model makes enormous is cut, not dropped with everything it stood for;
protected messages (the task, the latest plan, system messages) are never cut to make room.
"""

from __future__ import annotations

from collections.abc import Sequence

from ai_agent.compaction import BUILTIN_STRATEGIES, Block, Compactor
from ai_agent.state import Message
from tests.compaction.test_compaction import (
    COUNTER,
    config,
    conversation,
    count,
    data,
    exchange,
    pairs_intact,
)


class NamingModel:
    """A ModelHelper whose summary names the first words of each block it summarizes."""

    def __init__(self, size: int = 0) -> None:
        self.size = size

    async def summarize(self, blocks: Sequence[Block]) -> str:
        names = " | ".join(
            b.messages[0]["content"][:22] or b.messages[-1]["content"][:9] for b in blocks
        )
        return f"[{names}]" + " padding" * self.size

    async def score(self, blocks: Sequence[Block]) -> list[float]:
        return [0.5] * len(blocks)


def _after_plan(messages: Sequence[Message]) -> list[str]:
    """The texts a summary placed after the plan names (or [] when no summary follows it)."""
    at = next(i for i, m in enumerate(messages) if m.get("kind") == "plan")
    return [m["content"] for m in messages[at:] if m.get("kind") == "summary"]


async def test_a_summary_never_moves_what_followed_a_plan_to_before_it() -> None:
    messages = conversation()  # the plan ("Use the backup data.") comes after step 3
    result = await BUILTIN_STRATEGIES["summarize_older"]().compact(
        data(messages, budget=450, recent=3, model=NamingModel())
    )
    plan = next(i for i, m in enumerate(result.messages) if m.get("kind") == "plan")
    before = " ".join(m["content"] for m in result.messages[:plan] if m.get("kind") == "summary")
    after = " ".join(_after_plan(result.messages))
    # Step 2's thoughts came before the plan, step 5's after it: each stays on its side.
    assert "thinking about step 2" in before and "thinking about step 2" not in after
    assert "thinking about step 5" in after and "thinking about step 5" not in before
    assert pairs_intact(result.messages)


async def test_hybrid_summaries_keep_the_order_too() -> None:
    messages = conversation()
    weights = {"sliding_window": 1.0, "summarize_older": 1.0}
    result = await BUILTIN_STRATEGIES["hybrid"]().compact(
        data(messages, budget=200, recent=3, model=NamingModel(), weights=weights)
    )
    assert "thinking about step 5" not in " ".join(
        m["content"]
        for m in result.messages[: [m.get("kind") for m in result.messages].index("plan")]
    )
    assert pairs_intact(result.messages)


async def test_an_enormous_summary_is_cut_to_fit_not_dropped() -> None:
    messages = conversation()
    compactor = Compactor(config(strategy="summarize_older", preserve_recent_turns=2), COUNTER)
    done = await compactor.compact(messages, fixed_tokens=0, iteration=1, model=NamingModel(5000))
    summaries = [m for m in done.messages if m.get("kind") == "summary"]
    assert summaries, "the summary and everything it stood for were dropped"
    assert all("[" in m["content"] for m in summaries)  # what the model wrote first is kept
    assert done.record["tokens_after"] <= 500
    assert "dropped" not in done.record["detail"]


async def test_a_protected_system_message_is_never_shortened() -> None:
    recall = Message(role="system", content="Context from earlier runs:\n" + "fact " * 420)
    messages = [
        recall,
        Message(role="user", content="task", kind="task"),
        Message(role="assistant", content="thinking " * 150),
    ]
    assert count(messages[:2]) < 500 < count(messages)
    compactor = Compactor(config(preserve_recent_turns=1), COUNTER)
    done = await compactor.compact(messages, fixed_tokens=0, iteration=1)
    assert done.messages[0] == recall
    assert done.messages[1]["kind"] == "task"
    assert done.record["tokens_after"] <= 500


async def test_compacting_twice_keeps_the_task_the_plan_and_the_pairs() -> None:
    compactor = Compactor(config(strategy="summarize_older", preserve_recent_turns=2), COUNTER)
    once = await compactor.compact(
        conversation(12), fixed_tokens=0, iteration=1, model=NamingModel()
    )
    grown = [*once.messages, *exchange(40), *exchange(41)]
    twice = await compactor.compact(grown, fixed_tokens=0, iteration=2, model=NamingModel())
    kinds = [m.get("kind") for m in twice.messages]
    assert kinds[0] == "task" and "plan" in kinds
    assert pairs_intact(twice.messages)
    assert twice.record["tokens_after"] <= 500
