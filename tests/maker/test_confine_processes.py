"""Confinement of processes, system calls, time, memory, disk and output.

Each tool is approved by a careless reviewer past a careless validator, and each attempt runs in
a real sandbox. Some tests turn the seccomp filter off (``SandboxLimits(seccomp=False)``) to
show that the namespaces and the kill of the PID namespace hold on their own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

import pytest

from ai_agent.errors import SandboxUnavailableError, ToolPolicyViolation
from ai_agent.tools.builtin import cgroups
from ai_agent.tools.maker import SandboxLimits, ToolsmakerRegistry
from tests.maker.conftest import ApproveTool, CallTool
from tests.tools.fork_storms import fork_loop

pytestmark = pytest.mark.usefixtures("careless_validator")

NO_SECCOMP = SandboxLimits(timeout=10, seccomp=False)


def _blocked(maker: ToolsmakerRegistry) -> list[dict[str, object]]:
    return [e for e in maker.audit_log.events() if e["event"] == "tool_policy_blocked"]


RUN_A_PROGRAM = {
    "os_system": ("import os", 'os.system("touch out/pwned")'),
    "execv_shell": ("import os", 'os.execv("/bin/sh", ["sh", "-c", "touch out/pwned"])'),
    "execv_python": (
        "import os, sys",
        "os.execv(sys.executable, [sys.executable, \"-c\", \"open('out/pwned', 'w')\"])",
    ),
    "posix_spawn": (
        "import os",
        'os.posix_spawn("/bin/sh", ["sh", "-c", "touch out/pwned"], {})',
    ),
    "subprocess_via_importlib": (
        "import importlib",
        'importlib.import_module("subprocess").run(["touch", "out/pwned"])',
    ),
    "dunder_import": ("", '__import__("subprocess").Popen(["touch", "out/pwned"])'),
    "ctypes_execve": (
        "import ctypes",
        "libc = ctypes.CDLL(None)\n"
        'argv = (ctypes.c_char_p * 2)(b"/bin/sh", None)\n'
        'libc.execve(b"/bin/sh", argv, None)',
    ),
    "ctypes_raw_syscall": (
        "import ctypes",
        'ctypes.CDLL(None).syscall(59, b"/bin/sh", None, None)',
    ),
    "fork": ("import os", 'pid = os.fork()\nif pid == 0:\n    open("out/pwned", "w")'),
    "thread": (
        "import threading",
        'threading.Thread(target=lambda: open("out/pwned", "w")).start()',
    ),
    "socket_inet": ("import socket", 'socket.create_connection(("127.0.0.1", 9), 1)'),
    "socket_netlink": ("import socket", "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)"),
    "socketpair": ("import socket", "socket.socketpair()"),
    "ctypes_unshare": ("import ctypes", "ctypes.CDLL(None).unshare(0x10000000)"),
    "ctypes_mount": (
        "import ctypes",
        'ctypes.CDLL(None).mount(b"none", b"/workspace", b"tmpfs", 0, None)',
    ),
    "ctypes_ptrace": ("import ctypes", "ctypes.CDLL(None).ptrace(16, 1, None, None)"),
    "memfd_exec": ("import os", 'fd = os.memfd_create("x")\nos.write(fd, b"#!/bin/sh\\n")'),
}


@pytest.mark.parametrize("attack", sorted(RUN_A_PROGRAM))
async def test_no_program_process_thread_or_socket_can_start(
    attack: str,
    approve_tool: ApproveTool,
    call_tool: CallTool,
    workspace: Path,
    maker: ToolsmakerRegistry,
) -> None:
    imports, body = RUN_A_PROGRAM[attack]
    tool = approve_tool(
        body + '\nreturn "it ran"',
        imports=imports,
        capabilities=["fs_write"],
        allowed_paths=["out"],
    )
    with pytest.raises(ToolPolicyViolation, match="forbidden_syscall"):
        await call_tool(tool)
    assert not (workspace / "out" / "pwned").exists()
    event = _blocked(maker)[-1]
    assert (event["tool"], event["version"]) == (tool.name, 1)
    assert event["data"]["reason"] == "forbidden_syscall"  # type: ignore[index]


async def test_without_seccomp_there_is_still_no_shell_and_no_network(
    approve_tool: ApproveTool, call_tool: CallTool, workspace: Path
) -> None:
    tool = approve_tool(
        """
        out = {}
        for label, attempt in ATTEMPTS:
            try:
                attempt()
                out[label] = "worked"
            except Exception as exc:
                out[label] = type(exc).__name__
        return out
        """,
        imports="import os, socket\n\nATTEMPTS = [\n"
        '    ("shell", lambda: os.posix_spawn("/bin/sh", ["sh"], {})),\n'
        '    ("bash", lambda: os.posix_spawn("/usr/bin/bash", ["bash"], {})),\n'
        '    ("inet", lambda: socket.create_connection(("1.1.1.1", 80), 1)),\n'
        '    ("loopback", lambda: socket.create_connection(("127.0.0.1", 9), 1)),\n'
        "]",
        limits=NO_SECCOMP,
    )
    result = await call_tool(tool)
    assert result["content"] == {
        "shell": "FileNotFoundError",  # no /bin, no /usr/bin in the sandbox
        "bash": "FileNotFoundError",
        "inet": "OSError",  # an empty network namespace: unreachable
        "loopback": "ConnectionRefusedError",  # its own lo, where nothing listens
    }, result


async def test_the_engines_sockets_are_out_of_reach(
    approve_tool: ApproveTool, call_tool: CallTool, tmp_path: Path
) -> None:
    accepted: list[bool] = []

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(True)
        writer.close()

    tcp = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = tcp.sockets[0].getsockname()[1]
    path = tmp_path / "engine.sock"
    unix = await asyncio.start_unix_server(on_client, str(path))
    abstract = f"\0ai-agent-test-{os.getpid()}"
    unix_abstract = await asyncio.start_unix_server(on_client, abstract)
    attempts = [
        ("tcp", f'socket.create_connection(("127.0.0.1", {port}), 1)'),
        ("unix", f"s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r})"),
        ("abstract", f"s = socket.socket(socket.AF_UNIX); s.connect({abstract!r})"),
    ]
    code_lines = "\n".join(
        f'        try:\n            {stmt}\n            out["{label}"] = "connected"\n'
        f'        except Exception as exc:\n            out["{label}"] = type(exc).__name__'
        for label, stmt in attempts
    )
    code = (
        "import socket\n\n\nclass GeneratedTool:\n    def execute(self, **kwargs):\n"
        f"        out = {{}}\n{code_lines}\n        return out\n"
    )
    try:
        tool = approve_tool(code=code, limits=NO_SECCOMP)
        result = await call_tool(tool)
        assert result["content"] == {
            "tcp": "ConnectionRefusedError",  # its own loopback, not the engine's
            "unix": "FileNotFoundError",  # the engine's socket files are not mounted
            "abstract": "ConnectionRefusedError",  # abstract names live per network namespace
        }
        assert accepted == []
    finally:
        for server in (tcp, unix, unix_abstract):
            server.close()
            await server.wait_closed()


async def test_a_tool_that_ignores_signals_is_killed_at_its_timeout(
    approve_tool: ApproveTool, call_tool: CallTool, maker: ToolsmakerRegistry
) -> None:
    tool = approve_tool(
        """
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            pass
        """,
        imports="import signal",
        limits=SandboxLimits(timeout=1.5),
    )
    started = time.perf_counter()
    result = await call_tool(tool)
    elapsed = time.perf_counter() - started
    assert result["status"] == "error"
    assert result["meta"]["code"] == "TIMEOUT"
    assert 1.4 < elapsed < 5
    assert _blocked(maker)[-1]["data"]["reason"] == "timeout"  # type: ignore[index]


HEARTBEAT = """
def beat(path):
    while True:
        with open(path, "a") as handle:
            handle.write("x")
        time.sleep(0.05)
"""


@pytest.mark.parametrize(
    ("name", "body"),
    [
        (
            "double_fork",
            """
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                    beat("out/beat")
                os._exit(0)
            time.sleep(60)
            """,
        ),
        (
            "thread",
            """
            threading.Thread(target=beat, args=("out/beat",)).start()
            return "returned; the thread keeps the process alive"
            """,
        ),
        (
            "children",
            """
            for _ in range(20):
                if os.fork() == 0:
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                    beat("out/beat")
            time.sleep(60)
            """,
        ),
    ],
)
async def test_nothing_a_tool_starts_outlives_its_timeout(
    name: str, body: str, approve_tool: ApproveTool, call_tool: CallTool, workspace: Path
) -> None:
    # Without seccomp the tool can fork and start threads: the PID namespace still takes
    # every one of them down when the engine kills the sandbox's PID 1. (A fork storm without
    # seccomp is stopped by the call's pids cgroup: see the test of the process limit.)
    import textwrap

    code = (
        "import os, signal, threading, time\n" + HEARTBEAT + "\n\nclass GeneratedTool:\n"
        "    def execute(self, **kwargs):\n"
        + textwrap.indent(textwrap.dedent(body).strip() + "\n", " " * 8)
    )
    tool = approve_tool(
        code=code,
        capabilities=["fs_write"],
        allowed_paths=["out"],
        limits=SandboxLimits(timeout=1.5, seccomp=False),
    )
    started = time.perf_counter()
    result = await call_tool(tool)
    assert time.perf_counter() - started < 6
    assert result["meta"]["code"] == "TIMEOUT", result
    beat = workspace / "out" / "beat"
    assert beat.exists()
    size = beat.stat().st_size
    await asyncio.sleep(0.5)
    assert beat.stat().st_size == size  # nothing is writing any more


async def test_a_fork_storm_stops_at_the_process_limit(
    approve_tool: ApproveTool, call_tool: CallTool
) -> None:
    # Without seccomp (which kills the first fork) the process limit is what stops it, for an
    # engine running as root too: the call's pids cgroup counts every task in the sandbox.
    gap = cgroups.process_limit_gap("max_processes")
    if gap is not None:  # the documented exception, said loudly
        pytest.skip(gap)
    tool = approve_tool(
        fork_loop(200) + "return forked\n",
        limits=SandboxLimits(timeout=20, max_processes=20, seccomp=False),
    )
    result = await call_tool(tool)
    assert result["status"] == "error", result
    assert result["meta"]["code"] == "RESOURCE_LIMIT", result
    assert result["meta"]["limit"] == "max_processes"
    assert (
        "ran into its process limit (tool_config.toolsmaker.max_processes = 20)"
        in (result["error"])
    )
    forked = int(result["meta"]["stdout"].split()[1])
    assert 16 <= forked < 20  # the tool's own process counts too


async def test_calls_leave_no_pids_cgroup_behind(
    approve_tool: ApproveTool, call_tool: CallTool
) -> None:
    where = cgroups.locate()
    if where.parent is None:
        pytest.skip(f"no pids cgroup can be made here: {where.reason}")
    tool = approve_tool('return "x"')
    for _ in range(20):
        assert (await call_tool(tool))["content"] == "x"
    assert [p for p in where.parent.iterdir() if cgroups.owner_of(p.name) == os.getpid()] == []


async def test_a_pids_cgroup_that_cannot_be_made_stops_the_call(
    approve_tool: ApproveTool,
    call_tool: CallTool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = tmp_path / "pids"  # looks like a pids hierarchy, is not one
    fake.mkdir()
    proc = tmp_path / "proc-self"
    proc.mkdir()
    (proc / "mountinfo").write_text(f"39 31 0:36 / {fake} rw - cgroup cgroup rw,pids\n")
    (proc / "cgroup").write_text("8:pids:/\n")
    tool = approve_tool('return "x"')
    monkeypatch.setattr(cgroups, "PROC_SELF", proc)
    with pytest.raises(SandboxUnavailableError, match="could not make the call's pids cgroup"):
        await call_tool(tool)
    assert list(fake.iterdir()) == []


def test_without_pids_cgroups_root_is_told_the_process_limit_is_not_enforced(
    approve_tool: ApproveTool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    proc = tmp_path / "proc-self"
    proc.mkdir()
    (proc / "mountinfo").write_text("22 1 0:21 / / rw - ext4 /dev/vda rw\n")
    (proc / "cgroup").write_text("0::/\n")
    monkeypatch.setattr(cgroups, "PROC_SELF", proc)
    as_root = os.getuid() == 0
    with caplog.at_level(logging.WARNING, logger="ai_agent"):
        filtered = approve_tool('return "x"')  # seccomp: no process can start at all
        unfiltered = approve_tool('return "x"', limits=SandboxLimits(seccomp=False))
    warned = [r for r in caplog.records if "process limit" in r.getMessage()]
    assert len(warned) == (1 if as_root else 0)
    assert "not enforced" not in filtered.description
    assert ("process limit is not enforced" in unfiltered.description) is as_root
    assert unfiltered.preview is not None
    assert ("process limit is not enforced" in unfiltered.preview({})) is as_root
    if as_root:
        assert "tool_config.toolsmaker.max_processes" in warned[0].getMessage()


async def test_a_flood_of_output_is_cut_at_the_cap(
    approve_tool: ApproveTool, call_tool: CallTool, maker: ToolsmakerRegistry
) -> None:
    tool = approve_tool(
        """
        chunk = b"x" * (1 << 20)
        for _ in range(4096):  # 4 GiB
            os.write(1, chunk)
            os.write(2, chunk)
        return "done"
        """,
        limits=SandboxLimits(timeout=60, max_output_bytes=2_000_000),
    )
    started = time.perf_counter()
    with pytest.raises(ToolPolicyViolation, match="output cap"):
        await call_tool(tool)
    assert time.perf_counter() - started < 10
    assert _blocked(maker)[-1]["data"]["reason"] == "output_cap"  # type: ignore[index]


async def test_a_huge_result_is_cut_at_the_cap(
    approve_tool: ApproveTool, call_tool: CallTool
) -> None:
    tool = approve_tool(
        'return "y" * (50 << 20)', limits=SandboxLimits(timeout=30, max_output_bytes=1_000_000)
    )
    with pytest.raises(ToolPolicyViolation, match="output_cap"):
        await call_tool(tool)


async def test_a_long_result_within_the_cap_is_clipped_to_max_output_chars(
    approve_tool: ApproveTool, call_tool: CallTool, maker: ToolsmakerRegistry
) -> None:
    tool = approve_tool('return "z" * 5000', limits=SandboxLimits(max_output_chars=100))
    result = await call_tool(tool)
    assert result["content"].startswith("z" * 100 + "\n[... clipped: 4900 more characters]")
    assert result["meta"]["clipped"] is True


@pytest.mark.parametrize(
    ("body", "limits", "expected"),
    [
        ('x = bytearray(4 << 30)\nreturn "allocated"', SandboxLimits(memory_mb=256), "MemoryError"),
        (
            'open("out/big", "wb").write(b"x" * (8 << 20))\nreturn "wrote"',
            SandboxLimits(file_size_mb=1),
            "File too large",
        ),
        (
            'open("/tmp/fill", "wb").write(b"x" * (8 << 20))\nreturn "wrote"',
            SandboxLimits(tmp_mb=1),
            "No space left on device",
        ),
        (
            'files = [open("out/f%d" % i, "w") for i in range(500)]\nreturn "opened"',
            SandboxLimits(open_files=32),
            "Too many open files",
        ),
        (
            'import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))\nreturn "raised"',
            SandboxLimits(),
            "ValueError",
        ),
    ],
    ids=["memory", "file_size", "tmpfs", "open_files", "raise_limits"],
)
async def test_resource_limits_hold(
    body: str,
    limits: SandboxLimits,
    expected: str,
    approve_tool: ApproveTool,
    call_tool: CallTool,
    workspace: Path,
) -> None:
    tool = approve_tool(body, capabilities=["fs_write"], allowed_paths=["out"], limits=limits)
    result = await call_tool(tool)
    assert result["status"] == "error"
    assert expected in result["error"], result
    if (workspace / "out" / "big").exists():
        assert (workspace / "out" / "big").stat().st_size <= 1 << 20


async def test_cpu_time_is_limited(
    approve_tool: ApproveTool, call_tool: CallTool, maker: ToolsmakerRegistry
) -> None:
    tool = approve_tool("while True:\n    pass", limits=SandboxLimits(timeout=30, cpu_seconds=1))
    started = time.perf_counter()
    with pytest.raises(ToolPolicyViolation, match="cpu_limit"):
        await call_tool(tool)
    assert time.perf_counter() - started < 10


async def test_killing_everything_inside_does_not_reach_the_engine(
    approve_tool: ApproveTool, call_tool: CallTool
) -> None:
    tool = approve_tool("os.kill(-1, 9)\nos.kill(1, 9)\nreturn 'still here'")
    result = await call_tool(tool)
    assert result["status"] in ("ok", "error")  # the engine (this test) is alive to see it


async def test_changes_to_its_environment_stay_in_the_sandbox(
    approve_tool: ApproveTool, call_tool: CallTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINE_SETTING", "engine")
    tool = approve_tool(
        """
        os.environ["ENGINE_SETTING"] = "tool"
        os.environ["PATH"] = "/evil"
        os.putenv("LD_PRELOAD", "/evil.so")
        return sorted(os.environ)
        """
    )
    result = await call_tool(tool)
    assert "ENGINE_SETTING" in result["content"]  # only inside its own process
    assert os.environ["ENGINE_SETTING"] == "engine"
    assert os.environ.get("PATH") != "/evil"
    assert "LD_PRELOAD" not in os.environ
