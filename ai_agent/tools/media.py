"""Images and audio from tools: content parts for a model that reads them, a line of text otherwise.

A tool (an MCP tool's image or audio block, or any tool returning ``media``) gives `MediaPart`s
beside its text, and the text describes each part in one line (`describe`). What the model gets
is decided once, as the result is made (`admit`, in the Agent's tool box): the parts of a kind
the model reads (``model_backend.media_inputs``), in a format the OpenAI chat API takes, and no
larger than ``model_backend.max_media_bytes``, stay with the result and reach the model as
content parts (`ai_agent.models.messages.to_langchain`); the others are dropped, so the journal
and the checkpoints never hold bytes no model will read, and the model has the description. Logs,
traces and events show a part as its kind, type, size and digest (`summary`), never its bytes.

Examples:
    >>> part = media_part("image", "image/png", "iVBORw0KGgo=")
    >>> part["size"], describe(part)
    (8, '[image image/png, 8 bytes, sha256 4c4b6a3be131]')
    >>> admit({"status": "ok", "content": "x", "media": [part]}, {"audio"}, 1000)
    {'status': 'ok', 'content': 'x'}
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Collection
from typing import Any, Literal, cast

from ai_agent.state import AUDIO_FORMATS, IMAGE_TYPES, MediaPart, ToolResult

__all__ = [
    "MediaKind",
    "admit",
    "describe",
    "media_part",
    "readable",
    "summary",
    "unreadable",
]

MediaKind = Literal["image", "audio"]

_DIGEST_CHARS = 12


# How each image type the model takes begins: a tool's word for the type is checked against
# its bytes, since the model's API refuses an image that is not what it says (and every later
# request of the run would carry it again).
_IMAGE_MAGIC = (
    (b"\x89PNG", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
# What an image's type becomes when its bytes are of no type the model takes.
UNKNOWN_TYPE = "application/octet-stream"


def _image_type(raw: bytes) -> str | None:
    """The image type ``raw`` begins as (one the model takes), None when none."""
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for magic, mime in _IMAGE_MAGIC if raw.startswith(magic)), None)


def _checked_type(kind: str, mime_type: str, raw: bytes) -> str:
    """The type of an image its bytes show when the tool named one the model takes."""
    if kind != "image" or mime_type.lower() not in IMAGE_TYPES:
        return mime_type
    return _image_type(raw) or UNKNOWN_TYPE


def _payload(data: str) -> str:
    """The base64 of ``data``, which may be a data URL (``data:image/png;base64,...``)."""
    head, comma, rest = data.partition(",")
    if comma and head.startswith("data:") and head.endswith(";base64"):
        return rest
    return data


def media_part(kind: MediaKind, mime_type: str, data: str) -> MediaPart | None:
    """A part of base64 ``data``; None when it is not base64 (then only its description goes).

    An image said to be of a type the model takes gets the type its bytes show, or
    ``application/octet-stream`` when they show none (it is then described, never sent).

    Examples:
        >>> media_part("audio", "audio/wav", "!!not base64!!") is None
        True
        >>> media_part("image", "image/png", "R0lGODlh")["mime_type"]
        'image/gif'
    """
    data = _payload(data)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return MediaPart(
        kind=kind,
        mime_type=_checked_type(kind, mime_type, raw),
        data=data,
        size=len(raw),
        sha256=hashlib.sha256(raw).hexdigest(),
    )


def unreadable(kind: str, mime_type: str) -> str:
    """The line that stands for a part whose data is not base64 (it is left out)."""
    return f"[{kind} {mime_type}: left out, its data is not base64]"


def describe(part: MediaPart) -> str:
    """The one line of text that stands for a part (in the result's text, logs and traces)."""
    digest = part["sha256"][:_DIGEST_CHARS]
    return f"[{part['kind']} {part['mime_type']}, {part['size']} bytes, sha256 {digest}]"


def readable(part: Any, kinds: Collection[str], max_bytes: int) -> bool:
    """Whether a model that reads ``kinds`` gets ``part`` as a content part."""
    if not isinstance(part, dict) or part.get("kind") not in kinds:
        return False
    if not isinstance(part.get("data"), str) or not isinstance(part.get("size"), int):
        return False
    if part["size"] > max_bytes:
        return False
    mime = str(part.get("mime_type", "")).lower()
    return mime in IMAGE_TYPES if part["kind"] == "image" else mime in AUDIO_FORMATS


def admit(result: ToolResult, kinds: Collection[str], max_bytes: int) -> ToolResult:
    """``result`` with only the media the model reads; without ``media`` when none is left."""
    if "media" not in result:
        return result
    kept = [p for p in result.get("media") or [] if readable(p, kinds, max_bytes)]
    out = cast(ToolResult, {k: v for k, v in result.items() if k != "media"})
    if kept:
        out["media"] = kept
    return out


def summary(parts: Any) -> list[dict[str, Any]]:
    """Parts as events and traces show them: everything but the bytes."""
    return [
        {k: v for k, v in part.items() if k != "data"}
        for part in parts or []
        if isinstance(part, dict)
    ]
