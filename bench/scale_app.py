"""The app the scale-out bench's workers run (``ai-agent worker --app bench.scale_app:make``).

One tool, ``ship``, that needs a person's approval (a MODIFICATION): each run asks for it once,
pauses at the gate, and is resumed by a worker with a queued approving plan. The tool appends
the order to a ledger file, so the bench can count how often each order really shipped. The
model is an OpenAI-compatible server named by ``BENCH_MODEL_URL`` (the bench's mock server,
answering after 50 ms).
"""

from __future__ import annotations

import os

from ai_agent import Agent, tool

__all__ = ["make", "ship"]


@tool(category="modification")
def ship(order: str) -> str:
    """Ship an order.

    Args:
        order: The order's number.
    """
    # One short append per call: O_APPEND writes of one line do not interleave.
    with open(os.environ["BENCH_LEDGER"], "a", encoding="utf-8") as ledger:
        ledger.write(f"{order}\n")
    return f"order {order} shipped"


def make(checkpoint_url: str | None) -> Agent:
    """The Agent every worker and the seeding process build the same way."""
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(
        base_url=os.environ["BENCH_MODEL_URL"],
        api_key="bench",
        model="bench-model",
        use_responses_api=False,
        max_retries=0,
    )
    return Agent(model=model, tools=[ship], checkpoint_url=checkpoint_url, memory_path=None)
