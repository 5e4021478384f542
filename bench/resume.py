"""Reading the latest state of a long thread, in a fresh interpreter, as a resume does.

A resume is a new process (a CLI call, a worker picking up a plan) opening the database and
reading the thread's newest checkpoint. Measured in the benchmark's own process instead, the read
would also pay for the garbage the earlier sections left behind: a full collection of that heap
landing in the middle of a read (seen at 90 ms, against reads of about 10 ms).

``python -m bench.resume KIND PATH`` prints ``{"timings": [...], "messages": N, "gc_pauses":
[...]}`` as JSON (`bench.pipeline.read_latest`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from bench.pipeline import read_latest

if __name__ == "__main__":
    timings, messages, pauses = asyncio.run(read_latest(sys.argv[1], Path(sys.argv[2])))
    print(json.dumps({"timings": timings, "messages": messages, "gc_pauses": pauses}))
