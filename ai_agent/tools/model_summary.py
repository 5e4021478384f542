"""A model-written summary of a long tool output (``tool_config.output_summary = "model"``).

One extra model call per output that passes ``max_output_chars``: the model gets the output
(its head and tail when it is longer than ``output_summary_input_chars``) and writes what the
run needs of it. The call goes through the run's model caller, so it is recorded like any
other (a recorded replay serves it offline) and its tokens count in the run's usage and budget
(`OutputSummarizer.on_reply` makes the usage record; act adds it, ``nodes/_rollup.py``).

It is bounded: a reply that takes longer than ``output_summary_timeout``, a model error, an
empty answer or a summary that does not fit leaves the output to the extractive summary, whose
header says why (`ModelSummary.failure`). The summary is made where the result is (before it is
journaled and checkpointed), so a resume after a crash reuses it instead of asking again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ai_agent.context import ModelCaller, ModelReply
from ai_agent.errors import ModelError
from ai_agent.state import Message

__all__ = ["MODEL_HEADER_START", "ModelSummary", "OutputSummarizer", "model_header"]

MODEL_HEADER_START = "[Model-written summary of a "
SUMMARY_PROMPT = (
    "You shorten the output of a tool that an AI agent called, so the agent can go on with its "
    "task. Keep what the task needs from it: facts, numbers, names, paths, errors and totals, "
    "written exactly as in the output. Add nothing that is not in the output. Answer with the "
    "summary only, in at most {room} characters."
)
_CUT = "\n[... {n} characters of the output not sent ...]\n"
_FAILURE_CHARS = 200

# Makes the usage record of the summary call: the reply, the run's iteration, the request.
UsageMaker = Callable[[ModelReply, int, list[Message]], Any]


def model_header(full_chars: int, lines: int, note: str) -> str:
    """The first line of a model-written summary: what it is, of what, where the whole is.

    Examples:
        >>> print(model_header(48210, 900, "the full output is kept as o1"))
        [Model-written summary of a 48,210-character output (900 lines); the full output is kept as o1]
        <BLANKLINE>
    """  # noqa: E501 - a doctest's output is one line
    return f"{MODEL_HEADER_START}{full_chars:,}-character output ({lines:,} lines); {note}]\n"


@dataclass(frozen=True, slots=True)
class ModelSummary:
    """What the summary call gave: the summary, or why there is none, and its usage record.

    ``usage`` is set whenever the model answered (its tokens were spent, used or not).
    """

    text: str | None
    failure: str | None = None
    usage: dict[str, Any] | None = None


def _excerpt(text: str, chars: int) -> str:
    r"""``text`` as sent to the model: whole, or its head and tail with a marker between.

    Examples:
        >>> _excerpt("a" * 10 + "b" * 10, 10)
        'aaaaa\n[... 10 characters of the output not sent ...]\nbbbbb'
    """
    if len(text) <= chars:
        return text
    half = chars // 2
    return text[:half] + _CUT.format(n=len(text) - 2 * half) + text[-half:]


def _failure(reason: str) -> str:
    """A failure reason as the header quotes it: one line, bounded."""
    line = " ".join(reason.split())
    return line if len(line) <= _FAILURE_CHARS else line[: _FAILURE_CHARS - 3] + "..."


@dataclass(frozen=True, slots=True)
class OutputSummarizer:
    """Asks a model for the summary of one long tool output, within bounds.

    Args:
        model: The run's model caller (recorded, secrets masked), or the summarization model.
        timeout: Seconds the reply may take (``output_summary_timeout``).
        input_chars: The most of the output sent (``output_summary_input_chars``).
        on_reply: Makes the usage record of a reply (the run meter), kept in the result.
    """

    model: ModelCaller
    timeout: float
    input_chars: int
    on_reply: UsageMaker | None = None

    def request(self, text: str, *, room: int, tool: str, task: str) -> list[Message]:
        """The summary request: the instructions, the task and the output."""
        about = f"Task: {task}\n" if task else ""
        body = f"{about}Output of the tool {tool}:\n{_excerpt(text, self.input_chars)}"
        return [
            Message(role="system", content=SUMMARY_PROMPT.format(room=room)),
            Message(role="user", content=body),
        ]

    async def summarize(
        self, text: str, *, room: int, tool: str, task: str = "", iteration: int = 0
    ) -> ModelSummary:
        """The model's summary of ``text`` in at most ``room`` characters, or why there is none.

        Never raises for what the model does: a slow, failing or unhelpful model is a failure
        the caller falls back from.
        """
        if room <= 0:
            return ModelSummary(None, "no room for a summary under max_output_chars")
        messages = self.request(text, room=room, tool=tool, task=task)
        try:
            reply = await asyncio.wait_for(self.model(messages, []), self.timeout)
        except TimeoutError:
            return ModelSummary(None, f"no answer in {self.timeout:g} s")
        except ModelError as exc:
            return ModelSummary(None, _failure(f"{type(exc).__name__}: {exc}"))
        usage = self.on_reply(reply, iteration, messages) if self.on_reply else None
        usage = dict(usage) if isinstance(usage, dict) else None
        content = reply["message"].get("content")
        summary = content.strip() if isinstance(content, str) else ""
        if not summary:
            return ModelSummary(None, "the model's answer was empty", usage)
        if len(summary) > room:
            too_long = f"the model's summary took {len(summary):,} characters of {room:,}"
            return ModelSummary(None, too_long, usage)
        return ModelSummary(summary, None, usage)
