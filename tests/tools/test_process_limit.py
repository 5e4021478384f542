"""The process limit holds for root too: each call runs in a pids cgroup of its own.

The kernel never applies RLIMIT_NPROC to root, and engines run as root in containers and CI.
These tests run as whatever user runs the suite (root on CI): a fork storm is stopped at the
limit in both ``run_bash`` modes, the per-call cgroup is gone after the call, a SIGKILLed
engine leaves no cgroup with live processes behind and the next call removes its empty one, and
where no pids cgroup can be made an engine running as root says loudly that the process limit
is not enforced.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ai_agent.config import BashToolConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin import cgroups
from ai_agent.tools.builtin.bash import bash_tool
from ai_agent.tools.builtin.sandbox import Sandbox
from tests.tools.fork_storms import MODES, fork_storm, needs_system_python

pytestmark = needs_system_python
FORK_STORM = fork_storm(200)
LIMIT = 20


def needs_cgroups() -> cgroups.Placement:
    where = cgroups.locate()
    if where.parent is None:
        pytest.skip(f"no pids cgroup can be made here: {where.reason}")
    return where


def tool(**config: Any) -> Any:
    return bash_tool(Sandbox(Path.cwd()), BashToolConfig(**config))


async def bash(command: str, **config: Any) -> ToolResult:
    registry = ToolRegistry([tool(**config)])
    call: ToolCall = {"id": "c", "name": "run_bash", "args": {"command": command, "timeout": 60}}
    return await registry.execute(call, {})


def owned_by(pid: int) -> list[Path]:
    where = needs_cgroups()
    assert where.parent is not None
    return [p for p in where.parent.iterdir() if cgroups.owner_of(p.name) == pid]


members = cgroups.members


@pytest.mark.parametrize("sandbox", MODES)
async def test_a_fork_storm_stops_at_the_process_limit_as_the_engines_own_user(
    sandbox: str,
) -> None:
    gap = cgroups.process_limit_gap("max_processes")
    if gap is not None:  # the documented exception, said loudly (see the test below)
        pytest.skip(gap)
    result = await bash(FORK_STORM, sandbox=sandbox, max_processes=LIMIT)
    assert result["status"] == "error", result
    meta = result["meta"]
    assert meta["code"] == "RESOURCE_LIMIT" and meta["limit"] == "max_processes"
    assert f"ran into its process limit (tool_config.bash.max_processes = {LIMIT})" in str(
        result["error"]
    )
    forked = int(str(result["error"]).split("forked ", 1)[1].split()[0])
    # The storm's own process and its shell count too.
    assert LIMIT - 4 <= forked < LIMIT


async def test_each_call_runs_in_a_cgroup_of_its_own_and_leaves_none_behind() -> None:
    where = needs_cgroups()
    entry = ":pids:" if where.version == 1 else "0::"
    registry = ToolRegistry([tool(sandbox="none")])
    seen = set()
    for number in range(20):
        call: ToolCall = {
            "id": f"c{number}",
            "name": "run_bash",
            "args": {"command": "cat /proc/self/cgroup; sleep 0.01 & sleep 0.01 &"},
        }
        result = await registry.execute(call, {})
        lines = result["content"].split("--- stdout ---\n")[1].splitlines()
        seen.add(next(line.split(":", 2)[2] for line in lines if entry in line))
    assert len(seen) == 20  # a new one for every call
    assert all(cgroups.owner_of(Path(path).name) == os.getpid() for path in seen)
    assert owned_by(os.getpid()) == []


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap")
async def test_sandboxed_calls_leave_no_cgroup_behind() -> None:
    needs_cgroups()
    registry = ToolRegistry([tool(sandbox="bwrap")])
    for number in range(20):
        call: ToolCall = {"id": f"c{number}", "name": "run_bash", "args": {"command": "true"}}
        assert (await registry.execute(call, {}))["meta"]["exit_code"] == 0
    assert owned_by(os.getpid()) == []


def test_a_sigkilled_engine_leaves_no_live_cgroup_and_the_next_call_removes_it(
    tmp_path: Path,
) -> None:
    needs_cgroups()
    work = tmp_path / "work"
    script = Path(__file__).with_name("proc_bash.py")
    command = "sleep 30 & touch started; sleep 30"
    argv = [sys.executable, str(script), str(tmp_path / "c.sqlite"), str(work), "none"]
    engine = subprocess.Popen(
        [*argv, "run", "t", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not (work / "started").exists():
            assert engine.poll() is None, engine.communicate()
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        [group] = owned_by(engine.pid)
        # The background sleep and the foreground one (the shell may have become it by exec).
        while len(members(group)) < 2:
            assert time.monotonic() < deadline, f"the command's processes: {members(group)}"
            time.sleep(0.05)
        engine.send_signal(signal.SIGKILL)
        engine.communicate(timeout=30)
        # The reaper kills everything in it when the engine's pipe closes.
        while members(group):
            assert time.monotonic() < deadline, f"processes left in {group}: {members(group)}"
            time.sleep(0.05)
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.communicate()
    assert group.exists()  # nobody was left to remove it
    assert asyncio.run(bash("true"))["meta"]["exit_code"] == 0
    assert not group.exists()  # the next call swept it


def test_a_stale_cgroup_with_live_processes_is_swept() -> None:
    where = needs_cgroups()
    assert where.parent is not None
    # A cgroup of an engine that is gone (a PID that cannot be running), a process still in it.
    stale = cgroups._make(where.parent, 10, cgroups.call_name(pid=2**22 + 1, started=1)).path
    sleeper = subprocess.Popen(
        ["/bin/sh", "-c", f'echo $$ > "{stale}/cgroup.procs" && echo in && exec sleep 60'],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sleeper.stdout is not None and sleeper.stdout.readline() == "in\n"
        assert members(stale) == [sleeper.pid]
        assert asyncio.run(bash("true"))["meta"]["exit_code"] == 0
        assert sleeper.wait(timeout=30) == -signal.SIGKILL
        assert not stale.exists()
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
        sleeper.communicate()
        if stale.exists():
            stale.rmdir()


def fake_proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc-self"
    proc.mkdir()
    (proc / "mountinfo").write_text(mountinfo)
    (proc / "cgroup").write_text(cgroup)
    return proc


def test_without_pids_cgroups_root_is_told_the_limit_is_not_enforced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    proc = fake_proc(tmp_path, "22 1 0:21 / / rw - ext4 /dev/vda rw\n", "0::/\n")
    monkeypatch.setattr(cgroups, "PROC_SELF", proc)
    with caplog.at_level(logging.WARNING, logger="ai_agent"):
        spec = tool(sandbox="none")
    as_root = os.getuid() == 0
    warned = [r for r in caplog.records if "process limit" in r.getMessage()]
    assert len(warned) == (1 if as_root else 0)
    assert ("process limit is not enforced" in spec.description) is as_root
    assert spec.preview is not None
    shown = spec.preview({"command": "echo hi"})
    assert ("process limit not enforced" in shown) is as_root
    if as_root:
        assert "no cgroup file system with the pids controller" in warned[0].getMessage()
        assert "tool_config.bash.max_processes" in warned[0].getMessage()


async def test_a_pids_cgroup_that_cannot_be_made_stops_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A place that looks like a pids hierarchy but is not one: the call is refused, never run
    # without its limit.
    fake = tmp_path / "pids"
    fake.mkdir()
    proc = fake_proc(
        tmp_path, f"39 31 0:36 / {fake} rw,relatime - cgroup cgroup rw,pids\n", "8:pids:/\n"
    )
    monkeypatch.setattr(cgroups, "PROC_SELF", proc)
    result = await bash("touch ran")
    assert result["status"] == "error" and result["meta"]["code"] == "SANDBOX_UNAVAILABLE"
    assert "could not make the call's pids cgroup" in str(result["error"])
    assert not Path("ran").exists()
    assert list(fake.iterdir()) == []


def test_cgroup_v2_is_preferred_and_its_pids_controller_is_enabled_for_the_children(
    tmp_path: Path,
) -> None:
    unified = tmp_path / "unified"
    engine = unified / "system.slice" / "agent.service"
    engine.mkdir(parents=True)
    (engine / "cgroup.controllers").write_text("cpu memory pids\n")
    (engine / "cgroup.subtree_control").write_text("")
    pids = tmp_path / "pids"
    (pids / "agent").mkdir(parents=True)
    mountinfo = (
        f"41 31 0:38 / {unified} rw,relatime - cgroup2 cgroup2 rw\n"
        f"39 31 0:36 / {pids} rw,relatime - cgroup cgroup rw,pids\n"
    )
    proc = fake_proc(tmp_path, mountinfo, "8:pids:/agent\n0::/system.slice/agent.service\n")
    where = cgroups.locate(proc)
    assert where == cgroups.Placement(engine, 2)
    assert (engine / "cgroup.subtree_control").read_text() == "+pids"


@pytest.mark.parametrize(
    ("controllers", "cgroup", "expected"),
    [
        ("cpu memory\n", "0::/system.slice/agent.service\n", "pids controller"),
        ("cpu pids\n", "0::/elsewhere\n", "not under"),
        ("cpu pids\n", "1:name=systemd:/\n", "no cgroup v2 entry"),
    ],
    ids=["no_pids_controller", "cgroup_not_mounted_here", "not_in_v2"],
)
def test_cgroup_v2_without_pids_says_why(
    tmp_path: Path, controllers: str, cgroup: str, expected: str
) -> None:
    unified = tmp_path / "unified"
    engine = unified / "system.slice" / "agent.service"
    engine.mkdir(parents=True)
    (engine / "cgroup.controllers").write_text(controllers)
    mount = f"41 31 0:38 /system.slice {unified / 'system.slice'} rw - cgroup2 cgroup2 rw\n"
    where = cgroups.locate(fake_proc(tmp_path, mount, cgroup))
    assert where.parent is None
    assert expected in where.reason, where.reason
