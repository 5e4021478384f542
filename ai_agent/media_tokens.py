"""What an image or an audio clip costs a model in tokens, estimated from its header.

A tool message's media (`ai_agent.state.MediaPart`, sent as ``image_url`` and ``input_audio``
parts) count in a request as the model's server counts them, so compaction sees an image-heavy
conversation grow (`ai_agent.tokens.TokenCounter`). Only a part's first bytes are decoded, and
a header that cannot be read or lies costs the largest figure, never an exception.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Mapping
from typing import Any

__all__ = ["AUDIO_TOKENS_PER_SECOND", "IMAGE_UNKNOWN_TOKENS", "image_tokens", "media_tokens"]

# OpenAI's image accounting at detail "high" (platform.openai.com/docs/guides/images-vision,
# "Calculating costs"): the image is scaled to fit 2048x2048, then so its shortest side is at
# most 768 px, and costs 85 tokens plus 170 per 512-px tile. Those two scalings leave at most
# 2x4 tiles, so no image costs more than 85 + 170 * 8 = 1445: the figure for an image whose
# header cannot be read or lies.
IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
IMAGE_UNKNOWN_TOKENS = IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * 8
# Gemini's documented rate ("each second of audio as 32 tokens", ai.google.dev/gemini-api/docs/
# audio), the highest any server publishes: OpenAI's gpt-4o audio counts 10 per second (1 per
# 100 ms of user audio, per its Realtime cost guide), Whisper-encoder models 12.5 to 25. Too high
# a figure only compacts early, and the server's reported usage corrects it (calibration);
# too low a one overflows the window.
AUDIO_TOKENS_PER_SECOND = 32
# A clip whose duration its header does not give (an MP3, a WAV header that lies) is taken to be
# 32 kbit/s, the lowest MPEG-1 Layer III rate (speech from a TTS engine is 32 to 64): the longest
# duration, so the most tokens, its bytes can plausibly hold.
_AUDIO_ASSUMED_BYTES_PER_SECOND = 4_000
# PCM byte rates a real WAV has: 8 kHz 4-bit ADPCM mono up to 192 kHz 32-bit stereo.
_WAV_BYTE_RATES = range(4_000, 1_536_001)
# Only a part's first bytes are decoded to read its header: a JPEG's size may follow its EXIF
# (thumbnails included, at most 64 KiB a segment); past that, the fixed figure stands.
_HEADER_BYTES = 96 * 1024
_HEADER_CHARS = (_HEADER_BYTES + 2) // 3 * 4
# JPEG markers that start a frame and carry its size (SOF0-SOF15 but DHT, JPG and DAC).
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _head(data: str) -> bytes:
    """The first bytes of base64 ``data`` (at most `_HEADER_BYTES`); empty when not base64."""
    chunk = data[:_HEADER_CHARS]
    chunk = chunk[: len(chunk) // 4 * 4]
    try:
        return base64.b64decode(chunk, validate=True)
    except ValueError:  # binascii.Error is one
        return b""


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 <= len(raw):
        if raw[at] != 0xFF:
            return None
        marker = raw[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
        elif marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", raw[at + 5 : at + 9])
            return width, height
        elif marker == 0x01 or 0xD0 <= marker <= 0xD8:  # markers without a length
            at += 2
        else:
            (length,) = struct.unpack(">H", raw[at + 2 : at + 4])
            if length < 2:
                return None
            at += 2 + length
    return None


def _webp_size(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8 " and raw[23:26] == b"\x9d\x01\x2a" and len(raw) >= 30:
        width, height = struct.unpack("<HH", raw[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and raw[20:21] == b"\x2f" and len(raw) >= 25:
        (bits,) = struct.unpack("<I", raw[21:25])
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(raw) >= 30:
        width = int.from_bytes(raw[24:27], "little") + 1
        return width, int.from_bytes(raw[27:30], "little") + 1
    return None


def _image_size(raw: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, JPEG, GIF or WebP header; None when it shows none."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n") and raw[12:16] == b"IHDR" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return width, height
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
        return width, height
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return _webp_size(raw)
    if raw.startswith(b"\xff\xd8"):
        return _jpeg_size(raw)
    return None


def image_tokens(width: int, height: int) -> int:
    """OpenAI's token count of a ``width`` x ``height`` image at detail "high".

    Examples:
        >>> image_tokens(1024, 1024), image_tokens(2048, 4096), image_tokens(0, 5)
        (765, 1105, 1445)
    """
    if width <= 0 or height <= 0:
        return IMAGE_UNKNOWN_TOKENS
    w, h = float(width), float(height)
    fit = min(1.0, 2048 / max(w, h))
    w, h = w * fit, h * fit
    short = min(1.0, 768 / min(w, h))
    w, h = w * short, h * short
    # round() first: a side scaled to 1536 may come out as 1536.0000000002.
    tiles = max(1, math.ceil(round(w, 6) / 512)) * max(1, math.ceil(round(h, 6) / 512))
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * tiles


def _wav_seconds(raw: bytes, size: int) -> float | None:
    """A WAV clip's duration from its header; None when it is not one or its header lies."""
    if raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        return None
    at, rate, data = 12, 0, 0
    while at + 8 <= len(raw) and not data:
        chunk, length = raw[at : at + 4], int.from_bytes(raw[at + 4 : at + 8], "little")
        if chunk == b"fmt " and at + 16 <= len(raw):
            rate = int.from_bytes(raw[at + 16 : at + 20], "little")
        elif chunk == b"data":
            # A streamed WAV says 0 or 0xFFFFFFFF here; the bytes that are there are the clip.
            data = min(length, size - at - 8) if length else size - at - 8
        at += 8 + length + (length & 1)
    if rate not in _WAV_BYTE_RATES or data <= 0:
        return None
    return data / rate


def _audio_tokens(data: str, size: int) -> int:
    seconds = _wav_seconds(_head(data), size)
    if seconds is None:
        seconds = size / _AUDIO_ASSUMED_BYTES_PER_SECOND
    return math.ceil(seconds * AUDIO_TOKENS_PER_SECOND)


def media_tokens(part: Mapping[str, Any]) -> int:
    """Estimated tokens of one image or audio part (`ai_agent.state.MediaPart`), never raising.

    An image costs `image_tokens` of the size its header gives (`IMAGE_UNKNOWN_TOKENS` when it
    gives none); a clip costs `AUDIO_TOKENS_PER_SECOND` for each second its WAV header gives,
    else each second its bytes last at 32 kbit/s. Only the first 96 KiB are decoded.

    Examples:
        >>> gif = base64.b64encode(b"GIF89a" + struct.pack("<HH", 640, 480)).decode()
        >>> media_tokens({"kind": "image", "data": gif}), media_tokens({"kind": "image"})
        (425, 1445)
        >>> media_tokens({"kind": "audio", "data": "A" * 16_000})  # 12,000 bytes: 3 s at 32 kbit/s
        96
    """
    data = part.get("data")
    data = data if isinstance(data, str) else ""
    if part.get("kind") == "audio":
        # The bytes sent are the base64's, whatever the part's own ``size`` says.
        return _audio_tokens(data, len(data) * 3 // 4 - data[-2:].count("="))
    size = _image_size(_head(data))
    return IMAGE_UNKNOWN_TOKENS if size is None else image_tokens(*size)
