"""The adapted chat template: pinned input and output, and clear errors for other templates."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ai_agent.errors import LocalBackendError
from ai_agent.local import adapt_chat_template, read_chat_template, server_chat_template

# data/qwen25_coder_chat_template.jinja is tokenizer.chat_template of the default model's GGUF.
ORIGINAL = (Path(__file__).parent / "data" / "qwen25_coder_chat_template.jinja").read_text()
ORIGINAL_SHA256 = "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f"
# Changing the edits changes this digest: re-run the real-model tests before updating it.
ADAPTED_SHA256 = "fbd6a145ac22b78a1679f8b763886f8f5a0139429b5d34c4d51eb2ad330bdbc1"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_fixture_is_the_models_template() -> None:
    assert _sha256(ORIGINAL) == ORIGINAL_SHA256


def test_adaptation_is_pinned() -> None:
    adapted = adapt_chat_template(ORIGINAL)

    assert _sha256(adapted) == ADAPTED_SHA256
    assert "<tool_call>" not in adapted
    assert r"in a fenced json block:\n```json\n" in adapted
    assert r"""'\n```json\n{"name": "'""" in adapted
    assert "Do not call the same tool again." in adapted


def test_adaptation_is_not_applied_twice() -> None:
    with pytest.raises(LocalBackendError, match="found 0"):
        adapt_chat_template(adapt_chat_template(ORIGINAL))


def test_other_template_is_refused_with_a_way_out() -> None:
    with pytest.raises(LocalBackendError, match="pass chat_template= to LocalModelServer"):
        adapt_chat_template("{{ messages }}")


def test_template_from_a_file_without_one(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + bytes(16))

    with pytest.raises(LocalBackendError, match=r"has no tokenizer\.chat_template"):
        read_chat_template(path)


def test_template_from_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    with pytest.raises(LocalBackendError, match="cannot read the chat template"):
        read_chat_template(tmp_path / "missing.gguf")


@pytest.mark.local_model
def test_real_model_template(model_path: Path) -> None:
    assert read_chat_template(model_path) == ORIGINAL
    assert _sha256(server_chat_template(model_path)) == ADAPTED_SHA256
