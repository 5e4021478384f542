"""Reads run without an event loop where they need none, and in one where they do."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from ai_agent._loopless import NeedsEventLoop, loop_running, off_loop, require_loop, run_loopless


def test_a_read_that_needs_no_loop_runs_without_one_and_without_asyncio() -> None:
    # In a fresh interpreter: asyncio is never imported, and the read still ran to its end.
    code = (
        "import sys\n"
        "from ai_agent._loopless import off_loop, run_loopless\n"
        "async def read():\n"
        "    return await off_loop(sum, [1, 2, 3])\n"
        "print(run_loopless(read), 'asyncio' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["6", "False"]


def test_a_step_that_says_it_needs_a_loop_gets_the_read_run_again_in_one() -> None:
    made: list[bool] = []

    async def read() -> str:
        made.append(loop_running())
        require_loop("a test")
        return "in a loop"

    assert run_loopless(read) == "in a loop"
    assert made == [False, True]  # made twice: without a loop, then in asyncio.run's


def test_a_step_that_waits_for_a_future_gets_the_read_run_again_in_a_loop() -> None:
    made: list[bool] = []

    async def read() -> int:
        made.append(loop_running())
        await asyncio.sleep(0)  # a bare yield: nothing to wait for, it goes on
        if loop_running():
            await asyncio.sleep(0.001)  # a timer: only a loop can finish it
        return len(made)

    assert run_loopless(read) == 1
    assert made == [False]

    class Waits:
        def __await__(self):  # type: ignore[no-untyped-def]
            yield "a future"  # what a task awaiting a future hands its loop

    async def waits() -> str:
        made.append(loop_running())
        if not loop_running():
            await Waits()
        return "done"

    made.clear()
    assert run_loopless(waits) == "done"
    assert made == [False, True]


def test_asyncio_asking_for_a_missing_loop_gets_the_read_run_again_in_one() -> None:
    # A step that needs a loop without saying so (asyncio.to_thread asks for the running one).
    async def read() -> int:
        return await asyncio.to_thread(sum, [1, 2])

    assert run_loopless(read) == 3


def test_another_error_is_the_read_s_own() -> None:
    calls: list[int] = []

    async def broken() -> None:
        calls.append(1)
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        run_loopless(broken)
    assert calls == [1]  # not run again


def test_off_loop_keeps_a_running_loop_free() -> None:
    import threading

    async def where() -> tuple[bool, bool]:
        other = await off_loop(lambda: threading.current_thread() is not threading.main_thread())
        return loop_running(), other

    assert asyncio.run(where()) == (True, True)
    with pytest.raises(NeedsEventLoop, match="a test"):
        require_loop("a test")
