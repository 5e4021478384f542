"""Confinement of files: an approved generated tool sees and changes only its allowed paths.

Every probe runs in a real bubblewrap sandbox. The tools are approved by a careless reviewer
(and, where the AST filter would refuse the code, a careless validator too): approval never
widens what the OS lets the tool reach.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from ai_agent.errors import ToolPolicyViolation
from ai_agent.tools.maker import ToolsmakerRegistry
from tests.maker.conftest import CANARY, ApproveTool, CallTool, activate

pytestmark = pytest.mark.usefixtures("careless_validator")

PROBE = """
results = {}
for label, target in PROBES:
    try:
        if isinstance(target, tuple):
            op, path, data = target
            if op == "write":
                with open(path, "w") as handle:
                    handle.write(data)
                results[label] = "written"
            elif op == "symlink":
                os.symlink(data, path)
                results[label] = "linked"
            elif op == "rename":
                os.rename(path, data)
                results[label] = "renamed"
        elif target.endswith("/"):
            results[label] = sorted(os.listdir(target))
        else:
            with open(target) as handle:
                results[label] = handle.read()
    except Exception as exc:
        results[label] = "error: " + type(exc).__name__
return results
"""


def _code(probes: Sequence[tuple[str, object]]) -> str:
    return (
        "import os\n\nPROBES = " + repr(probes) + "\n\n\nclass GeneratedTool:\n"
        "    def execute(self, **kwargs):\n"
        + "\n".join("        " + line for line in PROBE.strip().splitlines())
        + "\n"
    )


def _leaks(results: dict[str, object]) -> list[str]:
    return [k for k, v in results.items() if CANARY in json.dumps(v)]


async def test_reads_outside_the_allowed_paths_find_nothing(
    approve_tool: ApproveTool,
    call_tool: CallTool,
    canaries: dict[str, Path],
    workspace: Path,
    maker: ToolsmakerRegistry,
) -> None:
    data = workspace / "data"
    data.mkdir()
    (data / "inside.txt").write_text("inside")
    (data / "abs_link").symlink_to(canaries["outside"])
    (data / "rel_link").symlink_to("../project_secret.txt")
    (data / "dir_link").symlink_to(canaries["outside"].parent)
    probes = [
        ("inside", "data/inside.txt"),
        ("absolute", str(canaries["outside"])),
        ("home", str(canaries["home"])),
        ("project", str(canaries["project"])),
        ("dotdot", "../project_secret.txt"),
        ("data_dotdot", "data/../project_secret.txt"),
        ("abs_symlink", "data/abs_link"),
        ("rel_symlink", "data/rel_link"),
        ("dir_symlink", "data/dir_link/secret.txt"),
        ("proc_root", "/proc/self/root" + str(canaries["outside"])),
        ("engine_environ", f"/proc/{os.getpid()}/environ"),
        ("pid1_environ", "/proc/1/environ"),
        ("self_environ", "/proc/self/environ"),
        ("passwd", "/etc/passwd"),
        ("toolsmaker", str(maker.layout.active)),
        ("audit", str(maker.layout.audit)),
        ("root_listing", "/"),
        ("workspace_listing", "/workspace/"),
        ("disk", "/dev/sda"),
        ("sysfs", "/sys/kernel/"),
    ]
    maker.build_from_intent({"name": "bystander", "purpose": "Leaves audit lines."})
    tool = approve_tool(code=_code(probes), capabilities=["fs_read"], allowed_paths=["data"])
    result = await call_tool(tool)
    values = result["content"]
    assert result["status"] == "ok", result
    assert values["inside"] == "inside"  # the allowed path works
    assert _leaks(values) == []
    for label, _ in probes[1:-4]:
        assert str(values[label]).startswith("error: "), (label, values[label])
    # Only what the sandbox mounts exists: no home, no /etc, no /proc, no /sys, no host /tmp.
    root = set(values["root_listing"])
    assert not root & {"home", "etc", "proc", "sys", "var", "srv", "opt", "mnt", "boot"}
    assert values["workspace_listing"] == ["data"]
    assert values["disk"] == "error: FileNotFoundError"
    assert values["sysfs"] == "error: FileNotFoundError"


async def test_writes_go_only_to_writable_allowed_paths(
    approve_tool: ApproveTool,
    call_tool: CallTool,
    canaries: dict[str, Path],
    workspace: Path,
    maker: ToolsmakerRegistry,
    tmp_path: Path,
) -> None:
    (workspace / "data").mkdir()
    marker = f"ai-agent-escape-{os.getpid()}"
    before = maker.layout.active.read_text() if maker.layout.active.exists() else None
    probes = [
        ("allowed", ("write", "out/ok.txt", "fine")),
        ("root", ("write", "/pwned.txt", "x")),
        ("dotdot", ("write", "../escape.txt", "x")),
        ("out_dotdot", ("write", "out/../../escape.txt", "x")),
        ("read_only_sibling", ("write", "data/new.txt", "x")),
        ("host_absolute", ("write", str(tmp_path / "outside" / "new.txt"), "x")),
        ("host_tmp", ("write", f"/tmp/{marker}", "x")),  # the sandbox's own /tmp
        ("policy", ("write", str(maker.layout.active), "{}")),
        ("audit", ("write", str(maker.layout.audit), "{}")),
        ("link_out", ("symlink", "out/link", str(canaries["outside"]))),
        ("read_link", "out/link"),
        ("rename_out", ("rename", "out/ok.txt", "../moved.txt")),
    ]
    tool = approve_tool(code=_code(probes), capabilities=["fs_write"], allowed_paths=["out"])
    result = await call_tool(tool)
    values = result["content"]
    assert values["allowed"] == "written"
    assert values["host_tmp"] == "written"
    for label in (
        "root",
        "dotdot",
        "out_dotdot",
        "read_only_sibling",
        "host_absolute",
        "policy",
        "audit",
        "rename_out",
    ):
        assert str(values[label]).startswith("error: "), (label, values[label])
    assert values["read_link"].startswith("error: ")  # the link leads nowhere inside
    assert _leaks(values) == []
    assert (workspace / "out" / "ok.txt").read_text() == "fine"
    assert not (workspace / "escape.txt").exists()
    assert not (workspace.parent / "escape.txt").exists()
    assert not (workspace / "moved.txt").exists()
    assert not (workspace / "data" / "new.txt").exists()
    assert not (tmp_path / "outside" / "new.txt").exists()
    assert not Path("/tmp", marker).exists()  # the host's /tmp is untouched
    after = maker.layout.active.read_text()
    assert before is None or after == before
    assert json.loads(after) == {tool.name: 1}
    assert maker.verify_audit().ok


async def test_a_read_only_path_cannot_be_changed(
    approve_tool: ApproveTool, call_tool: CallTool, workspace: Path
) -> None:
    (workspace / "data").mkdir()
    (workspace / "data" / "keep.txt").write_text("original")
    probes = [
        ("overwrite", ("write", "data/keep.txt", "changed")),
        ("create", ("write", "data/new.txt", "x")),
        ("rename", ("rename", "data/keep.txt", "data/gone.txt")),
    ]
    tool = approve_tool(code=_code(probes), capabilities=["fs_read"], allowed_paths=["data"])
    values = (await call_tool(tool))["content"]
    assert all(str(v).startswith("error: OSError") for v in values.values()), values
    assert (workspace / "data" / "keep.txt").read_text() == "original"
    assert sorted(p.name for p in (workspace / "data").iterdir()) == ["keep.txt"]


async def test_an_allowed_path_swapped_for_a_symlink_is_not_mounted(
    approve_tool: ApproveTool,
    call_tool: CallTool,
    canaries: dict[str, Path],
    workspace: Path,
    maker: ToolsmakerRegistry,
) -> None:
    (workspace / "data").mkdir()
    tool = approve_tool(
        code=_code([("secret", "data/secret.txt")]),
        capabilities=["fs_read"],
        allowed_paths=["data"],
    )
    # After review, someone replaces the directory with a link to the engine's secrets.
    (workspace / "data").rmdir()
    (workspace / "data").symlink_to(canaries["outside"].parent)
    with pytest.raises(ToolPolicyViolation, match="path_refused"):
        await call_tool(tool)
    blocked = [e for e in maker.audit_log.events() if e["event"] == "tool_policy_blocked"]
    assert blocked[-1]["data"]["reason"] == "path_refused"
    assert blocked[-1]["tool"] == tool.name


async def test_an_allowed_path_that_holds_the_toolsmaker_is_refused(
    workspace: Path, call_tool: CallTool, approve_tool: ApproveTool
) -> None:
    from ai_agent.tools.maker import SandboxLimits

    maker_dir = workspace / "shared" / "tm"
    maker = ToolsmakerRegistry(maker_dir, base_dir=workspace, limits=SandboxLimits(timeout=10))
    tool = activate(
        maker,
        {
            "name": "peek",
            "purpose": "Writes in shared.",
            "capabilities": ["fs_write"],
            "allowed_paths": ["shared"],
            "inputs": {"path": "string", "content": "string"},
        },
    )
    with pytest.raises(ToolPolicyViolation, match="engine's own files"):
        await call_tool(tool, {"path": "shared/tm/active_versions.json", "content": "{}"})
    assert maker.active_versions() == {"peek": 1}


async def test_a_missing_read_path_is_simply_absent(
    approve_tool: ApproveTool, call_tool: CallTool, workspace: Path
) -> None:
    tool = approve_tool(
        code=_code([("list", "/workspace/")]),
        capabilities=["fs_read"],
        allowed_paths=["nothing_here"],
    )
    assert (await call_tool(tool))["content"] == {"list": []}
    assert not (workspace / "nothing_here").exists()  # reading never creates it
