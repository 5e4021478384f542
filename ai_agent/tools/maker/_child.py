"""The runner inside the sandbox: limits itself, then loads and calls one generated tool.

It runs as ``python -I -S -B -X utf8 -c <this file> FD`` under bubblewrap, with the standard
library only (no site-packages, no ``ai_agent``). ``FD`` is its end of a socket pair to the
engine; everything goes over it as frames (4-byte big-endian length, then UTF-8 JSON):

1. the engine sends ``{"code", "filename", "args", "secrets", "rlimits", "seccomp"}``;
2. the runner sets the rlimits (soft = hard, so they cannot be raised again), installs the
   seccomp filter, and only then compiles and runs the tool's module;
3. ``self.http.request(...)`` sends ``{"op": "http", ...}`` and waits for the broker's answer;
4. the runner sends ``{"op": "result", "value"}`` or ``{"op": "error", "type", "message"}``.

Nothing here is trusted by the engine: once the tool's code runs it shares this process and can
change anything in it. The engine checks every frame, and the kernel enforces the limits, the
filter and the namespaces whatever happens here.

The seccomp filter (x86_64) kills the whole process (SIGSYS) on any system call that starts a
program (execve, execveat), a process or thread (fork, vfork, clone, clone3), opens a socket
(socket, socketpair), or reaches the kernel's larger attack surface (ptrace, mount and the new
mount API, unshare, setns, bpf, keyctl, io_uring, userfaultfd, perf_event_open, kexec and module
loading, process_vm_*, SysV IPC and POSIX message queues, memfd, personality...). It also kills
a call that would make a set-user-ID or set-group-ID file or directory (chmod, open, creat, mkdir
and their relatives with those mode bits; ``openat2``, whose mode the filter cannot read): the
sandbox's user is the engine's user outside, so such a file in a writable path would let anyone
who can run it act as the engine's user. 32-bit and x32 system calls are killed too. Everything
else is allowed: the namespaces and mounts decide what the remaining calls can reach.

This file is excluded from coverage measurement: it only ever runs inside the sandbox, under
``python -I -S``, where coverage cannot be imported; the confinement tests exercise it.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import sys
import types
from typing import Any

AUDIT_ARCH_X86_64 = 0xC000003E
X32_BIT = 0x40000000
RET_KILL_PROCESS = 0x80000000
RET_ALLOW = 0x7FFF0000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# x86_64 system call numbers (asm/unistd_64.h), grouped by what they would let a tool do.
DENIED_GROUPS = (
    (59, 322),  # execve, execveat
    (57, 58, 56, 435),  # fork, vfork, clone, clone3
    (41, 53),  # socket, socketpair
    (101, 310, 311, 312, 438, 434),  # ptrace, process_vm_readv/writev, kcmp, pidfd_getfd/open
    (165, 166, 155, 161, 272, 308),  # mount, umount2, pivot_root, chroot, unshare, setns
    (428, 429, 430, 431, 432, 433, 442),  # open_tree, move_mount, fsopen/config/mount/pick...
    (321, 250, 248, 249, 298, 323),  # bpf, keyctl, add/request_key, perf_event_open, uffd
    (425, 426, 427),  # io_uring_setup, io_uring_enter, io_uring_register
    (246, 320, 175, 313, 176),  # kexec_load, kexec_file_load, init/finit/delete_module
    (303, 304, 133, 259),  # name_to_handle_at, open_by_handle_at, mknod, mknodat
    (29, 30, 31, 64, 68, 240),  # shmget, shmat, shmctl, semget, msgget, mq_open
    (319, 447, 135, 154, 172, 173),  # memfd_create/secret, personality, modify_ldt, iopl/ioperm
    (163, 167, 168, 169, 170, 171),  # acct, swapon, swapoff, reboot, sethostname/domainname
    (164, 227, 159, 179, 103, 153, 134),  # settimeofday, clock_settime, adjtimex, quotactl...
    (300, 237, 238, 256, 279, 440),  # fanotify_init, mbind, set_mempolicy, migrate/move_pages...
    (437,),  # openat2 (its mode sits in a struct the filter cannot read)
)
DENIED = tuple(number for group in DENIED_GROUPS for number in group)
# System call -> the index of its mode argument: killed when the mode has S_ISUID or S_ISGID.
MODE_ARGUMENT = {
    2: 2,  # open(path, flags, mode)
    85: 1,  # creat(path, mode)
    257: 3,  # openat(dirfd, path, flags, mode)
    90: 1,  # chmod(path, mode)
    91: 1,  # fchmod(fd, mode)
    268: 2,  # fchmodat(dirfd, path, mode)
    452: 2,  # fchmodat2(dirfd, path, mode, flags)
    83: 1,  # mkdir(path, mode)
    258: 2,  # mkdirat(dirfd, path, mode)
}
SET_ID_BITS = 0o6000
FD = int(sys.argv[1])


def _exact(count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = os.read(FD, count - len(data))
        if not chunk:
            raise EOFError("the engine closed the channel")
        data += chunk
    return data


def recv() -> Any:
    (length,) = struct.unpack(">I", _exact(4))
    return json.loads(_exact(length))


def send(message: dict[str, Any]) -> None:
    data = json.dumps(message, default=str, ensure_ascii=False).encode("utf-8", "replace")
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(FD, view) :]


def _instruction(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def seccomp_program() -> tuple[bytes, int]:
    """The classic-BPF filter: architecture, then denied numbers, then mode arguments.

    Jump offsets count instructions after the jump; ``allow`` and ``kill`` are the last two.
    """
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    # (code, k, jt, jf) where a jump target is an offset, or "allow" / "kill".
    steps: list[tuple[int, int, int | str, int | str]] = [
        (ld, 4, 0, 0),  # seccomp_data.arch
        (jeq, AUDIT_ARCH_X86_64, 0, "kill"),
        (ld, 0, 0, 0),  # seccomp_data.nr
        (jge, X32_BIT, "kill", 0),
    ]
    steps += [(jeq, number, "kill", 0) for number in DENIED]
    for number, index in MODE_ARGUMENT.items():
        steps += [
            (jeq, number, 0, 2),  # another call: skip the next two
            (ld, 16 + 8 * index, 0, 0),  # low 32 bits of seccomp_data.args[index]
            (jset, SET_ID_BITS, "kill", "allow"),
        ]
    allow, kill = len(steps), len(steps) + 1

    def offset(target: int | str, here: int) -> int:
        if isinstance(target, int):
            return target
        return (allow if target == "allow" else kill) - here - 1

    prog = [
        _instruction(code, offset(jt, here), offset(jf, here), k)
        for here, (code, k, jt, jf) in enumerate(steps)
    ]
    prog.append(_instruction(ret, 0, 0, RET_ALLOW))
    prog.append(_instruction(ret, 0, 0, RET_KILL_PROCESS))
    return b"".join(prog), len(prog)


def install_seccomp() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    blob, count = seccomp_program()
    buffer = ctypes.create_string_buffer(blob, len(blob))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    program = Program(count, ctypes.addressof(buffer))
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def set_limits(limits: dict[str, list[int]]) -> None:
    import resource

    for name, (soft, hard) in limits.items():
        resource.setrlimit(getattr(resource, name), (soft, hard))


class Http:
    """HTTP through the engine's broker; the engine decides which hosts are reachable."""

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str] | None = None,
        body: str | None = None,
        follow_redirects: bool = True,
    ) -> Any:
        send(
            {
                "op": "http",
                "method": str(method).upper(),
                "url": str(url),
                "headers": dict(headers or {}),
                "body": body,
                "follow_redirects": bool(follow_redirects),
            }
        )
        reply = recv()
        if not reply.get("ok"):
            raise OSError(reply.get("error") or "the request failed")
        return reply["response"]

    def get(self, url: str, **options: Any) -> Any:
        return self.request("GET", url, **options)

    def post(self, url: str, body: str | None = None, **options: Any) -> Any:
        return self.request("POST", url, body=body, **options)


def main() -> int:
    setup = recv()
    try:
        set_limits(setup["rlimits"])
        if setup["seccomp"]:
            install_seccomp()
    except Exception as exc:
        send({"op": "setup_failed", "message": f"{type(exc).__name__}: {exc}"})
        return 3
    # The code runs as a real module, registered where Python looks modules up: dataclasses,
    # enums, pickling and typing find a class's module through sys.modules[cls.__module__].
    module = types.ModuleType("generated_tool")
    module.__file__ = setup["filename"]
    sys.modules[module.__name__] = module
    try:
        # Running the tool's code is this process's whole purpose: the rlimits, the seccomp
        # filter and bwrap's namespaces are already in place, and they are the boundary.
        exec(compile(setup["code"], setup["filename"], "exec"), module.__dict__)  # noqa: S102
        tool = module.GeneratedTool()
        for attr, value in (
            ("http", Http()),
            ("secrets", {k: os.environ.get(k, "") for k in setup["secrets"]}),
            ("workspace", os.getcwd()),
        ):
            # A tool with __slots__ or read-only properties simply goes without that helper.
            with contextlib.suppress(Exception):
                setattr(tool, attr, value)
        value = tool.execute(**setup["args"])
    except BaseException as exc:
        error = {"op": "error", "type": type(exc).__name__, "message": str(exc)[:2000]}
        path = getattr(exc, "filename", None)  # what a failed file operation reached for
        if isinstance(path, str):
            error["path"] = path[:4096]
        send(error)
        return 1
    try:
        send({"op": "result", "value": value})
    except (TypeError, ValueError, RecursionError) as exc:
        send({"op": "error", "type": "TypeError", "message": f"the result is not JSON: {exc}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
