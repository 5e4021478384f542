"""An engine process whose run calls ``run_bash``, for the tests that kill the engine mid-command.

Usage: python proc_bash.py DB WORKDIR SANDBOX run|resume THREAD COMMAND [PLAN_JSON]

The run is unattended, so the command runs without a person; its working directory (and the
file sandbox) is WORKDIR. Exit codes: 0 completed, 1 failed, 3 paused, 4 cancelled.
"""

from __future__ import annotations

import asyncio
import json
import sys

from ai_agent import Agent
from ai_agent.config import AgentSettings
from ai_agent.testing import ScriptedModel

CODES = {"completed": 0, "failed": 1, "paused": 3, "cancelled": 4}


def main() -> int:
    db, workdir, sandbox, mode, thread, command = sys.argv[1:7]
    plan = json.loads(sys.argv[7]) if len(sys.argv) > 7 else None
    model = ScriptedModel(
        [{"tool_calls": [{"name": "run_bash", "args": {"command": command}}]}, {"text": "ran it"}]
    )
    agent = Agent(
        model=model,
        tools=["run_bash"],
        workdir=workdir,
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(tool_config={"bash": {"sandbox": sandbox}}),
        unattended=True,
    )
    if mode == "run":
        result = asyncio.run(agent.run("run the command", thread_id=thread))
    else:
        result = asyncio.run(agent.resume(thread, plan))
    print(json.dumps(result.to_dict(), default=str))
    return CODES[result.status]


if __name__ == "__main__":
    sys.exit(main())
