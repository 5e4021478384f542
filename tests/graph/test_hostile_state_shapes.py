"""Checkpoints whose values decode fine but are not of `RunState`'s shape, on a real SQLite file.

The database is hostile input here: a run's latest checkpoint is written again through the
delta saver's own ``put`` (the rows stay well formed, the pending interrupt stays attached) with
one channel changed to a value of the wrong type, as someone editing the database could: the
messages a number, text or an object, a message that is text, a message whose content is a list
of numbers, the task or the status a number, the iteration text. ``show``, ``history`` and
``export`` refuse it with one ``error:`` line naming the thread, the checkpoint and the channel
(before: "internal error: TypeError ..."), a resume refuses it before any stage runs and leaves
the run's row as it was (before: the run failed inside a stage), and the other run still reads.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ai_agent import ToolCategory, UserPlan
from ai_agent.checkpoints import DeltaSaver
from ai_agent.cli import EXIT, main
from ai_agent.errors import CorruptRunError, RunError
from ai_agent.graph.state_edits import check_update
from ai_agent.graph.state_shape import shape_problem
from ai_agent.state import RunState, new_run_state
from tests.conftest import good_and_bad_runs
from tests.graph.conftest import MakeAgent, call, recorder, text

TASK = {"role": "user", "content": "note it", "kind": "task"}

# The channel, the value written over it, and what the error says of it.
SHAPES: dict[str, tuple[str, Any, str]] = {
    "messages a number": ("messages", 5, "messages holds a whole number, not a list"),
    "messages text": ("messages", "x", "messages holds text, not a list"),
    "messages an object": ("messages", {"a": 1}, "messages holds an object, not a list"),
    "a message that is text": ("messages", [TASK, "hi"], r"messages, at \[1\], holds text"),
    "content a list of numbers": (
        "messages",
        [{**TASK, "content": [1, 2]}],
        r"messages, at \[0\]\.content, holds a list, not text",
    ),
    "a message without content": (
        "messages",
        [{"role": "user"}],
        r"messages, at \[0\], holds an object without its 'content'",
    ),
    "the task a number": ("task", 123, "task holds a whole number, not text"),
    "the status a number": ("status", 123, "status holds 123, not one of"),
    "the iteration text": ("iteration", "1", "iteration holds text, not a whole number"),
    "the iteration a bool": ("iteration", True, "iteration holds true, not a whole number"),
    "the gate a list": ("gate", [1], "gate holds a list, not null or an object"),
    "a trace event that is a number": ("trace", [7], r"trace, at \[0\], holds a whole number"),
}


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def rewrite(db: Path, thread: str, channel: str, value: Any, *, back: int = 0) -> str:
    """The thread's latest checkpoint (or the one ``back`` before it) put again under its own
    id, ``channel`` holding ``value``.

    Returns the id of its parent (the checkpoint the error says to fork from).
    """
    with DeltaSaver(db) as saver:
        stored = list(saver.list(config(thread)))[back]
        assert stored.parent_config is not None
        checkpoint = copy.deepcopy(stored.checkpoint)
        checkpoint["channel_values"][channel] = value
        version = saver.get_next_version(checkpoint["channel_versions"].get(channel), None)
        checkpoint["channel_versions"][channel] = version
        saver.put(stored.parent_config, checkpoint, stored.metadata, {channel: version})
        return str(stored.parent_config["configurable"]["checkpoint_id"])


def assert_refused(err: str, parent: str, message: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err
    assert "of thread bad cannot be read back (StateShapeError: the channel " in err, err
    assert re.search(message, err), err
    assert f"`ai-agent fork bad {parent}`" in err and err.count("\n") == 1, err


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """A database with two finished runs, ``good`` and ``bad``, and the folder it lives in."""
    db = tmp_path / "c.sqlite"
    good_and_bad_runs(str(db), tmp_path)
    return db, tmp_path


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES)
def test_show_history_and_export_refuse_a_value_of_the_wrong_shape(
    shape: tuple[str, Any, str], runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    db, where = runs
    channel, value, message = shape
    parent = rewrite(db, "bad", channel, value)
    capsys.readouterr()
    for command in (
        ["show", "bad"],
        ["history", "bad"],
        ["export", "bad", "--html", str(where / "o.html")],
    ):
        code = main([*command, "--db", str(db)])
        _, err = capsys.readouterr()
        assert code == EXIT["failed"], (command, err)
        assert_refused(err, parent, message)
    assert main(["show", "good", "--db", str(db)]) == 0


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES)
async def test_a_resume_refuses_it_and_leaves_the_run_as_it_was(
    shape: tuple[str, Any, str], make_agent: MakeAgent, db: Path
) -> None:
    log: list[dict[str, Any]] = []

    def gated() -> Any:
        tool = recorder(log, category=ToolCategory.MODIFICATION)
        return make_agent([call("note", text="x"), text("noted")], tools=[tool])

    async with gated() as agent:
        assert (await agent.run("note it", thread_id="bad")).status == "paused"
    channel, value, message = shape
    parent = rewrite(db, "bad", channel, value)
    async with gated() as agent:
        with pytest.raises(CorruptRunError, match=message) as caught:
            await agent.resume("bad", UserPlan(approve=["*"]))
        assert caught.value.thread_id == "bad" and f"fork bad {parent}" in str(caught.value)
        with pytest.raises(CorruptRunError, match=message):
            await agent.ahistory("bad")
        with pytest.raises(CorruptRunError, match=message):
            await agent.get_result("bad")
        record = await agent.store.get_run("bad")
    assert record is not None and record["status"] == "paused" and not record.get("error")
    assert log == []  # the gated call never ran


def test_what_the_engine_writes_has_the_shape() -> None:
    state: dict[str, Any] = dict(new_run_state("calc 2+2", ["calculator"]))
    assert shape_problem(state) is None
    assert shape_problem({**state, "iteration": 1.0}) is not None  # a float is not a whole number
    assert shape_problem({**state, "budget_allowance": {"usd": 1}}) is None  # a whole number is
    assert shape_problem({"branch:to:draft": 5, "__start__": [1]}) is None  # LangGraph's own


# What a person may type into a fork's update: any JSON, its objects keyed by the state's own
# field names (a message's, an issue's...) so that records of the right shape come up often.
_NAMES = sorted(
    {*RunState.__annotations__, "role", "content", "tool_calls", "tool_call_id", "name", "args"}
    | {"id", "code", "message", "severity", "score", "status", "kind", "text", "type", "source"}
)
_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.sampled_from(["user", "assistant", "tool", "system", "paused", "error", "x", ""])
)
_JSON = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_NAMES), inner),
    max_leaves=10,
)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(sorted(RunState.__annotations__)), value=_JSON, replace=st.booleans())
def test_an_edit_a_fork_accepts_is_never_a_state_the_reads_refuse(
    key: str, value: Any, replace: bool
) -> None:
    # Two checks of one type: a fork's edit (pydantic, strict, worded for the person editing)
    # and the stored values (no pydantic, so that reads stay light). One accepting what the
    # other refuses would make a fork that no command can read back.
    base: dict[str, Any] = dict(new_run_state("calc 2+2", ["calculator"]))
    if replace and isinstance(base.get(key), list):
        value = {"replace": value if isinstance(value, list) else [value]}
    try:
        check_update({key: value})
    except RunError:
        event("refused")
        return
    event("accepted")
    if isinstance(base.get(key), list) and isinstance(value, list):
        value = base[key] + value  # appended by the channel's reducer
    elif isinstance(base.get(key), list) and isinstance(value, dict):
        value = value["replace"]
    assert shape_problem({**base, key: value}) is None


@pytest.mark.parametrize(
    "shape",
    [SHAPES["the task a number"], SHAPES["a message that is text"]],
    ids=["a value", "an item of a list"],
)
def test_a_history_names_an_older_checkpoint_of_the_wrong_shape(
    shape: tuple[str, Any, str], runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # An older checkpoint's values are checked up front but for their lists' items, which are
    # checked when reading them fails (every item of every checkpoint made long histories
    # six times slower); either way the history names the checkpoint.
    db, _ = runs
    channel, value, message = shape
    parent = rewrite(db, "bad", channel, value, back=1)  # a history reads it, a resume not
    capsys.readouterr()
    code = main(["history", "bad", "--db", str(db)])
    _, err = capsys.readouterr()
    assert code == EXIT["failed"], err
    assert_refused(err, parent, message)
