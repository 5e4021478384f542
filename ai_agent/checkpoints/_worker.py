"""The saver's one worker thread: every SQLite call runs here, in the order it was asked for.

Consecutive write jobs (a task's writes, then the checkpoint that follows them) are taken off the
queue together and committed in one transaction: a "group commit" that needs no waiting, since
LangGraph queues a step's writes and its checkpoint within microseconds of each other while the
worker is still picking up the first. Each job keeps its own future. If a group fails, its jobs
are run again one by one, so a job fails only for its own reason.
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

__all__ = ["Worker"]

_TRUNCATE_WAIT_MS = 250
"""How long the WAL thread waits for the write lock to cut the log back (``WalCheckpointer``)."""

Group = Callable[[list[Callable[[], Any]]], list[tuple[bool, Any]]]


@dataclass(slots=True)
class _Job:
    fn: Callable[[], Any]
    future: Future[Any]
    write: bool


class Worker:
    """A thread running jobs in order; write jobs queued back to back share one transaction.

    Args:
        name: The thread's name.
        group: Runs write jobs in one transaction, returning ``(ok, result or exception)`` per job.
    """

    def __init__(self, name: str, group: Group) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._group = group
        self.lock = threading.Lock()
        """Held while the database is in use, by the worker or by a caller's fast path."""
        self._count_lock = threading.Lock()
        self._outstanding = 0
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    @property
    def idle(self) -> bool:
        """No job is queued or running (only meaningful while holding ``lock``)."""
        return self._outstanding == 0

    def _done(self, count: int) -> None:
        with self._count_lock:
            self._outstanding -= count

    @property
    def ident(self) -> int | None:
        """The thread's identifier."""
        return self._thread.ident

    @property
    def thread(self) -> threading.Thread:
        """The thread."""
        return self._thread

    def submit(self, fn: Callable[[], Any], *, write: bool = False) -> Future[Any]:
        """Queue ``fn``; its future resolves once it ran (and, for a write, committed)."""
        future: Future[Any] = Future()
        with self._count_lock:
            self._outstanding += 1
        self._jobs.put(_Job(fn, future, write))
        return future

    def stop(self) -> None:
        """Finish the queued jobs and end the thread."""
        self._jobs.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _loop(self) -> None:
        held: _Job | None = None
        while True:
            job = held if held is not None else self._jobs.get()
            held = None
            if job is None:
                # The group is normally a bound method of the saver, which holds this worker:
                # dropped, a closed saver (and the state it cached) is freed when its last
                # reference goes, not kept until the next full garbage collection.
                del self._group
                return
            if not job.write:
                with self.lock:
                    _run(job)
                self._done(1)
                continue
            batch = [job]
            while True:
                try:
                    following = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if following is not None and following.write:
                    batch.append(following)
                    continue
                if following is None:
                    self._jobs.put(None)  # stop after this group
                else:
                    held = following
                break
            with self.lock:
                self._finish(batch)
            self._done(len(batch))

    def _finish(self, batch: list[_Job]) -> None:
        live = [job for job in batch if job.future.set_running_or_notify_cancel()]
        try:
            outcomes = self._group([job.fn for job in live])
        except BaseException as exc:  # pragma: no cover - the group catches what its jobs raise
            outcomes = [(False, exc)] * len(live)
        for job, (ok, value) in zip(live, outcomes, strict=True):
            if ok:
                job.future.set_result(value)
            else:
                job.future.set_exception(value)


def _run(job: _Job) -> None:
    if not job.future.set_running_or_notify_cancel():
        return
    try:
        result = job.fn()
    except BaseException as exc:
        job.future.set_exception(exc)
    else:
        job.future.set_result(result)


class WalCheckpointer:
    """Copies the WAL back into the database file on its own thread and connection.

    SQLite normally does this inside whichever ``COMMIT`` crosses 1,000 WAL pages, so every
    hundred-and-some steps one step pays for copying the pages and two fsyncs. The saver turns
    that off for its connection and asks this thread instead, every ``every`` commits.

    The log is also cut back to nothing each time (``TRUNCATE``): a reset log keeps its largest
    size on disk otherwise, so what a user saw in the directory depended on when a checkpoint
    happened to run (a plain graph's files measured 19.6 to 39.8 times its payload in three
    runs of the same code). Every 32 commits the log stays at a few hundred kilobytes.

    Args:
        path: The database file.
        every: Commits between two checkpoints.
    """

    def __init__(self, path: str, every: int = 32) -> None:
        self.path = path
        self.every = every
        self._commits = 0
        self.lock = threading.Lock()
        """Held while this thread checkpoints (a reclaim takes it: two checkpoints collide)."""
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="ai-agent-wal", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """Count a commit; wake the thread every ``every`` commits."""
        self._commits += 1
        if self._commits >= self.every:
            self._commits = 0
            self._wake.set()

    def stop(self) -> None:
        """End the thread (after the checkpoint it may be running)."""
        self._stopping = True
        self._wake.set()
        self._thread.join()

    def _loop(self) -> None:
        conn = sqlite3.connect(self.path, timeout=0, isolation_level=None)
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                # PASSIVE copies the pages without blocking anyone. It cannot start the log over
                # while steps keep appending to it, and a log that only grows makes every page
                # lookup slower; so then TRUNCATE (RESTART, and the file cut to zero bytes),
                # which needs the write lock for the little left to copy. It waits for the lock
                # a little (a step's commit holds it for well under a millisecond): without
                # waiting, a busy saver kept it out every time and the log grew to megabytes.
                with self.lock, contextlib.suppress(sqlite3.Error):
                    # A failure (the disk is full, say) leaves the log as it was, and every
                    # commit in it stays readable: it is tried again after the next commits.
                    conn.execute("PRAGMA busy_timeout = 0")
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    conn.execute(f"PRAGMA busy_timeout = {_TRUNCATE_WAIT_MS}")
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            conn.close()
