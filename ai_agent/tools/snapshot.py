"""ToolSnapshot: an immutable copy of the registry's enabled tools, and the one way to run them.

A ToolSnapshot never changes after it is built, so a run that pinned one for a cycle sees the same
tools, schemas and functions from draft to act even while someone registers, replaces, disables
or removes tools on the registry (`ai_agent.tools.registry.TurnView` does the pinning).

``execute`` wraps every call the same way: the arguments are checked against the schema (a call
that does not fit never runs), the environment keys are checked and handed over in
``ctx["env"]``, the call runs under a timeout (sync tools in a worker thread), an exception
becomes an error result, what comes back becomes JSON data (bytes only when they are UTF-8
text) no larger than ``max_result_chars``, every secret value is scrubbed from it, and the result
gets ``execution_time_ms`` and the tool's own ``summary`` line.

What a tool returns that the engine cannot keep is the tool's problem, reported to the model as
an error result naming the tool, never the engine's: bytes that are not text
(``NON_TEXT_OUTPUT``), a result past the size limit (``OUTPUT_TOO_LARGE``), or a value that
cannot become JSON data (``BAD_RESULT``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, cast

from ai_agent.context import CallReview, ToolInfo
from ai_agent.datafiles import valid_data
from ai_agent.errors import SandboxUnavailableError, ToolPolicyViolation
from ai_agent.models.resilience import RetryPolicy, retry_tool
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools.naming import wire_name
from ai_agent.tools.results import (
    Scrubber,
    cap_summary,
    default_summary,
    labelled,
    model_text,
    normalise,
    schema_violation,
)
from ai_agent.tools.schema import json_schema_validator
from ai_agent.tools.spec import ToolSpec, without_engine_meta

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_TOOL_TIMEOUT",
    "ToolSet",
    "ToolSnapshot",
    "missing_env",
]

DEFAULT_TOOL_TIMEOUT = 30.0
DEFAULT_MAX_RESULT_CHARS = 10_000_000
_PREVIEW_CHARS = 4000
# What follows a preview cut at _PREVIEW_CHARS.
PREVIEW_CUT = "\n... (preview cut; "
# Environment variables whose names say they hold a secret: their values are scrubbed from every
# result too, whether or not a tool declared them (defence in depth: a shell tool can print them).
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def missing_env(spec: ToolSpec) -> list[str]:
    """The names in ``spec.requires_env`` that are not set (or empty) in the environment."""
    return [name for name in spec.requires_env if not os.environ.get(name)]


def _timeout_result(name: str, seconds: float) -> ToolResult:
    return ToolResult(
        status="error",
        error=f"ToolTimeoutError: {name} did not finish within {seconds:g}s and was stopped. "
        "Narrow the scope (a smaller directory, a more specific pattern, fewer results) and "
        "try again.",
        meta={"code": "TIMEOUT", "error_type": "ToolTimeoutError", "timeout_s": seconds},
    )


def _guarded(fn: Callable[[], str], fallback: Callable[[], str]) -> str:
    """A preview or summary from a tool's own function; a bug in it must not break the run."""
    try:
        text = fn()
    except Exception:
        return fallback()
    return text if isinstance(text, str) else fallback()


class ToolSnapshot:
    """An immutable set of enabled tools, implementing the ToolBox protocol.

    Args:
        specs: The tools, by name.
        timeout: Seconds a call may take when its spec does not say.
        retry: Retries of retryable failures (``ai_agent.models.resilience``; None: no retries).
        max_result_chars: The largest result a tool may return, in characters of its JSON form
            (None: no limit).

    Examples:
        >>> import asyncio
        >>> from ai_agent.tools.spec import ToolCategory
        >>> echo = ToolSpec("fs.echo", lambda a, c: a["text"], description="Echo a text.",
        ...                 category=ToolCategory.READ_ONLY)
        >>> tools = ToolSnapshot({"fs.echo": echo})
        >>> [s["function"]["name"] for s in tools.schemas(["fs.echo"])]
        ['fs__echo']
        >>> tools.info("fs__echo")["name"]
        'fs.echo'
        >>> asyncio.run(tools.execute({"id": "1", "name": "fs.echo", "args": {"text": "hi"}},
        ...                           {}))["content"]
        'hi'
    """

    def __init__(
        self,
        specs: Mapping[str, ToolSpec],
        *,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        retry: RetryPolicy | None = None,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self._specs: Mapping[str, ToolSpec] = MappingProxyType(dict(specs))
        self._wire = MappingProxyType({wire_name(n): n for n in self._specs})
        self.timeout = timeout
        self.retry = retry
        self.max_result_chars = max_result_chars
        self._validators: dict[str, Callable[[dict[str, Any]], list[str]]] = {}
        secret_names = {n for s in self._specs.values() for n in (*s.requires_env, *s.secret_env)}
        self._secret_names = frozenset(secret_names)
        # The environment's names, and those that hold secrets, as last seen (rescanned when
        # the set of names changes; matching every name on every call was most of a call's cost).
        self._env_names: tuple[str, ...] = ()
        self._env_secrets: tuple[str, ...] = ()

    # Lookup ----------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """The tools' names, sorted."""
        return sorted(self._specs)

    def canonical(self, name: str) -> str | None:
        """The tool's own name for ``name`` (itself or its wire name), or None."""
        if name in self._specs:
            return name
        return self._wire.get(name)

    def spec(self, name: str) -> ToolSpec | None:
        """The spec of a tool by name or wire name, or None."""
        canonical = self.canonical(name)
        return self._specs[canonical] if canonical is not None else None

    def info(self, name: str) -> ToolInfo | None:
        """What the stages need to know about a tool, or None when there is no such tool."""
        spec = self.spec(name)
        if spec is None:
            return None
        info = ToolInfo(
            name=spec.name,
            description=spec.description,
            category=spec.category.value,
            requires_env=list(spec.requires_env),
            parameters=spec.schema["function"]["parameters"],
        )
        if spec.concurrent:  # said only when it holds (a subagent's tool)
            info["concurrent"] = True
        return info

    def catalog(self) -> list[ToolInfo]:
        """Every tool of the set, sorted by name."""
        return [info for name in self.names if (info := self.info(name)) is not None]

    def schemas(self, names: list[str]) -> list[dict[str, Any]]:
        """OpenAI function schemas of the named tools, under their wire names, in the order given.

        Unknown names are skipped.
        """
        out = []
        for name in names:
            spec = self.spec(name)
            if spec is not None:
                schema = spec.schema
                schema["function"]["name"] = wire_name(spec.name)
                out.append(schema)
        return out

    # Secrets ---------------------------------------------------------------------------------
    def secret_env_values(self) -> list[str]:
        """The current values of every environment variable a tool's secret may be in.

        The tools' ``requires_env`` and ``secret_env`` variables and every variable whose name
        looks secret, read now: a key exported after a pause counts.
        """
        names = tuple(os.environ)
        if names != self._env_names:
            found = {n for n in names if _SECRET_NAME.search(n)} | self._secret_names
            self._env_names, self._env_secrets = names, tuple(sorted(found))
        return [os.environ.get(n, "") for n in self._env_secrets]

    def scrubber(self) -> Scrubber:
        """Replaces the current values of every secret environment variable a tool could see."""
        return Scrubber(self.secret_env_values())

    # Review ----------------------------------------------------------------------------------
    def _validator(self, spec: ToolSpec) -> Callable[[dict[str, Any]], list[str]] | None:
        if spec.validator is not None:
            return spec.validator
        if spec.parameters is None:
            return None
        if spec.name not in self._validators:
            self._validators[spec.name] = json_schema_validator(
                spec.schema["function"]["parameters"], owner=spec.name
            )
        return self._validators[spec.name]

    def problems(self, spec: ToolSpec, args: Any) -> list[str]:
        """What is wrong with a call's arguments; empty when they fit."""
        if not isinstance(args, dict):
            return [f"arguments: must be a JSON object, got {type(args).__name__}"]
        validator = self._validator(spec)
        if validator is None:
            return []
        try:
            return list(validator(args))
        except Exception as exc:  # a broken validator must not let a call through unchecked
            return [f"arguments: could not be checked ({type(exc).__name__})"]

    def review(self, call: ToolCall) -> CallReview:
        """Schema problems of a call and, when it fits, whether it needs a person regardless."""
        spec = self.spec(call["name"])
        if spec is None:
            return CallReview(problems=[], escalate=None)
        problems = self.problems(spec, call["args"])
        escalate: str | None = None
        if not problems and spec.escalate is not None:
            try:
                escalate = spec.escalate(dict(call["args"]))
            except Exception:  # an escalation check that fails must err on the side of asking
                escalate = f"{spec.name} could not check whether this call is safe"
        if escalate is not None:
            escalate = self.scrubber().text(str(escalate))
        return CallReview(problems=problems, escalate=escalate)

    def preview(self, call: ToolCall) -> str:
        """What the call would do, for a person deciding on it (scrubbed, bounded)."""
        spec = self.spec(call["name"])

        def plain() -> str:
            args = json.dumps(call["args"], sort_keys=True, ensure_ascii=False, default=str)
            return f"{spec.name if spec else call['name']}({args})"

        text = plain()
        if spec is not None and spec.preview is not None:
            hook = spec.preview
            text = _guarded(lambda: hook(dict(call["args"])), plain)
        # Masked whole, then cut: a key the cut ran through would no longer be recognised, and
        # its first part would show.
        text = self.scrubber().text(text)
        if len(text) > _PREVIEW_CHARS:
            rest = text.count("\n", _PREVIEW_CHARS)
            text = text[:_PREVIEW_CHARS] + f"{PREVIEW_CUT}{rest} more line(s))"
        return text

    def format_result(self, name: str, result: ToolResult) -> str:
        """The text the model sees for a result."""
        return model_text(result)

    # Execution -------------------------------------------------------------------------------
    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """Run one call: schema, env, timeout, exceptions to results, secrets scrubbed, timing."""
        started = time.perf_counter()
        spec = self.spec(call["name"])
        if self.retry is None or spec is None:
            result = await self._execute(spec, call, tool_ctx)
        else:
            result = await retry_tool(
                lambda: self._execute(spec, call, tool_ctx),
                self.retry,
                category=spec.category.value,
            )
        if spec is None or not spec.engine_meta:  # only the engine's own tools steer the run
            result = cast(ToolResult, without_engine_meta(dict(result)))
        scrubber = self.scrubber()
        result = cast(ToolResult, scrubber.scrub(dict(result)))
        name = spec.name if spec is not None else call["name"]
        summary = default_summary(name, result)
        if spec is not None and spec.format_result is not None and "summary" not in result:
            formatter = spec.format_result
            summary = _guarded(lambda: formatter(result), lambda: summary)
        result["summary"] = cap_summary(scrubber.text(result.get("summary") or summary))
        result["execution_time_ms"] = round((time.perf_counter() - started) * 1000, 3)
        # Which tool made it, and how much oversight that tool needs, travel with the result.
        return labelled(result, name, spec.category.value if spec is not None else None)

    async def _execute(
        self, spec: ToolSpec | None, call: ToolCall, tool_ctx: dict[str, Any]
    ) -> ToolResult:
        if spec is None:
            return ToolResult(
                status="error",
                error=f"no tool named {call['name']!r} is available",
                meta={"code": "TOOL_MISSING"},
            )
        problems = self.problems(spec, call["args"])
        if problems:
            return schema_violation(spec.name, problems)
        missing = missing_env(spec)
        if missing:
            return ToolResult(
                status="error",
                error=f"tool {spec.name!r} needs environment variable(s) {', '.join(missing)}, "
                "which are not set; set them and resume the run",
                meta={"code": "MISSING_ENV", "missing": missing},
            )
        ctx = dict(tool_ctx)
        ctx["env"] = {name: os.environ[name] for name in spec.requires_env}
        timeout = spec.timeout or self.timeout
        try:
            outcome = await asyncio.wait_for(_call(spec, dict(call["args"]), ctx), timeout)
        except TimeoutError:
            # A sync tool keeps running in its worker thread (threads cannot be killed); tools
            # that start processes kill them themselves when cancelled (run_bash does).
            return _timeout_result(spec.name, timeout)
        except Exception as exc:  # a bug in the tool must not kill the run
            return ToolResult(
                status="error",
                error=f"tool {spec.name!r} raised {type(exc).__name__}: {exc}",
                meta={
                    "code": _exception_code(exc),
                    # The exception's classes, so a retry policy can recognise ConnectionError.
                    "exception_types": [c.__name__ for c in type(exc).__mro__[:-1]],
                },
            )
        return self._kept(spec.name, outcome)

    def _kept(self, name: str, outcome: Any) -> ToolResult:
        """What a tool returned as a result the run can keep, or an error result saying why not.

        Outside the tool's ``try`` on purpose: a failure here is about the value the tool
        returned, and its message says so (before, undecodable bytes read as if the tool itself
        had raised the engine's UnicodeDecodeError).
        """
        try:
            # Text no encoding can write (a lone surrogate, as in JSON's "\ud800") would fail
            # the run where the result is first stored: it becomes U+FFFD, before and after the
            # result is made JSON data.
            result = valid_data(normalise(valid_data(outcome)))
        except UnicodeDecodeError as exc:  # bytes are kept only when they are UTF-8 text
            return _refused(
                name,
                "NON_TEXT_OUTPUT",
                f"returned bytes that are not UTF-8 text (byte {exc.start} is "
                f"0x{exc.object[exc.start]:02x}); a tool returns text or JSON data: decode its "
                "bytes, or base64-encode binary data and say so in the result",
            )
        except Exception as exc:
            return _refused(
                name,
                "BAD_RESULT",
                f"returned a value that is not JSON data ({type(exc).__name__}: {exc})",
            )
        limit = self.max_result_chars
        if limit is None:
            return result
        size = len(json.dumps(result, ensure_ascii=False, default=str))
        if size <= limit:
            return result
        return _refused(
            name,
            "OUTPUT_TOO_LARGE",
            f"returned {size:,} characters, more than the {limit:,} a result may have "
            "(tool_config.max_result_chars); nothing of it was kept. Ask for less: a narrower "
            "query, a smaller range, fewer items",
            chars=size,
            max_chars=limit,
        )


# Its name before sources of tools became toolsets (`ai_agent.tools.toolsets`); kept importable.
ToolSet = ToolSnapshot


def _refused(name: str, code: str, why: str, **meta: Any) -> ToolResult:
    """The error result for a value a tool returned that the run cannot keep."""
    return ToolResult(status="error", error=f"tool {name!r} {why}", meta={"code": code, **meta})


def _exception_code(exc: Exception) -> str:
    """The result code of an exception: the engine's own refusals keep their meaning."""
    if isinstance(exc, ToolPolicyViolation):
        return "POLICY_VIOLATION"
    if isinstance(exc, SandboxUnavailableError):
        return "SANDBOX_UNAVAILABLE"
    return "TOOL_EXCEPTION"


async def _call(spec: ToolSpec, args: dict[str, Any], ctx: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(spec.fn):
        return await spec.fn(args, ctx)
    # A sync tool may block (files, HTTP); keep the event loop free for other runs.
    outcome = await asyncio.to_thread(spec.fn, args, ctx)
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome
