"""Images and audio in the token count: what the model is sent is what is counted."""

from __future__ import annotations

import base64
import hashlib
import struct
from typing import Any

import pytest

from ai_agent import tokens
from ai_agent.tokens import MESSAGE_OVERHEAD, ConversationTokens, TokenCounter

COUNTER = TokenCounter()


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">II", width, height) + b"\x08\x06\x00\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\x00" * 4


def jpeg(width: int, height: int) -> bytes:
    exif = b"\xff\xe1" + struct.pack(">H", 2 + 300) + b"E" * 300  # an APP1 before the frame
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + exif + b"\xff" + sof + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 3


def webp(width: int, height: int, chunk: str) -> bytes:
    if chunk == "VP8 ":
        body = b"\x00" * 3 + b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    elif chunk == "VP8L":
        body = b"\x2f" + struct.pack("<I", (width - 1) | (height - 1) << 14)
    else:
        body = b"\x00" * 4 + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return (
        b"RIFF" + struct.pack("<I", 4 + 8 + len(body)) + b"WEBP" + chunk.encode() + b"\0" * 4 + body
    )


def wav(seconds: float, byte_rate: int = 32_000, *, said_rate: int | None = None) -> bytes:
    data = b"\x00" * int(seconds * byte_rate)
    fmt = struct.pack("<HHIIHH", 1, 1, byte_rate // 2, said_rate or byte_rate, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data))
    return b"RIFF" + struct.pack("<I", len(body) + len(data)) + body + data


def part(kind: str, mime: str, raw: bytes) -> dict[str, Any]:
    digest = hashlib.sha256(raw).hexdigest()
    return {"kind": kind, "mime_type": mime, "data": b64(raw), "size": len(raw), "sha256": digest}


def tool(*media: dict[str, Any], content: str = "[a chart]") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "tool", "content": content, "tool_call_id": "c1"}
    message["name"] = "chart"
    if media:
        message["media"] = list(media)
    return message


def media_cost(*media: dict[str, Any]) -> int:
    """What the media add to their tool message's count."""
    return COUNTER.count_message(tool(*media)) - COUNTER.count_message(tool())


def test_an_image_counts_as_openais_tiles_of_the_size_its_header_gives() -> None:
    # 1024x1024 is 4 tiles after the 768 scaling; 2048x4096 is 6 (OpenAI's worked examples).
    square, tall = (
        part("image", "image/png", png(1024, 1024)),
        part("image", "image/png", png(2048, 4096)),
    )
    assert (tokens.media_tokens(square), tokens.media_tokens(tall)) == (765, 1105)
    # Besides the image: the line that names it, and the user message that carries it.
    for image in (square, tall):
        assert 20 < media_cost(image) - tokens.media_tokens(image) < 60
    # Two parts in one message share the user message that carries them.
    assert media_cost(square, tall) == media_cost(square) + media_cost(tall) - MESSAGE_OVERHEAD - 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (png(800, 600), 765),
        (jpeg(512, 512), 255),
        (gif(640, 480), 425),
        (webp(2048, 768, "VP8 "), 1445),
        (webp(100, 100, "VP8L"), 255),
        (webp(3000, 1000, "VP8X"), 1445),
        (webp(1000, 300, "VP8X"), 425),
    ],
)
def test_each_image_type_the_model_takes_is_read_from_its_header(raw: bytes, expected: int) -> None:
    assert tokens.media_tokens(part("image", "image/x", raw)) == expected


@pytest.mark.parametrize(
    "raw",
    [
        png(0, 600),  # a side of zero
        png(1024, 1024)[:20],  # cut before its size
        b"\xff\xd8\xff\xe1\x00\x01rest of it",  # a segment that says it is shorter than itself
        b"\xff\xd8\xff\xe1" + struct.pack(">H", 65_000) + b"\x00" * 200_000,  # size past the head
        b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 20,  # no start code
        b"not an image at all",
        b"",
    ],
)
def test_an_image_whose_header_lies_or_cannot_be_read_costs_the_most_an_image_can(
    raw: bytes,
) -> None:
    assert (
        tokens.media_tokens(part("image", "image/png", raw)) == tokens.IMAGE_UNKNOWN_TOKENS == 1445
    )


def test_no_size_an_image_claims_costs_more_than_the_most_an_image_can() -> None:
    assert tokens.image_tokens(2**32 - 1, 2**32 - 1) == 765
    assert tokens.image_tokens(2**32 - 1, 1) == tokens.image_tokens(2048, 1) == 85 + 170 * 4
    assert tokens.image_tokens(1, 1) == 255
    assert (
        max(tokens.image_tokens(w, h) for w in range(1, 5000, 97) for h in (1, 700, 3000)) <= 1445
    )
    for data in ("!!not base64!!", 12, None):  # a part as a hostile checkpoint might hold it
        assert tokens.media_tokens({"kind": "image", "data": data}) == 1445


def test_audio_counts_by_its_duration() -> None:
    # Two seconds of 16 kHz 16-bit mono: 64 tokens at 32 a second.
    assert tokens.media_tokens(part("audio", "audio/wav", wav(2.0))) == 64
    assert media_cost(part("audio", "audio/wav", wav(2.0))) > 64
    # An MP3 (no duration in a header read here) is taken to be 32 kbit/s: 4,000 bytes a second.
    mp3 = part("audio", "audio/mpeg", b"ID3\x04" + b"\x00" * 39_996)
    assert tokens.media_tokens(mp3) == 10 * tokens.AUDIO_TOKENS_PER_SECOND


def test_a_wav_header_that_lies_is_read_as_32_kbits_of_its_bytes() -> None:
    # One byte a second would make a 64,000-byte clip last 18 hours.
    lying = wav(2.0, said_rate=1)
    assert tokens.media_tokens(part("audio", "audio/wav", lying)) == -(-len(lying) * 32 // 4000)
    streamed = bytearray(wav(1.0))
    streamed[40:44] = b"\xff\xff\xff\xff"  # a streamed WAV's data size
    assert tokens.media_tokens(part("audio", "audio/wav", bytes(streamed))) == 32
    assert tokens.media_tokens({"kind": "audio", "data": 5}) == 0


def test_media_only_count_where_the_model_is_sent_them() -> None:
    image = part("image", "image/png", png(1024, 1024))
    # Only a tool message's media are sent (`to_langchain`): anywhere else they are not.
    user = {"role": "user", "content": "look", "media": [image]}
    assert COUNTER.count_message(user) == COUNTER.count_message({"role": "user", "content": "look"})
    # Media the model does not read are never kept: the message is its description alone.
    described = tool(content="[a chart]\n[image image/png, 33 bytes, sha256 5e1c4b2f09ad]")
    assert COUNTER.count_message(described) < 60
    assert COUNTER.count_message(tool(image)) > 765
    assert COUNTER.count_message({**tool(), "media": "junk"}) == COUNTER.count_message(tool())
    assert COUNTER.count_message({**tool(), "media": ["junk", 3]}) == COUNTER.count_message(tool())


def test_the_cache_tells_messages_apart_by_their_media() -> None:
    counter = TokenCounter()
    small = counter.count_message(tool(part("image", "image/png", png(100, 100))))
    large = counter.count_message(tool(part("image", "image/png", png(2048, 768))))
    assert large - small > 1445 - 255 - 5
    assert counter.count_message(tool(part("image", "image/png", png(100, 100)))) == small
    running = ConversationTokens(counter)
    history = [{"role": "user", "content": "draw"}, tool(part("image", "image/png", png(100, 100)))]
    before = running.update(history)
    history[1] = tool(part("image", "image/png", png(2048, 768)))
    assert running.update(history) - before == large - small
    assert running.recounted == 1
