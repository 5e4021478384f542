"""The scale-out bench's model: it ships the order a task names, then says it is done; it runs
as a server of its own that answers many requests at once on kept-alive connections."""

from __future__ import annotations

import asyncio
import json
import os

import httpx

from bench.scale_cpu import machine_busy_ms, process_cpu_ms
from bench.scale_model import answer
from bench.scale_out import model_latency, model_stats, start_model


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
