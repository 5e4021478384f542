"""The engine's own state is out of reach of the tools it runs.

The run store, the checkpoints, queued plans, the memory file, the toolsmaker folder and its
audit log: a tool that could write them could approve its own gated calls. Each test builds a
real Agent over a real workspace (the test's working directory, as when the engine is started
from a project folder), runs it so the state exists on disk, and then tries to reach the state
through the tools: the file tools refuse it with PROTECTED_PATH, and ``run_bash`` under
bubblewrap does not see it at all, whether it lies in ``.agents/`` or anywhere else in the
workspace, directly or through a symlink.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent
from ai_agent.config import AgentSettings
from ai_agent.graph.worker import Worker
from ai_agent.state import ToolResult
from ai_agent.testing import ScriptedModel
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.builtin.sandbox import SandboxError

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
PYTHON = "/usr/bin/python3"  # the system's, visible inside the sandbox (/usr is mounted)
FILE_TOOLS = ["read_file", "list_directory", "file_info", "glob_search", "grep_search"]
WRITE_TOOLS = ["write_file", "append_file", "delete_file", "move_file", "copy_file"]


def settings(**bash: Any) -> AgentSettings:
    return AgentSettings(tool_config={"bash": {"sandbox": "bwrap", **bash}})


def fingerprint(*paths: Path) -> dict[str, str]:
    """The content of every file below ``paths`` (the state must come out unchanged).

    SQLite's ``-shm`` file is left out: any reader of the database (the test's too) writes it.
    """
    out = {}
    for root in paths:
        for p in sorted([root, *root.rglob("*")] if root.is_dir() else [root]):
            if p.is_file() and not p.name.endswith("-shm"):
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def tables(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master"))


class Workspace:
    """An Agent whose state lies inside its workspace (where, is the test's choice)."""

    def __init__(self, base: Path, **where: Any) -> None:
        self.base = base
        self.db = where.pop("checkpoint_path", base / ".agents" / "checkpoints.sqlite")
        self.memory = where.pop("memory_path", base / ".agents" / "memory.jsonl")
        self.maker_dir = where.pop("toolsmaker_dir", base / ".agents" / "toolsmaker")
        self.audit = where.pop("toolsmaker_audit_path", self.maker_dir / "audit.jsonl")
        self.agent = Agent(
            model=ScriptedModel(["done"]),
            tools=[*FILE_TOOLS, *WRITE_TOOLS, "run_bash"],
            workdir=base,
            checkpoint_path=self.db,
            memory_path=self.memory,
            toolsmaker_dir=self.maker_dir,
            toolsmaker_audit_path=self.audit,
            settings=where.pop("settings", settings()),
            **where,
        )

    async def populate(self) -> None:
        """A finished run (database, memory) and a proposed tool (toolsmaker folder, audit)."""
        assert (await self.agent.run("remember this")).status == "completed"
        self.agent.build_dynamic_tool_from_intent(
            {"name": "shout", "purpose": "Echo a text.", "inputs": {"text": "string"}}
        )
        for path in (self.db, self.memory, self.audit, self.maker_dir):
            assert path.exists(), path

    @property
    def state(self) -> list[Path]:
        return [self.db.parent, self.memory, self.maker_dir, self.audit]

    async def call(self, name: str, **args: Any) -> ToolResult:
        return await self.agent.call_tool(name, args, approved=True)

    async def bash(self, command: str) -> str:
        result = await self.call("run_bash", command=command)
        assert result["status"] == "ok", result
        assert result["meta"]["sandboxed"] is True
        return str(result["content"])


@pytest.fixture
def base() -> Path:
    return Path.cwd()


def rel(ws: Workspace, path: Path) -> str:
    return str(path.relative_to(ws.base))


# The file tools -------------------------------------------------------------------------------


async def test_the_file_tools_refuse_the_engines_state(base: Path) -> None:
    ws = Workspace(base)
    await ws.populate()
    (base / "notes.txt").write_text("mine\n")
    (base / "store_link").symlink_to(".agents")
    (base / "db_link").symlink_to(ws.db)
    before = fingerprint(*ws.state)
    targets = [
        ".agents",
        ".agents/checkpoints.sqlite",
        ".agents/checkpoints.sqlite-wal",
        ".agents/memory.jsonl",
        ".agents/toolsmaker",
        rel(ws, ws.audit),
        "store_link/checkpoints.sqlite",
        "db_link",
        str(ws.db),
        "sub/../.agents",
    ]
    for target in targets:
        for name, args in [
            ("read_file", {"path": target}),
            ("file_info", {"path": target}),
            ("list_directory", {"path": target}),
            ("grep_search", {"pattern": ".", "path": target}),
            ("glob_search", {"pattern": "*", "root_dir": target}),
            ("write_file", {"path": target, "content": "x"}),
            ("append_file", {"path": target, "content": "x"}),
            ("copy_file", {"source": target, "destination": "copy.bin"}),
            ("copy_file", {"source": "notes.txt", "destination": target}),
            ("move_file", {"source": "notes.txt", "destination": target}),
        ]:
            result = await ws.call(name, **args)
            assert result["status"] == "error", (name, args, result)
            assert result["meta"]["code"] == "PROTECTED_PATH", (name, args, result)
            assert "engine's own state" in str(result["error"])
    assert fingerprint(*ws.state) == before
    assert (base / "notes.txt").read_text() == "mine\n" and not (base / "copy.bin").exists()


async def test_walks_skip_the_engines_state_and_moves_cannot_carry_it_off(base: Path) -> None:
    ws = Workspace(base, checkpoint_path=base / "state" / "runs.sqlite")
    await ws.populate()
    (base / "state" / "readme.txt").write_text("the database is here\n")
    listed = await ws.call("list_directory", path=".", recursive=True, max_depth=5)
    paths = [e["path"] for e in listed["content"]["entries"]]
    assert "state/readme.txt" in paths
    assert not [p for p in paths if p.startswith(".agents") or "runs.sqlite" in p], paths
    found = await ws.call("glob_search", pattern="**/*", root_dir=".")
    assert not [p for p in found["content"]["matches"] if ".agents" in p or ".sqlite" in p]
    grep = await ws.call("grep_search", pattern="shout|remember|SQLite", path=".")
    assert {m["path"] for m in grep["content"]["matches"]} == set()
    # Moving or deleting what holds the state would take it from the engine.
    for name, args in [
        ("move_file", {"source": "state", "destination": "elsewhere"}),
        ("delete_file", {"path": "state/runs.sqlite"}),
        ("delete_file", {"path": ".agents/memory.jsonl"}),
    ]:
        result = await ws.call(name, **args)
        assert result["meta"]["code"] == "PROTECTED_PATH", (name, result)
    assert ws.db.exists() and ws.memory.exists()


# run_bash under bubblewrap ----------------------------------------------------------------------


SQLITE3 = "command -v sqlite3 > /dev/null && sqlite3"  # the CLI, where it is installed
LOOK = "ls -A {dir}; cat {file} | head -c 200; " + SQLITE3 + " {db} .tables"
WRITE = (
    f"{PYTHON} -c \"import sqlite3; c = sqlite3.connect('{{db}}'); "
    "c.execute('CREATE TABLE pwned (x)'); c.commit()\"; "
    + SQLITE3
    + " {db} 'CREATE TABLE pwned2 (x)'; "
    "echo planted > {dir}/planted; echo planted >> {file}"
)


def stdout(out: str) -> str:
    return out.split("--- stdout ---\n", 1)[1].split("--- stderr ---", 1)[0].strip()


@needs_bwrap
@pytest.mark.parametrize("layout", ["default", "elsewhere_in_the_workspace"])
async def test_bash_in_bwrap_does_not_see_the_state(base: Path, layout: str) -> None:
    where: dict[str, Any] = {}
    if layout == "elsewhere_in_the_workspace":
        where = {
            "checkpoint_path": base / "state" / "runs.sqlite",
            "memory_path": base / "mem" / "memory.jsonl",
            "toolsmaker_dir": base / "tm",
            "toolsmaker_audit_path": base / "logs" / "audit.jsonl",
        }
    ws = Workspace(base, **where)
    await ws.populate()
    before = fingerprint(*ws.state)
    db_tables = tables(ws.db)
    for path in ws.state:
        folder = path if path.is_dir() else path.parent
        names = {"dir": rel(ws, folder), "file": rel(ws, path), "db": rel(ws, ws.db)}
        assert stdout(await ws.bash(LOOK.format(**names))) == "", path
        await ws.bash(WRITE.format(**names))
    assert fingerprint(*ws.state) == before
    assert tables(ws.db) == db_tables and not [t for t in db_tables if "pwned" in t]
    assert not list(base.rglob("planted"))


@needs_bwrap
async def test_symlinks_and_dotdot_inside_the_sandbox_lead_nowhere(base: Path) -> None:
    ws = Workspace(base)
    await ws.populate()
    before = fingerprint(*ws.state)
    (base / "sub").mkdir()
    (base / "abs_link").symlink_to(base / ".agents")
    (base / "sub" / "rel_link").symlink_to("../.agents")
    (base / "db_link").symlink_to(ws.db)
    look = (
        "cat abs_link/checkpoints.sqlite db_link sub/rel_link/memory.jsonl | head -c 300; "
        f"for d in abs_link/ sub/rel_link/ sub/../.agents {base}/.agents; do ls -A $d; done; "
        f"cd / && ls -A {base}/.agents"
    )
    assert stdout(await ws.bash(look)) == ""
    out = await ws.bash(f"ln {ws.db} hard_link; echo x > db_link; echo x > abs_link/memory.jsonl")
    assert not (base / "hard_link").exists(), out
    assert fingerprint(*ws.state) == before


@needs_bwrap
async def test_a_command_cannot_approve_a_paused_runs_gated_call(base: Path) -> None:
    """The attack of issue 15: queue an approve-everything plan, let a worker run the rm -rf."""
    victim = base / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    agent = Agent(
        model=ScriptedModel(
            [{"tool_calls": [{"name": "run_bash", "args": {"command": "rm -rf victim"}}]}, "ok"]
        ),
        tools=["run_bash"],
        workdir=base,
        checkpoint_path=base / ".agents" / "checkpoints.sqlite",
        memory_path=None,
        settings=settings(),
    )
    paused = await agent.run("clean up", thread_id="victim-run")
    assert paused.status == "paused"
    attack = (
        f"{PYTHON} - <<'EOF'\n"
        "import json, sqlite3, time\n"
        "c = sqlite3.connect('.agents/checkpoints.sqlite')\n"
        'c.execute("INSERT INTO agent_plans (thread_id, plan, status, submitted_at) '
        "VALUES ('victim-run', ?, 'queued', ?)\", (json.dumps({'approve': ['*']}), time.time()))\n"
        "c.commit(); print('QUEUED')\n"
        "EOF"
    )
    result = await agent.call_tool("run_bash", {"command": attack}, approved=True)
    assert "QUEUED" not in str(result["content"])
    assert await agent.list_plans() == []
    assert await Worker(agent, poll=0.05).run(once=True) == []
    assert (victim / "precious.txt").read_text() == "keep me"


@needs_bwrap
async def test_commands_have_no_capabilities_to_lift_a_mask(base: Path) -> None:
    """As root, bubblewrap would leave the command every capability (and umount with it)."""
    ws = Workspace(base)
    await ws.populate()
    out = await ws.bash(
        "grep CapEff /proc/self/status; umount .agents 2>/dev/null; ls -A .agents; "
        "unshare -Urm true 2>/dev/null && echo NEW_USERNS"
    )
    assert stdout(out) == "CapEff:\t0000000000000000"


@needs_bwrap
@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"checkpoint_path": "runs.sqlite"}, "lies directly in"),
        ({"memory_path": "memory.jsonl"}, "the memory file"),
        ({"settings": settings(readonly_paths=["{base}/.agents/toolsmaker"])}, "inside it"),
    ],
)
async def test_state_that_cannot_be_hidden_stops_the_command(
    base: Path, where: dict[str, Any], message: str
) -> None:
    resolved = {k: base / v if isinstance(v, str) else v for k, v in where.items()}
    if "settings" in where:
        paths = where["settings"].tool_config.bash.readonly_paths
        resolved["settings"] = settings(readonly_paths=[str(p).format(base=base) for p in paths])
    ws = Workspace(base, **resolved)
    await ws.populate()
    result = await ws.call("run_bash", command="touch MARK")
    assert result["status"] == "error" and result["meta"]["code"] == "PROTECTED_PATH"
    assert message in str(result["error"]) and "folder of its own" in str(result["error"])
    assert not (base / "MARK").exists()


@needs_bwrap
async def test_a_second_hard_link_to_the_database_stops_commands(base: Path) -> None:
    ws = Workspace(base)
    await ws.populate()
    os.link(ws.db, base / "copy.bin")
    result = await ws.call("run_bash", command="cat copy.bin")
    assert result["meta"]["code"] == "PROTECTED_PATH"
    assert "more than one hard link" in str(result["error"])
    assert (await ws.call("read_file", path="copy.bin"))["meta"]["code"] == "PROTECTED_PATH"
    os.unlink(base / "copy.bin")
    assert (await ws.call("run_bash", command="true"))["status"] == "ok"


def test_masks_cover_each_state_folder_once() -> None:
    state = ProtectedPaths.for_engine(
        workdir="/w",
        databases=["/w/.agents/c.sqlite", "/w/data/db/x.sqlite", "/elsewhere/y.sqlite"],
        memory=["/w/.agents/memory.jsonl"],
        toolsmaker_dir="/w/.agents/toolsmaker",
        audit_log="/w/logs/audit.jsonl",
    )
    assert state.masks([Path("/w")]) == [Path("/w/.agents"), Path("/w/logs"), Path("/w/data/db")]
    assert state.masks([Path("/w/data")]) == [Path("/w/data/db")]
    assert state.masks([Path("/w/data/db/sub")]) == []  # inside a database's folder: nothing
    assert state.masks([Path("/opt")]) == []
    with pytest.raises(SandboxError, match=r"is the engine's folder \.agents \(/w/\.agents\)"):
        state.masks([Path("/w/.agents/toolsmaker/specs")])


async def test_state_moved_after_the_agent_was_configured_is_still_refused(base: Path) -> None:
    """Paths are resolved once, when the Agent is configured; what the tools open is compared
    with the state by device and inode, so the state is recognised under its new name too."""
    ws = Workspace(base, checkpoint_path=base / "state" / "runs.sqlite")
    await ws.populate()
    (base / "state").rename(base / "moved")
    (base / "state").symlink_to("moved")  # the engine still finds it through its old name
    (base / ".agents").rename(base / "agents2")
    (base / ".agents").symlink_to("agents2")
    for name, args in [
        ("read_file", {"path": "moved/runs.sqlite"}),
        ("file_info", {"path": "moved/runs.sqlite"}),
        ("list_directory", {"path": "agents2"}),
        ("read_file", {"path": "agents2/memory.jsonl"}),
    ]:
        result = await ws.call(name, **args)
        assert result["meta"]["code"] == "PROTECTED_PATH", (name, result)
    listed = await ws.call("list_directory", path=".", recursive=True, max_depth=4)
    assert [e["path"] for e in listed["content"]["entries"]] == [".agents", "moved", "state"]


def pipes() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("pipe:"):
                found.add(target)
    return found


async def test_a_command_that_cannot_start_leaves_nothing_open(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace(base, settings=AgentSettings())
    monkeypatch.setattr(
        "ai_agent.tools.builtin.bash_process.sys.executable", str(base / "no-python")
    )
    before = pipes()
    result = await ws.call("run_bash", command="true")
    assert result["status"] == "error" and "no-python" in str(result["error"])
    assert pipes() - before == set()  # the reaper's pipes were closed again


def test_the_engines_state_without_a_toolsmaker() -> None:
    state = ProtectedPaths.for_engine(workdir="/w", memory=["/w/m.jsonl"])
    assert [e.what for e in state.entries] == ["the engine's folder .agents", "the memory file"]
    assert repr(state) == "ProtectedPaths(['/w/.agents', '/w/m.jsonl'])"
    assert not ProtectedPaths() and state
    assert state.identities() == {} and state.linked() == []  # nothing exists there
