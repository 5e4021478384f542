"""Recorded calls: every model call and tool call of a run, so it can be replayed offline.

A model call is stored with a stable hash of its request (messages, tool schemas, generation
parameters), the request itself, the reply (or the model error), the usage and the latency. A
tool call is stored with what only the recording knows: a hash of its arguments, its duration and
whether a replay served it. Its tool, arguments and result are the act journal's (the record of a
tool call's outcome, ``agent_journal``): the recorded row names its journal entry (thread,
iteration, call id) and `RecordedCalls.tool_calls` reads the outcome from there, so a result is
stored once. A recorded call whose entry holds no outcome (the process died between the call
and its outcome) has no recorded result: it is not listed, as its outcome is unknown. Both kinds
carry where they happened: the thread, LangGraph's step, the stage, and the checkpoint the stage
started from.

Requests repeat the whole conversation, so message bodies and tool schema lists are stored once,
by content hash, in ``agent_blobs``: a request row lists hashes, and recording a run grows with
its length, not with its square. A long text in a body (a plan, a task, a tool output, a model's
answer) is stored once more apart, in ``agent_texts`` (``ai_agent.checkpoints._texts``): in one
SQLite file the checkpoints name the very same row, so the plan a run holds in its state and the
plan its model request sent are stored once.

Nothing secret is ever passed here: the model's inputs are the conversation and the schemas; the
API key and headers live inside the model client and never reach a ModelCaller's arguments.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any, TypedDict

from ai_agent.checkpoints import _texts
from ai_agent.checkpoints._rows import corrupt_row, stored_json
from ai_agent.checkpoints._sql import Session, SqlStore, threaded
from ai_agent.errors import StoreError
from ai_agent.state import Message, ToolCall, ToolResult

__all__ = [
    "CallPosition",
    "ModelCallRecord",
    "ModelRequest",
    "RecordedCalls",
    "ToolCallRecord",
]


class CallPosition(TypedDict):
    """Where in a run a call happened (None outside a graph run)."""

    step: int | None
    stage: str | None
    checkpoint_id: str | None


class ModelRequest(TypedDict):
    """What a model call sent: the messages, the tools' schemas and the generation parameters."""

    messages: list[Message]
    tools: list[dict[str, Any]]
    params: dict[str, Any]


class ModelCallRecord(TypedDict):
    """One recorded model call (its request is read separately, by ``seq``)."""

    seq: int
    thread_id: str
    step: int | None
    stage: str | None
    checkpoint_id: str | None
    request_hash: str
    message: Message | None
    usage: dict[str, Any]
    error: dict[str, str] | None
    latency_ms: float
    replayed: bool
    created_at: float


class ToolCallRecord(TypedDict):
    """One recorded tool call, with its call and result read from the journal."""

    seq: int
    thread_id: str
    step: int | None
    stage: str | None
    checkpoint_id: str | None
    iteration: int
    call: ToolCall
    args_hash: str
    result: ToolResult
    duration_ms: float
    replayed: bool
    created_at: float


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _blob(session: Session, value: Any) -> str:
    """Store one body (once: by the hash of its JSON); returns the hash.

    A body of a large text or more has its large texts taken out (``_texts.cut``) and stored
    apart; the row lists them (``texts``). Its hash stays that of the whole body.
    """
    body = _dumps(value)
    digest = hashlib.sha256(body.encode()).hexdigest()
    texts = None
    if len(body) >= _texts.TEXT_MIN_BYTES:
        if session.one("SELECT 1 FROM agent_blobs WHERE hash = ?", (digest,)) is not None:
            return digest  # stored already: no need to cut and hash its texts again
        done = _texts.cut(value)
        if done.texts:
            _texts.save(session.execute, done.texts)
            body, texts = _dumps(done.value), _texts.texts_column(done.hashes)
    session.execute(
        "INSERT INTO agent_blobs (hash, body, texts) VALUES (?, ?, ?) "
        "ON CONFLICT (hash) DO NOTHING",
        (digest, body, texts),
    )
    return digest


# A thread's recorded calls of each kind, in the order they were made.
_MODEL_CALLS = (
    "SELECT seq, thread_id, step, stage, checkpoint_id, request_hash, response, usage, error, "
    "latency_ms, replayed, created_at FROM agent_model_calls WHERE thread_id = ? ORDER BY seq"
)

# A recorded tool call with its journal entry: the tool, the arguments and the result are the
# journal's (an entry without an outcome is left out: that call's outcome is unknown).
_TOOL_CALLS = (
    "SELECT t.seq, t.thread_id, t.step, t.stage, t.checkpoint_id, t.iteration, t.call_id, j.tool, "
    "t.args_hash, j.args, j.result, t.duration_ms, t.replayed, t.created_at "
    "FROM agent_tool_calls t JOIN agent_journal j ON j.thread_id = t.thread_id "
    "AND j.iteration = t.iteration AND j.call_id = t.call_id "
    "WHERE t.thread_id = ? AND j.status = 'done' ORDER BY t.seq"
)


_REPLAY_HINT = (
    "a replay of the run cannot use it: replay it live (`ai-agent replay THREAD --live`), and "
    "its other rows are still read"
)


def _column(row: Sequence[Any], index: int, what: str, *, optional: bool = False) -> Any:
    """A JSON column of a recorded call, checked (see ``_rows.stored_json``)."""
    return stored_json(
        row[index],
        what=f"{what} of recorded call {row[0]}",
        thread_id=str(row[1]),
        hint=_REPLAY_HINT.replace("THREAD", str(row[1])),
        optional=optional,
    )


def _body(
    row: Sequence[Any], stored: tuple[str, str | None], shape: type, found: dict[str, bytes]
) -> Any:
    """One stored body of a recorded request (a message, the tools' schemas), checked.

    ``stored`` is its row's (body, texts); ``found`` the texts read for the request.
    """
    text, texts = stored
    value = stored_json(
        text,
        what=f"a part of the request of recorded call {row[0]}",
        thread_id=str(row[1]),
        hint=_REPLAY_HINT.replace("THREAD", str(row[1])),
        shape=shape,
    )
    return value if texts is None else _texts.paste(value, found)


def _model_record(row: Sequence[Any]) -> ModelCallRecord:
    return ModelCallRecord(
        seq=row[0],
        thread_id=row[1],
        step=row[2],
        stage=row[3],
        checkpoint_id=row[4],
        request_hash=row[5],
        message=_column(row, 6, "the reply", optional=True),
        usage=_column(row, 7, "the usage"),
        error=_column(row, 8, "the error", optional=True),
        latency_ms=row[9],
        replayed=bool(row[10]),
        created_at=row[11],
    )


def _tool_record(row: Sequence[Any]) -> ToolCallRecord:
    return ToolCallRecord(
        seq=row[0],
        thread_id=row[1],
        step=row[2],
        stage=row[3],
        checkpoint_id=row[4],
        iteration=row[5],
        call=ToolCall(id=row[6], name=row[7], args=_column(row, 9, "the arguments")),
        args_hash=row[8],
        result=_column(row, 10, "the result"),
        duration_ms=row[11],
        replayed=bool(row[12]),
        created_at=row[13],
    )


class RecordedCalls(SqlStore):
    """The recorded-calls part of the run store (see the module docstring)."""

    @threaded
    def record_model_call(
        self,
        thread_id: str,
        position: CallPosition,
        request_hash: str,
        request: ModelRequest,
        *,
        message: Message | None,
        usage: dict[str, Any],
        error: dict[str, str] | None,
        latency_ms: float,
        replayed: bool = False,
    ) -> int:
        """Record one model call: its reply, or the model error it ended with. Returns its seq."""
        with self._tx() as session:
            self._fence(session, thread_id)
            stored = {
                "messages": [_blob(session, m) for m in request["messages"]],
                "tools": _blob(session, request["tools"]),
                "params": request["params"],
            }
            return session.insert(
                "INSERT INTO agent_model_calls (thread_id, step, stage, checkpoint_id, "
                "request_hash, request, response, usage, error, latency_ms, replayed, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    thread_id,
                    position["step"],
                    position["stage"],
                    position["checkpoint_id"],
                    request_hash,
                    _dumps(stored),
                    _dumps(message) if message is not None else None,
                    _dumps(usage),
                    _dumps(error) if error is not None else None,
                    latency_ms,
                    int(replayed),
                    time.time(),
                ),
                key="seq",
            )

    @threaded
    def record_tool_call(
        self,
        thread_id: str,
        position: CallPosition,
        call: ToolCall,
        args_hash: str,
        *,
        iteration: int,
        duration_ms: float,
        replayed: bool = False,
    ) -> int:
        """Record a tool call by its journal key (its outcome is the journal's); returns its seq."""
        with self._tx() as session:
            self._fence(session, thread_id)
            return session.insert(
                "INSERT INTO agent_tool_calls (thread_id, step, stage, checkpoint_id, iteration, "
                "call_id, args_hash, duration_ms, replayed, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    thread_id,
                    position["step"],
                    position["stage"],
                    position["checkpoint_id"],
                    iteration,
                    call["id"],
                    args_hash,
                    duration_ms,
                    int(replayed),
                    time.time(),
                ),
                key="seq",
            )

    @threaded
    def model_calls(self, thread_id: str) -> list[ModelCallRecord]:
        """The thread's recorded model calls, in the order they were made."""
        return [_model_record(r) for r in self._all(_MODEL_CALLS, (thread_id,))]

    @threaded
    def model_request(self, seq: int) -> ModelRequest:
        """The full request of one recorded model call.

        Raises:
            KeyError: no recorded call has this seq.
        """
        with self._read() as session:
            row = session.one(
                "SELECT seq, thread_id, request FROM agent_model_calls WHERE seq = ?", (seq,)
            )
            if row is None:
                raise KeyError(seq)
            stored = _column(row, 2, "the request")
            try:
                wanted = [*stored["messages"], stored["tools"]]
                marks = ",".join("?" * len(wanted))
                bodies = {
                    h: (body, texts)
                    for h, body, texts in session.all(
                        f"SELECT hash, body, texts FROM agent_blobs WHERE hash IN ({marks})",  # noqa: S608 - placeholders only
                        wanted,
                    )
                }
                named = [t for _, texts in bodies.values() if texts for t in _texts.listed(texts)]
                found = _texts.fetch(session.execute, named) if named else {}
                messages = [bodies[h] for h in stored["messages"]]
                request = ModelRequest(
                    messages=[_body(row, m, dict, found) for m in messages],
                    tools=_body(row, bodies[stored["tools"]], list, found),
                    params=dict(stored["params"]),
                )
            # A body, a key or a text is missing, or a texts column is not a list of hashes.
            except (KeyError, TypeError, ValueError, StoreError) as exc:
                raise corrupt_row(
                    f"the request of recorded call {seq}",
                    str(row[1]),
                    f"it lists a part that is not stored ({type(exc).__name__}: {exc})",
                    _REPLAY_HINT.replace("THREAD", str(row[1])),
                ) from None
        return request

    @threaded
    def tool_calls(self, thread_id: str) -> list[ToolCallRecord]:
        """The thread's recorded tool calls with their outcomes, in the order they were made.

        The one way the outcome of a recorded call is read (replay, history, inspection,
        export): from the journal entry the call names.
        """
        return [_tool_record(r) for r in self._all(_TOOL_CALLS, (thread_id,))]

    @threaded
    def delete_calls(self, thread_id: str) -> int:
        """Delete a thread's recorded calls (and bodies nothing else uses); returns how many."""
        with self._tx() as session:
            models = session.execute(
                "DELETE FROM agent_model_calls WHERE thread_id = ?", (thread_id,)
            ).rowcount
            tools = session.execute(
                "DELETE FROM agent_tool_calls WHERE thread_id = ?", (thread_id,)
            ).rowcount
            # A body may be shared with other threads' requests (a fork or a replay repeats its
            # source's conversation): delete only the bodies no remaining request lists.
            session.execute(
                f"DELETE FROM agent_blobs WHERE hash NOT IN ({session.blobs_in_use})"  # noqa: S608 - fixed text
            )
            # And the texts nothing names any more (no body, nor a checkpoint of the same file).
            _texts.sweep(session.execute, session.text_owners())
        return int(models) + int(tools)
