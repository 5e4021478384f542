"""The engine's end of the socket pair to a confined call: frames, byte counts, HTTP.

Every frame is a 4-byte length and a JSON object. The engine sends the call (code, arguments,
limits) and reads what comes back: HTTP requests, answered through the call's broker, and the
final result, error or set-up failure. Every byte the sandbox sends (frames, stdout, stderr)
counts against ``max_output_bytes``; a frame that is not a JSON object, or nests deeper than
`MAX_DEPTH`, is a protocol violation.
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

from ai_agent.tools.maker.calls import ConfinedCall, Violation

__all__ = ["KEEP_LOG", "MAX_DEPTH", "Session"]

KEEP_LOG = 4000  # bytes of stdout/stderr kept for the result's meta
MAX_DEPTH = 64  # lists and objects inside one another in a frame (results included)


def _frame(message: dict[str, Any]) -> bytes:
    data = json.dumps(message, ensure_ascii=False, default=str).encode()
    return struct.pack(">I", len(data)) + data


class Session:
    """Reads everything the sandbox sends, answers HTTP requests, counts bytes."""

    def __init__(self, call: ConfinedCall, proc: asyncio.subprocess.Process) -> None:
        self.call = call
        self.proc = proc
        self.budget = call.limits.max_output_bytes
        self.received = 0
        self.logs = {"stdout": bytearray(), "stderr": bytearray()}
        self.final: dict[str, Any] | None = None

    def count(self, size: int) -> None:
        """Count ``size`` more bytes received; past the output cap it is a violation."""
        self.received += size
        if self.received > self.budget:
            raise Violation(
                "output_cap",
                f"sent more than its output cap of {self.budget} bytes and was killed",
            )

    async def drain(self, stream: asyncio.StreamReader | None, name: str) -> None:
        """Read ``stream`` (``stdout`` or ``stderr``) to its end, counting and keeping its start."""
        if stream is None:  # pragma: no cover - both are pipes
            return
        kept = self.logs[name]
        while chunk := await stream.read(1 << 16):
            self.count(len(chunk))
            if len(kept) < KEEP_LOG:
                kept += chunk[: KEEP_LOG - len(kept)]

    async def converse(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, deadline: float
    ) -> None:
        """Send the call, then read frames until the sandbox closes its end.

        HTTP requests are answered (before ``deadline``); the first result, error or set-up
        failure is kept in ``final``; anything else is a protocol violation.
        """
        writer.write(
            _frame(
                {
                    "code": self.call.code,
                    "filename": f"{self.call.name}.py",
                    "args": self.call.args,
                    "secrets": sorted(self.call.secrets),
                    "rlimits": self.call.limits.rlimits(),
                    "seccomp": self.call.limits.seccomp,
                }
            )
        )
        await writer.drain()
        while True:
            try:
                header = await reader.readexactly(4)
            except asyncio.IncompleteReadError:
                return
            (length,) = struct.unpack(">I", header)
            self.count(4 + length)
            message = _parse(await reader.readexactly(length))
            op = message.get("op")
            if op == "http":
                writer.write(_frame(await self._http(message, deadline)))
                await writer.drain()
            elif op in ("result", "error", "setup_failed") and self.final is None:
                self.final = message
            else:
                raise Violation("protocol", f"sent an unexpected message ({str(op)[:40]!r})")

    async def _http(self, message: dict[str, Any], deadline: float) -> dict[str, Any]:
        if self.call.http is None:
            raise Violation(
                "http_not_declared",
                "tried to make an HTTP request without the http capability",
            )
        return await self.call.http(message, deadline)


def _parse(data: bytes) -> dict[str, Any]:
    try:
        message = json.loads(data)
    except ValueError:
        raise Violation("protocol", "sent a message that is not JSON") from None
    except RecursionError:
        # The engine's JSON parser recurses once per level; the depth is the tool's to choose.
        message = None
    if message is None or _too_deep(message):
        raise Violation(
            "protocol", f"sent a message nested too deeply (over {MAX_DEPTH} levels) to read"
        )
    if not isinstance(message, dict):
        raise Violation("protocol", "sent a message that is not an object")
    return message


def _too_deep(value: Any) -> bool:
    """True when ``value`` nests lists and objects deeper than MAX_DEPTH (checked iteratively).

    What the engine accepts travels on into results, checkpoints and logs, whose serialisers
    recurse too; a bound here keeps a tool from breaking them.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth > MAX_DEPTH:
                return True
            stack += [(child, depth + 1) for child in item]
    return False
