"""What the OpenAI chat completions API refuses: the request checks of the mock server.

The real API answers 400 to a request body of the wrong shape, before any model runs; a mock that
answers anything lets a test pass on a request no real server would take. `invalid_request`
checks what the API checks (the body, ``model``, ``messages``, their roles and the content parts
each role may send, the pairing of tool calls with tool results, ``tools``, ``tool_choice``,
``stream_options``) and returns the problem as the API words it: a message, the ``param`` at
fault and a string ``code`` (or None, as the API sends for some).

Examples:
    >>> invalid_request({"model": "m", "messages": []}).param
    'messages'
    >>> invalid_request({"model": "m", "messages": [{"role": "user", "content": "hi"}]}) is None
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["RequestProblem", "invalid_request"]

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_TOOL_CHOICES = ("none", "auto", "required")
# OpenAI's rule for function names.
_FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}\Z")


@dataclass(frozen=True, slots=True)
class RequestProblem:
    """Why a request is refused, in the API's terms."""

    message: str
    param: str | None = None
    code: str | None = "invalid_value"


def invalid_request(body: Any) -> RequestProblem | None:
    """The first thing the real API would refuse in a chat completions request, or None."""
    if not isinstance(body, dict):
        return RequestProblem("the request body must be a JSON object", None, "invalid_type")
    for check in (_model, _messages, _tools, _tool_choice, _stream_options):
        problem = check(body)
        if problem is not None:
            return problem
    return None


def _missing(param: str) -> RequestProblem:
    return RequestProblem(
        f"Missing required parameter: '{param}'.", param, "missing_required_parameter"
    )


def _model(body: dict[str, Any]) -> RequestProblem | None:
    if "model" not in body:
        return RequestProblem("you must provide a model parameter", "model", None)
    if not isinstance(body["model"], str):
        return RequestProblem("'model' must be a string", "model", "invalid_type")
    return None


def _messages(body: dict[str, Any]) -> RequestProblem | None:
    messages = body.get("messages")
    if "messages" not in body:
        return _missing("messages")
    if not isinstance(messages, list):
        return RequestProblem(
            f"Invalid type for 'messages': expected an array, but got {type(messages).__name__}",
            "messages",
            "invalid_type",
        )
    if not messages:
        return RequestProblem(
            "Invalid 'messages': empty array. Expected an array with minimum length 1.",
            "messages",
            "empty_array",
        )
    for index, message in enumerate(messages):
        problem = _message(index, message)
        if problem is not None:
            return problem
    return _tool_pairing(messages)


def _wrong_type(where: str, expected: str) -> RequestProblem:
    return RequestProblem(f"Invalid type for '{where}': expected {expected}", where, "invalid_type")


def _message(index: int, message: Any) -> RequestProblem | None:
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        return _wrong_type(where, "an object")
    return _role(where, message) or _content(where, message)


def _role(where: str, message: dict[str, Any]) -> RequestProblem | None:
    role = message.get("role")
    if role is None:
        return _missing(f"{where}.role")
    if role not in _ROLES:
        return RequestProblem(
            f"Invalid value: '{role}'. Supported values are: "
            + ", ".join(f"'{r}'" for r in _ROLES)
            + ".",
            f"{where}.role",
        )
    return None


def _content(where: str, message: dict[str, Any]) -> RequestProblem | None:
    role, content = message["role"], message.get("content")
    if content is not None and not isinstance(content, str | list):
        return RequestProblem(
            f"Invalid type for '{where}.content': expected one of a string or array of objects",
            f"{where}.content",
            "invalid_type",
        )
    if content is None and not (role == "assistant" and message.get("tool_calls")):
        return _missing(f"{where}.content")
    if role == "tool" and not message.get("tool_call_id"):
        return _missing(f"{where}.tool_call_id")
    if isinstance(content, list):
        for n, part in enumerate(content):
            problem = _part(f"{where}.content[{n}]", role, part)
            if problem is not None:
                return problem
    return None


# The content parts each role may send (chat completions); images and audio only from the user.
_PARTS = {"user": ("text", "image_url", "input_audio", "file"), "assistant": ("text", "refusal")}
_AUDIO_FORMATS = ("wav", "mp3")


def _part(where: str, role: str, part: Any) -> RequestProblem | None:
    if not isinstance(part, dict):
        return _wrong_type(where, "an object")
    kind = part.get("type")
    allowed = _PARTS.get(role, ("text",))
    if kind == "image_url" and kind not in allowed:
        message = where.split(".content", maxsplit=1)[0]
        return RequestProblem(
            f"Invalid '{message}'. Image URLs are only allowed for messages with role 'user', "
            f"but this message with role '{role}' contains an image URL.",
            where,
        )
    if kind not in allowed:
        return RequestProblem(
            f"Invalid value: '{kind}'. Supported values are: "
            + ", ".join(f"'{k}'" for k in allowed)
            + ".",
            f"{where}.type",
        )
    return _part_fields(where, str(kind), part)


def _part_fields(where: str, kind: str, part: dict[str, Any]) -> RequestProblem | None:
    if kind == "text" and not isinstance(part.get("text"), str):
        return _missing(f"{where}.text")
    if kind == "image_url" and not isinstance((part.get("image_url") or {}).get("url"), str):
        return _missing(f"{where}.image_url.url")
    audio = part.get("input_audio") or {}
    if kind == "input_audio" and not isinstance(audio.get("data"), str):
        return _missing(f"{where}.input_audio.data")
    if kind == "input_audio" and audio.get("format") not in _AUDIO_FORMATS:
        return RequestProblem(
            f"Invalid value: '{audio.get('format')}'. Supported values are: 'wav' and 'mp3'.",
            f"{where}.input_audio.format",
        )
    return None


def _tool_pairing(messages: list[dict[str, Any]]) -> RequestProblem | None:
    """Each tool result answers a call of the assistant turn before it, and each call is answered.

    This is the check a hand-built conversation fails most often: the API refuses a ``tool``
    message that answers no call, and an assistant turn whose calls are not all answered.
    """
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if call_id not in open_calls:
                return RequestProblem(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    f"messages.[{index}].role",
                    None,
                )
            open_calls.discard(call_id)
            continue
        if open_calls:
            return _unanswered(open_calls)
        if role == "assistant":
            calls = message.get("tool_calls") or []
            problem = _calls_shape(index, calls)
            if problem is not None:
                return problem
            open_calls = {str(call["id"]) for call in calls}
    return _unanswered(open_calls) if open_calls else None


def _unanswered(open_calls: set[str]) -> RequestProblem:
    ids = ", ".join(sorted(open_calls))
    return RequestProblem(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        f"{ids}",
        "messages",
        None,
    )


def _calls_shape(index: int, calls: Any) -> RequestProblem | None:
    where = f"messages[{index}].tool_calls"
    if not isinstance(calls, list):
        return _wrong_type(where, "an array")
    for n, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not call.get("id"):
            return _missing(f"{where}[{n}].id" if isinstance(function, dict) else f"{where}[{n}]")
        if not isinstance(function.get("name"), str) or not isinstance(
            function.get("arguments"), str
        ):
            return RequestProblem(
                f"'{where}[{n}].function' needs a string 'name' and string 'arguments'",
                f"{where}[{n}].function",
                "invalid_type",
            )
    return None


def _tools(body: dict[str, Any]) -> RequestProblem | None:
    if "tools" not in body:
        return None
    tools = body["tools"]
    if not isinstance(tools, list):
        return _wrong_type("tools", "an array")
    for index, tool in enumerate(tools):
        problem = _tool(f"tools[{index}]", tool)
        if problem is not None:
            return problem
    return None


def _tool(where: str, tool: Any) -> RequestProblem | None:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return RequestProblem(f"'{where}.type' must be 'function'", f"{where}.type")
    if not isinstance(function, dict) or "name" not in function:
        return _missing(f"{where}.function.name" if isinstance(function, dict) else where)
    if not isinstance(function["name"], str) or not _FUNCTION_NAME.match(function["name"]):
        return RequestProblem(
            f"Invalid '{where}.function.name': string does not match pattern. Expected a "
            "string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
            f"{where}.function.name",
        )
    if not isinstance(function.get("parameters", {}), dict):
        return _wrong_type(f"{where}.function.parameters", "an object")
    return None


def _tool_choice(body: dict[str, Any]) -> RequestProblem | None:
    if "tool_choice" not in body or body["tool_choice"] is None:
        return None
    choice = body["tool_choice"]
    tools = body.get("tools") or []
    if not tools:
        return RequestProblem(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
            "tool_choice",
            None,
        )
    if isinstance(choice, str):
        if choice in _TOOL_CHOICES:
            return None
        return RequestProblem(
            f"Invalid value: '{choice}'. Supported values are: 'none', 'auto', and 'required'.",
            "tool_choice",
        )
    return _named_choice(choice, tools)


def _named_choice(choice: Any, tools: list[dict[str, Any]]) -> RequestProblem | None:
    function = choice.get("function") if isinstance(choice, dict) else None
    if (
        not isinstance(choice, dict)
        or choice.get("type") != "function"
        or not isinstance(function, dict)
    ):
        return RequestProblem(
            "Invalid 'tool_choice': expected 'none', 'auto', 'required' or "
            '{"type": "function", "function": {"name": ...}}',
            "tool_choice",
            "invalid_type",
        )
    names = {t["function"]["name"] for t in tools}
    if function.get("name") not in names:
        return RequestProblem(
            f"Invalid value for 'tool_choice': tool choice '{function.get('name')}' is not one "
            "of the tools given in 'tools'.",
            "tool_choice",
        )
    return None


def _stream_options(body: dict[str, Any]) -> RequestProblem | None:
    options = body.get("stream_options")
    if options is None:
        return None
    if not body.get("stream"):
        return RequestProblem(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        )
    if not isinstance(options, dict):
        return _wrong_type("stream_options", "an object")
    unknown = set(options) - {"include_usage", "include_obfuscation"}
    if unknown:
        return RequestProblem(
            f"Unrecognized request argument supplied: stream_options.{sorted(unknown)[0]}",
            "stream_options",
            "unknown_parameter",
        )
    return None
