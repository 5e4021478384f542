"""The sandbox's set-up and endings: no bubblewrap is a clear refusal, never a fallback.

Also how a call ends when the tool raises, dies, or returns what JSON cannot carry, and the
bwrap command line itself.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ai_agent.errors import SandboxUnavailableError
from ai_agent.tools.maker import SandboxLimits, ToolsmakerRegistry, sandbox_setup
from ai_agent.tools.maker import confine as confine_module
from ai_agent.tools.maker.confine import ConfinedCall, bwrap_command, find_bwrap, run_confined
from tests.maker.conftest import SHOUT, ApproveTool, CallTool


def _call(workspace: Path, code: str = SHOUT, **kwargs: object) -> ConfinedCall:
    kwargs.setdefault("limits", SandboxLimits(timeout=10))
    return ConfinedCall(
        name="t_v1",
        code=code,
        args={"text": "hi"},
        base_dir=workspace,
        **kwargs,  # type: ignore[arg-type]
    )


def _fake_bwrap(tmp_path: Path, script: str) -> str:
    path = tmp_path / "bin" / "bwrap"
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


async def test_a_missing_bubblewrap_is_a_clear_refusal(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    marker = workspace / "ran"
    code = (
        f"class GeneratedTool:\n    def execute(self, text):\n        open({str(marker)!r}, 'w')\n"
    )
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SandboxUnavailableError) as caught:
        await run_confined(_call(workspace, code))
    message = str(caught.value)
    assert "install the Debian package 'bubblewrap'" in message
    assert "never run in the engine's process" in message
    assert not marker.exists()  # nothing ran anywhere


def test_other_architectures_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("platform.machine", lambda: "aarch64")
    with pytest.raises(SandboxUnavailableError, match="written for x86_64, not aarch64"):
        find_bwrap()


async def test_bubblewrap_that_cannot_build_the_sandbox_is_a_clear_refusal(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = _fake_bwrap(tmp_path, 'echo "bwrap: No permissions to create new namespace" >&2\nexit 1')
    monkeypatch.setattr(confine_module, "find_bwrap", lambda: fake)
    with pytest.raises(SandboxUnavailableError, match="No permissions to create new namespace"):
        await run_confined(_call(workspace))


async def test_bubblewrap_that_dies_silently_says_so(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = _fake_bwrap(tmp_path, "exit 1")
    monkeypatch.setattr(confine_module, "find_bwrap", lambda: fake)
    with pytest.raises(SandboxUnavailableError, match="no reason given"):
        await run_confined(_call(workspace))


async def test_limits_the_kernel_refuses_stop_the_call_before_the_tool_runs(
    workspace: Path,
) -> None:
    # More open files than the hard limit the sandbox inherits: setrlimit fails in the runner,
    # which reports it instead of running the tool without its limits.
    limits = SandboxLimits(timeout=10, open_files=1 << 30)
    call = ConfinedCall(
        name="t_v1", code=SHOUT, args={"text": "x"}, base_dir=workspace, limits=limits
    )
    with pytest.raises(SandboxUnavailableError, match="could not limit itself"):
        await run_confined(call)


async def test_how_calls_end(workspace: Path) -> None:
    ok = await run_confined(_call(workspace))
    assert (ok.kind, ok.value, ok.exit_status) == ("ok", "HI", 0)
    assert ok.received > 0 and ok.seconds > 0
    raised = await run_confined(
        _call(workspace, "class GeneratedTool:\n    def execute(self, text):\n        1 / 0\n")
    )
    assert raised.kind == "error" and raised.error == "ZeroDivisionError: division by zero"
    not_json = await run_confined(
        _call(
            workspace,
            "class GeneratedTool:\n    def execute(self, text):\n"
            "        loop = []\n        loop.append(loop)\n        return loop\n",
        )
    )
    assert not_json.kind == "error" and not_json.error is not None
    assert "not JSON" in not_json.error
    died = await run_confined(
        _call(
            workspace,
            "import os\nclass GeneratedTool:\n    def execute(self, text):\n"
            "        os.write(1, b'bye\\n')\n        os._exit(7)\n",
        )
    )
    assert died.kind == "crashed" and died.exit_status == 7
    assert died.stdout == "bye\n"
    assert died.error == "exited with status 7 without a result"
    loud = await run_confined(
        _call(
            workspace,
            "import os\nclass GeneratedTool:\n    def execute(self, text):\n"
            "        os.write(2, b'something broke')\n        os._exit(1)\n",
        )
    )
    assert loud.error == "exited with status 1 without a result: something broke"


async def test_a_tool_without_the_http_capability_gets_no_broker(
    workspace: Path,
) -> None:
    code = (
        "class GeneratedTool:\n    def execute(self, text):\n"
        "        return self.http.get('https://example.com/')\n"
    )
    outcome = await run_confined(_call(workspace, code))
    assert (outcome.kind, outcome.reason) == ("violation", "http_not_declared")


def test_the_command_line(workspace: Path) -> None:
    call = _call(workspace, read_paths=("data",), secrets={"K": "v"})
    argv = bwrap_command("/usr/bin/bwrap", call, ["--ro-bind-fd", "9", "/workspace/data"], 5, 6)
    joined = " ".join(argv)
    for option in (
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--remount-ro /",
        "--info-fd 6",
        "--ro-bind-fd 9 /workspace/data",
        "--chdir /workspace",
    ):
        assert option in joined, option
    assert "--share-net" not in argv and "--proc" not in argv
    assert argv[argv.index("--") + 2 : argv.index("--") + 7] == ["-I", "-S", "-B", "-X", "utf8"]
    assert argv[-1] == "5"
    without_tmp = bwrap_command(
        "/usr/bin/bwrap", _call(workspace, limits=SandboxLimits(tmp_mb=0)), [], 5, 6
    )
    assert "/tmp" not in without_tmp


def test_a_python_outside_usr_is_mounted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    prefix = tmp_path / "py"
    exe = tmp_path / "elsewhere" / "python3"
    monkeypatch.setattr("sys.base_prefix", str(prefix))
    monkeypatch.setattr("sys.executable", str(exe))
    path, mounts = sandbox_setup._python_args()
    assert path == str(exe)
    assert mounts == ["--ro-bind", str(prefix), str(prefix), "--ro-bind", str(exe), str(exe)]
    monkeypatch.setattr("sys.base_prefix", "/usr")
    monkeypatch.setattr("sys.executable", "/usr/bin/python3")
    assert sandbox_setup._python_args()[1] == []


async def test_the_environment_holds_only_declared_secrets(
    approve_tool: ApproveTool,
    call_tool: CallTool,
    monkeypatch: pytest.MonkeyPatch,
    maker: ToolsmakerRegistry,
) -> None:
    monkeypatch.setenv("TOOL_TOKEN", "declared-value")
    monkeypatch.setenv("OTHER_TOKEN", "undeclared-value")
    tool = approve_tool(
        code="import os\nclass GeneratedTool:\n    def execute(self):\n"
        "        return {'env': dict(os.environ), 'secrets': self.secrets}\n",
        capabilities=["secrets"],
        secrets=["TOOL_TOKEN"],
    )
    result = await call_tool(tool)
    env = result["content"]["env"]
    assert env["TOOL_TOKEN"] == "declared-value"
    assert result["content"]["secrets"] == {"TOOL_TOKEN": "declared-value"}
    assert set(env) <= {"TOOL_TOKEN", "PWD", "LC_CTYPE"}, env
    assert "undeclared-value" not in str(result)
    assert os.environ["OTHER_TOKEN"] == "undeclared-value"
