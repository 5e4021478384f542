"""The scale-out bench's model: it ships the order a task names, then says it is done; it runs
as a server of its own that answers many requests at once on kept-alive connections."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import httpx
import pytest

from bench.scale_cpu import machine_busy_ms, process_cpu_ms
from bench.scale_model import answer
from bench.scale_out import model_latency, model_stats, start_model
from bench.scale_section import measure_scale_out, scale_figures


def test_the_model_asks_to_ship_the_order_of_the_task() -> None:
    message = answer({"messages": [{"role": "user", "content": "ship order 1000017"}]})
    (call,) = message["tool_calls"]
    assert call["function"]["name"] == "ship"
    assert json.loads(call["function"]["arguments"]) == {"order": "1000017"}


def test_once_the_tool_answered_the_model_is_done() -> None:
    messages = [
        {"role": "user", "content": "ship order 3"},
        {"role": "tool", "content": "order 3 shipped"},
    ]
    assert answer({"messages": messages}) == {"role": "assistant", "content": "done"}


def test_the_model_server_answers_concurrent_requests_on_kept_alive_connections() -> None:
    proc, base_url = start_model(0.01)
    try:

        async def ask(client: httpx.AsyncClient, order: int) -> dict[str, object]:
            task = {"role": "user", "content": f"ship order {order}"}
            response = await client.post(
                f"{base_url}/chat/completions", json={"model": "m", "messages": [task]}
            )
            response.raise_for_status()
            return dict(response.json())

        async def ask_many() -> list[dict[str, object]]:
            async with httpx.AsyncClient(limits=httpx.Limits(max_connections=4)) as client:
                return await asyncio.gather(*(ask(client, i) for i in range(20)))

        replies = asyncio.run(ask_many())
        orders = [
            json.loads(r["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])  # type: ignore[index]
            for r in replies
        ]
        assert orders == [{"order": str(i)} for i in range(20)]
        assert all(r["usage"] for r in replies)
        assert model_latency(base_url, concurrent=4)["concurrent"] == 4
        served = model_stats(base_url)  # counted inside the server: each took its delay
        assert served["replies"] == 24
        assert 0.01 <= served["mean_s"] <= served["max_s"]
        assert process_cpu_ms(proc.pid) > 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_cpu_readings_grow() -> None:
    before = process_cpu_ms(os.getpid())
    sum(i * i for i in range(300_000))
    assert process_cpu_ms(os.getpid()) >= before
    assert machine_busy_ms() > 0


def _round(workers: int, rate: float) -> dict[str, object]:
    cpu = {"workers": 70.0, "postgres": 20.0, "model": 0.6, "others_on_the_machine": 1.0}
    return {"workers": workers, "runs": 400, "runs_per_second": rate, "cpu_ms_per_run": cpu}


def test_the_suite_states_throughput_against_one_worker_and_the_drain_against_its_promise() -> None:
    drain: dict[str, object] = {"runs": 1000, "lost": 0, "shipped_twice": 0, "kills": 40}
    drain |= {"plans_done": 1000, "reclaimed": 30, "seconds": 200.0}
    report = {"rounds": [_round(1, 6.8), _round(2, 12.4), _round(4, 13.6)], "drain": drain}
    figures = scale_figures(report)

    four = figures[2]
    assert four.ratio == pytest.approx(2.0) and four.target == ">= 3.2" and not four.ok
    assert figures[1].ok and figures[1].target == "report"  # only 4 workers has a target
    (kept,) = [f for f in figures if f.name.startswith("drain")]
    assert kept.ours == 0 and kept.ok
    assert not scale_figures({"drain": {**drain, "shipped_twice": 1}})[0].ok


def test_a_section_without_postgresql_is_reported_as_not_measured(tmp_path: Path) -> None:
    figures, meta = measure_scale_out(tmp_path, 4, "1", 0, python="false")
    assert [f.ok for f in figures] == [False]
    assert figures[0].note.startswith("not measured") and "error" in meta
