"""The tool registry: one catalog of every tool a run may use, and the one way to execute them.

The registry is the run's catalog; which tools are *active* is run state (``active_tools``), so a
plan can activate a catalog tool mid-run and a fork keeps its own set. ``execute`` wraps every call
the same way: env check, timeout, exceptions turned into results, timing.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ai_agent.context import ToolInfo
from ai_agent.errors import ToolRegistrationError, UnknownToolError
from ai_agent.resilience import RetryPolicy, retry_tool
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools.spec import ToolSpec

__all__ = ["DEFAULT_TOOL_TIMEOUT", "ToolRegistry", "make_tool_registry", "missing_env"]

DEFAULT_TOOL_TIMEOUT = 30.0


def missing_env(spec: ToolSpec) -> list[str]:
    """The names in ``spec.requires_env`` that are not set (or empty) in the environment."""
    return [name for name in spec.requires_env if not os.environ.get(name)]


class ToolRegistry(Mapping[str, ToolSpec]):
    """A mapping of tool name to ToolSpec, with registration and execution.

    Example:
        >>> from ai_agent.tools.spec import ToolSpec, ToolCategory
        >>> reg = make_tool_registry([ToolSpec("echo", lambda a, c: {"status": "ok",
        ...     "content": a.get("text")}, description="Echo text.",
        ...     category=ToolCategory.READ_ONLY)])
        >>> sorted(reg)
        ['echo']
    """

    def __init__(self, specs: Iterable[ToolSpec] = (), *, timeout: float = DEFAULT_TOOL_TIMEOUT):
        self._specs: dict[str, ToolSpec] = {}
        self.timeout = timeout
        self.retry: RetryPolicy | None = None  # retries of retryable failures (resilience.py)
        for spec in specs:
            self.register(spec)

    # Mapping protocol ------------------------------------------------------------------------
    def __getitem__(self, name: str) -> ToolSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise UnknownToolError(
                f"no tool named {name!r}; known tools: {', '.join(sorted(self._specs)) or 'none'}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    # Registration ----------------------------------------------------------------------------
    def register(self, spec: ToolSpec, *, replace: bool = False) -> ToolSpec:
        """Add a tool. A second tool with the same name is an error unless ``replace=True``."""
        if not isinstance(spec, ToolSpec):
            raise ToolRegistrationError(
                f"cannot register {spec!r}: expected a ToolSpec (see ai_agent.ToolSpec)"
            )
        if spec.name in self._specs and not replace:
            raise ToolRegistrationError(
                f"a tool named {spec.name!r} is already registered; "
                "unregister it first or pass replace=True"
            )
        self._specs[spec.name] = spec
        return spec

    def unregister(self, name: str) -> ToolSpec:
        """Remove a tool and return it."""
        spec = self[name]
        del self._specs[name]
        return spec

    # ToolBox protocol ------------------------------------------------------------------------
    def info(self, name: str) -> ToolInfo | None:
        """What the stages need to know about a tool, or None when there is no such tool."""
        spec = self._specs.get(name)
        if spec is None:
            return None
        return ToolInfo(
            name=spec.name,
            description=spec.description,
            category=spec.category.value,
            requires_env=list(spec.requires_env),
            parameters=spec.schema["function"]["parameters"],
        )

    def catalog(self) -> list[ToolInfo]:
        """Every registered tool, sorted by name."""
        return [info for name in sorted(self._specs) if (info := self.info(name)) is not None]

    def schemas(self, names: list[str]) -> list[dict[str, Any]]:
        """OpenAI function schemas of the named tools, in the order given; unknown names skipped."""
        return [self._specs[n].schema for n in names if n in self._specs]

    def preview(self, call: ToolCall) -> str:
        """A one-line description of what the call would do, for a person deciding on it."""
        spec = self._specs.get(call["name"])
        if spec is not None and spec.preview is not None:
            return spec.preview(call["args"])
        args = json.dumps(call["args"], sort_keys=True, ensure_ascii=False)
        return f"{call['name']}({args})"

    def format_result(self, name: str, result: ToolResult) -> str:
        """The text the model (and the trace) sees for a result."""
        if result["status"] == "error":
            return f"Error: {result.get('error') or 'the tool failed'}"
        content = result.get("content")
        if isinstance(content, str):
            return content
        return json.dumps(content, ensure_ascii=False, default=str)

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """Run one call: env check, timeout, exceptions turned into error results, timing."""
        started = time.perf_counter()
        spec = self._specs.get(call["name"])
        if self.retry is None or spec is None:
            result = await self._execute(call, tool_ctx)
        else:
            result = await retry_tool(
                lambda: self._execute(call, tool_ctx), self.retry, category=spec.category.value
            )
        result["execution_time_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return result

    async def _execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        spec = self._specs.get(call["name"])
        if spec is None:
            return ToolResult(
                status="error",
                error=f"no tool named {call['name']!r} is registered",
                meta={"code": "TOOL_MISSING"},
            )
        missing = missing_env(spec)
        if missing:
            return ToolResult(
                status="error",
                error=f"tool {spec.name!r} needs environment variable(s) {', '.join(missing)}, "
                "which are not set; set them and resume the run",
                meta={"code": "MISSING_ENV", "missing": missing},
            )
        timeout = spec.timeout or self.timeout
        try:
            return _normalise(await asyncio.wait_for(_call(spec, call, tool_ctx), timeout))
        except TimeoutError:
            return ToolResult(
                status="error",
                error=f"tool {spec.name!r} timed out after {timeout:g}s; try a narrower request",
                meta={"code": "TIMEOUT"},
            )
        except Exception as exc:  # a bug in the tool must not kill the run
            return ToolResult(
                status="error",
                error=f"tool {spec.name!r} raised {type(exc).__name__}: {exc}",
                meta={
                    "code": "TOOL_EXCEPTION",
                    "exception_types": [c.__name__ for c in type(exc).__mro__[:-1]],
                },
            )


async def _call(spec: ToolSpec, call: ToolCall, tool_ctx: dict[str, Any]) -> Any:
    args = dict(call["args"])
    if inspect.iscoroutinefunction(spec.fn):
        return await spec.fn(args, tool_ctx)
    # A sync tool may block (files, HTTP); keep the event loop free for other runs.
    outcome = await asyncio.to_thread(spec.fn, args, tool_ctx)
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome


def _normalise(outcome: Any) -> ToolResult:
    """Accept what tools commonly return and turn it into a ToolResult dict."""
    if isinstance(outcome, dict) and outcome.get("status") in ("ok", "error", "skipped"):
        result = ToolResult(status=outcome["status"])
        for key in ("content", "error", "meta"):
            if key in outcome:
                result[key] = outcome[key]
        return result
    return ToolResult(status="ok", content=outcome)


def make_tool_registry(specs: Iterable[ToolSpec]) -> ToolRegistry:
    """Build a registry (a ``{name: ToolSpec}`` mapping) from specs.

    Example:
        >>> from ai_agent.tools.spec import ToolSpec
        >>> reg = make_tool_registry([ToolSpec("t", lambda a, c: {"status": "ok"},
        ...                                    description="A tool.")])
        >>> "t" in reg
        True
    """
    return ToolRegistry(specs)
