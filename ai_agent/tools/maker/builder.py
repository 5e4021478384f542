"""The builder: structured intent -> `ToolBuildRequest` -> canonical spec + Python code.

Without ``code`` in the request, the code comes from one template, so the same request always
gives the same module (byte for byte): the operation follows the capabilities (``http``: one
request through the broker; ``fs_write``: write ``content`` to ``path``; ``fs_read``: read
``path``; none: return the named outputs from the inputs). With ``code``, the module is taken as
the model wrote it and only validated. Either way the reviewer sees the exact file that will run.

Examples:
    >>> request = request_from_intent({"name": "word_count", "purpose": "Count words.",
    ...                                "inputs": {"text": "string"}, "outputs": ["result"]})
    >>> spec, code = build(request, version=1)
    >>> spec.parameters["required"], "class GeneratedTool" in code
    (['text'], True)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ai_agent.errors import ToolBuildError
from ai_agent.tools.maker.records import LIST_FIELDS, GeneratedToolSpec, ToolBuildRequest

__all__ = [
    "INTENT_KEYS",
    "build",
    "canonical_spec",
    "code_sha256",
    "render_code",
    "request_from_intent",
]

INTENT_KEYS = ("name", "purpose", "inputs", *LIST_FIELDS, "risk", "code", "tests")


def request_from_intent(intent: Mapping[str, Any]) -> ToolBuildRequest:
    """A build request from a structured intent (a dict with the keys of ``INTENT_KEYS``).

    Field values are checked by the validator, not here; this only refuses what is not an intent.

    Args:
        intent: ``name`` and ``purpose``, and any of the other ``INTENT_KEYS``.

    Returns:
        The request (missing fields take their defaults).

    Raises:
        ToolBuildError: not a mapping, ``name``/``purpose`` missing, or unknown keys.
    """
    if not isinstance(intent, Mapping):
        raise ToolBuildError(f"an intent is an object with {', '.join(INTENT_KEYS)}")
    unknown = sorted(set(intent) - set(INTENT_KEYS))
    if unknown:
        raise ToolBuildError(
            f"unknown intent field(s) {', '.join(map(str, unknown))}; use {', '.join(INTENT_KEYS)}"
        )
    missing = [k for k in ("name", "purpose") if not intent.get(k)]
    if missing:
        raise ToolBuildError(f"the intent needs {' and '.join(missing)}")
    values: dict[str, Any] = {k: intent[k] for k in INTENT_KEYS if intent.get(k) is not None}
    for key in LIST_FIELDS:
        if isinstance(values.get(key), tuple):
            values[key] = list(values[key])
    return ToolBuildRequest(**values)


def code_sha256(code: str) -> str:
    """The hash that pins reviewed code to what runs.

    Args:
        code: A module's source.

    Returns:
        The sha256 of its UTF-8 bytes, in hex.
    """
    return hashlib.sha256(code.encode()).hexdigest()


def _schema(inputs: Mapping[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required = []
    for name in sorted(inputs):
        value = inputs[name]
        schema = dict(value) if isinstance(value, Mapping) else {"type": value}
        properties[name] = schema
        if "default" not in schema:
            required.append(name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _sorted(values: Any) -> tuple[str, ...]:
    return tuple(sorted({str(v) for v in values}))


def canonical_spec(request: ToolBuildRequest, version: int, code: str) -> GeneratedToolSpec:
    """The canonical spec of ``request`` at ``version`` with ``code`` (sorted, de-duplicated).

    Args:
        request: What was asked for.
        version: The version number it gets.
        code: The module it runs (hashed into the spec).

    Returns:
        The spec, with the arguments' JSON schema built from ``request.inputs``.
    """
    return GeneratedToolSpec(
        name=request.name,
        version=version,
        purpose=request.purpose.strip(),
        parameters=_schema(request.inputs),
        outputs=tuple(dict.fromkeys(str(o) for o in request.outputs)),
        capabilities=_sorted(request.capabilities),
        allowed_paths=_sorted(request.allowed_paths),
        allowed_domains=_sorted(d.strip().lower() for d in request.allowed_domains),
        secrets=_sorted(request.secrets),
        risk=request.risk,
        code_sha256=code_sha256(code),
        generated=request.code is None,
    )


def build(request: ToolBuildRequest, version: int) -> tuple[GeneratedToolSpec, str]:
    """The canonical spec and the code of one version (the request's code, or the template's).

    Args:
        request: What was asked for.
        version: The version number it gets.

    Returns:
        ``(spec, code)``.
    """
    code = request.code if request.code is not None else render_code(request)
    return canonical_spec(request, version, code), code


# The template ----------------------------------------------------------------------------------
_HEADER = '''"""{name}: {headline}

Generated by the ai-agent toolsmaker from a structured intent (template 1). It runs confined
by the operating system and can reach only what its spec declares.
Files: {paths}. Network (through the engine's broker): {hosts}. Secrets: {secrets}.
"""

from __future__ import annotations

import json
import os

NAME = {name_lit}
INPUTS = {inputs}
OUTPUTS = {outputs}
ALLOWED_PATHS = {allowed_paths}
ALLOWED_DOMAINS = {allowed_domains}


def _inside(path):
    """A relative path inside one of ALLOWED_PATHS (the sandbox mounts nothing else)."""
    clean = os.path.normpath(str(path))
    if clean.startswith("/") or clean == ".." or clean.startswith("../"):
        raise ValueError("path must be relative to the workspace: " + str(path))
    for root in ALLOWED_PATHS:
        if clean == root or clean.startswith(root + "/"):
            return clean
    raise ValueError("path is outside the allowed paths " + ", ".join(ALLOWED_PATHS))


class GeneratedTool:
    """{purpose_doc}"""

    def execute(self, **kwargs):
        unknown = sorted(set(kwargs) - set(INPUTS))
        if unknown:
            raise ValueError("unknown inputs: " + ", ".join(unknown))
'''

_HTTP = """        url = kwargs.get("url") or "https://" + ALLOWED_DOMAINS[0].lstrip("*.") + "/"
        method = kwargs.get("method") or "GET"
        body = kwargs.get("body")
        if body is not None and not isinstance(body, str):
            body = json.dumps(body)
        headers = {{}}
{auth}        response = self.http.request(method, url, headers=headers, body=body)
        return {{"status": response["status"], "body": response["body"]}}
"""

_WRITE = """        target = _inside(kwargs.get("path") or ALLOWED_PATHS[0] + "/output.txt")
        content = kwargs.get("content")
        if not isinstance(content, str):
            content = json.dumps(kwargs, sort_keys=True)
        folder = os.path.dirname(target)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(content)
        return {"path": target, "written": len(content)}
"""

_READ = """        if not kwargs.get("path"):
            return {"entries": {root: sorted(os.listdir(root)) for root in ALLOWED_PATHS}}
        target = _inside(kwargs["path"])
        with open(target, encoding="utf-8") as handle:
            return {"path": target, "content": handle.read()}
"""

_ECHO = """        if not OUTPUTS:
            return {"result": kwargs}
        return {name: kwargs.get(name) for name in OUTPUTS}
"""


def _literal(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True)


def _docstring_text(text: str) -> str:
    """``text`` made inert inside a ``\"\"\"`` docstring of the template.

    The requester's words (purpose, paths) are written into the module's docstrings. Unescaped,
    an allowed path such as ``notes\"\"\"; import os; \"\"\"`` closed the docstring and put the
    requester's code into a module the review calls the template's. Backslashes are doubled, a
    run of three quotes becomes ``'''`` (so at most two remain side by side) and a final quote
    is escaped, so it cannot join the closing quotes either.
    """
    text = text.replace("\\", "\\\\").replace('"""', "'''")
    stripped = text.rstrip('"')
    return stripped + '\\"' * (len(text) - len(stripped))


def render_code(request: ToolBuildRequest) -> str:
    """The template's module for ``request`` (deterministic).

    Args:
        request: What was asked for; its capabilities choose the operation (``http``, else
            ``fs_write``, else ``fs_read``, else returning the named outputs).

    Returns:
        The module's source; the same request always gives the same bytes.
    """
    spec = canonical_spec(request, 0, "")
    caps = set(spec.capabilities)
    headline = spec.purpose.splitlines()[0] if spec.purpose else spec.name
    code = _HEADER.format(
        name=spec.name,
        headline=_docstring_text(headline),
        paths=_docstring_text(", ".join(spec.allowed_paths) or "none"),
        hosts=_docstring_text(", ".join(spec.allowed_domains) or "none"),
        secrets=_docstring_text(", ".join(spec.secrets) or "none"),
        name_lit=_literal(spec.name),
        inputs=_literal(spec.parameters["properties"]),
        outputs=_literal(list(spec.outputs)),
        allowed_paths=_literal(list(spec.allowed_paths)),
        allowed_domains=_literal(list(spec.allowed_domains)),
        purpose_doc=_docstring_text(spec.purpose),
    )
    if "http" in caps:
        auth = ""
        if spec.secrets:
            auth = (
                f'        headers["Authorization"] = "Bearer " + '
                f"self.secrets[{_literal(spec.secrets[0])}]\n"
            )
        return code + _HTTP.format(auth=auth)
    if "fs_write" in caps:
        return code + _WRITE
    if "fs_read" in caps:
        return code + _READ
    return code + _ECHO
