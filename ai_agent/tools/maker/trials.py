"""Running a build's examples the way a real call of the tool runs: confined, then judged.

Each example is one call through a runtime `ai_agent.tools.registry.ToolRegistry` holding
only the version under review, loaded as activation loads it (`ai_agent.tools.maker.loader`:
the code checked against its hash, wrapped in the guarded tool): so the arguments are checked
against the tool's schema, the call runs in its own bubblewrap sandbox with the registry's
limits and the HTTP broker, the timeout holds, and declared secrets are scrubbed from what
comes back, exactly as for a call in a run. There is no other path: where the sandbox is
unavailable the examples are *not run*, and the results say so.

The results (`results_record`) are JSON data kept in the build record, failures first; the
output and error of each are cut to a bounded size.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ai_agent.state import ToolCall
from ai_agent.tools.maker.examples import judge
from ai_agent.tools.registry import ToolRegistry
from ai_agent.tools.spec import ToolSpec

__all__ = ["MAX_SHOWN", "NO_TESTS", "results_record", "run_examples", "run_to_end"]

NO_TESTS = "no tests given"
MAX_SHOWN = 2_000  # characters of one example's output or error kept in the record
_T = TypeVar("_T")


async def _run_one(
    registry: ToolRegistry, tool: ToolSpec, number: int, test: dict[str, Any]
) -> dict[str, Any]:
    call = ToolCall(id=f"test{number}", name=tool.name, args=dict(test["args"]))
    result: dict[str, Any] = dict(
        await registry.execute(call, {"call_id": call["id"], "thread_id": "tests"})
    )
    code = (result.get("meta") or {}).get("code")
    entry = _entry(number, test)
    entry["seconds"] = round(float(result.get("execution_time_ms") or 0) / 1000, 3)
    if code == "SANDBOX_UNAVAILABLE":
        entry.update(status="not_run", error=_cut(result.get("error")))
        return entry
    problem = judge(test, result)
    entry.update(status="passed" if problem is None else "failed", outcome=result["status"])
    if code:
        entry["code"] = code
    if result["status"] == "ok":
        entry["output"] = _cut(result.get("content"))
    else:
        entry["error"] = _cut(result.get("error"))
    if problem is not None:
        entry["problem"] = problem
    return entry


async def run_examples(tool: ToolSpec, tests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run each example as one call of ``tool`` and judge it.

    Args:
        tool: The version's runtime ToolSpec (from the loader: every call runs confined).
        tests: The request's checked examples.

    Returns:
        One entry per example, in order: ``test`` (1-based), ``args``, ``expect`` or
        ``expect_error``, ``status`` (``passed``, ``failed`` or ``not_run``), ``outcome``
        (``ok``/``error``), ``code`` (the error's code, ``TIMEOUT``...), ``output`` or
        ``error`` (cut), ``problem`` (why it failed) and ``seconds``. Once the sandbox is
        unavailable the rest are not run either.
    """
    registry = ToolRegistry([tool])
    out: list[dict[str, Any]] = []
    for number, test in enumerate(tests, start=1):
        if out and out[-1]["status"] == "not_run":
            out.append({**_entry(number, test), "seconds": 0.0, "status": "not_run"})
            out[-1]["error"] = out[-2]["error"]
            continue
        out.append(await _run_one(registry, tool, number, test))
    return out


def results_record(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The record's ``tests``: counts, a one-line summary and the entries, failures first.

    Args:
        entries: What `run_examples` returned (empty: no tests were given).

    Returns:
        ``summary``, ``given``, ``passed``, ``failed``, ``not_run`` and ``results``.

    Examples:
        >>> results_record([])["summary"]
        'no tests given'
        >>> results_record([{"test": 1, "status": "passed"}, {"test": 2, "status": "failed"}])[
        ...     "summary"]
        '1 of 2 passed; 1 FAILED'
    """
    counts = {s: sum(1 for e in entries if e["status"] == s) for s in ("passed", "failed")}
    not_run = len(entries) - counts["passed"] - counts["failed"]
    if not entries:
        summary = NO_TESTS
    elif not_run:
        why = next(str(e.get("error") or "") for e in entries if e["status"] == "not_run")
        summary = f"{not_run} of {len(entries)} NOT RUN: {why[:300]}"
    else:
        summary = f"{counts['passed']} of {len(entries)} passed"
        if counts["failed"]:
            summary += f"; {counts['failed']} FAILED"
    order = {"failed": 0, "not_run": 1, "passed": 2}
    return {
        "summary": summary,
        "given": len(entries),
        **counts,
        "not_run": not_run,
        "results": sorted(entries, key=lambda e: (order.get(e["status"], 1), e["test"])),
    }


def run_to_end(make: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine to its end from synchronous code, inside an event loop or not.

    A build is synchronous, but ``propose_tool`` builds from inside a run's event loop; the
    examples then run on a loop of their own in a worker thread (the caller waits, as it
    waits for the build's file writes).
    """

    async def main() -> _T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tool-tests") as pool:
        return pool.submit(asyncio.run, main()).result()


def _entry(number: int, test: dict[str, Any]) -> dict[str, Any]:
    """An example's entry before it ran: its number, arguments and expectation."""
    entry: dict[str, Any] = {"test": number, "args": test["args"]}
    for key in ("expect", "expect_error"):
        if key in test:
            entry[key] = test[key]
    return entry


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_SHOWN:
        return text
    return text[:MAX_SHOWN] + f" [... cut: {len(text) - MAX_SHOWN} more characters]"
