"""MCP tools as ToolSpecs: names namespaced by server, categories from annotations, results as data.

Names: a server's tool ``read_file`` joins the registry as ``<server>.read_file`` (on the wire
``<server>__read_file``), so two servers' tools of the same name never shadow each other. A tool
name that our names cannot carry (a dot, a space, a leading digit, too long for the 64 characters
OpenAI allows on the wire) is made safe and given a short hash of its own, so it never takes a
name the server lists (now or in a later version); the call still goes out under the server's
own name.

Categories come from the tool's annotations, the strictest that applies:

=====================================  ================
annotation                             category
=====================================  ================
``openWorldHint: true``                EXTERNAL
``readOnlyHint: true``                 READ_ONLY
``destructiveHint: true``, or          MODIFICATION
``readOnlyHint: false``
none of them                           EXTERNAL
=====================================  ================

A server's ``categories`` setting (tool name or glob -> category) wins over the annotations, which
are the server's own claims.

This module never imports ``mcp``: results and tools are read by their attributes, so importing
the engine does not load the MCP client.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from ai_agent.config import McpServerConfig
from ai_agent.errors import ToolRegistrationError
from ai_agent.state import MediaPart, ToolResult
from ai_agent.tools.media import describe, media_part
from ai_agent.tools.results import to_jsonable
from ai_agent.tools.schema import json_schema_validator
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = [
    "MCP_GROUP",
    "category_for",
    "convert_result",
    "local_names",
    "mcp_tool_spec",
    "selected",
]

MCP_GROUP = "mcp"
_WIRE_LIMIT = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]")
_HASH_CHARS = 6


def category_for(
    annotations: Any, name: str, overrides: Mapping[str, str] | None = None
) -> ToolCategory:
    """The oversight category of an MCP tool (see the module docstring).

    Args:
        annotations: The tool's ``ToolAnnotations`` (or a dict of the hints), or None.
        name: The tool's name on its server, matched against ``overrides``.
        overrides: Tool name or glob -> category; the first match wins.

    Examples:
        >>> category_for({"readOnlyHint": True, "openWorldHint": False}, "read_file")
        <ToolCategory.READ_ONLY: 'read_only'>
        >>> category_for({"readOnlyHint": True, "openWorldHint": True}, "search").value
        'external'
        >>> category_for({"destructiveHint": True}, "write_file").value
        'modification'
        >>> category_for(None, "anything").value
        'external'
        >>> category_for(None, "echo", {"ec*": "read_only"}).value
        'read_only'
    """
    for pattern, category in (overrides or {}).items():
        if fnmatch.fnmatchcase(name, pattern):
            return ToolCategory(category)

    def hint(key: str) -> Any:
        if isinstance(annotations, Mapping):
            return annotations.get(key)
        return getattr(annotations, key, None)

    if hint("openWorldHint") is True:
        return ToolCategory.EXTERNAL
    if hint("readOnlyHint") is True:
        return ToolCategory.READ_ONLY
    if hint("destructiveHint") is True or hint("readOnlyHint") is False:
        return ToolCategory.MODIFICATION
    return ToolCategory.EXTERNAL


def selected(name: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a server's tool is kept under its ``tools`` / ``exclude_tools`` settings.

    Examples:
        >>> selected("read_file", ["read_*"], []), selected("read_file", [], ["*file"])
        (True, False)
    """
    if include and not any(fnmatch.fnmatchcase(name, p) for p in include):
        return False
    return not any(fnmatch.fnmatchcase(name, p) for p in exclude)


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_CHARS]


def local_names(server: str, names: Iterable[str]) -> dict[str, str]:
    """Registry-safe names for a server's tools: ``{local name: the server's name}``.

    The local name is the server's name when it fits (letters, digits, ``_``, ``-``, starting
    with a letter or ``_``, and short enough that ``<server>__<name>`` is at most 64 characters);
    otherwise it is made to fit and always ends in a hash of the original, whatever else the
    server lists. A made name without the hash (``files_list``) would be a name the server
    could list itself: then the name meant another tool, and a call approved, or a rule made,
    for one ran the other.

    Examples:
        >>> local_names("fs", ["read_file", "files.list", "2fa"])
        {'read_file': 'read_file', 'files_list_7e7aa1': 'files.list', '_2fa_468975': '2fa'}
        >>> local_names("fs", ["a.b", "a_b"])  # a_b keeps its own name
        {'a_b_2e7336': 'a.b', 'a_b': 'a_b'}
    """
    room = _WIRE_LIMIT - len(server) - 2
    unique = list(dict.fromkeys(names))  # a name listed twice is one tool (the caller says so)

    def safe(original: str) -> str:
        local = _UNSAFE.sub("_", original) or "_"
        return local if local[0].isalpha() or local[0] == "_" else "_" + local

    # Names that fit as they are claim them first: otherwise ``a.b``, listed before ``a_b``,
    # would take ``a_b`` and the server's own ``a_b`` would run under a hashed name.
    local_of = {o: o for o in unique if safe(o) == o and len(o) <= room}
    taken = set(local_of)
    for original in unique:
        if original in local_of:
            continue
        local, salt = "", ""
        while not local or local in taken:  # a hashed name the server listed too: salt
            tail = "_" + _short_hash(original + salt)
            local, salt = safe(original)[: room - len(tail)] + tail, salt + "+"
        local_of[original] = local
        taken.add(local)
    return {local_of[original]: original for original in unique}


def _block(block: Any) -> tuple[str, MediaPart | None]:
    """One MCP content block as text for the model, and the part of an image or audio block."""
    kind = getattr(block, "type", None)
    if kind in ("image", "audio"):
        part = media_part(kind, str(block.mimeType), str(block.data))
        if part is None:  # not base64: described, never sent
            return f"[{kind} {block.mimeType}, {len(str(block.data))} characters, not base64]", None
        return describe(part), part
    return _block_text(block, kind), None


def _block_text(block: Any, kind: Any) -> str:
    """A block that is not an image or audio as text (a binary resource is described)."""
    if kind == "text":
        return str(block.text)
    if kind == "resource_link":
        return f"[resource {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return str(text)
        mime = getattr(resource, "mimeType", None) or "application/octet-stream"
        size = _decoded_size(getattr(resource, "blob", ""))
        return f"[binary resource {resource.uri}, {mime}, {size} bytes]"
    return f"[{kind or 'unknown'} content]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def convert_result(result: Any, *, server: str, tool: str) -> ToolResult:
    """An MCP ``CallToolResult`` as a ToolResult of JSON data.

    Text blocks become the content (joined by newlines); a result with structured content and no
    text gives the structured content; images and audio are described in the text (type, size,
    digest) and kept as ``media`` (`ai_agent.tools.media`: the Agent's tool box keeps those the
    model reads), binary resources are described. ``isError`` results are errors with code
    ``MCP_TOOL_ERROR`` carrying the server's message.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> ok = NS(content=[NS(type="text", text="hello")], structuredContent=None,
        ...         isError=False)
        >>> convert_result(ok, server="fs", tool="read_file")["content"]
        'hello'
        >>> bad = NS(content=[NS(type="text", text="ENOENT: no such file")],
        ...          structuredContent=None, isError=True)
        >>> convert_result(bad, server="fs", tool="read_file")["error"]
        'ENOENT: no such file'
    """
    blocks = [_block(block) for block in result.content or []]
    text = "\n".join(line for line, _ in blocks)
    media = [part for _, part in blocks if part is not None]
    meta: dict[str, Any] = {"mcp_server": server, "mcp_tool": tool}
    if result.isError:
        meta["code"] = "MCP_TOOL_ERROR"
        return ToolResult(
            status="error",
            error=text or f"the MCP tool {tool} reported an error without a message",
            meta=meta,
        )
    structured = result.structuredContent
    content: Any = text
    if not text and structured is not None:
        content = to_jsonable(structured)
    out = ToolResult(status="ok", content=content, meta=meta)
    if media:
        out["media"] = media
    return out


MAX_TOOL_CHARS = 100_000
"""The most an MCP tool's description and input schema may take together (JSON characters)."""


def _description(tool: Any, server: str) -> str:
    text = (getattr(tool, "description", None) or "").strip()
    title = (getattr(tool, "title", None) or "").strip()
    if text:
        return text
    return title or f"{tool.name} (a tool of the MCP server {server!r})"


def _parameters(tool: Any) -> dict[str, Any]:
    schema = dict(getattr(tool, "inputSchema", None) or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def mcp_tool_spec(
    config: McpServerConfig,
    tool: Any,
    local: str,
    invoke: Callable[[str, dict[str, Any]], Awaitable[ToolResult]],
    *,
    secret_env: Sequence[str] = (),
    target: str = "",
    timeout: float | None = None,
) -> ToolSpec:
    """The ToolSpec of one MCP tool, calling it through ``invoke(server_tool_name, args)``.

    Raises:
        ToolRegistrationError: the tool's input schema is not a valid JSON schema, it and the
            description are larger than `MAX_TOOL_CHARS`, or the server runs the tool only as
            an MCP task.
    """
    name = f"{config.name}.{local}"
    execution = getattr(tool, "execution", None)
    if getattr(execution, "taskSupport", None) == "required":
        # Tasks (SEP-1686) left the MCP specification, and the SDK's client for them is
        # deprecated: a call without one fails on such a tool every time, so it is not offered.
        raise ToolRegistrationError(
            f"tool {name!r} runs only as an MCP task (its execution.taskSupport is "
            "'required'), and ai-agent calls tools directly: tasks were removed from the MCP "
            "specification"
        )
    parameters = _parameters(tool)
    description = _description(tool, config.name)
    size = len(description) + len(json.dumps(parameters, ensure_ascii=False, default=str))
    if size > MAX_TOOL_CHARS:
        # Sent with every model request while the tool is offered: a server's 10 MB schema
        # would fill the context window of every turn.
        raise ToolRegistrationError(
            f"tool {name!r}: its description and input schema are {size:,} characters, more "
            f"than the {MAX_TOOL_CHARS:,} a tool may take in every request to the model"
        )
    validator = json_schema_validator(parameters, owner=name)
    original = str(tool.name)

    async def call(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        return await invoke(original, args)

    where = f"MCP server {config.name!r} ({config.transport}: {target or config.target})"

    def preview(args: dict[str, Any]) -> str:
        shown = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
        return f"{name}({shown})\non {where}"

    return ToolSpec(
        name=name,
        fn=call,
        description=description,
        parameters=parameters,
        category=category_for(getattr(tool, "annotations", None), original, config.categories),
        timeout=timeout,
        preview=preview,
        validator=validator,
        group=MCP_GROUP,
        secret_env=tuple(secret_env),
    )
