"""The compactor: when to compact, which strategy, and the guarantee that the result fits.

Compaction runs at the start of a draft, when the estimated request (system prompt, tool
definitions and conversation) reaches ``trigger_threshold_tokens``. The strategy shrinks the
conversation toward ``target_tokens``; if it falls short, the compactor drops the oldest
remaining candidates (shrinking the recent window down to the last turn) and, as a last resort,
shortens the longest tool results. The task, the latest plan and the system prompt always stay,
and no tool call is ever separated from its result.

Examples:
    >>> import asyncio
    >>> from ai_agent.config import CompactionConfig
    >>> from ai_agent.tokens import TokenCounter
    >>> config = CompactionConfig(strategy="sliding_window", trigger_threshold_tokens=60,
    ...                           target_tokens=40, preserve_recent_turns=1)
    >>> compactor = Compactor(config, TokenCounter())
    >>> talk = [{"role": "user", "content": "task", "kind": "task"}] + [
    ...     {"role": "assistant", "content": f"note {i} " * 5} for i in range(6)]
    >>> done = asyncio.run(compactor.compact(talk, fixed_tokens=0, iteration=3))
    >>> done.record["tokens_after"] <= 40, done.messages[0]["kind"]
    (True, 'task')
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ai_agent.compaction.base import (
    Block,
    CompactionInput,
    CompactionResult,
    CompactionStrategy,
    ModelHelper,
    render,
    split_blocks,
)
from ai_agent.compaction.strategies import BUILTIN_STRATEGIES
from ai_agent.context import ModelCaller, ModelReply
from ai_agent.errors import ConfigError
from ai_agent.state import CompactionRecord, Message
from ai_agent.tokens import REPLY_PRIMING

if TYPE_CHECKING:
    from ai_agent.config import CompactionConfig
    from ai_agent.tokens import TokenCounter

__all__ = ["Compaction", "Compactor", "ModelCallerHelper", "parse_scores"]

SUMMARIZE_PROMPT = (
    "You compress the history of an AI agent's work so it can continue with less context. "
    "Write a concise summary of the conversation below: the facts found, numbers, file names, "
    "tool results that matter, decisions made and what is still open. Do not add anything "
    "that is not in it. Answer with the summary only."
)
SCORE_PROMPT = (
    "Rate how important each numbered message below is for finishing the task, from 0 "
    "(useless now) to 10 (essential). Answer with only a JSON list of {n} numbers, in order."
)
# How much of the older conversation one summary request may carry, in characters.
_SUMMARY_INPUT_CHARS = 24_000
_CUT_MARK = "\n[... {n} characters cut by compaction ...]\n"


class ModelCallerHelper:
    """Summaries and importance scores from a ModelCaller (the run's model, or another).

    Args:
        caller: The model to ask.
        on_reply: Called with each reply, so its usage is recorded.
    """

    def __init__(
        self, caller: ModelCaller, on_reply: Callable[[ModelReply], None] | None = None
    ) -> None:
        self.caller = caller
        self.on_reply = on_reply

    async def _ask(self, system: str, text: str) -> str:
        messages = [Message(role="system", content=system), Message(role="user", content=text)]
        # A summary is bookkeeping, not something to show as it types: it is asked for while the
        # draft prepares, before it opens its model events, so nothing of it is reported.
        reply = await self.caller(messages, [])
        if self.on_reply is not None:
            self.on_reply(reply)
        return reply["message"]["content"]

    async def summarize(self, blocks: Sequence[Block]) -> str:
        """A summary of the blocks, written by the model."""
        text = "\n".join(b.text for b in blocks)
        if len(text) > _SUMMARY_INPUT_CHARS:
            half = _SUMMARY_INPUT_CHARS // 2
            text = text[:half] + _CUT_MARK.format(n=len(text) - 2 * half) + text[-half:]
        return await self._ask(SUMMARIZE_PROMPT, text)

    async def score(self, blocks: Sequence[Block]) -> list[float]:
        """One score in 0..1 per block; an unreadable answer gives an empty list."""
        listing = "\n".join(f"{i + 1}. {render(b.messages[0], 300)}" for i, b in enumerate(blocks))
        answer = await self._ask(SCORE_PROMPT.format(n=len(blocks)), listing)
        return parse_scores(answer, len(blocks))


def parse_scores(answer: str, count: int) -> list[float]:
    """The first JSON list of numbers in ``answer``, scaled to 0..1; [] when there is none.

    Examples:
        >>> parse_scores("Scores: [10, 0, 5]", 3)
        [1.0, 0.0, 0.5]
    """
    match = re.search(r"\[[^\[\]]*\]", answer)
    if match is None:
        return []
    try:
        values = json.loads(match.group(0))
    # ValueError beyond JSON's own: an integer past Python's 4,300 digits is one, and a model
    # (steered by the text it scores) may write it; it failed the run with a traceback.
    except ValueError:
        return []
    if len(values) != count or not all(isinstance(v, int | float) for v in values):
        return []
    return [min(1.0, max(0.0, float(v) / 10)) for v in values]


def _calls_tools(message: Message) -> bool:
    return message["role"] == "assistant" and bool(message.get("tool_calls"))


@dataclass(frozen=True)
class Compaction:
    """A compacted conversation and the record of what was done."""

    messages: list[Message]
    record: CompactionRecord


class Compactor:
    """Decides when to compact, runs the strategy, and makes sure the result fits.

    Args:
        config: Strategy, trigger, target, recent turns, hybrid weights.
        counter: Counts tokens.
        strategy: A custom strategy (any `CompactionStrategy`) used instead of
            ``config.strategy``.
        context_window: The model's window, when known: compaction then also starts before a
            request could overflow it (with the counter's safety margin and ``reserve`` tokens
            left for the reply).
        reserve: Tokens to leave for the reply within ``context_window``.
    """

    def __init__(
        self,
        config: CompactionConfig,
        counter: TokenCounter,
        *,
        strategy: CompactionStrategy | None = None,
        context_window: int | None = None,
        reserve: int = 0,
    ) -> None:
        self.config = config
        self.counter = counter
        if strategy is not None and not isinstance(strategy, CompactionStrategy):
            raise ConfigError(
                f"{strategy!r} is not a compaction strategy: it needs a `name` and an async "
                "`compact(data)` method"
            )
        self.strategy = strategy or BUILTIN_STRATEGIES[config.strategy]()
        self.trigger = config.trigger_threshold_tokens
        self.target = config.target_tokens
        if context_window is not None:
            usable = int(context_window / (1 + counter.config.safety_margin)) - reserve
            self.trigger = max(1, min(self.trigger, usable))
            self.target = max(1, min(self.target, int(self.trigger * 0.8)))

    def should_compact(self, request_tokens: int) -> bool:
        """Whether a request of this many (estimated) tokens must be compacted first."""
        return request_tokens >= self.trigger

    def _count(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages`` as the run's estimate counts them in a request.

        An assistant turn with tool calls also costs its rendering by the chat template
        (`ai_agent.tokens.TokenCounter.template_overhead`): left out, a run of small tool turns
        compacted to "1,486 tokens" that the estimate made 4,188, past a 3,000-token window.
        """
        turn = self.counter.config.template_tool_turn_tokens
        return sum(
            self.counter.count_message(m) + (turn if _calls_tools(m) else 0) for m in messages
        )

    async def compact(
        self,
        messages: Sequence[Message],
        *,
        fixed_tokens: int,
        iteration: int,
        model: ModelHelper | None = None,
        target: int | None = None,
    ) -> Compaction:
        """Shrink ``messages`` so the request fits ``target_tokens``.

        Args:
            messages: The conversation (without the system prompt).
            fixed_tokens: Tokens of the request that compaction cannot remove (system prompt,
                tool definitions).
            iteration: The run's iteration, for the record.
            model: Summaries and scores; None when no model may be asked.
            target: A smaller goal than ``target_tokens`` (after the server refused a request
                as too long for its window).
        """
        goal = self.target if target is None else min(target, self.target)
        before = self._count(messages) + fixed_tokens + REPLY_PRIMING
        budget = max(0, goal - fixed_tokens - REPLY_PRIMING)
        data = self._input(messages, budget, self.config.preserve_recent_turns, model)
        result = await self.strategy.compact(data)
        out, notes = self._enforce(result, budget)
        after = self._count(out) + fixed_tokens + REPLY_PRIMING
        detail = "; ".join(n for n in [result.detail, *notes] if n)
        record = CompactionRecord(
            iteration=iteration,
            at=time.time(),
            strategy=self.strategy.name,
            tokens_before=before,
            tokens_after=after,
            messages_before=len(messages),
            messages_after=len(out),
            removed=result.removed,
            summarized=result.summarized,
            target=goal,
            detail=detail,
        )
        return Compaction(messages=out, record=record)

    def _input(
        self,
        messages: Sequence[Message],
        budget: int,
        recent: int,
        model: ModelHelper | None,
    ) -> CompactionInput:
        return CompactionInput(
            blocks=split_blocks(
                messages, self._count, protect_system=self.config.preserve_system_prompt
            ),
            budget=budget,
            recent=recent,
            count=self._count,
            model=model,
            weights={str(k): v for k, v in self.config.hybrid_weights.items()},
        )

    def _enforce(self, result: CompactionResult, budget: int) -> tuple[list[Message], list[str]]:
        """Make the strategy's result fit: drop oldest, then shorten the longest results.

        When the protected messages alone are over the budget, nothing can make it fit: then
        nothing more is dropped or cut, since what compaction removes is gone from the run (a
        tool result dropped so makes the model repeat its call).
        """
        messages, notes = list(result.messages), list[str]()
        if self._count(messages) <= budget:
            return messages, notes
        blocks = split_blocks(
            messages, self._count, protect_system=self.config.preserve_system_prompt
        )
        if sum(b.tokens for b in blocks if b.protected) > budget:
            return messages, ["the protected messages alone exceed the target"]
        for recent in range(self.config.preserve_recent_turns, 0, -1):
            data = self._input(messages, budget, recent, None)
            drop = data.drop_until_fits(data.candidates)
            if drop:
                messages = data.assemble(drop)
                notes.append(f"dropped {len(drop)} more block(s) keeping {recent} recent")
            if self._count(messages) <= budget:
                return messages, notes
        messages, cut = self._shorten(messages, budget)
        if cut:
            notes.append(f"shortened {cut} long message(s)")
        if self._count(messages) > budget:
            notes.append("the protected messages alone exceed the target")
        return messages, notes

    def _shorten(self, messages: list[Message], budget: int) -> tuple[list[Message], int]:
        """Cut the middle out of the longest tool results (then other long messages).

        A tool result's images and audio go before its text is cut.

        Protected messages are never cut: the task, the plans, and the system messages
        ``preserve_system_prompt`` keeps (a recall's context, a caller's instructions) are kept
        verbatim, as the blocks promise.
        """
        out = [Message(**m) for m in messages]
        cut = 0
        fixed = self._protected_positions(out)
        order = sorted(
            (
                i
                for i, m in enumerate(out)
                if i not in fixed and m.get("kind") not in ("task", "plan")
            ),
            key=lambda i: (out[i]["role"] != "tool", -len(out[i]["content"])),
        )
        for i in order:
            shortened = False
            if out[i].get("media") and self._count(out) > budget:
                # Its images and audio go first: they cost the most, and the text describes
                # each of them in a line (`ai_agent.tools.media.describe`).
                del out[i]["media"]
                shortened = True
            for _ in range(4):  # the cut is estimated from the text's own characters per token
                excess = self._count(out) - budget
                content = out[i]["content"]
                tokens = self.counter.count_text(content)
                if excess <= 0 or tokens == 0:
                    break
                per_token = len(content) / tokens
                keep = int(len(content) - (excess + 16) * per_token * 1.1)
                if keep <= 0:
                    out[i]["content"] = _CUT_MARK.format(n=len(content)).strip()
                    shortened = True
                    break
                head, tail = content[: keep // 2], content[len(content) - keep // 2 :]
                gone = len(content) - len(head) - len(tail)
                out[i]["content"] = head + _CUT_MARK.format(n=gone) + tail
                shortened = True
            cut += shortened
            if self._count(out) <= budget:
                break
        return out, cut

    def _protected_positions(self, messages: Sequence[Message]) -> set[int]:
        """The positions of the messages in protected blocks."""
        blocks = split_blocks(
            messages, self._count, protect_system=self.config.preserve_system_prompt
        )
        out: set[int] = set()
        at = 0
        for block in blocks:
            if block.protected:
                out.update(range(at, at + len(block.messages)))
            at += len(block.messages)
        return out
