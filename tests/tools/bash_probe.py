"""Run one ``run_bash`` call in this process and print its result as JSON.

Usage: python bash_probe.py BASE CONFIG_JSON COMMAND

The limit tests run it as an unprivileged user when they run as root: the kernel never applies
RLIMIT_NPROC to root, so that rlimit can only be shown for another user (one who cannot make a
pids cgroup, so the rlimit is all that limits it).
"""

from __future__ import annotations

import asyncio
import json
import sys

from ai_agent.config import BashToolConfig
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin.bash import bash_tool
from ai_agent.tools.builtin.sandbox import Sandbox


def main() -> int:
    base, config, command = sys.argv[1:4]
    registry = ToolRegistry([bash_tool(Sandbox(base), BashToolConfig(**json.loads(config)))])
    call = {"id": "c", "name": "run_bash", "args": {"command": command, "timeout": 60}}
    print(json.dumps(asyncio.run(registry.execute(call, {})), default=str))  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
