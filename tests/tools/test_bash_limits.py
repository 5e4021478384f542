"""run_bash's resource limits: a fork storm, a memory hog and a CPU spin are each stopped.

Each limit is an rlimit set inside the sandbox before the command starts (the same helper gives
generated tools theirs), and a command that fails on one gets an error naming the setting. The
fork storm here shows RLIMIT_NPROC, for an unprivileged user who cannot make a pids cgroup: the
kernel does not apply RLIMIT_NPROC to root, so when the tests run as root the call runs in a
child process as ``nobody``. The per-call pids cgroup, which binds root, is shown as the tests'
own user in ``test_process_limit.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ai_agent
from ai_agent.config import BashToolConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin.bash import bash_tool
from ai_agent.tools.builtin.limits import rlimits, tasks_of, ulimit_prefix
from ai_agent.tools.builtin.sandbox import Sandbox
from ai_agent.tools.maker import SandboxLimits
from tests.tools.fork_storms import MODES, PYTHON, fork_storm, needs_system_python

NOBODY = 65534
pytestmark = needs_system_python
FORK_STORM = fork_storm(500)


async def bash(base: Path, command: str, **config: Any) -> ToolResult:
    registry = ToolRegistry([bash_tool(Sandbox(base), BashToolConfig(**config))])
    call: ToolCall = {"id": "c", "name": "run_bash", "args": {"command": command, "timeout": 60}}
    return await registry.execute(call, {})


AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def python_for_nobody() -> str | None:
    """An interpreter of this Python version that ``nobody`` may run (root's may be private)."""
    wanted = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for candidate in (os.path.realpath(sys.executable), PYTHON):
        # Through env: the interpreter must be reachable by the user itself, as the reaper's is.
        check = [*AS_NOBODY, "/usr/bin/env", candidate, "-c"]
        check += ["import sys; print('%d.%d' % sys.version_info[:2])"]
        done = subprocess.run(check, check=False, capture_output=True, text=True, cwd="/")
        if done.stdout.strip() == wanted:
            return candidate
    return None


def bash_unprivileged(base: Path, command: str, **config: Any) -> dict[str, Any]:
    """The call in a child process, as ``nobody`` when the tests run as root."""
    python, env = sys.executable, dict(os.environ)
    prefix: list[str] = []
    if os.getuid() == 0:
        found = python_for_nobody()
        if found is None or shutil.which("setpriv") is None:
            pytest.skip("no Python that an unprivileged user can run")
        os.chown(base, NOBODY, NOBODY)
        # The packages of this environment, for an interpreter started outside it.
        paths = [str(Path(ai_agent.__file__).parents[1]), sysconfig.get_paths()["purelib"]]
        python, prefix = found, AS_NOBODY
        env = {k: v for k, v in env.items() if not k.startswith("COVERAGE")}
        env["PYTHONPATH"] = os.pathsep.join(paths)
    argv = [*prefix, python, str(Path(__file__).with_name("bash_probe.py"))]
    argv += [str(base), json.dumps(config), command]
    done = subprocess.run(
        argv, check=False, capture_output=True, text=True, cwd=base, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture
def shared_base() -> Iterator[Path]:
    """A workspace another user can reach (the test's own tmp_path is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="bash-limits-"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("sandbox", MODES)
def test_a_fork_storm_stops_at_the_process_limit(shared_base: Path, sandbox: str) -> None:
    result = bash_unprivileged(shared_base, FORK_STORM, sandbox=sandbox, max_processes=16)
    assert result["status"] == "error", result
    assert result["meta"]["code"] == "RESOURCE_LIMIT" and result["meta"]["limit"] == "max_processes"
    assert "ran into its process limit (tool_config.bash.max_processes = 16)" in result["error"]
    forked = int(result["error"].split("forked ", 1)[1].split()[0])
    assert 0 < forked < 16


@pytest.mark.parametrize("sandbox", MODES)
async def test_a_memory_hog_stops_at_the_memory_limit(tmp_path: Path, sandbox: str) -> None:
    hog = f"{PYTHON} -c \"x = bytearray(512 << 20); print('got it')\""
    result = await bash(tmp_path, hog, sandbox=sandbox, memory_mb=128)
    assert result["status"] == "error", result
    assert result["meta"]["code"] == "RESOURCE_LIMIT" and result["meta"]["limit"] == "memory_mb"
    assert "memory limit (tool_config.bash.memory_mb = 128)" in str(result["error"])
    assert "got it" not in str(result["error"])
    assert (await bash(tmp_path, hog, sandbox=sandbox))["meta"]["exit_code"] == 0  # 4 GiB: fine


@pytest.mark.parametrize("sandbox", MODES)
async def test_a_cpu_spin_stops_at_the_cpu_limit(tmp_path: Path, sandbox: str) -> None:
    result = await bash(tmp_path, "while :; do :; done", sandbox=sandbox, cpu_seconds=1)
    assert result["status"] == "error", result
    assert result["meta"]["code"] == "RESOURCE_LIMIT" and result["meta"]["limit"] == "cpu_seconds"
    assert "CPU time limit (tool_config.bash.cpu_seconds = 1)" in str(result["error"])
    assert result["meta"]["timed_out"] is False


async def test_ordinary_failures_are_not_blamed_on_a_limit(tmp_path: Path) -> None:
    result = await bash(tmp_path, "echo 'no such thing' >&2; exit 3")
    assert result["status"] == "ok" and result["meta"]["exit_code"] == 3
    said = await bash(tmp_path, "echo 'Cannot allocate memory (just saying)' >&2")
    assert said["status"] == "ok"  # it did not fail


async def test_the_limits_are_in_place_inside_the_command(tmp_path: Path) -> None:
    result = await bash(
        tmp_path, "ulimit -S -t -d -u; ulimit -H -t", max_processes=50, cpu_seconds=7
    )
    lines = result["content"].split("--- stdout ---\n")[1].splitlines()
    assert lines[0].endswith(" 7") and lines[1].endswith(f" {4096 * 1024}")
    assert int(lines[2].split()[-1]) >= 50 and lines[3] == "8"


def test_generated_tools_get_their_limits_from_the_same_helper() -> None:
    limits = SandboxLimits(timeout=2.5, memory_mb=100, max_processes=3).rlimits()
    assert limits["RLIMIT_CPU"] == [3, 4] and limits["RLIMIT_AS"] == [100 << 20, 100 << 20]
    assert limits["RLIMIT_NPROC"] == [3, 3]
    assert {
        k: v for k, v in limits.items() if k in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC")
    } == (rlimits(cpu_seconds=2.5, memory_mb=100, memory="RLIMIT_AS", processes=3))
    prefix = ulimit_prefix(limits)
    assert prefix.startswith("ulimit -S -t 3 -v 102400 -u 3 && ulimit -H -t 4 -v 102400 -u 3")


def test_the_tasks_of_a_user_are_counted_as_the_kernel_counts_them() -> None:
    # RLIMIT_NPROC counts threads too: this process alone has at least its own.
    mine = tasks_of(os.getuid())
    assert mine >= threading.active_count()
    assert tasks_of(NOBODY + 1) == 0  # nobody runs as that user
