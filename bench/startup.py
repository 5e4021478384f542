"""Start-up: ``ai-agent --help``, and what importing ai_agent costs on top of its big dependencies.

Both are timed in fresh interpreters with bytecode caching on (one untimed run first writes the
caches, as a user's first run does), interleaved with their baselines, and summarised by the
median. The import cost is what ``from ai_agent import Agent`` (the whole engine, not just the
package, whose names load lazily) adds after ``import langgraph.graph, langchain_openai``: the
sum of ``-X importtime``'s own time of every module loaded after those two, which is steadier
than the difference of two wall times on a busy machine (that difference is reported too).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bench.common import median, subprocess_env

__all__ = ["measure_startup"]

BASE = "import langgraph.graph, langchain_openai"


def _time(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=subprocess_env(), timeout=120)
    return time.perf_counter() - started


def import_cost(repeat: int) -> float:
    """Median seconds of the modules ``from ai_agent import Agent`` adds to the dependencies."""
    code = f"{BASE}; import sys; sys.stderr.write('--mark--\\n'); from ai_agent import Agent"
    totals: list[float] = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            check=True,
            capture_output=True,
            text=True,
            env=subprocess_env(),
            timeout=120,
        )
        after = done.stderr.split("--mark--", 1)[1]
        micros = 0
        for line in after.splitlines():
            if line.startswith("import time:") and "|" in line:
                own = line.split(":", 1)[1].split("|")[0].strip()
                if own.isdigit():
                    micros += int(own)
        totals.append(micros / 1e6)
    return median(totals)


def measure_startup(repeat: int) -> dict[str, float]:
    """Median seconds: ``--help``, bare interpreter, the dependencies, the dependencies + ours."""
    python = sys.executable
    cli = str(Path(python).with_name("ai-agent"))
    commands = {
        "help": [cli, "--help"],
        "python": [python, "-c", "pass"],
        "deps": [python, "-c", BASE],
        "ours": [python, "-c", f"{BASE}; from ai_agent import Agent"],
    }
    for argv in commands.values():  # write the bytecode caches
        _time(argv)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            samples[name].append(_time(argv))
    out = {name: median(values) for name, values in samples.items()}
    out["import_cost"] = import_cost(repeat)
    return out
