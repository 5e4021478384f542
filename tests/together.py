"""Child processes that start their work at the same moment (races between real processes)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

__all__ = ["READY", "run_together"]

# What a child script does before its work: say it is ready (imports done), wait for the word.
READY = 'import sys\nprint("ready", flush=True)\nsys.stdin.readline()\n'


def run_together(script: str, argvs: Sequence[Sequence[str]]) -> list[str]:
    """Run ``python -c READY + script ARGS`` once per argument list, released together.

    Each child is started, waited for until it says it is ready, then all are told to go at
    once. Returns what each printed (stdout and stderr, stripped); each must exit with 0.
    """
    children = [
        subprocess.Popen(
            [sys.executable, "-c", READY + script, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for argv in argvs
    ]
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    outputs = [child.communicate(timeout=300)[0].strip() for child in children]
    assert [c.returncode for c in children] == [0] * len(children), outputs
    return outputs
