"""The specification's own figures: serializing a 100k-token context, and memory per agent.

`../spec/core-requirements.md` section 7.1 asks for context serialization under 100 ms for a
100k-token context and under 50 MB per agent. Both are measured here against a baseline in the
same run:

- **Serialization**: the run state's conversation (the messages of a 100k-token history, as the
  state holds them: plain dicts) through the serializer every checkpoint value goes through
  (strict msgpack, `ai_agent.checkpoints._serde.strict_serializer`), writing and reading back;
  the baseline is the standard library's ``json.dumps`` / ``json.loads`` of the same list.
- **Memory per agent**: a child process builds agents one after another, each with its own
  checkpoint database, and runs one scripted task through each (the agents stay alive, so their
  memory adds up); the figure is the growth of the resident set per agent, against the resident
  set of the process after its first agent (what one agent costs with everything it needs
  loaded). A second figure is that first agent's process against one that only imports the
  dependencies (langgraph and langchain-openai).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from bench.common import Figure, median, subprocess_env
from bench.tokens import encoding, history

__all__ = ["measure_agent_memory", "measure_serialization", "spec_figures"]


def measure_serialization(tokens: int = 100_000, repeat: int = 5) -> dict[str, Any]:
    """Median seconds to write and read back a ``tokens``-token conversation, ours and json's."""
    from ai_agent.checkpoints._serde import strict_serializer

    messages = history(encoding(), tokens)
    serde = strict_serializer()
    dumps, loads, base_dumps, base_loads = [], [], [], []
    size = base_size = 0
    for _ in range(repeat):
        started = time.perf_counter()
        typed = serde.dumps_typed(messages)
        dumps.append(time.perf_counter() - started)
        started = time.perf_counter()
        back = serde.loads_typed(typed)
        loads.append(time.perf_counter() - started)
        if back != messages:  # a fast serializer that loses data would be no figure at all
            raise AssertionError("the serializer did not give the conversation back")
        started = time.perf_counter()
        text = json.dumps(messages)
        base_dumps.append(time.perf_counter() - started)
        started = time.perf_counter()
        json.loads(text)
        base_loads.append(time.perf_counter() - started)
        size, base_size = len(typed[1]), len(text.encode())
    return {
        "tokens": tokens,
        "messages": len(messages),
        "dumps": median(dumps),
        "loads": median(loads),
        "baseline_dumps": median(base_dumps),
        "baseline_loads": median(base_loads),
        "bytes": size,
        "baseline_bytes": base_size,
    }


# Run in a child process, so the figures are of a fresh interpreter: builds ``n`` agents, each
# running one scripted task that calls the calculator, and prints the resident set (bytes)
# after the first agent and after the last.
_CHILD = r"""
import asyncio, json, os, sys, tempfile

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

bare = rss()
import langgraph.graph, langchain_openai  # the dependencies, as the start-up figure imports them
deps = rss()
from ai_agent import Agent
from ai_agent.testing import ScriptedModel

n = int(sys.argv[1])
work = tempfile.mkdtemp(prefix="ai-agent-memory-")
agents = []

async def one(i):
    ask = {"name": "calculator", "args": {"expression": f"{i} * 7"}}
    model = ScriptedModel([{"tool_calls": [ask]}, {"text": f"{i * 7}"}])
    agent = Agent(model=model, tools=["calculator"], memory_path=None,
                  checkpoint_path=os.path.join(work, f"agent{i}.sqlite"))
    await agent.__aenter__()
    result = await agent.run(f"what is {i} * 7?")
    assert result.status == "completed", result.status
    agents.append(agent)

async def main():
    before = rss()
    await one(0)
    first = rss()
    for i in range(1, n + 1):
        await one(i)
    last = rss()
    for agent in agents:
        await agent.aclose()
    sizes = {"bare": bare, "deps": deps, "imported": before, "first": first, "last": last}
    print(json.dumps(sizes))

asyncio.run(main())
"""


def measure_agent_memory(agents: int = 20) -> dict[str, Any]:
    """Resident-set figures of a child process that builds and runs ``agents`` + 1 agents."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(agents)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the memory child failed: {done.stderr[-2000:]}")
    sizes = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "agents": agents,
        "bare": sizes["bare"],
        "deps": sizes["deps"],
        "imported": sizes["imported"],
        "first": sizes["first"],
        "per_agent": (sizes["last"] - sizes["first"]) / agents,
    }


def spec_figures(serial: dict[str, Any], memory: dict[str, Any]) -> list[Figure]:
    """The figures of section 7.1, each against its baseline of the same run."""
    first_over_deps = memory["first"] - memory["deps"]
    return [
        Figure(
            "spec",
            f"serialize a {serial['tokens'] // 1000}k-token context",
            serial["dumps"] * 1000,
            "ms",
            serial["baseline_dumps"] * 1000,
            "json.dumps of the same messages",
            serial["dumps"] / serial["baseline_dumps"],
            "ours / baseline",
            "< 100 ms",
            serial["dumps"] < 0.1,
            f"the checkpoint serializer (strict msgpack), {serial['messages']} messages, "
            f"{serial['bytes']:,} bytes (json: {serial['baseline_bytes']:,}); reading it back: "
            f"{serial['loads'] * 1000:.3g} ms "
            f"(json.loads: {serial['baseline_loads'] * 1000:.3g} ms)",
        ),
        Figure(
            "spec",
            "memory per agent (each after the first)",
            memory["per_agent"] / 1e6,
            "MB",
            memory["first"] / 1e6,
            "RSS of the process with its first agent",
            None,
            "",
            "< 50 MB",
            memory["per_agent"] < 50e6,
            f"{memory['agents']} more agents, each with its own database and one scripted run "
            "with a tool call, all kept open",
        ),
        Figure(
            "spec",
            "memory of one agent over its dependencies",
            first_over_deps / 1e6,
            "MB",
            memory["deps"] / 1e6,
            "RSS after importing langgraph and langchain-openai",
            first_over_deps / memory["deps"],
            "ours / baseline",
            "< 50 MB",
            first_over_deps < 50e6,
            f"importing the engine adds {(memory['imported'] - memory['deps']) / 1e6:.3g} MB; "
            "building and running the first agent (tokenizer, model client, compiled graph, "
            f"databases) {(memory['first'] - memory['imported']) / 1e6:.3g} MB; a bare "
            f"interpreter: {memory['bare'] / 1e6:.3g} MB",
        ),
    ]
