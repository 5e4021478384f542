"""The file tools and their sandbox, on real files and symlinks.

Every rejection also checks (through access and modification times and directory listings) that
nothing outside the sandbox was read or written.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from ai_agent.config import FileToolsConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin.files import file_tools
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError
from tests.tools.conftest import CANARY, Tree, untouched


def registry(base: Path, **config: Any) -> ToolRegistry:
    cfg = FileToolsConfig(**config)
    box = Sandbox(
        base,
        enabled=cfg.sandbox,
        allowed_extensions=cfg.allowed_extensions,
        denied_extensions=cfg.denied_extensions,
        max_read_bytes=cfg.max_read_bytes,
    )
    return ToolRegistry(file_tools(box, cfg))


async def run(reg: ToolRegistry, tool_name: str, /, **args: Any) -> ToolResult:
    call: ToolCall = {"id": "c", "name": tool_name, "args": args}
    return await reg.execute(call, {})


def refused(result: ToolResult, code: str) -> None:
    assert result["status"] == "error", result
    assert result["meta"]["code"] == code, result
    assert CANARY not in str(result)


ESCAPES = [
    ("../outside/secret.txt", "OUTSIDE_SANDBOX"),
    ("sub/../../outside/secret.txt", "OUTSIDE_SANDBOX"),
    ("link_out", "OUTSIDE_SANDBOX"),
    ("dir_out/secret.txt", "OUTSIDE_SANDBOX"),
    ("rel_out/secret.txt", "OUTSIDE_SANDBOX"),
    ("../base-evil/secret.txt", "OUTSIDE_SANDBOX"),
    ("a\x00b.txt", "BAD_PATH"),
]


def _absolute(tree: Tree) -> list[tuple[str, str]]:
    return [
        (str(tree.secret), "OUTSIDE_SANDBOX"),
        (str(tree.evil / "secret.txt"), "OUTSIDE_SANDBOX"),
        ("/dev/null", "OUTSIDE_SANDBOX"),
    ]


# Reading ---------------------------------------------------------------------------------------


async def test_read_file_reads_inside_and_follows_inside_symlinks(tree: Tree) -> None:
    reg = registry(tree.base)
    result = await run(reg, "read_file", path="notes.txt")
    assert result["content"] == "line one\nline two\n"
    assert result["meta"] == {"path": "notes.txt", "bytes": 18, "encoding": "utf-8"}
    assert result["summary"] == "read_file notes.txt: 18 bytes"
    assert (await run(reg, "read_file", path="link_in"))["content"] == "alpha\n"
    absolute = await run(reg, "read_file", path=str(tree.base / "sub" / "a.txt"))
    assert absolute["meta"]["path"] == "sub/a.txt"


@pytest.mark.parametrize(("path", "code"), ESCAPES)
async def test_read_file_never_reads_outside(tree: Tree, path: str, code: str) -> None:
    with untouched(tree.outside, tree.evil):
        refused(await run(registry(tree.base), "read_file", path=path), code)


async def test_read_file_refuses_absolute_paths_outside(tree: Tree) -> None:
    reg = registry(tree.base)
    for path, code in _absolute(tree):
        with untouched(tree.outside, tree.evil):
            refused(await run(reg, "read_file", path=path), code)


@pytest.mark.parametrize(
    ("tool_name", "args"),
    [
        ("read_file", {"path": "a\ud800.txt"}),
        ("write_file", {"path": "a\ud800.txt", "content": "x"}),
        ("delete_file", {"path": "a\ud800.txt", "require_confirmation": False}),
        ("move_file", {"source": "notes.txt", "destination": "a\ud800.txt"}),
    ],
)
async def test_a_path_with_a_lone_surrogate_is_a_bad_path(
    tree: Tree, tool_name: str, args: dict[str, Any]
) -> None:
    # Not an encoding problem to fix with another encoding (what the error used to say).
    result = await run(registry(tree.base), tool_name, **args)
    refused(result, "BAD_PATH")
    assert "holds '\\ud800', half of a character (a lone surrogate)" in str(result["error"])
    assert (tree.base / "notes.txt").exists()


async def test_read_file_refuses_special_files_and_directories(tree: Tree) -> None:
    os.mkfifo(tree.base / "pipe.txt")
    reg = registry(tree.base)
    refused(await run(reg, "read_file", path="pipe.txt"), "NOT_A_FILE")  # would block if opened
    refused(await run(reg, "read_file", path="sub"), "NOT_A_FILE")
    try:
        os.mknod(tree.base / "null.txt", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:  # pragma: no cover - not root
        return
    result = await run(reg, "read_file", path="null.txt")
    refused(result, "NOT_A_FILE")
    assert "is a special file" in str(result["error"])


async def test_read_limits_extensions_and_encodings(tree: Tree) -> None:
    (tree.base / "big.txt").write_text("x" * 101)
    (tree.base / "key.pem").write_text("-----")
    (tree.base / "latin.txt").write_bytes("café".encode("latin-1"))
    reg = registry(tree.base, max_read_bytes=100, denied_extensions=["PEM"])
    big = await run(reg, "read_file", path="big.txt")
    refused(big, "TOO_LARGE")
    assert "101 bytes, over the read limit of 100" in str(big["error"])
    refused(await run(reg, "read_file", path="key.pem"), "EXTENSION_DENIED")
    (tree.base / "innocent.txt").symlink_to("key.pem")
    refused(await run(reg, "read_file", path="innocent.txt"), "EXTENSION_DENIED")
    refused(await run(reg, "read_file", path="latin.txt"), "ENCODING")
    assert (await run(reg, "read_file", path="latin.txt", encoding="latin-1"))["content"] == "café"
    refused(await run(reg, "read_file", path="notes.txt", encoding="klingon"), "BAD_ARGUMENTS")
    refused(await run(reg, "read_file", path="missing.txt"), "NOT_FOUND")
    only_md = registry(tree.base, allowed_extensions=["md"])
    refused(await run(only_md, "read_file", path="notes.txt"), "EXTENSION_DENIED")
    assert (await run(only_md, "read_file", path="sub/deep/b.md"))["content"] == "# Bee\n"
    assert (await run(only_md, "read_file", path="sub/deep/../deep/b.md"))["status"] == "ok"


async def test_the_read_limit_holds_for_files_that_grow_or_report_no_size(tree: Tree) -> None:
    # /proc files say they are 0 bytes (/proc/self/pagemap would read hundreds of GB).
    smaps = await run(registry(tree.base, sandbox=False, max_read_bytes=1000), "read_file",
                      path="/proc/self/smaps")  # fmt: skip
    refused(smaps, "TOO_LARGE")
    assert "more than the read limit of 1000 bytes" in str(smaps["error"])
    # A file that grows while it is read (here, by the listener the content streams to).
    grows = tree.base / "log.txt"
    grows.write_bytes(b"x" * 70_000)
    call: ToolCall = {"id": "c", "name": "read_file", "args": {"path": "log.txt"}}

    def grow(text: str, kind: str) -> None:
        with grows.open("ab") as f:
            f.write(b"y" * 70_000)

    result = await registry(tree.base, max_read_bytes=100_000).execute(call, {"on_output": grow})
    refused(result, "TOO_LARGE")


@pytest.mark.parametrize("encoding", ["base64", "rot13", "zlib", "hex", "utf\x008"])
async def test_an_encoding_that_is_not_a_text_encoding_is_refused(
    tree: Tree, encoding: str
) -> None:
    reg = registry(tree.base)
    for result in (
        await run(reg, "read_file", path="notes.txt", encoding=encoding),
        await run(reg, "write_file", path="new.txt", content="x", encoding=encoding),
    ):
        refused(result, "BAD_ARGUMENTS")
        assert f"{encoding!r} is not a text encoding" in str(result["error"]) or (
            "unknown encoding" in str(result["error"])
        )
    assert not (tree.base / "new.txt").exists()


async def test_a_symlink_swapped_in_after_the_check_is_refused_at_use(tree: Tree) -> None:
    box = Sandbox(tree.base)
    target = box.resolve("sub/a.txt")
    written = box.resolve("sub/new.txt")
    # Between the check and the use, "sub" becomes a symlink to the outside directory.
    os.rename(tree.base / "sub", tree.base / "sub-moved")
    (tree.base / "sub").symlink_to(tree.outside)
    (tree.outside / "a.txt").write_text(CANARY)
    with untouched(tree.outside):
        with pytest.raises(SandboxError) as read_error:
            box.read_bytes(target)
        with pytest.raises(SandboxError) as write_error:
            box.write_atomic(written, b"data")
    assert read_error.value.code == write_error.value.code == "PATH_CHANGED"


async def test_without_the_sandbox_paths_may_go_anywhere(tree: Tree) -> None:
    reg = registry(tree.base, sandbox=False)
    assert (await run(reg, "read_file", path="../outside/secret.txt"))["content"] == CANARY
    assert (await run(reg, "read_file", path=str(tree.secret)))["content"] == CANARY


# Writing ---------------------------------------------------------------------------------------


async def test_write_file_creates_replaces_and_keeps_the_mode(tree: Tree) -> None:
    reg = registry(tree.base)
    created = await run(reg, "write_file", path="new/dir/out.txt", content="hi")
    assert created["content"] == "created new/dir/out.txt (2 bytes)"
    assert created["meta"] == {"path": "new/dir/out.txt", "bytes": 2, "created": True}
    os.chmod(tree.base / "notes.txt", 0o600)
    replaced = await run(reg, "write_file", path="notes.txt", content="é", encoding="utf-8")
    assert replaced["content"] == "replaced notes.txt (2 bytes)"
    assert (tree.base / "notes.txt").read_text() == "é"
    assert stat.S_IMODE(os.stat(tree.base / "notes.txt").st_mode) == 0o600
    assert [p.name for p in tree.base.iterdir() if p.name.endswith(".tmp")] == []


async def test_write_through_an_inside_symlink_writes_its_target(tree: Tree) -> None:
    await run(registry(tree.base), "write_file", path="link_in", content="changed\n")
    assert (tree.base / "sub" / "a.txt").read_text() == "changed\n"
    assert (tree.base / "link_in").is_symlink()


@pytest.mark.parametrize(("path", "code"), [*ESCAPES, ("dir_out/new.txt", "OUTSIDE_SANDBOX")])
@pytest.mark.parametrize("tool_name", ["write_file", "append_file"])
async def test_writes_never_reach_outside(tree: Tree, tool_name: str, path: str, code: str) -> None:
    with untouched(tree.outside, tree.evil):
        refused(await run(registry(tree.base), tool_name, path=path, content="pwned"), code)


async def test_writes_refuse_special_files(tree: Tree) -> None:
    os.mkfifo(tree.base / "pipe.txt")
    reg = registry(tree.base)
    refused(await run(reg, "write_file", path="pipe.txt", content="x"), "NOT_A_FILE")
    refused(await run(reg, "append_file", path="sub", content="x"), "NOT_A_FILE")
    # A trailing slash names a folder: it was dropped, and a file named "newdir" made.
    slash = await run(reg, "write_file", path="newdir/", content="x")
    refused(slash, "NOT_A_FILE")
    assert "'newdir/' ends with a slash, so it names a folder" in str(slash["error"])
    refused(await run(reg, "copy_file", source="notes.txt", destination="copied/"), "NOT_A_FILE")
    assert not (tree.base / "newdir").exists() and not (tree.base / "copied").exists()
    refused(
        await run(reg, "write_file", path="notes.txt", content="ü", encoding="ascii"), "ENCODING"
    )
    assert (tree.base / "notes.txt").read_text() == "line one\nline two\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tree: Tree) -> None:
    box = Sandbox(tree.base)
    target = box.resolve("notes.txt")

    def chunks() -> Any:
        yield b"partial "
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        box.write_atomic(target, chunks())
    assert (tree.base / "notes.txt").read_text() == "line one\nline two\n"
    assert sorted(os.listdir(tree.base)) == sorted(
        ["notes.txt", "sub", "link_in", "link_out", "dir_out", "rel_out"]
    )


async def test_append_file_appends_atomically(tree: Tree) -> None:
    reg = registry(tree.base)
    result = await run(reg, "append_file", path="notes.txt", content="line three\n")
    assert result["content"] == "appended 11 bytes to notes.txt (now 29 bytes)"
    assert (tree.base / "notes.txt").read_text() == "line one\nline two\nline three\n"
    await run(reg, "append_file", path="fresh.txt", content="first")
    assert (tree.base / "fresh.txt").read_text() == "first"


async def test_previews_show_a_diff_and_targets(tree: Tree) -> None:
    reg = registry(tree.base)

    def preview(tool_name: str, **args: Any) -> str:
        return reg.preview({"id": "c", "name": tool_name, "args": args})

    assert preview("write_file", path="notes.txt", content="line one\nline 2\n") == (
        "write_file notes.txt (replace):\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n"
        " line one\n-line two\n+line 2"
    )
    assert preview("write_file", path="n.txt", content="x") == (
        "write_file n.txt (new file):\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n"
        "\\ No newline at end of file"
    )
    assert preview("append_file", path="notes.txt", content="three\n").endswith("+three")
    assert preview("append_file", path="a.txt", content="x").startswith("append_file a.txt (new")
    assert preview("write_file", path="../outside/secret.txt", content="x").startswith(
        "write_file: refused: path '../outside/secret.txt' is outside the sandbox"
    )
    (tree.base / "bin.dat").write_bytes(b"\xff\xfe")
    assert preview("write_file", path="bin.dat", content="x") == (
        "write_file bin.dat: replaces the file (no diff: it is not UTF-8 text)"
    )
    assert preview("delete_file", path="notes.txt") == (
        "delete_file: delete notes.txt (file, 18 bytes)"
    )
    assert preview("move_file", source="notes.txt", destination="sub") == (
        "move_file: move notes.txt (file, 18 bytes) to sub (directory)"
    )
    assert preview("copy_file", source="gone.txt", destination="../x") == (
        "copy_file: copy gone.txt (does not exist) to '../x' (refused: destination '../x' is "
        "outside the sandbox directory)"
    )
    long_diff = preview("write_file", path="big.txt", content="x\n" * 500)
    assert long_diff.endswith("more diff lines)")


async def test_the_preview_of_a_large_rewrite_is_made_in_bounded_time(tree: Tree) -> None:
    # difflib matches differing lines in quadratic time, and previews are made before any
    # approval: every other line of 20,000 changed took half a minute.
    reg = registry(tree.base)
    (tree.base / "big.txt").write_text("".join(f"old {i}\n" for i in range(20_000)))
    new = "".join(f"new {i}\n" if i % 2 else f"old {i}\n" for i in range(20_000))
    preview = reg.preview(
        {"id": "c", "name": "write_file", "args": {"path": "big.txt", "content": new}}
    )
    # Past the work limit, the lines between the common head and tail are shown as removed and
    # added (difflib is not run on them): still exact, made in time linear in the lines.
    assert preview.startswith(
        "write_file big.txt (replace):\n--- a/big.txt\n+++ b/big.txt\n@@ -2,19999 +2,19999 @@\n"
        "-old 1\n-old 2\n"
    )
    small = "".join(f"old {i}\n" for i in range(20_000)).replace("old 7000\n", "seven\n")
    exact = reg.preview(
        {"id": "c", "name": "write_file", "args": {"path": "big.txt", "content": small}}
    )
    assert exact.endswith(
        "@@ -6998,7 +6998,7 @@\n old 6997\n old 6998\n old 6999\n-old 7000\n+seven\n"
        " old 7001\n old 7002\n old 7003"
    )


# Listing and info ------------------------------------------------------------------------------


async def test_list_directory_lists_symlinks_without_following_them(tree: Tree) -> None:
    reg = registry(tree.base)
    flat = await run(reg, "list_directory", path=".")
    entries = flat["content"]["entries"]
    assert {e["path"]: e["type"] for e in entries} == {
        "dir_out": "symlink",
        "link_in": "symlink",
        "link_out": "symlink",
        "notes.txt": "file",
        "rel_out": "symlink",
        "sub": "directory",
    }
    deep = await run(reg, "list_directory", path=".", recursive=True, max_depth=2)
    paths = [e["path"] for e in deep["content"]["entries"]]
    assert "sub/a.txt" in paths and "sub/deep" in paths and "sub/deep/b.md" not in paths
    assert not any("secret" in p for p in paths)
    deeper = await run(reg, "list_directory", path="sub", recursive=True, max_depth=5)
    assert [e["path"] for e in deeper["content"]["entries"]] == ["a.txt", "deep", "deep/b.md"]
    assert deeper["summary"] == "list_directory sub: 3 entries"


@pytest.mark.parametrize("path", ["..", "dir_out", "rel_out", str(Path("/")), "notes.txt"])
async def test_list_directory_refuses_outside_and_files(tree: Tree, path: str) -> None:
    with untouched(tree.outside, tree.evil):
        result = await run(registry(tree.base), "list_directory", path=path)
    assert result["status"] == "error"
    assert result["meta"]["code"] in ("OUTSIDE_SANDBOX", "NOT_A_DIRECTORY")


async def test_list_directory_caps_its_entries(tree: Tree) -> None:
    for i in range(1005):
        (tree.base / "sub" / f"f{i:04}.txt").write_text("")
    result = await run(registry(tree.base), "list_directory", path="sub")
    assert len(result["content"]["entries"]) == 1000 and result["content"]["truncated"]
    refused(await run(registry(tree.base), "list_directory", path="nope"), "NOT_FOUND")


async def test_file_info(tree: Tree) -> None:
    reg = registry(tree.base)
    info = (await run(reg, "file_info", path="link_in"))["content"]
    assert info["path"] == "sub/a.txt" and info["type"] == "file" and info["size"] == 6
    assert info["is_symlink"] is True and info["mode"].startswith("0o")
    assert (await run(reg, "file_info", path="sub"))["content"]["type"] == "directory"
    assert (await run(reg, "file_info", path="."))["content"]["is_symlink"] is False
    refused(await run(reg, "file_info", path="missing"), "NOT_FOUND")
    with untouched(tree.outside):
        refused(await run(reg, "file_info", path="link_out"), "OUTSIDE_SANDBOX")


# Deleting, moving, copying ---------------------------------------------------------------------


async def test_delete_file(tree: Tree) -> None:
    reg = registry(tree.base)
    assert (await run(reg, "delete_file", path="notes.txt"))["content"] == "deleted notes.txt"
    assert not (tree.base / "notes.txt").exists()
    refused(await run(reg, "delete_file", path="sub"), "IS_A_DIRECTORY")
    refused(await run(reg, "delete_file", path="notes.txt"), "NOT_FOUND")
    spec = reg["delete_file"]
    assert spec.escalate is not None
    assert spec.escalate({"path": "x"}) == "delete_file asks for confirmation before deleting 'x'"
    assert spec.escalate({"path": "x", "require_confirmation": False}) is None


async def test_deleting_a_symlink_removes_the_link_not_its_target(tree: Tree) -> None:
    with untouched(tree.outside):
        result = await run(registry(tree.base), "delete_file", path="link_out")
    assert result["status"] == "ok" and not (tree.base / "link_out").is_symlink()
    assert tree.secret.read_text() == CANARY


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "dir_out/secret.txt", str(Path("/tmp")), "a\x00"]
)
async def test_delete_file_never_deletes_outside(tree: Tree, path: str) -> None:
    with untouched(tree.outside, tree.evil):
        result = await run(registry(tree.base), "delete_file", path=path)
    assert result["status"] == "error" and tree.secret.exists()


async def test_move_and_copy_inside(tree: Tree) -> None:
    reg = registry(tree.base)
    moved = await run(reg, "move_file", source="notes.txt", destination="sub")
    assert moved["content"] == "moved notes.txt to sub/notes.txt"
    renamed = await run(reg, "move_file", source="sub/notes.txt", destination="n2.txt")
    assert renamed["meta"] == {"source": "sub/notes.txt", "destination": "n2.txt"}
    copied = await run(reg, "copy_file", source="n2.txt", destination="sub/deep")
    assert copied["content"] == "copied n2.txt to sub/deep/n2.txt (18 bytes)"
    assert (tree.base / "sub" / "deep" / "n2.txt").read_text() == "line one\nline two\n"
    dirs = await run(reg, "move_file", source="sub/deep", destination="moved")
    assert dirs["status"] == "ok" and (tree.base / "moved" / "b.md").exists()
    refused(await run(reg, "move_file", source="sub", destination="sub/inner"), "BAD_ARGUMENTS")
    refused(await run(reg, "copy_file", source="n2.txt", destination="n2.txt"), "BAD_ARGUMENTS")
    refused(await run(reg, "copy_file", source="sub", destination="x"), "NOT_A_FILE")
    refused(await run(reg, "move_file", source="ghost", destination="x"), "NOT_FOUND")


@pytest.mark.parametrize(
    ("source", "destination"),
    [
        ("../outside/secret.txt", "stolen.txt"),
        ("link_out", "stolen.txt"),
        ("notes.txt", "../outside/planted.txt"),
        ("notes.txt", "dir_out"),
        ("notes.txt", "rel_out/planted.txt"),
        ("notes.txt", "../base-evil/planted.txt"),
    ],
)
async def test_copy_never_crosses_the_sandbox(tree: Tree, source: str, destination: str) -> None:
    reg = registry(tree.base)
    with untouched(tree.outside, tree.evil):
        result = await run(reg, "copy_file", source=source, destination=destination)
    assert result["status"] == "error"
    assert not (tree.base / "stolen.txt").exists()


@pytest.mark.parametrize(
    ("source", "destination"),
    [
        ("../outside/secret.txt", "stolen.txt"),
        ("dir_out/secret.txt", "stolen.txt"),
        ("notes.txt", "../outside/planted.txt"),
        ("notes.txt", "dir_out"),
        ("notes.txt", "../base-evil"),
    ],
)
async def test_move_never_crosses_the_sandbox(tree: Tree, source: str, destination: str) -> None:
    reg = registry(tree.base)
    with untouched(tree.outside, tree.evil):
        result = await run(reg, "move_file", source=source, destination=destination)
    assert result["status"] == "error"
    assert (tree.base / "notes.txt").exists() and not (tree.base / "stolen.txt").exists()


async def test_moving_a_symlink_moves_the_link(tree: Tree) -> None:
    with untouched(tree.outside):
        result = await run(registry(tree.base), "move_file", source="link_out", destination="l2")
    assert result["status"] == "ok" and (tree.base / "l2").is_symlink()


async def test_arguments_are_checked_before_anything_runs(tree: Tree) -> None:
    reg = registry(tree.base)
    result = await run(reg, "write_file", path="x.txt")
    assert result["meta"]["code"] == "SCHEMA_VIOLATION"
    assert result["meta"]["problems"] == ["arguments: 'content' is a required property"]
    assert not (tree.base / "x.txt").exists()


def test_the_untouched_check_catches_reads_writes_and_new_files(tree: Tree) -> None:
    with pytest.raises(AssertionError, match="was read"), untouched(tree.outside):
        tree.secret.read_bytes()
    with pytest.raises(AssertionError, match="was written"), untouched(tree.outside):
        tree.secret.write_text("x")
    with pytest.raises(AssertionError, match="gained or lost"), untouched(tree.outside):
        (tree.outside / "new").write_text("x")


async def test_read_file_can_stream_its_content(tree: Tree) -> None:
    (tree.base / "long.txt").write_text("é" * 100_000)
    seen: list[str] = []
    reg = registry(tree.base)
    call: ToolCall = {"id": "c", "name": "read_file", "args": {"path": "long.txt"}}

    def listener(text: str, stream: str = "stdout") -> None:
        assert stream == "content"
        seen.append(text)

    result = await reg.execute(call, {"on_output": listener})
    assert len(seen) > 1 and "".join(seen) == result["content"] == "é" * 100_000

    def broken(text: str, stream: str = "stdout") -> None:
        raise RuntimeError("listener bug")

    assert (await reg.execute(call, {"on_output": broken}))["status"] == "ok"
