"""Start and stop the local llama.cpp server from async code.

`LocalModelServer` finds (or downloads) the model, adapts its chat template, runs
`ai_agent.local.serve` as a child process on a free port of 127.0.0.1 (see
`ai_agent.local.serve` for why a child and not in-process), waits until the child says it bound
the port (a file it creates; before that, whatever answers on the port is another program) and
``/health`` answers, and stops the child again. The child's log goes to a private temporary
folder; its last lines are quoted in every start failure, and the folder is removed on stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

from ai_agent.errors import LocalBackendError
from ai_agent.local import serve as serve_script
from ai_agent.local.chat_template import server_chat_template
from ai_agent.local.model_files import QWEN25_CODER_05B, ensure_model
from ai_agent.local.serve import API_KEY_ENV, EXIT_START_FAILED, INSTALL_HINT

__all__ = ["LocalModelServer"]

_LOG_TAIL_LINES = 20
_BIND_FAILED = "couldn't bind"
_PORT_ATTEMPTS = 3
_STOP_GRACE_SECONDS = 10.0
_LOG_FILE = "server.log"
_TEMPLATE_FILE = "chat_template.jinja"
_READY_FILE = "ready"


class LocalModelServer:
    """A llama.cpp server for the small local model, on 127.0.0.1, for the life of a block.

    Use it as an async context manager, or call `start` and `stop`::

        async with LocalModelServer(n_threads=1) as server:
            model = ChatOpenAI(
                base_url=server.base_url,
                api_key=server.api_key,
                model=server.model_id,
                use_responses_api=False,
            )

    Args:
        model_path: A GGUF file; None runs `ensure_model` at start (which
            honours ``AI_AGENT_MODEL_PATH`` and downloads the default model once).
        n_ctx: Context length in tokens.
        n_threads: CPU threads the server may use.
        seed: Sampling seed, fixed so runs repeat.
        startup_timeout: Seconds to wait for ``/health`` after the process starts.
        chat_template: A Jinja chat template to use as is; None adapts the model's own with
            `adapt_chat_template`.
        model_id: The model name the server answers to; defaults to the default model's id, or
            the file's stem for another ``model_path``.
        api_key: The bearer key the server requires; None makes a random one. Any web page the
            user's browser opens can reach 127.0.0.1, so the server is never left open.
        cache_dir: Passed to `ensure_model`.
        progress: Passed to `ensure_model`: told about a first download.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int = 2,
        seed: int = 42,
        startup_timeout: float = 120.0,
        chat_template: str | None = None,
        model_id: str | None = None,
        api_key: str | None = None,
        cache_dir: Path | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self._model_path = model_path
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._seed = seed
        self._startup_timeout = startup_timeout
        self._chat_template = chat_template
        self._model_id = model_id or (
            model_path.stem if model_path is not None else QWEN25_CODER_05B.model_id
        )
        self._api_key = api_key or secrets.token_urlsafe(24)
        self._cache_dir = cache_dir
        self._progress = progress
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._port: int | None = None

    @property
    def model_id(self) -> str:
        """The model name to send in requests."""
        return self._model_id

    @property
    def api_key(self) -> str:
        """The bearer key the server requires."""
        return self._api_key

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ``http://127.0.0.1:<port>/v1``.

        Raises:
            LocalBackendError: The server is not running.
        """
        if self._port is None:
            raise LocalBackendError(
                "the local model server is not running; call start() or use `async with`"
            )
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs, else None."""
        return self._process.pid if self._process is not None else None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start the server and wait until it answers ``/health``; a no-op if it runs already.

        Raises:
            LocalBackendError: xllamacpp is missing, the model cannot be prepared, or the server
                exited or did not become ready in time (the message quotes its last log lines).
        """
        if self._process is not None:
            return
        if importlib.util.find_spec("xllamacpp") is None:
            raise LocalBackendError(
                f"the local backend needs the 'xllamacpp' package: {INSTALL_HINT}"
            )
        model_path = self._model_path
        if model_path is None:
            model_path = await asyncio.to_thread(
                ensure_model, self._cache_dir, progress=self._progress
            )
        template = self._chat_template
        if template is None:
            template = await asyncio.to_thread(server_chat_template, model_path)
        _check_template(template)
        self._workdir = workdir = Path(tempfile.mkdtemp(prefix="ai-agent-local-"))
        try:
            (workdir / _TEMPLATE_FILE).write_text(template, encoding="utf-8")
            await self._start_on_free_port(model_path, workdir)
        except BaseException:
            # Cancelled or failed: leave no process and no folder behind.
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop the server and remove its temporary folder; safe to call more than once."""
        await self._stop_process()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    async def _stop_process(self) -> None:
        process, self._process, self._port = self._process, None, None
        if process is not None:
            await _terminate(process)

    async def _start_on_free_port(self, model_path: Path, workdir: Path) -> None:
        # The port is found free and then handed to the child, so another program can take it in
        # between; llama.cpp then fails at once with "couldn't bind", and a new port is tried.
        for _attempt in range(_PORT_ATTEMPTS):
            port = _free_port()
            self._process = self._spawn(model_path, workdir, port)
            self._port = port
            try:
                await self._wait_until_ready(self._process, port, workdir)
                return
            except _BindFailedError:
                await self._stop_process()
        raise LocalBackendError(
            f"the local model server could not bind a port on 127.0.0.1 after {_PORT_ATTEMPTS} "
            f"tries; last log lines:\n{_log_tail(workdir)}"
        )

    def _spawn(self, model_path: Path, workdir: Path, port: int) -> subprocess.Popen[bytes]:
        # Ready file of this attempt's own: one left by an earlier attempt must not count.
        (workdir / _READY_FILE).unlink(missing_ok=True)
        # Each value joined to its option with "=": a path or model id that starts with "-"
        # would otherwise be taken for an option by the child's argument parser.
        options = {
            "--model": model_path,
            "--port": port,
            "--model-id": self._model_id,
            "--ctx": self._n_ctx,
            "--threads": self._n_threads,
            "--seed": self._seed,
            "--chat-template-file": workdir / _TEMPLATE_FILE,
            "--ready-file": workdir / _READY_FILE,
            "--workdir": workdir,  # the child removes it if this process dies
        }
        command = [
            sys.executable,
            "-P",
            serve_script.__file__,
            *(f"{name}={value}" for name, value in options.items()),
            "--exit-on-stdin-eof",
        ]
        env = {**os.environ, API_KEY_ENV: self._api_key}
        with (workdir / _LOG_FILE).open("ab") as log:
            # stdin stays open as a lifeline: the child exits when it reads EOF, which also
            # happens when this process dies. A new session keeps a terminal's Ctrl-C for us.
            return subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )

    async def _wait_until_ready(
        self, process: subprocess.Popen[bytes], port: int, workdir: Path
    ) -> None:
        deadline = time.monotonic() + self._startup_timeout
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                code = process.poll()
                if code is not None:
                    tail = _log_tail(workdir)
                    if code == EXIT_START_FAILED and _BIND_FAILED in tail:
                        raise _BindFailedError
                    raise LocalBackendError(
                        f"the local model server exited with code {code} before it was ready. "
                        f"Last log lines:\n{tail}"
                    )
                # Until the child says it bound the port, whatever answers there is another
                # program (the port was free when picked, and can be taken since): ask it
                # nothing, and never take it for ours.
                if (workdir / _READY_FILE).exists():
                    with contextlib.suppress(httpx.TransportError):
                        response = await client.get(f"http://127.0.0.1:{port}/health")
                        if response.status_code == 200:
                            return
                if time.monotonic() > deadline:
                    raise LocalBackendError(
                        f"the local model server did not report ready within "
                        f"{self._startup_timeout:g} s; raise startup_timeout on a slow machine. "
                        f"Last log lines:\n{_log_tail(workdir)}"
                    )
                await asyncio.sleep(0.1)


class _BindFailedError(Exception):
    """The child could not bind its port; the caller tries another one."""


def _check_template(template: str) -> None:
    """Refuse a template the child cannot be handed: it goes to a file as UTF-8."""
    try:
        template.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalBackendError(
            f"the chat_template passed to LocalModelServer is not valid text ({exc}); "
            "pass the template as it was read from its file"
        ) from exc


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _log_tail(workdir: Path) -> str:
    try:
        with (workdir / _LOG_FILE).open("rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 16_384))
            lines = log.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-_LOG_TAIL_LINES:]) or "(empty log)"


async def _terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, wait (without a thread) up to the grace period, then SIGKILL."""
    if process.poll() is None:
        process.terminate()
    deadline = time.monotonic() + _STOP_GRACE_SECONDS
    # Polled rather than process.wait() in a worker thread: stop() must leave no thread behind,
    # and a Popen (unlike an asyncio subprocess) is not tied to the loop that started it.
    while process.poll() is None and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    if process.poll() is None:
        process.kill()
        process.wait()
    if process.stdin is not None:
        process.stdin.close()
