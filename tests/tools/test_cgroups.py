"""Finding where per-call pids cgroups go, and cleaning up, on made-up cgroup trees.

The kernel's side (the limit, the removal, the sweep) is shown on the real hierarchy in
``test_process_limit.py``; these cover what the machine running the tests may not have (a
cgroup v2 pids controller, a hierarchy that cannot be read) and the failure paths.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from ai_agent.tools.builtin import cgroups


def fake_proc(tmp_path: Path, mountinfo: str | None, cgroup: str) -> Path:
    proc = tmp_path / "proc-self"
    proc.mkdir()
    if mountinfo is not None:
        (proc / "mountinfo").write_text(mountinfo)
    (proc / "cgroup").write_text(cgroup)
    return proc


def v2_engine(tmp_path: Path, controllers: str = "pids\n", enabled: str = "") -> Path:
    engine = tmp_path / "unified" / "agent.service"
    engine.mkdir(parents=True)
    (engine / "cgroup.controllers").write_text(controllers)
    (engine / "cgroup.subtree_control").write_text(enabled)
    return engine


V2_MOUNT = "41 31 0:38 / {} rw - cgroup2 cgroup2 rw\n"


def test_a_pids_controller_already_enabled_is_left_as_it_is(tmp_path: Path) -> None:
    engine = v2_engine(tmp_path, enabled="memory pids\n")
    proc = fake_proc(tmp_path, V2_MOUNT.format(engine.parent), "0::/agent.service\n")
    assert cgroups.locate(proc) == cgroups.Placement(engine, 2)
    assert (engine / "cgroup.subtree_control").read_text() == "memory pids\n"


def test_a_pids_controller_that_cannot_be_enabled_says_why(tmp_path: Path) -> None:
    engine = v2_engine(tmp_path)
    # A file that reads but refuses writes, as a busy or undelegated subtree_control does.
    (engine / "cgroup.subtree_control").unlink()
    (engine / "cgroup.subtree_control").symlink_to("/proc/version")
    proc = fake_proc(tmp_path, V2_MOUNT.format(engine.parent), "0::/agent.service\n")
    where = cgroups.locate(proc)
    assert where.parent is None
    assert "the pids controller cannot be enabled" in where.reason, where.reason


def test_an_engine_cgroup_missing_from_the_mount_says_why(tmp_path: Path) -> None:
    engine = v2_engine(tmp_path)
    proc = fake_proc(tmp_path, V2_MOUNT.format(engine.parent), "0::/other.service\n")
    where = cgroups.locate(proc)
    assert where.parent is None and "is not visible at" in where.reason


def test_a_v1_hierarchy_mounted_at_a_subtree_is_followed(tmp_path: Path) -> None:
    # As a container without a cgroup namespace sees it: the mount's root is the container's.
    pids = tmp_path / "pids"
    (pids / "job").mkdir(parents=True)
    mount = f"39 31 0:36 /docker/abc {pids} rw - cgroup cgroup rw,nosuid,pids\n"
    proc = fake_proc(tmp_path, mount, "8:pids:/docker/abc/job\n0::/\n")
    assert cgroups.locate(proc) == cgroups.Placement(pids / "job", 1)


def test_mount_points_with_escaped_characters_are_read(tmp_path: Path) -> None:
    pids = tmp_path / "cgroup fs"
    pids.mkdir()
    mount = f"39 31 0:36 / {str(pids).replace(' ', chr(92) + '040')} rw - cgroup cgroup rw,pids\n"
    proc = fake_proc(tmp_path, mount, "8:pids:/\n")
    assert cgroups.locate(proc) == cgroups.Placement(pids, 1)


def test_unreadable_cgroup_information_says_why(tmp_path: Path) -> None:
    where = cgroups.locate(fake_proc(tmp_path, None, "0::/\n"))
    assert where.parent is None and "the cgroups cannot be read" in where.reason


async def test_without_a_place_a_call_gets_no_cgroup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = fake_proc(tmp_path, "22 1 0:21 / / rw - ext4 /dev/vda rw\n", "0::/\n")
    monkeypatch.setattr(cgroups, "PROC_SELF", proc)
    async with cgroups.call_cgroup(10) as group:
        assert group is None


def test_a_cgroup_without_events_has_refused_nothing(tmp_path: Path) -> None:
    assert cgroups.CallCgroup(tmp_path).refused() == 0
    (tmp_path / "pids.events").write_text("max.imposed 0\n")
    assert cgroups.CallCgroup(tmp_path).refused() == 0


async def test_a_cgroup_that_will_not_go_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stuck = tmp_path / "stuck"
    stuck.mkdir()
    (stuck / "held").touch()  # rmdir keeps failing, as for a task that never exits
    monkeypatch.setattr(cgroups, "_REMOVE_ROUNDS", 2)
    with caplog.at_level(logging.WARNING, logger="ai_agent"):
        await cgroups.CallCgroup(stuck).close()
    assert stuck.exists()
    assert any("could not be removed" in r.getMessage() for r in caplog.records)
    gone = cgroups.CallCgroup(tmp_path / "gone")
    await gone.close()  # already removed: nothing to do, nothing said
    assert len(caplog.records) == 1


def test_names_of_other_namespaces_and_other_things_are_not_ours(tmp_path: Path) -> None:
    ours = cgroups.call_name(pid=123, started=4)
    assert cgroups.owner_of(ours) == 123
    other_namespace = ours.replace(ours.split(".")[1], "1", 1)
    assert cgroups.owner_of(other_namespace) is None
    assert cgroups.owner_of("user.slice") is None
    assert cgroups._stale_groups(tmp_path / "missing") == []
    (tmp_path / other_namespace).mkdir()
    (tmp_path / "user.slice").mkdir()
    assert cgroups._stale_groups(tmp_path) == []


def test_a_cgroup_is_stale_once_its_engine_is_gone() -> None:
    started = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    me = os.getpid()
    assert not cgroups._stale(cgroups.call_name(pid=me, started=started))
    assert cgroups._stale(cgroups.call_name(pid=me, started=started + 1))  # its PID reused
    assert cgroups._stale(cgroups.call_name(pid=2**22 + 1, started=1))  # no such process


def test_the_tasks_of_a_threaded_cgroup_are_read_from_its_threads(tmp_path: Path) -> None:
    (tmp_path / "cgroup.procs").mkdir()  # unreadable, as in a threaded v2 cgroup
    (tmp_path / "cgroup.threads").write_text("12\n13\n")
    assert cgroups.members(tmp_path) == [12, 13]
    (tmp_path / "cgroup.threads").unlink()
    (tmp_path / "cgroup.threads").mkdir()
    assert cgroups.members(tmp_path) == []
    assert cgroups.members(tmp_path / "gone") == []
