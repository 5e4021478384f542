"""The engine's routers run on the event loop: a cycle hands no work to a thread for them."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from ai_agent.graph import routes
from tests.graph.conftest import MakeAgent, call, text


def _names(func: Any, depth: int = 3) -> list[str]:
    """The functions ``func`` runs: LangChain hands the loop a partial of a wrapper closure."""
    inner: list[Any] = []
    if isinstance(func, functools.partial):
        inner = [func.func, *func.args]
    inner += [cell.cell_contents for cell in getattr(func, "__closure__", None) or ()]
    names = [getattr(func, "__qualname__", "")]
    if depth:
        for item in inner:
            if callable(item):
                names += _names(item, depth - 1)
    return names


def test_every_router_is_a_coroutine() -> None:
    # LangGraph runs a plain function that routes an async graph on its thread pool.
    for name in routes.__all__:
        assert inspect.iscoroutinefunction(getattr(routes, name)), name


async def test_a_run_with_a_tool_call_routes_without_a_thread(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed: list[str] = []
    real = asyncio.BaseEventLoop.run_in_executor

    def spy(self: asyncio.AbstractEventLoop, executor: Any, func: Callable[..., Any], *args: Any):  # type: ignore[no-untyped-def]
        handed.extend(_names(func))
        return real(self, executor, func, *args)  # type: ignore[arg-type]

    agent = make_agent([call("calculator", expression="2+2"), text("4")], tools=["calculator"])
    monkeypatch.setattr(asyncio.BaseEventLoop, "run_in_executor", spy)
    result = await agent.run("what is 2+2")

    assert result.status == "completed"
    assert result.final_text == "4"
    assert handed, "the spy saw nothing: the test would pass whatever the routers are"
    assert not [name for name in handed if name.startswith("after_")], handed
