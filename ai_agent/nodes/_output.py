"""Live tool output: the ``on_output`` callable every tool finds in its ``ctx``.

A long-running tool (a shell command, a large file read) calls ``ctx["on_output"](text)`` as output
arrives; each call becomes `ToolOutput` events of at most ``chunk_size`` bytes (never splitting a
UTF-8 character), which ``Agent.astream`` yields as ``ToolOutput`` and the CLI prints live. The
tool still returns its whole result as usual: streaming is for watching, the result is for the
model. With ``stream_tool_results`` off, ``on_output`` does nothing, so tools call it freely.

Examples:
    >>> events = []
    >>> emit = output_sink(events.append, tool="t", call_id="c1", iteration=1, chunk_size=4)
    >>> emit("abcdef")
    >>> [e.text for e in events]
    ['abcd', 'ef']
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

from ai_agent.events import ToolOutput

__all__ = ["OutputSink", "output_sink"]

OutputSink = Callable[..., None]


def _ignore(text: str | bytes, stream: str = "stdout") -> None:
    """Streaming of tool output is off."""


def output_sink(
    emit: Callable[[ToolOutput], None] | None,
    *,
    tool: str,
    call_id: str,
    iteration: int,
    chunk_size: int = 1024,
) -> OutputSink:
    """An ``on_output(text_or_bytes, stream="stdout")`` callable for one tool call.

    Args:
        emit: The run's event sink; None turns streaming off.
        tool: The tool's name, in each event.
        call_id: The call's id, in each event.
        iteration: The run's iteration, in each event.
        chunk_size: Bytes per `ToolOutput` event at most.
    """
    if emit is None:
        return _ignore
    decoders: dict[str, codecs.IncrementalDecoder] = {}

    def send(text: str, stream: str) -> None:
        data = text.encode("utf-8")
        # A slice may end mid-character; the decoder carries it into the next slice, so every
        # event holds whole characters and at most chunk_size bytes.
        decoder = codecs.getincrementaldecoder("utf-8")()
        for start in range(0, len(data), chunk_size):
            piece = decoder.decode(data[start : start + chunk_size])
            if piece:
                emit(ToolOutput(tool, call_id, piece, stream, iteration))

    def on_output(text: str | bytes, stream: str = "stdout") -> None:
        if isinstance(text, bytes):
            # Bytes may end mid-character: keep the tail for the next call of this stream.
            decoder = decoders.setdefault(
                stream, codecs.getincrementaldecoder("utf-8")(errors="replace")
            )
            text = decoder.decode(text)
        if text:
            send(text, stream)

    return on_output
