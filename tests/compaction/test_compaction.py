"""Compaction: blocks, the five strategies, custom strategies, and the compactor's guarantees."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import pytest

from ai_agent.compaction import (
    BUILTIN_STRATEGIES,
    Block,
    CompactionInput,
    CompactionResult,
    Compactor,
    ModelCallerHelper,
    parse_scores,
    split_blocks,
)
from ai_agent.config import CompactionConfig
from ai_agent.context import ModelReply
from ai_agent.errors import ConfigError, ModelUnavailableError
from ai_agent.models import ChatModelCaller
from ai_agent.state import Message
from ai_agent.testing import FunctionModel
from ai_agent.tokens import TokenCounter

COUNTER = TokenCounter()


def count(messages: Sequence[Message]) -> int:
    return sum(COUNTER.count_message(m) for m in messages)


def exchange(i: int, size: int = 30) -> list[Message]:
    """One tool round: the call and its result."""
    call_id = f"c{i}"
    return [
        Message(
            role="assistant",
            content="",
            tool_calls=[{"id": call_id, "name": "search", "args": {"q": f"query {i}"}}],
        ),
        Message(
            role="tool",
            content=f"result {i} " + "data " * size,
            tool_call_id=call_id,
            name="search",
        ),
    ]


def conversation(rounds: int = 8, size: int = 30) -> list[Message]:
    out = [Message(role="user", content="Find the answer.", kind="task")]
    for i in range(rounds):
        out += exchange(i, size)
        if i == 3:
            out.append(Message(role="user", content="Use the backup data.", kind="plan"))
        out.append(Message(role="assistant", content=f"thinking about step {i} " * 3))
    return out


class FakeModel:
    """A ModelHelper that writes fixed summaries and scores, and counts the requests."""

    def __init__(self, scores: list[float] | None = None, fail: bool = False) -> None:
        self.scores, self.fail = scores, fail
        self.summarized: list[list[Block]] = []

    async def summarize(self, blocks: Sequence[Block]) -> str:
        if self.fail:
            raise ModelUnavailableError("down")
        self.summarized.append(list(blocks))
        return f"{len(blocks)} earlier steps searched for data."

    async def score(self, blocks: Sequence[Block]) -> list[float]:
        if self.fail:
            raise ModelUnavailableError("down")
        return self.scores if self.scores is not None else [0.5] * len(blocks)


def pairs_intact(messages: Sequence[Message]) -> bool:
    """Every tool result follows its call, and every call has its result."""
    open_ids: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            if m.get("tool_call_id") not in open_ids:
                return False
            open_ids.discard(m.get("tool_call_id", ""))
        else:
            if open_ids:
                return False
            open_ids = {c["id"] for c in m.get("tool_calls", [])}
    return not open_ids


def data(messages: list[Message], budget: int, recent: int = 2, **kw: Any) -> CompactionInput:
    return CompactionInput(split_blocks(messages, count), budget, recent, count, **kw)


# Blocks ------------------------------------------------------------------------------------------


def test_blocks_keep_each_call_with_its_results_and_mark_protected_ones() -> None:
    messages = conversation(rounds=5)
    blocks = split_blocks(messages, count)
    assert [m for b in blocks for m in b.messages] == messages
    pairs = [b for b in blocks if b.tool_pair]
    assert len(pairs) == 5
    assert all(len(b.messages) == 2 for b in pairs)
    protected = [b.messages[0].get("kind") for b in blocks if b.protected]
    assert protected == ["task", "plan"]


def test_only_the_latest_plan_is_protected() -> None:
    messages = [
        Message(role="user", content="t", kind="task"),
        Message(role="user", content="old plan", kind="plan"),
        Message(role="assistant", content="ok"),
        Message(role="user", content="new plan", kind="plan"),
    ]
    blocks = split_blocks(messages, count)
    assert [b.protected for b in blocks] == [True, False, False, True]


def test_a_call_with_several_results_is_one_block() -> None:
    messages = [
        Message(
            role="assistant",
            content="",
            tool_calls=[
                {"id": "a", "name": "x", "args": {}},
                {"id": "b", "name": "y", "args": {}},
            ],
        ),
        Message(role="tool", content="1", tool_call_id="a"),
        Message(role="tool", content="2", tool_call_id="b"),
        Message(role="tool", content="orphan", tool_call_id="zzz"),
    ]
    blocks = split_blocks(messages, count)
    assert [len(b.messages) for b in blocks] == [3, 1]


# Strategies --------------------------------------------------------------------------------------


async def test_sliding_window_drops_the_oldest_and_keeps_task_plan_and_recent() -> None:
    messages = conversation()
    result = await BUILTIN_STRATEGIES["sliding_window"]().compact(data(messages, budget=400))
    assert count(result.messages) <= 400
    assert result.messages[0]["kind"] == "task"
    assert any(m.get("kind") == "plan" for m in result.messages)
    assert result.messages[-3:] == messages[-3:]
    assert pairs_intact(result.messages)
    assert result.removed > 0


async def test_selective_pruning_removes_only_finished_tool_exchanges() -> None:
    messages = conversation()
    result = await BUILTIN_STRATEGIES["selective_pruning"]().compact(data(messages, budget=500))
    kept_prose = [
        m for m in result.messages if m["role"] == "assistant" and not m.get("tool_calls")
    ]
    all_prose = [m for m in messages if m["role"] == "assistant" and not m.get("tool_calls")]
    assert kept_prose == all_prose
    assert len([m for m in result.messages if m["role"] == "tool"]) < 8
    assert "tool exchange" in result.detail
    assert pairs_intact(result.messages)


async def test_summarize_older_replaces_the_older_blocks_with_one_summary_per_run() -> None:
    messages = conversation()
    model = FakeModel()
    result = await BUILTIN_STRATEGIES["summarize_older"]().compact(
        data(messages, budget=450, recent=3, model=model)
    )
    summaries = [m for m in result.messages if m.get("kind") == "summary"]
    # The older blocks before the plan and those after it: one summary each, on its side.
    assert len(summaries) == 2
    assert all(s["content"].endswith("earlier steps searched for data.") for s in summaries)
    assert result.messages.index(summaries[0]) == 1  # right after the task
    assert result.messages.index(summaries[1]) == 3  # right after the plan
    assert result.messages[-3:] == messages[-3:]
    assert result.summarized > 0
    assert "in 2 summaries" in result.detail
    assert not any(b.protected for b in model.summarized[0])


async def test_summarize_older_without_a_model_drops_the_oldest() -> None:
    result = await BUILTIN_STRATEGIES["summarize_older"]().compact(
        data(conversation(), budget=400, model=FakeModel(fail=True))
    )
    assert "no summary" in result.detail
    assert count(result.messages) <= 400
    assert not any(m.get("kind") == "summary" for m in result.messages)


async def test_summarize_older_with_nothing_old_changes_nothing() -> None:
    messages = conversation(rounds=1)
    result = await BUILTIN_STRATEGIES["summarize_older"]().compact(
        data(messages, budget=10, recent=50, model=FakeModel())
    )
    assert result.messages == messages


async def test_importance_scoring_drops_what_the_model_rates_lowest() -> None:
    messages = conversation(rounds=4)
    blocks = data(messages, budget=0, recent=1).candidates
    # Rate the newest candidate lowest: it must go first, even though it is the newest.
    scores = [1.0] * len(blocks)
    scores[-1] = 0.0
    target = count(messages) - blocks[-1].tokens
    result = await BUILTIN_STRATEGIES["importance_scoring"]().compact(
        data(messages, budget=target, recent=1, model=FakeModel(scores=scores))
    )
    assert result.removed == 1
    assert all(m not in result.messages for m in blocks[-1].messages)
    assert result.detail == "model scores"


async def test_importance_scoring_without_scores_goes_oldest_first() -> None:
    result = await BUILTIN_STRATEGIES["importance_scoring"]().compact(
        data(conversation(), budget=400, model=FakeModel(scores=[1.0]))  # wrong length
    )
    assert result.detail == "no scores; oldest first"
    assert count(result.messages) <= 400


async def test_hybrid_weighs_recency_and_tool_pairs() -> None:
    messages = conversation()
    weights = {"sliding_window": 0.2, "selective_pruning": 0.8}
    result = await BUILTIN_STRATEGIES["hybrid"]().compact(
        data(messages, budget=600, weights=weights)
    )
    # With pruning weighted high, tool exchanges go before the (older) prose.
    assert len([m for m in result.messages if m["role"] == "tool"]) < 8
    prose = [m for m in messages if m["role"] == "assistant" and not m.get("tool_calls")]
    assert prose[0] in result.messages
    assert pairs_intact(result.messages)


async def test_hybrid_with_summaries_and_model_scores() -> None:
    model = FakeModel()
    weights = {"sliding_window": 0.3, "summarize_older": 0.4, "importance_scoring": 0.3}
    result = await BUILTIN_STRATEGIES["hybrid"]().compact(
        data(conversation(), budget=500, model=model, weights=weights)
    )
    assert any(m.get("kind") == "summary" for m in result.messages)
    assert "summarized" in result.detail
    assert model.summarized


async def test_hybrid_summary_failure_still_drops() -> None:
    weights = {"summarize_older": 1.0}
    result = await BUILTIN_STRATEGIES["hybrid"]().compact(
        data(conversation(), budget=500, model=FakeModel(fail=True), weights=weights)
    )
    assert result.detail == "weighted"
    assert result.removed > 0


# The compactor ---------------------------------------------------------------------------------


def config(**kw: Any) -> CompactionConfig:
    base: dict[str, Any] = {
        "strategy": "sliding_window",
        "trigger_threshold_tokens": 800,
        "target_tokens": 500,
        "preserve_recent_turns": 3,
    }
    return CompactionConfig(**{**base, **kw})


@pytest.mark.parametrize("strategy", sorted(BUILTIN_STRATEGIES))
async def test_every_strategy_ends_under_the_target_with_pairs_intact(strategy: str) -> None:
    compactor = Compactor(config(strategy=strategy), COUNTER)
    messages = conversation(rounds=12)
    done = await compactor.compact(messages, fixed_tokens=60, iteration=9, model=FakeModel())
    record = done.record
    assert record["tokens_after"] <= 500
    assert record["tokens_before"] > record["tokens_after"]
    assert record["strategy"] == strategy
    assert (record["iteration"], record["target"]) == (9, 500)
    assert record["messages_before"] == len(messages)
    assert record["messages_after"] == len(done.messages)
    assert done.messages[0]["kind"] == "task"
    assert any(m.get("kind") == "plan" for m in done.messages)
    assert pairs_intact(done.messages)


def test_trigger() -> None:
    compactor = Compactor(config(), COUNTER)
    assert not compactor.should_compact(799)
    assert compactor.should_compact(800)


def test_a_known_context_window_lowers_trigger_and_target() -> None:
    compactor = Compactor(
        config(trigger_threshold_tokens=100_000, target_tokens=80_000),
        COUNTER,
        context_window=4096,
        reserve=512,
    )
    assert compactor.trigger == int(4096 / 1.05) - 512
    assert compactor.target == int(compactor.trigger * 0.8)


async def test_when_the_strategy_falls_short_the_recent_window_shrinks() -> None:
    compactor = Compactor(config(strategy="selective_pruning", preserve_recent_turns=20), COUNTER)
    done = await compactor.compact(conversation(rounds=10), fixed_tokens=0, iteration=1)
    assert done.record["tokens_after"] <= 500
    assert "more block(s) keeping" in done.record["detail"]


async def test_a_giant_tool_result_is_shortened_as_a_last_resort() -> None:
    messages = [
        Message(role="user", content="task", kind="task"),
        *exchange(0, size=2000),
    ]
    compactor = Compactor(config(preserve_recent_turns=1), COUNTER)
    done = await compactor.compact(messages, fixed_tokens=0, iteration=1)
    assert done.record["tokens_after"] <= 500
    assert "cut by compaction" in done.messages[-1]["content"]
    assert done.messages[-1]["content"].startswith("result 0")
    assert pairs_intact(done.messages)


async def test_protected_messages_alone_over_the_target_are_reported() -> None:
    messages = [Message(role="user", content="word " * 2000, kind="task")]
    done = await Compactor(config(), COUNTER).compact(messages, fixed_tokens=0, iteration=1)
    assert done.messages == messages
    assert "protected messages alone exceed the target" in done.record["detail"]


def over_the_target_plan(rounds: int) -> list[Message]:
    """A run whose latest plan alone is over the target: nothing else can make it fit."""
    out = [Message(role="user", content="Find the answer.", kind="task")]
    for i in range(rounds):
        out += exchange(i)
    return [*out, Message(role="user", content="use this data: " + "word " * 2000, kind="plan")]


@pytest.mark.parametrize("strategy", sorted(BUILTIN_STRATEGIES))
@pytest.mark.parametrize("recent", [1, 3])
async def test_a_plan_over_the_target_loses_nothing_else(strategy: str, recent: int) -> None:
    """Dropping or cutting what cannot make the request fit loses it for nothing.

    (The compacted conversation is what the run keeps: a result dropped here is gone, and the
    model, no longer seeing it, repeats the call, which the gate reports as no progress.)
    """
    messages = over_the_target_plan(rounds=2)
    compactor = Compactor(config(strategy=strategy, preserve_recent_turns=recent), COUNTER)
    done = await compactor.compact(messages, fixed_tokens=0, iteration=1, model=FakeModel())
    if strategy == "summarize_older" and recent == 1:  # what it is for: a summary stands in
        assert [m.get("kind") for m in done.messages] == ["task", "summary", "plan"]
    else:
        assert done.messages == messages
    assert "protected messages alone exceed the target" in done.record["detail"]


async def test_a_custom_strategy_plugs_in() -> None:
    class KeepTaskOnly:
        name = "keep_task_only"

        async def compact(self, data: CompactionInput) -> CompactionResult:
            drop = {b.index for b in data.candidates}
            return CompactionResult(data.assemble(drop), removed=len(drop), detail="custom")

    compactor = Compactor(config(preserve_recent_turns=1), COUNTER, strategy=KeepTaskOnly())
    done = await compactor.compact(conversation(), fixed_tokens=0, iteration=2)
    assert done.record["strategy"] == "keep_task_only"
    assert done.record["detail"].startswith("custom")
    assert [m.get("kind") for m in done.messages[:2]] == ["task", "plan"]


def test_something_that_is_not_a_strategy_is_rejected() -> None:
    with pytest.raises(ConfigError, match="not a compaction strategy"):
        Compactor(config(), COUNTER, strategy=object())  # type: ignore[arg-type]


# The model helper ------------------------------------------------------------------------------


async def test_model_caller_helper_summarizes_and_scores_with_a_real_caller() -> None:
    asked: list[list[dict[str, Any]]] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        asked.append(messages)
        if "Rate how important" in messages[0]["content"]:
            return {"text": "Here: [9, 2]", "usage": {"prompt_tokens": 50, "completion_tokens": 4}}
        return {
            "text": "They searched twice.",
            "usage": {"prompt_tokens": 80, "completion_tokens": 5},
        }

    replies: list[ModelReply] = []
    helper = ModelCallerHelper(ChatModelCaller(FunctionModel(reply), max_retries=0), replies.append)
    blocks = split_blocks([*exchange(0), *exchange(1)], count)
    assert await helper.summarize(blocks) == "They searched twice."
    assert await helper.score(blocks) == [0.9, 0.2]
    assert [r["usage"]["prompt_tokens"] for r in replies] == [80, 50]
    assert "result of search: result 0" in asked[0][1]["content"]


async def test_a_huge_history_is_cut_before_it_is_summarized() -> None:
    seen: list[str] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> str:
        seen.append(messages[1]["content"])
        return "short"

    helper = ModelCallerHelper(ChatModelCaller(FunctionModel(reply), max_retries=0))
    blocks = split_blocks(conversation(rounds=60, size=100), count)
    await helper.summarize(blocks)
    assert len(seen[0]) < 25_000
    assert "cut by compaction" in seen[0]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("[10, 0, 5]", [1.0, 0.0, 0.5]),
        ("scores: [12, -3, 7.5]", [1.0, 0.0, 0.75]),
        ("no list here", []),
        ("[1, 2]", []),
        ('["a", "b", "c"]', []),
        ("[1, 2,, 3]", []),
    ],
)
def test_parse_scores(answer: str, expected: list[float]) -> None:
    assert parse_scores(answer, 3) == expected


@pytest.mark.parametrize("preserve", [True, False])
async def test_system_messages_in_the_conversation_follow_preserve_system_prompt(
    preserve: bool,
) -> None:
    notice = Message(role="system", content="Tool results may be stale.")
    messages = [conversation(rounds=1)[0], notice, *conversation(rounds=10)[1:]]
    compactor = Compactor(config(preserve_system_prompt=preserve, preserve_recent_turns=1), COUNTER)
    done = await compactor.compact(messages, fixed_tokens=0, iteration=1)
    assert (notice in done.messages) is preserve


async def test_a_tool_results_images_go_before_its_text_as_a_last_resort() -> None:
    # A header that says 2048x768: 1,445 tokens, more than the whole target.
    png = bytes.fromhex("89504e470d0a1a0a0000000d49484452000008000000030008060000000000")
    image = {"kind": "image", "mime_type": "image/png", "data": base64.b64encode(png).decode()}
    messages = [Message(role="user", content="task", kind="task"), *exchange(0, size=20)]
    messages[-1]["media"] = [{**image, "size": len(png), "sha256": "ab" * 32}]  # type: ignore[typeddict-item]
    compactor = Compactor(config(preserve_recent_turns=1), COUNTER)
    done = await compactor.compact(messages, fixed_tokens=0, iteration=1)
    assert done.record["tokens_before"] > 1445
    assert done.record["tokens_after"] <= 500
    assert "media" not in done.messages[-1]
    assert done.messages[-1]["content"] == messages[-1]["content"]  # its text left whole
    assert "shortened 1 long message(s)" in done.record["detail"]
