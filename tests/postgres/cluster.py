"""A private PostgreSQL server for the tests: its own cluster in a temporary directory.

``initdb`` and ``pg_ctl`` refuse to run as root, so as root they run as the unprivileged
``postgres`` user that Debian's ``postgresql`` package creates (through ``runuser``). The server
listens on 127.0.0.1 only, on a free port, with its socket in the cluster's directory; TCP logins
need a password (scram-sha-256), so every test connects the way a real deployment does, with a
password in the URL, and that password is a canary the tests look for in every output.

If PostgreSQL is not installed or does not start, :func:`start_cluster` raises ClusterError
saying how to install it: CI installs it (``.ci/setup``), so its absence is a failure, not a skip.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import sqlite3
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg

__all__ = ["Cluster", "ClusterError", "execute_behind", "find_bindir", "start_cluster"]

INSTALL_HINT = (
    "install it with `apt-get install -y postgresql` (CI does this in .ci/setup), "
    "or put its bin directory (initdb, pg_ctl) on PATH"
)


class ClusterError(RuntimeError):
    """PostgreSQL is missing or would not start."""


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl`` (newest Debian version first)."""
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if debian:
        return debian[-1].parent
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    raise ClusterError(f"PostgreSQL is not installed (no initdb found); {INSTALL_HINT}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running private server."""

    bindir: Path
    root: Path
    port: int
    password: str
    user: str = "postgres"
    run_as: str | None = None

    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        """A URL to one database on this server (with the canary password by default)."""
        secret = self.password if password is None else password
        return f"postgresql://{self.user}:{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create a database; return its URL."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # test names only, no user input
        return self.url(name)

    def _command(self, *args: str) -> list[str]:
        prefix = ["runuser", "-u", self.run_as, "--"] if self.run_as else []
        return [*prefix, *args]

    def _run(self, *args: str) -> None:
        proc = subprocess.run(
            self._command(*args), capture_output=True, text=True, timeout=120, check=False
        )
        if proc.returncode != 0:
            raise ClusterError(
                f"{Path(args[0]).name} failed ({proc.returncode}): {proc.stderr.strip()}"
                f"{self._log_tail()}"
            )

    def _log_tail(self) -> str:
        log = self.root / "server.log"
        return f"\nserver log:\n{log.read_text()[-2000:]}" if log.exists() else ""

    def start(self) -> None:
        """initdb, then pg_ctl start (waits until the server accepts connections)."""
        pwfile = self.root / "pw"
        pwfile.write_text(self.password)
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.root / "data"),
            "-U",
            self.user,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
        )
        pwfile.unlink()
        options = (
            f"-k {self.root} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.root / "data"),
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "-o",
            options,
            "start",
        )

    def stop(self) -> None:
        """Stop the server and delete its files."""
        try:
            self._run(
                str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "fast", "stop"
            )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_cluster() -> Cluster:
    """Start a private server, as the ``postgres`` user when this process is root."""
    bindir = find_bindir()
    run_as = None
    root = Path(tempfile.mkdtemp(prefix="ai-agent-pg-"))
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root, ignore_errors=True)
            raise ClusterError(
                "the tests run as root and PostgreSQL refuses to; there is no 'postgres' user to "
                f"run it as: {INSTALL_HINT} (the package creates that user)"
            ) from None
        os.chown(root, account.pw_uid, account.pw_gid)
        run_as = "postgres"
    cluster = Cluster(
        bindir=bindir,
        root=root,
        port=_free_port(),
        password=f"canary-{secrets.token_hex(8)}",
        run_as=run_as,
    )
    try:
        cluster.start()
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return cluster


def execute_behind(where: str | Path, sql: str) -> None:
    """Change a run store's database (a SQLite file or a PostgreSQL URL) behind its back, as a
    hand or another program would.
    """
    if isinstance(where, Path):
        with sqlite3.connect(where) as conn:
            conn.execute(sql)
        return
    with psycopg.connect(where, autocommit=True) as conn:
        conn.execute(sql.encode())
