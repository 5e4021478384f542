"""The delta saver where LangGraph's own savers and habits meet it.

Threads copied in from another saver (string channel versions), graphs compiled under
``LANGGRAPH_STRICT_MSGPACK`` (the saver widened to the graph's schema types), and a node that edits
a list item in place: each must read back what LangGraph holds live, as InMemorySaver does.
"""

from __future__ import annotations

import copy
import operator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph._internal import _serde as lg_serde
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict

from ai_agent.checkpoints import DeltaSaver, strict_serializer
from ai_agent.checkpoints._identity import snapshot, unchanged
from ai_agent.checkpoints._serde import widened
from ai_agent.errors import StoreError
from tests.checkpoints.conftest import config

CONFIG: RunnableConfig = {"configurable": {"thread_id": "t"}}


class Counter(TypedDict):
    n: int
    log: Annotated[list[int], operator.add]


def _counter_graph() -> StateGraph[Counter, None, Counter, Counter]:
    builder: StateGraph[Counter, None, Counter, Counter] = StateGraph(Counter)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1, "log": [s["n"]]})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    return builder


def _copy_thread(source: BaseCheckpointSaver[Any], target: BaseCheckpointSaver[Any]) -> None:
    """Every checkpoint and pending write of thread "t", oldest first, as another saver holds it."""
    for item in reversed(list(source.list(CONFIG))):
        parent = item.parent_config or config("t")
        versions = item.checkpoint["channel_versions"]
        stored = target.put(parent, item.checkpoint, item.metadata, versions)
        for task_id, channel, value in item.pending_writes or []:
            target.put_writes(stored, [(channel, value)], task_id)


def test_a_thread_copied_from_another_saver_continues(tmp_path: Path) -> None:
    builder = _counter_graph()
    memory = InMemorySaver()
    builder.compile(checkpointer=memory).invoke({"n": 1, "log": []}, CONFIG)
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        _copy_thread(memory, saver)
        graph = builder.compile(checkpointer=saver)
        assert graph.get_state(CONFIG).values == {"n": 2, "log": [1]}
        assert graph.invoke({"n": 5, "log": []}, CONFIG) == {"n": 6, "log": [1, 5]}
        versions = graph.get_state(CONFIG).config
        latest = saver.get_tuple(versions)
        assert latest is not None
        # The thread keeps one kind of version: LangGraph compares them with ">".
        assert {type(v) for v in latest.checkpoint["channel_versions"].values()} == {str}


def test_next_version_keeps_the_kind_it_is_given(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        assert saver.get_next_version(None, None) == 1
        assert saver.get_next_version(7, None) == 8
        after = saver.get_next_version(InMemorySaver().get_next_version(None, None), None)
        assert isinstance(after, str)
        assert after.startswith(f"{2:032}.")
        assert after > InMemorySaver().get_next_version(f"{1:032}.0.5", None)


class Ticket(BaseModel):
    title: str
    votes: int


class Board(TypedDict):
    ticket: Ticket
    answer: str


def _ask(state: Board) -> dict[str, Any]:
    answer = interrupt(state["ticket"].title)
    return {"answer": f"{answer}: {state['ticket'].votes}", "ticket": state["ticket"]}


def test_strict_msgpack_loads_the_graphs_own_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lg_serde, "STRICT_MSGPACK_ENABLED", True)
    builder: StateGraph[Board, None, Board, Board] = StateGraph(Board)
    builder.add_node("ask", _ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"ticket": Ticket(title="fix it", votes=3), "answer": ""}, CONFIG)
    # Another process: a fresh saver reads the pause back and resumes it.
    with DeltaSaver(path) as saver:
        graph = builder.compile(checkpointer=saver)
        assert graph.get_state(CONFIG).values["ticket"] == Ticket(title="fix it", votes=3)
        out = graph.invoke(Command(resume="done"), CONFIG)
    assert out == {"ticket": Ticket(title="fix it", votes=3), "answer": "done: 3"}


def test_strict_msgpack_still_refuses_other_types(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        widened = saver.with_allowlist({(Ticket.__module__, "Ticket")})
        # One saver, one connection: widening never makes a second owner of the file.
        assert widened is saver
        blob = saver.serde.dumps_typed(Ticket(title="x", votes=1))
        assert saver.serde.loads_typed(blob) == Ticket(title="x", votes=1)
        other = saver.serde.dumps_typed(Board(ticket=Ticket(title="y", votes=2), answer=""))
        assert saver.serde.loads_typed(other)["ticket"] == Ticket(title="y", votes=2)
        # A type the graph did not name is still not loaded, nor read as its fields instead.
        stranger = saver.serde.dumps_typed(Stranger(secret="s"))
        with pytest.raises(
            StoreError,
            match=r"test_langgraph_interop\.Stranger, which this serializer does not load",
        ):
            saver.serde.loads_typed(stranger)


class Stranger(BaseModel):
    secret: str


class Notes(TypedDict):
    items: Annotated[list[dict[str, Any]], operator.add]


# Enough items that the list is stored as a lineage of appends, not inline in the checkpoint.
FIRST = [{"n": 1, "text": "x" * 40}, *({"n": 0, "text": f"note {i}"} for i in range(20))]


def _edit_in_place(state: Notes) -> dict[str, Any]:
    state["items"][0]["n"] = 2  # an edit of an item already checkpointed
    return {"items": [{"n": 10}]}


def test_an_item_edited_in_place_is_stored_as_live(tmp_path: Path) -> None:
    builder: StateGraph[Notes, None, Notes, Notes] = StateGraph(Notes)
    builder.add_node("first", lambda s: {"items": [dict(item) for item in FIRST]})
    builder.add_node("edit", _edit_in_place)
    builder.add_edge(START, "first")
    builder.add_edge("first", "edit")
    builder.add_edge("edit", END)
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        live = builder.compile(checkpointer=saver).invoke({"items": []}, CONFIG)
    assert live["items"][0]["n"] == 2
    with DeltaSaver(path) as saver:
        stored = builder.compile(checkpointer=saver).get_state(CONFIG).values
    assert stored == live


def test_an_encrypted_serializer_is_widened_inside() -> None:
    serde = EncryptedSerializer(XorCipher(), strict_serializer())
    wider = widened(serde, {(Ticket.__module__, "Ticket")})
    assert isinstance(wider, EncryptedSerializer)
    assert wider.loads_typed(wider.dumps_typed(Ticket(title="z", votes=4))) == Ticket(
        title="z", votes=4
    )
    assert widened(serde, set()) is serde


def test_a_serializer_without_an_allowlist_is_kept() -> None:
    plain = PickleLike()
    assert widened(plain, {(Ticket.__module__, "Ticket")}) is plain


class PickleLike:
    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return "raw", repr(obj).encode()

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return data[1].decode()


class XorCipher:
    """A stand-in cipher (the real one needs pycryptodome): reversible, and not the plaintext."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "xor", bytes(b ^ 0x5A for b in plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "xor"
        return bytes(b ^ 0x5A for b in ciphertext)


def _pause_then_edit(state: Notes) -> dict[str, Any]:
    interrupt("edit?")
    return _edit_in_place(state)


def test_an_item_edited_in_place_after_a_resume_is_stored_as_live(tmp_path: Path) -> None:
    builder: StateGraph[Notes, None, Notes, Notes] = StateGraph(Notes)
    builder.add_node("first", lambda s: {"items": [dict(item) for item in FIRST]})
    builder.add_node("edit", _pause_then_edit)
    builder.add_edge(START, "first")
    builder.add_edge("first", "edit")
    builder.add_edge("edit", END)
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        builder.compile(checkpointer=saver).invoke({"items": []}, CONFIG)
    with DeltaSaver(path) as saver:  # the items come from a read, not from a put
        live = builder.compile(checkpointer=saver).invoke(Command(resume="yes"), CONFIG)
    assert live["items"][0]["n"] == 2
    with DeltaSaver(path) as saver:
        assert builder.compile(checkpointer=saver).get_state(CONFIG).values == live


def test_appends_still_write_only_the_new_items(tmp_path: Path) -> None:
    builder: StateGraph[Notes, None, Notes, Notes] = StateGraph(Notes)
    builder.add_node("first", lambda s: {"items": [dict(item) for item in FIRST]})
    builder.add_node("more", lambda s: {"items": [{"n": 10}]})
    builder.add_edge(START, "first")
    builder.add_edge("first", "more")
    builder.add_edge("more", END)
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        builder.compile(checkpointer=saver).invoke({"items": []}, CONFIG)
        lineages = saver.store.conn.execute("SELECT count(*) FROM delta_lineages").fetchone()
        segments = saver.store.conn.execute(
            "SELECT count FROM delta_segments ORDER BY start"
        ).fetchall()
    assert lineages == (1,)
    assert segments == [(len(FIRST),), (1,)]


class Frozen:
    """An object that refuses copying (as one holding a lock or a socket does)."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __deepcopy__(self, memo: dict[int, Any]) -> Frozen:
        raise TypeError("cannot copy")


class Plain:
    """An object with a ``__dict__`` that refuses copying: its fields are copied instead."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __deepcopy__(self, memo: dict[int, Any]) -> Plain:
        raise TypeError("cannot copy")


def test_a_snapshot_copies_containers_and_shares_what_cannot_change() -> None:
    text, ticket, frozen = "a text", Ticket(title="t", votes=1), Frozen(1)
    items: list[Any] = [{"k": [text, (1, {"n": 2})]}, ticket, frozen, b"raw", None, 1.5]
    shadow = snapshot(items)
    assert shadow[0] == items[0]
    assert shadow[0]["k"][0] is text  # an immutable leaf is the very same object
    assert shadow[0] is not items[0]
    assert shadow[0]["k"][1][1] is not items[0]["k"][1][1]  # inside a tuple too
    # An object is held as a copy of its fields, compared with its own (a C dict comparison).
    assert shadow[1] == vars(ticket)
    assert shadow[1] is not vars(ticket)
    assert shadow[2] is frozen  # no __dict__ and refuses copying: only replacing it shows
    assert unchanged(shadow, items, len(items))
    items[0]["k"][1][1]["n"] = 3
    assert not unchanged(shadow, items, 1)
    assert unchanged(shadow[1:], items[1:], 5)
    ticket.votes = 2
    assert not unchanged(shadow[1:], items[1:], 5)
    assert not unchanged(shadow, items, 2)  # a snapshot of another length never vouches


def test_an_object_s_fields_and_extra_fields_are_watched() -> None:
    message = ToolMessage(content="result", tool_call_id="c1", name="fetch")
    plain, kind = Plain(1), Ticket  # a class in a list is kept as it is
    items: list[Any] = [message, plain, kind]
    shadow = snapshot(items)
    assert unchanged(shadow, items, 3)
    plain.n = 2  # refuses deepcopy, but its fields were copied: the edit shows
    assert not unchanged(shadow, items, 3)
    plain.n = 1
    assert unchanged(shadow, items, 3)
    message.additional_kwargs["seen"] = True  # a container inside a field
    assert not unchanged(shadow, items, 3)
    del message.additional_kwargs["seen"]
    assert unchanged(shadow, items, 3)
    message.flagged = True  # type: ignore[attr-defined]  # an extra field (pydantic keeps apart)
    assert not unchanged(shadow, items, 3)
    fresh = snapshot(items)
    assert unchanged(fresh, items, 3)
    message.flagged = False  # type: ignore[attr-defined]
    assert not unchanged(fresh, items, 3)


class Messages(TypedDict):
    messages: Annotated[list[Any], operator.add]


def _message(i: int) -> ToolMessage:
    return ToolMessage(content=f"result {i}", tool_call_id=f"c{i}", name="fetch")


def test_a_message_edited_in_place_is_stored_as_live(tmp_path: Path) -> None:
    def edit(state: Messages) -> dict[str, Any]:
        state["messages"][0].content = "edited"  # a field of a stored message object
        return {"messages": [_message(99)]}

    builder: StateGraph[Messages, None, Messages, Messages] = StateGraph(Messages)
    builder.add_node("first", lambda s: {"messages": [_message(i) for i in range(20)]})
    builder.add_node("more", lambda s: {"messages": [_message(20)]})
    builder.add_node("edit", edit)
    builder.add_edge(START, "first")
    builder.add_edge("first", "more")
    builder.add_edge("more", "edit")
    builder.add_edge("edit", END)
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        # "sync": each checkpoint is stored before the next step runs. With LangGraph's default
        # ("async") the put of one step may run after the next step edited its items, with
        # any saver, so a checkpoint may already show the edit.
        graph = builder.compile(checkpointer=saver)
        live = graph.invoke({"messages": []}, CONFIG, durability="sync")
    assert live["messages"][0].content == "edited"
    with DeltaSaver(path) as saver:
        graph = builder.compile(checkpointer=saver)
        assert graph.get_state(CONFIG).values == live
        history = [s.values["messages"] for s in graph.get_state_history(CONFIG)]
    # The checkpoint before the edit still holds the message as it was then.
    assert [m[0].content for m in history if len(m) == 21] == ["result 0"]


def _copying_add(old: list[Any], new: list[Any]) -> list[Any]:
    return copy.deepcopy(old) + new  # equal items, but not the very same objects


class CopiedMessages(TypedDict):
    messages: Annotated[list[Any], _copying_add]


def test_equal_copies_of_objects_are_still_an_append(tmp_path: Path) -> None:
    builder: StateGraph[CopiedMessages, None, CopiedMessages, CopiedMessages] = StateGraph(
        CopiedMessages
    )
    builder.add_node("first", lambda s: {"messages": [_message(i) for i in range(20)]})
    builder.add_node("more", lambda s: {"messages": [_message(20)]})
    builder.add_edge(START, "first")
    builder.add_edge("first", "more")
    builder.add_edge("more", END)
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        live = builder.compile(checkpointer=saver).invoke({"messages": []}, CONFIG)
        segments = saver.store.conn.execute(
            "SELECT count FROM delta_segments ORDER BY start"
        ).fetchall()
    assert segments == [(20,), (1,)]  # recognised by the stored bytes: only the new item
    with DeltaSaver(path) as saver:
        assert builder.compile(checkpointer=saver).get_state(CONFIG).values == live
