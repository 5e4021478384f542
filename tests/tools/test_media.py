"""Images and audio in tool results: what is kept, what the model is sent, what logs show."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from ai_agent.models.messages import to_langchain
from ai_agent.observability.redaction import elide_media
from ai_agent.state import MediaPart, Message, ToolCall, ToolResult
from ai_agent.testing._requests import invalid_request
from ai_agent.tools.media import admit, describe, media_part, readable, summary
from ai_agent.tools.results import normalise

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 56).decode()


def _part(kind: Any = "image", mime: str = "image/png", data: str = PNG) -> MediaPart:
    part = media_part(kind, mime, data)
    assert part is not None
    return part


def test_a_part_is_measured_from_its_bytes() -> None:
    part = _part()
    raw = base64.b64decode(PNG)
    assert (part["size"], part["sha256"]) == (len(raw), hashlib.sha256(raw).hexdigest())
    assert media_part("image", "image/png", "not base64!") is None
    assert summary([part, "junk"]) == [{k: v for k, v in part.items() if k != "data"}]


def test_only_what_the_model_reads_in_a_format_it_takes_is_admitted() -> None:
    image, wav = _part(), _part("audio", "audio/wav")
    ogg, svg = _part("audio", "audio/ogg"), _part("image", "image/svg+xml")
    result = ToolResult(status="ok", content="x", media=[image, wav, ogg, svg])
    assert admit(result, {"image", "audio"}, 10_000)["media"] == [image, wav]
    assert admit(result, {"audio"}, 10_000)["media"] == [wav]
    assert "media" not in admit(result, {"image", "audio"}, image["size"] - 1)
    assert "media" not in admit(result, set(), 10_000)
    plain = ToolResult(status="ok", content="x")
    assert admit(plain, {"image"}, 10) is plain
    assert not readable({"kind": "image", "mime_type": "image/png", "data": 3}, {"image"}, 99)
    assert not readable("a part", {"image"}, 99)


def test_a_tools_own_media_are_rebuilt_never_taken_on_its_word() -> None:
    lie = {"kind": "image", "mime_type": "image/png", "data": PNG, "size": 1, "sha256": "0"}
    result = normalise(
        {
            "status": "ok",
            "content": "a chart",
            "media": [lie, {"kind": "video", "mime_type": "video/mp4", "data": PNG}, "junk"],
        }
    )
    assert result["media"] == [_part()]
    assert result["content"] == f"a chart\n{describe(_part())}"
    # A text that describes its parts already (an MCP result) gets no second line.
    again = normalise(dict(result))
    assert again["content"] == result["content"]
    broken = normalise(
        {"status": "ok", "media": [{"kind": "image", "mime_type": "x", "data": "!"}]}
    )
    assert "media" not in broken
    assert "media" not in normalise({"status": "ok", "media": "not a list"})


def test_media_follow_the_tool_messages_of_their_turn_as_one_user_message() -> None:
    calls = [ToolCall(id=f"c1.{n}", name="shot", args={}) for n in range(2)]
    messages: list[Message] = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "content": "[a]", "tool_call_id": "c1.0", "name": "shot",
         "media": [_part()]},
        {"role": "tool", "content": "[b]", "tool_call_id": "c1.1", "name": "shot",
         "media": [_part("audio", "audio/mpeg")]},
        {"role": "assistant", "content": "seen"},
    ]  # fmt: skip
    sent = to_langchain(messages)
    assert [m.type for m in sent] == ["human", "ai", "tool", "tool", "human", "ai"]
    parts = sent[4].content
    assert [p["type"] for p in parts if isinstance(p, dict)] == [
        "text",
        "image_url",
        "text",
        "input_audio",
    ]
    assert parts[3] == {"type": "input_audio", "input_audio": {"data": PNG, "format": "mp3"}}
    # What the real API takes: the mock server checks the body as it does.
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "look"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": "s", "arguments": "{}"},
                    }
                    for c in calls
                ],
            },
            {"role": "tool", "tool_call_id": "c1.0", "content": "[a]"},
            {"role": "tool", "tool_call_id": "c1.1", "content": "[b]"},
            {"role": "user", "content": parts},
        ],
    }
    assert invalid_request(body) is None


def test_the_mock_server_checks_content_parts_as_the_api_does() -> None:
    def problem(role: str, part: Any) -> tuple[str | None, str]:
        found = invalid_request({"model": "m", "messages": [{"role": role, "content": [part]}]})
        assert found is not None
        return found.param, found.message

    audio = {"type": "input_audio", "input_audio": {"data": "AA", "format": "ogg"}}
    assert problem("user", audio) == (
        "messages[0].content[0].input_audio.format",
        "Invalid value: 'ogg'. Supported values are: 'wav' and 'mp3'.",
    )
    assert problem("system", audio)[0] == "messages[0].content[0].type"
    assert problem("user", {"type": "input_audio"})[0] == "messages[0].content[0].input_audio.data"
    assert problem("user", {"type": "image_url"})[0] == "messages[0].content[0].image_url.url"
    assert problem("user", {"type": "text"})[0] == "messages[0].content[0].text"
    assert problem("user", "text")[0] == "messages[0].content[0]"
    assert problem("system", {"type": "image_url", "image_url": {"url": "x"}})[1].startswith(
        "Invalid 'messages[0]'. Image URLs are only allowed for messages with role 'user'"
    )


def test_logged_bodies_show_media_by_size_and_digest() -> None:
    blob = base64.b64encode(bytes(range(256)) * 2).decode()
    digest = hashlib.sha256(bytes(range(256)) * 2).hexdigest()[:12]
    assert elide_media(f'"data": "{blob}"') == f'"data": "<base64: 512 bytes, sha256 {digest}>"'
    short = "A" * 100
    assert elide_media(short) == short
    not_base64 = "A" * 257  # a run of the alphabet that does not decode stays as it is
    assert elide_media(not_base64) == not_base64
