"""Keeps one MCP connection's secrets out of the MCP client's log records.

At DEBUG the MCP client and its HTTP stack log whole protocol messages (a tool result holding a
key the server printed, a URL with a key in its query). While a connection is open, a filter of
its own, put on those loggers, scrubs its secrets from every record they write.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ai_agent.tools.results import Scrubber

__all__ = ["Redact", "swap_filter"]

# Where the MCP client and its HTTP stack log. "" is the root logger, which the MCP session logs
# some warnings to directly.
_CLIENT_LOGGERS = (
    "mcp.client.session",
    "mcp.client.sse",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.os.posix.utilities",
    "langchain_mcp_adapters.sessions",
    "httpx",
    "",
)


class Redact(logging.Filter):
    """Scrubs one connection's secrets from the records of the MCP client's loggers."""

    def __init__(self, scrubber: Scrubber) -> None:
        super().__init__()
        self.scrubber = scrubber

    def filter(self, record: logging.LogRecord) -> bool:
        """Scrub the record in place; it is always kept."""
        text = record.getMessage()
        clean = self.scrubber.text(text)
        if clean != text:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            # The standard Formatter prints exc_text when it is set: render it scrubbed now.
            record.exc_text = self.scrubber.text(
                logging.Formatter().formatException(record.exc_info)
            )
        return True


def swap_filter(old: Redact | None, scrubber: Scrubber | None) -> Redact | None:
    """Take ``old`` off the client's loggers and put a filter for ``scrubber`` on (None: none)."""
    if old is not None:
        for name in _CLIENT_LOGGERS:
            logging.getLogger(name).removeFilter(old)
    new = Redact(scrubber) if scrubber is not None else None
    if new is not None:
        for name in _CLIENT_LOGGERS:
            logging.getLogger(name).addFilter(new)
    return new
