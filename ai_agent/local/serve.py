"""The child process that hosts llama.cpp: ``python -m ai_agent.local serve``.

`LocalModelServer` runs this in its own process rather than calling
``xllamacpp.Server`` in the caller's process, because:

* the model load (about 2 s) and llama.cpp's logging then stay out of the caller's event loop and
  terminal; the log goes to a file the parent reads when something fails;
* stopping is a signal and a wait, and a crash in native code cannot take the caller down;
* with ``--exit-on-stdin-eof`` the child notices its parent's death (the pipe closes, even on
  SIGKILL) and exits, so no orphan keeps a port and 500 MB of memory; given ``--workdir``, it
  removes the parent's temporary folder too, which a killed parent cannot.

Measured on 2 cores: the child answers ``/health`` about 2.7 s after spawn on an idle machine
(3.5-7 s under a load average of 5; the in-process load alone is about 2.1 s), and it is gone
0.1-0.5 s after SIGTERM.

This is the only module that imports ``xllamacpp``, and it imports nothing from ``ai_agent``:
the parent runs it as a script (``python -P <this file>``), because importing the ``ai_agent``
package (LangGraph, LangChain) would add about 3 s to every start for nothing the child uses.
``-P`` keeps this folder off ``sys.path`` so its sibling modules cannot shadow anything.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_MODEL_ID",
    "EXIT_NO_XLLAMACPP",
    "EXIT_START_FAILED",
    "INSTALL_HINT",
    "ServeOptions",
    "main",
    "serve",
]

INSTALL_HINT = "pip install 'ai-agent[local]' (or `uv sync --extra local`)"
# The key travels in the environment, not argv, so it does not show in process listings.
API_KEY_ENV = "AI_AGENT_LOCAL_API_KEY"
EXIT_NO_XLLAMACPP = 3
EXIT_START_FAILED = 4
# Kept equal to model_files.QWEN25_CODER_05B.model_id (a test checks); not imported, see above.
DEFAULT_MODEL_ID = "qwen2.5-coder-0.5b-instruct-q4_k_m"


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What the child needs to start llama.cpp's server.

    Attributes:
        model: The GGUF file.
        port: The TCP port on 127.0.0.1.
        model_id: The name the server answers to.
        n_ctx: Context length in tokens.
        n_threads: CPU threads for generation and prompt processing.
        seed: Sampling seed, fixed so runs repeat.
        chat_template_file: A Jinja template to use instead of the model's own.
        api_key: Bearer key the server requires; None leaves it open.
        exit_on_stdin_eof: Exit when standard input closes (the parent died or let go).
        ready_file: A file to create once the model is loaded and the port is bound: only then
            is whatever answers on the port this server.
        workdir: The folder the parent made for this server (its template, log and ready
            file), removed when standard input closes: the parent died, and SIGKILL runs none
            of its own clean-up. A parent that stops the server removes it itself.
    """

    model: Path
    port: int
    model_id: str = DEFAULT_MODEL_ID
    n_ctx: int = 4096
    n_threads: int = 2
    seed: int = 42
    chat_template_file: Path | None = None
    api_key: str | None = None
    exit_on_stdin_eof: bool = False
    ready_file: Path | None = None
    workdir: Path | None = None


def serve(options: ServeOptions) -> int:
    """Run llama.cpp's HTTP server until SIGTERM, SIGINT or (optionally) stdin EOF.

    Args:
        options: Where and how to serve.

    Returns:
        0 after a clean stop, `EXIT_NO_XLLAMACPP` or `EXIT_START_FAILED` otherwise;
        the reason is on stderr.
    """
    try:
        import xllamacpp
    except ImportError:
        print(f"ai-agent: xllamacpp is not installed: {INSTALL_HINT}", file=sys.stderr)
        return EXIT_NO_XLLAMACPP
    try:
        server = xllamacpp.Server(_params(xllamacpp, options))
    except RuntimeError as exc:
        # llama.cpp has already logged the cause (bad model file, port taken) just above.
        print(f"ai-agent: the llama.cpp server did not start: {exc}", file=sys.stderr)
        return EXIT_START_FAILED
    print(f"ai-agent: serving {options.model_id} on port {options.port}", file=sys.stderr)
    sys.stderr.flush()
    if options.ready_file is not None:
        # xllamacpp.Server returns once the port is bound, so no other program holds it now.
        options.ready_file.touch()
    # Handlers only once the server runs: a signal during the load just ends the process, and
    # a failed start leaves the caller's handlers as they were.
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    orphaned = threading.Event()
    if options.exit_on_stdin_eof:
        threading.Thread(target=_set_on_eof, args=(stop, orphaned), daemon=True).start()
    # A timed wait keeps the main thread able to run the signal handler promptly.
    while not stop.wait(0.5):
        pass
    # Dropping the server stops its HTTP and worker threads (about 0.25 s); then exit normally.
    del server
    if orphaned.is_set() and options.workdir is not None:
        shutil.rmtree(options.workdir, ignore_errors=True)
    return 0


def _set_on_eof(stop: threading.Event, orphaned: threading.Event) -> None:
    # os.read on the raw descriptor, not sys.stdin.buffer: a daemon thread blocked inside the
    # buffered reader holds its lock, and interpreter shutdown then aborts the process.
    while os.read(sys.stdin.fileno(), 4096):
        pass
    orphaned.set()  # before stop: the main thread reads it once stop is set
    stop.set()


def _params(xllamacpp: Any, options: ServeOptions) -> Any:
    params = xllamacpp.CommonParams()
    params.model.path = str(options.model)
    params.model_alias = {options.model_id}
    params.hostnames = ["127.0.0.1"]
    params.port = options.port
    params.n_ctx = options.n_ctx
    # One slot: the whole context for each request; requests queue instead of sharing it.
    params.n_parallel = 1
    params.cpuparams.n_threads = options.n_threads
    params.cpuparams_batch.n_threads = options.n_threads
    params.sampling.seed = options.seed
    params.use_jinja = True
    params.offline = True
    # Nothing but the API: no web UI, no slot inspection endpoint.
    params.ui = False
    params.endpoint_slots = False
    if options.api_key:
        params.api_keys = [options.api_key]
    if options.chat_template_file is not None:
        params.chat_template = options.chat_template_file.read_text(encoding="utf-8")
    return params


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the ``serve`` arguments and run `serve`.

    Args:
        argv: The arguments after ``serve``; None reads ``sys.argv``.

    Returns:
        The exit code of `serve`, or 2 for bad usage.
    """
    args = _parser().parse_args(argv)
    return serve(
        ServeOptions(
            model=args.model,
            port=args.port,
            model_id=args.model_id,
            n_ctx=args.ctx,
            n_threads=args.threads,
            seed=args.seed,
            chat_template_file=args.chat_template_file,
            api_key=os.environ.get(API_KEY_ENV) or None,
            exit_on_stdin_eof=args.exit_on_stdin_eof,
            ready_file=args.ready_file,
            workdir=args.workdir,
        )
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ai_agent.local serve",
        description=f"Run llama.cpp's OpenAI-compatible server on 127.0.0.1. "
        f"The API key, if any, is read from ${API_KEY_ENV}.",
    )
    parser.add_argument("--model", type=Path, required=True, help="the GGUF file")
    parser.add_argument("--port", type=int, required=True, help="TCP port on 127.0.0.1")
    parser.add_argument("--model-id", default=DEFAULT_MODEL_ID, help="model name to serve")
    parser.add_argument("--ctx", type=int, default=4096, help="context length in tokens")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads")
    parser.add_argument("--seed", type=int, default=42, help="sampling seed")
    parser.add_argument("--chat-template-file", type=Path, help="Jinja chat template to use")
    parser.add_argument(
        "--ready-file", type=Path, help="file to create once the server listens on the port"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="the parent's folder for this server, removed when standard input closes",
    )
    parser.add_argument(
        "--exit-on-stdin-eof",
        action="store_true",
        help="exit when standard input closes (the parent process died)",
    )
    return parser


if __name__ == "__main__":
    # Run as a script (``python -P .../serve.py``) by LocalModelServer: see the module docstring.
    sys.exit(main())
