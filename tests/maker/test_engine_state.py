"""A generated tool cannot see the engine's state either, through an Agent's toolsmaker.

The Agent hands its toolsmaker the same protected paths as its built-in tools: the checkpoint
database (and its side files), the memory file, the toolsmaker folder and audit log, and
``.agents`` under the working directory. A mount that holds any of them is refused, and so is
every mount while a file of the engine's has a second hard link, which could sit in the folder
given to the tool.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ai_agent import Agent
from ai_agent.config import AgentSettings
from ai_agent.errors import ToolPolicyViolation
from ai_agent.testing import ScriptedModel
from ai_agent.tools.spec import ToolSpec
from tests.maker.conftest import CallTool, activate

pytestmark = pytest.mark.usefixtures("careless_validator")

READ_ALL = """
import os


class GeneratedTool:
    def execute(self, **kwargs):
        out = {}
        for name in sorted(os.listdir("data")):
            with open(os.path.join("data", name), "rb") as handle:
                out[name] = handle.read(64).decode("latin-1")
        return out
"""


async def agent_with_state(workspace: Path, db: Path) -> Agent:
    agent = Agent(
        model=ScriptedModel(["done"]),
        workdir=workspace,
        checkpoint_path=db,
        memory_path=workspace / ".agents" / "memory.jsonl",
        settings=AgentSettings(tool_config={"toolsmaker": {"timeout": 10}}),
    )
    assert (await agent.run("remember this")).status == "completed"
    return agent


def reader(agent: Agent, paths: list[str], name: str = "reader") -> ToolSpec:
    return activate(
        agent.toolsmaker,
        {
            "name": name,
            "purpose": "Reads the data folder.",
            "capabilities": ["fs_read"],
            "allowed_paths": paths,
            "inputs": {},
            "code": READ_ALL,
        },
    )


async def test_a_hard_link_to_the_database_is_never_mounted(
    workspace: Path, call_tool: CallTool
) -> None:
    db = workspace / ".agents" / "checkpoints.sqlite"
    agent = await agent_with_state(workspace, db)
    (workspace / "data").mkdir()
    (workspace / "data" / "report.txt").write_text("quarterly numbers")
    tool = reader(agent, ["data"])
    assert (await call_tool(tool))["content"] == {"report.txt": "quarterly numbers"}  # it works
    os.link(db, workspace / "data" / "db.bin")  # made by anything that could see the database
    with pytest.raises(ToolPolicyViolation, match="more than one hard link"):
        await call_tool(tool)
    events = agent.toolsmaker.audit_log.events()
    assert events[-1]["event"] == "tool_policy_blocked"
    assert events[-1]["data"]["reason"] == "path_refused"
    os.unlink(workspace / "data" / "db.bin")
    assert (await call_tool(tool))["content"] == {"report.txt": "quarterly numbers"}


async def test_a_database_configured_in_the_workspace_is_never_mounted(
    workspace: Path, call_tool: CallTool
) -> None:
    db = workspace / "state" / "runs.sqlite"
    agent = await agent_with_state(workspace, db)
    (workspace / "alias").symlink_to("state")
    for number, path in enumerate(["state", "alias"]):
        tool = reader(agent, [path], name=f"reader{number}")
        with pytest.raises(ToolPolicyViolation, match=r"engine's own files \(the checkpoint"):
            await call_tool(tool)
