"""Escape attempts beyond the issue's list, each contained by the OS or refused by the engine.

As in the other confinement tests, a careless validator and a careless reviewer let every tool
through; what holds is the sandbox (namespaces, mounts, seccomp, rlimits) and the engine's
reading of what comes out of it.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

import pytest

from ai_agent.errors import ToolPolicyViolation
from ai_agent.tools.maker import SandboxLimits, ToolsmakerRegistry
from tests.maker.conftest import ApproveTool, CallTool, activate

pytestmark = pytest.mark.usefixtures("careless_validator")

NO_SECCOMP = SandboxLimits(timeout=10, seccomp=False)


def _reasons(maker: ToolsmakerRegistry) -> list[object]:
    return [
        e["data"]["reason"] for e in maker.audit_log.events() if e["event"] == "tool_policy_blocked"
    ]


async def test_the_engines_open_descriptors_are_not_inherited(
    approve_tool: ApproveTool, call_tool: CallTool, workspace: Path
) -> None:
    # The engine holds files and directories open (the allowed path is handed to bwrap as a
    # directory descriptor; a leaked one would let the tool climb out with openat("..")).
    (workspace / "data").mkdir()
    held = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        tool = approve_tool(
            """
            found = {}
            for fd in range(1024):
                try:
                    mode = os.fstat(fd).st_mode
                except OSError:
                    continue
                found[fd] = ("dir" if stat.S_ISDIR(mode) else "socket" if stat.S_ISSOCK(mode)
                             else "pipe" if stat.S_ISFIFO(mode) else "chr" if stat.S_ISCHR(mode)
                             else oct(mode))
            return found
            """,
            imports="import os, stat",
            capabilities=["fs_read"],
            allowed_paths=["data"],
        )
        result = await call_tool(tool)
    finally:
        os.close(held)
    found = result["content"]
    # stdin (/dev/null), stdout and stderr (pipes to the engine) and the channel; nothing else.
    assert sorted(found.values()) == ["chr", "pipe", "pipe", "socket"], found
    assert {"0", "1", "2"} <= set(found)


SET_ID = {
    "chmod_setuid": 'open("out/f", "w").close()\nos.chmod("out/f", 0o4755)',
    "open_setgid": 'os.close(os.open("out/f", os.O_CREAT | os.O_WRONLY, 0o2755))',
    "mkdir_setgid": 'os.mkdir("out/d", 0o2777)',
    "fchmod_setuid": (
        'fd = os.open("out/f", os.O_CREAT | os.O_WRONLY, 0o755)\nos.fchmod(fd, 0o4755)'
    ),
}


@pytest.mark.parametrize("attack", sorted(SET_ID))
async def test_no_set_user_id_file_can_be_planted(
    attack: str,
    approve_tool: ApproveTool,
    call_tool: CallTool,
    workspace: Path,
    maker: ToolsmakerRegistry,
) -> None:
    # The sandbox's user is the engine's user outside: a set-user-ID file left in the workspace
    # would run as the engine's user for whoever starts it.
    tool = approve_tool(
        SET_ID[attack] + "\nreturn 'planted'", capabilities=["fs_write"], allowed_paths=["out"]
    )
    with pytest.raises(ToolPolicyViolation, match="forbidden_syscall"):
        await call_tool(tool)
    for path in (workspace / "out").iterdir():
        assert not path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID), path
    assert _reasons(maker)[-1] == "forbidden_syscall"


async def test_ordinary_modes_still_work(
    approve_tool: ApproveTool, call_tool: CallTool, workspace: Path
) -> None:
    tool = approve_tool(
        """
        os.makedirs("out/a/b", exist_ok=True)
        with open("out/a/b/f", "w") as handle:
            handle.write("x")
        os.chmod("out/a/b/f", 0o755)
        os.mkdir("out/shared", 0o1777)
        return sorted(os.listdir("out"))
        """,
        capabilities=["fs_write"],
        allowed_paths=["out"],
    )
    assert (await call_tool(tool))["content"] == ["a", "shared"]
    assert (workspace / "out" / "a" / "b" / "f").stat().st_mode & 0o777 == 0o755


DEEP = {
    # A frame the engine's JSON parser would recurse into without end.
    "frame": """
    data = b"[" * 200000 + b"]" * 200000
    os.write(int(sys.argv[1]), struct.pack(">I", len(data)) + data)
    time.sleep(5)
    """,
    "result": "value = []\nfor _ in range(300):\n    value = [value]\nreturn value",
}


@pytest.mark.parametrize("kind", sorted(DEEP))
async def test_deeply_nested_messages_are_a_protocol_violation(
    kind: str, approve_tool: ApproveTool, call_tool: CallTool, maker: ToolsmakerRegistry
) -> None:
    tool = approve_tool(DEEP[kind], imports="import os, struct, sys, time")
    with pytest.raises(ToolPolicyViolation, match="nested too deeply"):
        await call_tool(tool)
    assert _reasons(maker)[-1] == "protocol"


FORGED = {
    "two_results": (
        'send({"op": "result", "value": "forged"})\nreturn "real"',
        "unexpected message",
    ),
    "unknown_op": ('send({"op": "activate", "tool": "x"})\nreturn "real"', "unexpected message"),
    "not_an_object": ('send(["result"])\nreturn "real"', "not an object"),
    "not_json": ("raw(b'{nope')\nreturn 'real'", "not JSON"),
}
FRAMING = """
import json, os, struct, sys

def raw(data):
    os.write(int(sys.argv[1]), struct.pack(">I", len(data)) + data)

def send(message):
    raw(json.dumps(message).encode())
"""


@pytest.mark.parametrize("attack", sorted(FORGED))
async def test_forged_frames_end_the_call(
    attack: str, approve_tool: ApproveTool, call_tool: CallTool, maker: ToolsmakerRegistry
) -> None:
    body, message = FORGED[attack]
    tool = approve_tool(body, imports=FRAMING)
    with pytest.raises(ToolPolicyViolation, match=message):
        await call_tool(tool)
    assert _reasons(maker)[-1] == "protocol"


async def test_a_fork_bomb_dies_at_its_first_fork(
    approve_tool: ApproveTool, call_tool: CallTool, maker: ToolsmakerRegistry
) -> None:
    tool = approve_tool("while True:\n    os.fork()")
    started = time.perf_counter()
    with pytest.raises(ToolPolicyViolation, match="forbidden_syscall"):
        await call_tool(tool)
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    "body",
    [
        "import mmap\nm = mmap.mmap(-1, 8 << 30)\nreturn 'mapped'",
        "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))",
        "return len('x' * (8 << 30))",
    ],
    ids=["mmap", "grow", "one_string"],
)
async def test_huge_allocations_fail_inside_the_sandbox(
    body: str, approve_tool: ApproveTool, call_tool: CallTool
) -> None:
    tool = approve_tool(body, limits=SandboxLimits(timeout=20, memory_mb=256))
    result = await call_tool(tool)
    assert result["status"] == "error"
    assert "MemoryError" in result["error"] or "Cannot allocate memory" in result["error"], result


async def test_without_seccomp_the_namespaces_still_refuse_privileged_calls(
    approve_tool: ApproveTool, call_tool: CallTool
) -> None:
    # No capabilities inside the user namespace, and no further user namespaces: mounting a
    # /proc, new namespaces, chroot and becoming root all fail even with the filter off.
    tool = approve_tool(
        """
        libc = ctypes.CDLL(None, use_errno=True)
        os.makedirs("/tmp/p", exist_ok=True)
        attempts = {
            "mount_proc": lambda: libc.mount(b"proc", b"/tmp/p", b"proc", 0, None),
            "unshare_user": lambda: libc.unshare(0x10000000),
            "unshare_mount": lambda: libc.unshare(0x00020000),
            "chroot": lambda: libc.chroot(b"/tmp"),
            "setuid_root": lambda: libc.setuid(0),
        }
        out = {name: attempt() for name, attempt in attempts.items()}
        out["proc_exists"] = os.path.exists("/proc/self")
        return out
        """,
        imports="import ctypes, os",
        limits=NO_SECCOMP,
    )
    result = await call_tool(tool)
    assert result["content"] == {
        "mount_proc": -1,
        "unshare_user": -1,
        "unshare_mount": -1,
        "chroot": -1,
        "setuid_root": -1,
        "proc_exists": False,
    }


async def test_the_python_installation_is_read_only(
    approve_tool: ApproveTool, call_tool: CallTool
) -> None:
    tool = approve_tool(
        """
        out = {}
        for place in (sys.prefix, os.path.dirname(os.__file__), "/usr/lib"):
            try:
                with open(os.path.join(place, "sitecustomize.py"), "w") as handle:
                    handle.write("print('owned')")
                out[place] = "written"
            except OSError as exc:
                out[place] = exc.errno
        return out
        """,
        imports="import os, sys",
        capabilities=["fs_write"],
        allowed_paths=["out"],
    )
    result = await call_tool(tool)
    assert "written" not in result["content"].values(), result


async def test_signals_cannot_reach_the_engine(
    approve_tool: ApproveTool, call_tool: CallTool
) -> None:
    tool = approve_tool(
        f"""
        out = {{}}
        for pid in ({os.getpid()}, {os.getppid()}, 1, -1):
            try:
                os.kill(pid, signal.SIGKILL if pid != 1 else signal.SIGTERM)
                out[pid] = "sent"
            except OSError as exc:
                out[pid] = exc.errno
        return out
        """,
        imports="import os, signal",
    )
    result = await call_tool(tool)
    assert result["status"] in ("ok", "error")  # this process (the engine) is still here


async def test_a_tool_that_lingers_after_its_result_is_killed_at_the_timeout(
    approve_tool: ApproveTool, call_tool: CallTool, workspace: Path
) -> None:
    # atexit runs after the runner sent its result: the engine still waits for the process to
    # end, and kills it (and anything with it) at the deadline.
    tool = approve_tool(
        """
        def linger():
            while True:
                with open("out/beat", "a") as handle:
                    handle.write("x")
                time.sleep(0.05)
        atexit.register(linger)
        return "done"
        """,
        imports="import atexit, time",
        capabilities=["fs_write"],
        allowed_paths=["out"],
        limits=SandboxLimits(timeout=1.5),
    )
    result = await call_tool(tool)
    assert result["meta"]["code"] == "TIMEOUT", result
    size = (workspace / "out" / "beat").stat().st_size
    await asyncio.sleep(0.4)
    assert (workspace / "out" / "beat").stat().st_size == size


async def test_a_writable_path_inside_the_toolsmaker_directory_is_refused(
    workspace: Path, call_tool: CallTool
) -> None:
    # A toolsmaker directory that is not hidden sits in the workspace: a tool allowed to write
    # into its specs/ could rewrite another tool's spec (its paths, hosts, secrets).
    maker = ToolsmakerRegistry(
        workspace / "tm", base_dir=workspace, limits=SandboxLimits(timeout=10)
    )
    tool = activate(
        maker,
        {
            "name": "respec",
            "purpose": "Writes specs.",
            "capabilities": ["fs_write"],
            "allowed_paths": ["tm/specs"],
            "inputs": {"path": "string", "content": "string"},
        },
    )
    before = (workspace / "tm" / "specs" / "respec_v1.json").read_text()
    with pytest.raises(ToolPolicyViolation, match="engine's own files"):
        await call_tool(tool, {"path": "tm/specs/respec_v1.json", "content": "{}"})
    assert (workspace / "tm" / "specs" / "respec_v1.json").read_text() == before
    assert maker.audit_log.events()[-1]["data"]["reason"] == "path_refused"


async def test_the_checkpoint_database_directory_is_never_mounted(
    workspace: Path, call_tool: CallTool
) -> None:
    db = workspace / "state" / "checkpoints.sqlite"
    db.parent.mkdir()
    db.write_bytes(b"SQLite format 3\x00")
    maker = ToolsmakerRegistry(
        workspace / ".agents" / "tm",
        base_dir=workspace,
        limits=SandboxLimits(timeout=10),
        protected=[db],
    )
    tool = activate(
        maker,
        {
            "name": "peek",
            "purpose": "Reads state.",
            "capabilities": ["fs_read"],
            "allowed_paths": ["state"],
            "inputs": {"path": "string"},
        },
    )
    with pytest.raises(ToolPolicyViolation, match="engine's own files"):
        await call_tool(tool, {"path": "state/checkpoints.sqlite"})
