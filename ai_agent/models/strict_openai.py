"""`StrictChatOpenAI`: a ChatOpenAI that leaves streamed tool-call arguments to the engine.

LangChain parses a streamed tool call's arguments as *partial* JSON when it builds each part of
the reply, and again when it merges the parts at the stream's end, before the engine sees either.
Its partial parser retries ``json.loads`` one character shorter at a time until something parses,
so arguments that are not JSON cost time that grows as the square of their length: 60,000
characters of ``a`` held the event loop 17 s, where no deadline can fire.

This client takes each part's argument text out of the server's delta before LangChain builds the
part, so LangChain parses nothing, and hands the text on beside the part
(`ai_agent.models.streamed_reply.arguments_of`). `ai_agent.models.streamed_reply.StreamedReply`
joins each call's text and reads it once, with the strict ``json.loads``, which is linear.
Everything else (text, usage, finish reasons) is LangChain's, as the plain ChatOpenAI does it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI

from ai_agent.models.streamed_reply import ARGUMENTS_ATTRIBUTE

__all__ = ["StrictChatOpenAI"]


class StrictChatOpenAI(ChatOpenAI):
    """ChatOpenAI whose streamed parts carry their tool-call arguments unparsed.

    ``make_chat_model`` builds this one; a ChatOpenAI built by hand works too, but LangChain
    then parses its streamed arguments as it always does (docs/security.md says what that costs).
    """

    def _convert_chunk_to_generation_chunk(
        self,
        chunk: dict[str, Any],
        default_chunk_class: type,
        base_generation_info: dict[str, Any] | None,
    ) -> ChatGenerationChunk | None:
        bare, arguments = _without_arguments(chunk)
        generation = super()._convert_chunk_to_generation_chunk(
            bare, default_chunk_class, base_generation_info
        )
        message = generation.message if generation is not None else None
        # LangChain builds every call of a delta or none (a call it cannot read drops them all),
        # so the texts line up with the calls whenever there are calls.
        if arguments and message is not None and getattr(message, "tool_call_chunks", None):
            # An extra attribute (messages allow them), not ``additional_kwargs``: LangChain's
            # merge at the stream's end joins every ``additional_kwargs`` text part by part,
            # copying the text so far each time, and leaves extra attributes alone.
            setattr(message, ARGUMENTS_ATTRIBUTE, arguments)
        return generation


def _without_arguments(chunk: dict[str, Any]) -> tuple[dict[str, Any], list[str | None]]:
    """``chunk`` with the argument text of its first choice's calls emptied, and those texts.

    Copies what it changes: the server's parsed chunk is left as it came. Arguments that are
    not text are left in place, for LangChain to refuse as it does.
    """
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return chunk, []
    delta = choices[0].get("delta")
    calls = delta.get("tool_calls") if isinstance(delta, dict) else None
    if not isinstance(calls, list):
        return chunk, []
    texts: list[str | None] = []
    bare_calls: list[Any] = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        text = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(call, dict) and isinstance(function, dict) and isinstance(text, str):
            texts.append(text)
            bare_calls.append({**call, "function": {**function, "arguments": ""}})
        else:
            texts.append(None)
            bare_calls.append(call)
    bare_delta = {**delta, "tool_calls": bare_calls}  # type: ignore[dict-item]
    bare_choices = [{**choices[0], "delta": bare_delta}, *choices[1:]]
    return {**chunk, "choices": bare_choices}, texts
