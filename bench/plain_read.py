"""``python -m bench.plain_read KIND PATH``: read a plain graph's latest state, freshly started.

Prints the timings (seconds) as JSON. A fresh interpreter, as a resume is (see ``bench.resume``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.plain_graphs import read_latest

if __name__ == "__main__":
    print(json.dumps(read_latest("messages", sys.argv[1], Path(sys.argv[2]))))
