"""Validation of a build: the request's fields and capabilities, and the code's shape.

This is a **filter and a review aid, not the boundary**. Code that passes can still try anything
once it runs (research for this project found 48 escape techniques that an AST check alone does
not stop); what it can *reach* is decided by the OS confinement of
`ai_agent.tools.maker.confine`. The checks here catch mistakes and obvious attempts early,
and tell the reviewer what the code uses:

- spec: a valid name not taken by a static tool, a purpose, typed inputs, known capabilities,
  a short list of well-formed examples (``tests``, `ai_agent.tools.maker.examples`),
  and consistency between capabilities and what they need (``allowed_paths`` for ``fs_read`` and
  ``fs_write``, ``allowed_domains`` for ``http``, ``secrets`` for ``secrets``); paths relative,
  inside the workspace and not hidden; hosts well-formed; secret names that are not the engine's
  own settings (``MAMBA_*``) or variables that change how programs load (``LD_*``, ``PYTHON*``);
- code: it parses; imports only from an allowlist of standard modules (``subprocess``,
  ``socket``, ``ctypes``, ``importlib``, ``pathlib``, ``sys``, ``builtins``... are refused);
  no ``eval``/``exec``/``compile``/``__import__``/``globals``/``vars``/``setattr`` and friends,
  not even as plain names (``f = eval``); ``getattr`` only with a constant, non-dunder name; no
  dunder attributes (``__class__``, ``__globals__``, ``__subclasses__``...) or dunder strings;
  no metaclasses, no relative imports, no ``os`` process or signal functions;
- interface: one ``class GeneratedTool`` with a synchronous ``execute(self, **kwargs)`` (or
  keyword parameters covering the inputs);
- consistency: the code uses ``self.http`` only with the ``http`` capability,
  ``self.secrets`` only with ``secrets``, and opens or changes files only with ``fs_read`` /
  ``fs_write``.

Benign code (dataclasses, json, re, datetime, a method named ``evaluate``) passes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable
from typing import Any

from ai_agent.tools.maker.allowlists import check_relative_path, parse_host_rule
from ai_agent.tools.maker.code_check import check_code
from ai_agent.tools.maker.examples import check_tests
from ai_agent.tools.maker.records import CAPABILITIES, ToolBuildRequest, ValidationReport

__all__ = ["ValidationReport", "validate_code", "validate_request"]

# \Z, not $: "$" also matches before a final newline, so "calculator\n" passed as a name (not
# reserved, a file name with a newline, shown as "calculator" where text keeps its lines).
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}\Z")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_SECRET = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}\Z")
_LONE_CR = re.compile(r"\r(?!\n)")
_JSON_TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")
_RISKS = ("low", "medium", "high")
_MAX_CODE = 64_000
_MAX_ITEMS = 32
_RESERVED_SECRETS = re.compile(
    r"^(MAMBA_.*|LD_.*|PYTHON.*|PATH|HOME|SHELL|ENV|BASH_ENV|IFS|TMPDIR|LANG|LC_.*|DYLD_.*)$"
)


# Spec ------------------------------------------------------------------------------------------
def _check_inputs(inputs: Any, report: ValidationReport) -> None:
    if not isinstance(inputs, dict):
        report.errors.append("inputs must be an object of name -> type")
        return
    if len(inputs) > _MAX_ITEMS:
        report.errors.append(f"at most {_MAX_ITEMS} inputs")
    for key, value in inputs.items():
        if not isinstance(key, str) or not _IDENT.match(key) or key.startswith("_"):
            report.errors.append(f"input name {key!r} is not a plain identifier")
        elif key == "self":
            report.errors.append("an input may not be called 'self'")
        kind = value.get("type") if isinstance(value, dict) else value
        if isinstance(kind, list):
            bad = [k for k in kind if k not in _JSON_TYPES]
        else:
            bad = [] if kind in _JSON_TYPES else [kind]
        if bad:
            report.errors.append(
                f"input {key!r} has type {bad[0]!r}; use one of {', '.join(_JSON_TYPES)}"
            )


def _check_list(values: Any, what: str, report: ValidationReport, check: Any) -> list[str]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        report.errors.append(f"{what} must be a list")
        return []
    if len(values) > _MAX_ITEMS:
        report.errors.append(f"at most {_MAX_ITEMS} {what}")
    out = []
    for value in values:
        try:
            out.append(check(value))
        except ValueError as exc:
            report.errors.append(f"{what}: {exc}")
    return out


def _identifier(value: object) -> str:
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ValueError(f"{value!r} is not an identifier")
    return value


def _secret_name(value: object) -> str:
    if not isinstance(value, str) or not _SECRET.match(value):
        raise ValueError(f"{value!r} is not an environment variable name (A-Z, 0-9, _)")
    if _RESERVED_SECRETS.match(value):
        raise ValueError(
            f"{value!r} is the engine's own setting or changes how programs run; it is never "
            "given to a generated tool"
        )
    return value


def _capability(value: object) -> str:
    if value not in CAPABILITIES:
        raise ValueError(f"{value!r} is unknown; use {', '.join(CAPABILITIES)}")
    return str(value)


def _needs(caps: Collection[str], present: bool, cap_names: Iterable[str], what: str) -> str | None:
    wanted = any(c in caps for c in cap_names)
    names = " or ".join(cap_names)
    if wanted and not present:
        return f"the {names} capability needs {what}"
    if present and not wanted:
        return f"{what} given without the {names} capability"
    return None


def validate_request(
    request: ToolBuildRequest, *, reserved: Collection[str] = ()
) -> ValidationReport:
    """Check a request's fields and the consistency of its capabilities.

    Args:
        request: The build request (its fields may hold anything a model sent).
        reserved: Names of static tools it may not take.

    Returns:
        The report; a request with errors is never built into a reviewable version.

    Examples:
        >>> ok = validate_request(ToolBuildRequest(name="word_count", purpose="Count words."))
        >>> ok.ok
        True
        >>> bad = validate_request(ToolBuildRequest(name="fetch", purpose="x",
        ...                                         capabilities=["http"]))
        >>> bad.errors
        ['the http capability needs allowed_domains']
    """
    report = ValidationReport()
    if not isinstance(request.name, str) or not NAME.match(request.name):
        report.errors.append(
            f"name {request.name!r} is invalid: a letter, then letters, digits or '_' (max 48)"
        )
    elif request.name in reserved:
        report.errors.append(f"name {request.name!r} is taken by a tool that is not generated")
    if not isinstance(request.purpose, str) or not request.purpose.strip():
        report.errors.append("purpose is empty: say what the tool does")
    elif len(request.purpose) > 2000:
        report.errors.append("purpose is longer than 2000 characters")
    _check_inputs(request.inputs, report)
    _check_list(request.outputs, "outputs", report, _identifier)
    caps = _check_list(request.capabilities, "capabilities", report, _capability)
    paths = _check_list(request.allowed_paths, "allowed_paths", report, check_relative_path)
    hosts = _check_list(request.allowed_domains, "allowed_domains", report, parse_host_rule)
    names = _check_list(request.secrets, "secrets", report, _secret_name)
    for problem in (
        _needs(caps, bool(paths), ("fs_read", "fs_write"), "allowed_paths"),
        _needs(caps, bool(hosts), ("http",), "allowed_domains"),
        _needs(caps, bool(names), ("secrets",), "secrets"),
    ):
        if problem:
            report.errors.append(problem)
    if request.risk not in _RISKS:
        report.errors.append(f"risk {request.risk!r} is not one of {', '.join(_RISKS)}")
    code: object = request.code  # an intent is untyped data, whatever the annotation says
    if code is not None and not isinstance(code, str):
        report.errors.append("code must be a string holding a Python module")
    report.errors += check_tests(request.tests)
    return report


def validate_code(
    code: str, *, capabilities: Collection[str] = (), inputs: Collection[str] = ()
) -> ValidationReport:
    r"""Check a generated module: parse, imports, names, attributes, interface, capabilities.

    Args:
        code: The module's source.
        capabilities: The capabilities the spec declares (what the code may use).
        inputs: The input names ``execute`` must accept (unless it takes ``**kwargs``).

    Returns:
        The report: errors (the build fails), warnings and uses (for the reviewer).

    Examples:
        >>> src = '''
        ... import json
        ... class GeneratedTool:
        ...     def evaluate(self, text):
        ...         return json.dumps({"n": len(text)})
        ...     def execute(self, **kwargs):
        ...         return self.evaluate(kwargs.get("text", ""))
        ... '''
        >>> validate_code(src).ok
        True
        >>> validate_code("import subprocess\nclass GeneratedTool:\n"
        ...               "    def execute(self, **kw): pass").errors
        ["line 1: import of 'subprocess' is forbidden (it reaches outside the tool)"]
    """
    report = ValidationReport()
    if len(code) > _MAX_CODE:
        report.errors.append(f"the code is longer than {_MAX_CODE} characters")
        return report
    lone_cr = _LONE_CR.search(code)
    if lone_cr is not None:
        # Python ends a line at a lone CR; a reviewer's screen may not, so "# note\rimport os"
        # would read as one comment while the import runs.
        line = code.count("\n", 0, lone_cr.start()) + 1
        report.errors.append(
            f"line {line}: a carriage return that is not followed by a line feed ends a line "
            "for Python but not on every screen; write line ends as \\n or \\r\\n"
        )
        return report
    try:
        tree = ast.parse(code, filename="<generated>")
    except (SyntaxError, ValueError) as exc:
        report.errors.append(f"the code does not parse: {exc}")
        return report
    check_code(tree, capabilities, inputs, report)
    caps = set(capabilities)
    if "fs_write" in caps:
        report.warnings.append("writes files in its allowed paths")
    if "http" in caps:
        report.warnings.append("sends HTTP requests (through the engine's broker)")
    if "secrets" in caps:
        report.warnings.append("receives secrets in its environment")
    return report
