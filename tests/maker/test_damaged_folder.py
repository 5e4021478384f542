"""A toolsmaker folder someone edited: every command says what is damaged, never "internal error".

The audit check reports an edited head or a line nested past the parser's stack as findings
(exit 1), a hand-edited build record or active list is named with what to do, and an Agent still
starts. Each command runs as a real ``ai-agent`` process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ai_agent import Agent
from ai_agent.config import AgentSettings
from ai_agent.tools.maker import ToolsmakerRegistry
from tests.maker.conftest import SHOUT

INTENT = {"name": "shout", "purpose": "Upper-case a text.", "inputs": {"text": "string"}}
DEEP = b"[" * 100_000 + b"]" * 100_000 + b"\n"


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", "tools", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def maker() -> ToolsmakerRegistry:
    maker = ToolsmakerRegistry(".agents/toolsmaker")
    maker.build_from_intent({**INTENT, "code": SHOUT})
    maker.approve("shout", 1)
    maker.activate("shout", 1)
    return maker


def test_audit_verify_reports_an_edited_head_and_lines_past_the_parsers_stack(
    maker: ToolsmakerRegistry,
) -> None:
    log = maker.layout.audit
    head = log.with_name(log.name + ".head")
    head.write_text('{"lines": 99')  # hand-edited, cut short
    done = cli("audit", "--verify")
    assert (done.returncode, done.stderr) == (1, "")
    assert "the head file audit.jsonl.head is not JSON (it was edited)" in done.stdout

    with log.open("ab") as handle:
        handle.write(b"{}\n[1]\n" + DEEP)
    done = cli("audit", "--verify")
    assert done.returncode == 1 and "internal error" not in done.stderr
    lines = len(log.read_bytes().splitlines())
    assert f"line {lines - 2} has sequence number None" in done.stdout
    assert f"line {lines - 1} is not an event object" in done.stdout
    assert f"line {lines} is not JSON" in done.stdout
    # The tail shows the real events and skips what is not one.
    done = cli("audit", "--tail", "3")
    assert (done.returncode, done.stderr) == (0, "")
    shown = [line.split()[2] for line in done.stdout.splitlines()]
    assert shown == ["tool_approval_required", "tool_approved", "tool_activated"]


def test_a_hand_edited_record_or_active_list_is_named_with_what_to_do(
    maker: ToolsmakerRegistry, tmp_path: Path
) -> None:
    record = maker.layout.record("shout", 1)
    kept = record.read_text()
    for damage in ("{bad", '{"spec": {}}', "[1]"):
        record.write_text(damage)
        for argv in (("pending",), ("show", "shout"), ("show", "shout@1")):
            done = cli(*argv)
            assert done.returncode != 0 and "internal error" not in done.stderr, damage
            assert "the build record specs/shout_v1.json is damaged" in done.stderr
            assert "restore it, or move it out of specs/" in done.stderr
    record.write_text(kept)

    maker.layout.active.write_text("[1]")
    done = cli("show", "shout")
    assert done.returncode != 0 and "internal error" not in done.stderr
    assert "active_versions.json is damaged" in done.stderr
    # An Agent still starts, without the generated tools, and says why.
    agent = Agent(
        checkpoint_path=tmp_path / "c.sqlite",
        memory_path=None,
        settings=AgentSettings(),
        toolsmaker_dir=maker.layout.root,
    )
    assert "shout" not in agent.registry
