"""Assembling one streamed reply: `StreamedReply`.

The parts of a streamed reply come to `StreamedReply.add` one by one: their text goes out to the
sink at once, the size cap is counted as they come, and each tool call's name and argument text
are kept as the server sent them. `StreamedReply.merged` builds the reply once, at the end: text,
usage and metadata merged by LangChain, the tool calls built here from their whole text with the
strict ``json.loads``.

Why the calls are built here: LangChain reads streamed arguments with a lenient *partial* JSON
parser, which passes a cut ``{"x": 1`` as complete and takes time that grows as the square of
the arguments' length when they are not JSON (`ai_agent.models.strict_openai` keeps it from
running on the parts; here it is kept from running on the merge). A call's parts are joined by
LangChain's rule: parts with the same integer index are one call unless they name different ids
(some servers give every call index 0), and a part with no index is a call of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessageChunk
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_core.messages.tool import invalid_tool_call, tool_call, tool_call_chunk

from ai_agent.datafiles import valid_text
from ai_agent.errors import ResponseTooLargeError
from ai_agent.events import ModelCallEvent, ModelDelta, _ModelToolCall
from ai_agent.models.messages import text_of

__all__ = [
    "ARGUMENTS_ATTRIBUTE",
    "MAX_CALLS_PER_REPLY",
    "StreamedCall",
    "StreamedReply",
    "arguments_of",
    "too_many_calls",
]

# Tool calls one reply may hold. A run runs a few per turn (`max_tool_calls`, at most 8)
# and answers each other one as not run; a reply of thousands is a broken or hostile server, and
# LangChain's merge of a streamed reply compared every call with every other (8,000 calls of a
# 1.4 MB stream took minutes).
MAX_CALLS_PER_REPLY = 256

# Where `ai_agent.models.strict_openai.StrictChatOpenAI` leaves a part's argument texts (one per
# entry of its ``tool_call_chunks``): an extra attribute, which LangChain's merges leave alone.
ARGUMENTS_ATTRIBUTE = "streamed_arguments"


def too_many_calls() -> ResponseTooLargeError:
    """The error of a reply with more than `MAX_CALLS_PER_REPLY` calls, streamed or not."""
    return ResponseTooLargeError(
        f"the reply holds more than {MAX_CALLS_PER_REPLY} tool calls; the server is broken or "
        "the model is looping. Check the server, or lower max_tokens"
    )


class StreamedReply:
    """One streamed reply as it comes: deltas out to the sink, size cap, tool calls' raw text."""

    def __init__(self, sink: Callable[[ModelCallEvent], None], cap: int) -> None:
        self.sink, self.cap = sink, cap
        self.chunks: list[AIMessageChunk] = []
        self.finish: object = None  # the last finish reason the server sent
        self.text: list[str] = []
        self.size = 0
        self.calls: list[StreamedCall] = []
        self._open: dict[int, StreamedCall] = {}  # the latest call of each index
        self.openai_protocol = False

    def add(self, chunk: AIMessageChunk) -> None:
        """Take the next part: its text to the sink, its calls' pieces kept, the cap counted."""
        # Kept, and merged once at the end (`merged`): adding each part to the reply so far made
        # LangChain parse every call's arguments again at every part, a time that grows as the
        # square of the parts (a call streamed in 32,000 pieces took a minute).
        self.chunks.append(chunk)
        self.finish = chunk.response_metadata.get("finish_reason") or self.finish
        self.openai_protocol |= chunk.response_metadata.get("model_provider") == "openai"
        text = valid_text(text_of(chunk.content))  # printed at once: no lone surrogate
        self.size += len(text)
        texts = arguments_of(chunk)
        for at, part in enumerate(chunk.tool_call_chunks):
            args = texts[at] if texts is not None and texts[at] is not None else part.get("args")
            args = args or ""
            self.size += len(args)
            self._call(part).add(str(part.get("name") or ""), args)
            if part.get("name"):
                self.sink(_ModelToolCall(str(part["name"])))
        if self.size > self.cap:
            raise ResponseTooLargeError(
                f"the reply passed the size cap of {self.cap} characters; the model is "
                "probably looping. Lower max_tokens or raise "
                "MAMBA_MODEL_BACKEND__MAX_RESPONSE_CHARS."
            )
        if text:
            self.text.append(text)
            self.sink(ModelDelta(text, 0))  # the draft's ModelEvents sets the iteration

    def _call(self, part: Any) -> StreamedCall:
        """The call ``part`` belongs to, by LangChain's rule for joining streamed calls."""
        index, id_ = part.get("index"), part.get("id") or None
        if isinstance(index, int):
            current = self._open.get(index)
            if current is not None and (id_ is None or current.id in (None, id_)):
                current.id = current.id or id_
                return current
        if len(self.calls) >= MAX_CALLS_PER_REPLY:
            raise too_many_calls()
        call = StreamedCall(index if isinstance(index, int) else None, id_)
        self.calls.append(call)
        if call.index is not None:
            self._open[call.index] = call
        return call

    def partial(self) -> str:
        """The text so far (quoted by the error of a stream cut short)."""
        return "".join(self.text)

    def merged(self) -> AIMessageChunk | None:
        """The reply: every part merged in one pass (None when no part came).

        The calls are left out of LangChain's merge and set afterwards from their joined text:
        the ones that are a JSON object as ``tool_calls``, the others as ``invalid_tool_calls``
        with their text, for the caller to send back to the model.
        """
        if not self.chunks:
            return None
        bare = [  # only parts with calls are copied: a text stream's thousands are not
            chunk.model_copy(update={"tool_call_chunks": [], "tool_calls": []})
            if chunk.tool_call_chunks or chunk.tool_calls
            else chunk
            for chunk in self.chunks
        ]
        message = add_ai_message_chunks(bare[0], *bare[1:])
        if self.finish:
            # Not the merge's: it joins the reasons of every part that has one, and a server
            # that says "length" twice would have ended a cut reply with "lengthlength".
            message.response_metadata["finish_reason"] = self.finish
        message.tool_call_chunks = [
            tool_call_chunk(name=call.name or None, args=call.raw, id=call.id, index=call.index)
            for call in self.calls
        ]
        message.tool_calls = [
            tool_call(name=call.name, args=call.value, id=call.id)
            for call in self.calls
            if isinstance(call.value, dict)
        ]
        message.invalid_tool_calls = [
            invalid_tool_call(name=call.name or None, args=call.raw, id=call.id, error=None)
            for call in self.calls
            if not isinstance(call.value, dict)
        ]
        return message


class StreamedCall:
    """One streamed tool call's name and arguments, as the server sent them."""

    def __init__(self, index: int | None, id_: str | None) -> None:
        self.index, self.id = index, id_
        self.names: list[str] = []
        self.args: list[str] = []
        self._value: object = _UNREAD

    def add(self, name: str, args: str) -> None:
        """Take the next piece of the call's name and arguments."""
        self.names.append(name)
        self.args.append(args)
        self._value = _UNREAD

    @property
    def name(self) -> str:
        """The name, joined from its pieces ("" when none came)."""
        return "".join(self.names)

    @property
    def raw(self) -> str:
        """The arguments' text as the server sent it."""
        return "".join(self.args)

    @property
    def value(self) -> object:
        """The arguments read strictly (no text: ``{}``); None when they are not JSON at all.

        Python's parser reads NaN and 1e999, which JSON has no numbers for; the caller refuses
        those with the other values no store keeps.
        """
        if self._value is _UNREAD:
            raw = self.raw
            try:
                self._value = json.loads(raw) if raw.strip() else {}
            except (ValueError, RecursionError):
                self._value = None
        return self._value


_UNREAD = object()


def arguments_of(part: BaseMessageChunk) -> list[str | None] | None:
    """The argument texts `StrictChatOpenAI` took out of ``part``'s calls (None: it took none).

    One entry per call of ``part.tool_call_chunks``; None where the server sent no text.
    """
    found = getattr(part, ARGUMENTS_ATTRIBUTE, None)
    if not isinstance(found, list) or len(found) != len(getattr(part, "tool_call_chunks", ())):
        return None
    return found
