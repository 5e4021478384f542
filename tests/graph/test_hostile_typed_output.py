"""Typed outputs against a hostile model: whole runs on real SQLite files.

The model's answer is attacker-controlled text. Each test gives the pipeline an answer that
broke it before (a crash out of ``Agent.run``, a hang in the event loop, a gate report of
megabytes, an output type refused for no reason) and asserts what a run does instead: the
answer goes back to the model with a bounded problem, and a run that never fits stops at the
gate with OUTPUT_INVALID.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest
from jsonschema.exceptions import ValidationError
from pydantic import BaseModel, field_validator

from ai_agent.errors import OutputValidationError
from ai_agent.structured import MAX_PROBLEMS, parse_answer
from tests.graph.conftest import MakeAgent, text
from tests.graph.test_typed_output import GOOD, TOTAL, Requests, Total

HANG_SECONDS = 60.0  # a limit on a wait, not a measurement
INTEGER = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


async def test_an_open_fence_before_a_long_run_of_spaces_is_read_at_once(
    make_agent: MakeAgent,
) -> None:
    """The fence pattern backtracked in cubic time: 4,000 spaces took 45 s, in the event loop.

    The read is given a minute in a thread (a bound on a hang, not a measurement): 200,000
    spaces would have taken the old pattern years. The run around it gets its answer.
    """
    hostile = "```" + " " * 200_000 + "x"
    read: list[tuple[object, str | None]] = []
    reader = threading.Thread(target=lambda: read.append(parse_answer(hostile)), daemon=True)
    reader.start()
    reader.join(HANG_SECONDS)
    assert read and read[0][0] is None and read[0][1] is not None  # not JSON: a problem
    agent = make_agent([text(hostile), text(hostile), text(GOOD)], output_type=Total)
    async with agent:
        res = await agent.run("total?")
    assert res.status == "completed" and res.output == TOTAL


async def test_an_integer_no_checkpoint_can_keep_goes_back_to_the_model(
    make_agent: MakeAgent,
) -> None:
    """2**4000 fits {"type": "integer"}; it raised "Integer exceeds 64-bit range" out of run."""
    requests = Requests(json.dumps({"n": 2**4000}), '{"n": 3}')
    agent = make_agent(model=requests.model(), output_type=INTEGER)
    async with agent:
        res = await agent.run("n?")
    assert res.status == "completed" and res.output == {"n": 3}
    told = requests.seen[1]["messages"][-1]["content"]
    assert "n: the integer is too large to keep (64 bits at most)" in told
    assert len(told) < 500


class Picky(BaseModel):
    x: int

    @field_validator("x")
    @classmethod
    def _not_zero(cls, x: int) -> int:
        if x == 0:
            raise TypeError("x must not be zero")  # pydantic passes all but ValueError on
        return x


async def test_a_validator_raising_a_type_error_is_a_problem_then_the_gate(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent([text('{"x": 0}')] * 6, output_type=Picky)
    async with agent:
        res = await agent.run("x?")
    assert res.status == "paused" and res.gate is not None
    (found,) = res.gate["issues"]
    assert found["code"] == "OUTPUT_INVALID"
    assert "checking it raised TypeError (x must not be zero)" in found["message"]
    assert "Picky's validators should raise ValueError" in found["message"]


async def test_a_stored_output_its_validator_raises_on_is_an_output_error(
    make_agent: MakeAgent, db: Path
) -> None:
    """The database edited: the stored x set to 0, which the type's validator raises on."""
    async with make_agent([text('{"x": 123456}')], output_type=Picky) as agent:
        res = await agent.run("x?")
    assert res.output == Picky(x=123456)
    stored, edited = bytes.fromhex("ce0001e240"), bytes.fromhex("ce00000000")  # msgpack ints
    changed = 0
    with sqlite3.connect(db) as conn:
        for table, column in (("delta_checkpoints", "skeleton"), ("delta_writes", "writes")):
            for (blob,) in conn.execute(f"SELECT {column} FROM {table}").fetchall():
                if isinstance(blob, bytes) and stored in blob:
                    new = blob.replace(stored, edited)
                    conn.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", (new, blob))
                    changed += 1
    conn.close()
    assert changed
    async with make_agent(output_type=Picky) as reader:
        with pytest.raises(OutputValidationError, match=r"raised TypeError \(x must not be zero"):
            await reader.get_result(res.thread_id)


class Counts(BaseModel):
    counts: dict[str, int]


async def test_what_is_wrong_with_a_hostile_key_reaches_the_model_and_gate_bounded(
    make_agent: MakeAgent,
) -> None:
    """A 900,000-character key was quoted whole in every problem: a gate report of 1.8 MB."""
    hostile = json.dumps({"counts": {"k" * 900_000: "many"}})
    requests = Requests(*[hostile] * 3)
    agent = make_agent(model=requests.model(), output_type=Counts)
    async with agent:
        res = await agent.run("count?")
    assert res.status == "paused" and res.gate is not None
    assert len(json.dumps(res.gate)) < 5_000
    told = requests.seen[-1]["messages"][-1]["content"]
    assert "Input should be a valid integer" in told and len(told) < 1_000


async def test_a_lone_surrogate_escaped_in_the_answer_is_kept_as_a_character(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    r"""``"\ud800"`` is JSON; kept as it is, writing the memory file failed the run."""
    agent = make_agent([text('{"amount": 1, "currency": "EU\\ud800"}')], output_type=Total)
    async with agent:
        res = await agent.run("total?")
    assert res.status == "completed", res.error
    assert res.output == Total(amount=1, currency="EU\ufffd")
    assert "EU\ufffd" in (tmp_path / "memory.jsonl").read_text(encoding="utf-8")


class Node(BaseModel):
    label: str
    next: Node | None = None


async def test_a_model_that_refers_to_itself_types_the_answer(make_agent: MakeAgent) -> None:
    """pydantic writes its schema as a root $ref: it was refused as "not an object's"."""
    answer = {"label": "a", "next": {"label": "b", "next": {"label": "c"}}}
    requests = Requests("a, b, c", json.dumps(answer))
    agent = make_agent(model=requests.model(), output_type=Node)
    async with agent:
        res = await agent.run("list?")
    assert res.status == "completed"
    assert res.output == Node.model_validate(answer)
    schema = requests.seen[1]["response_format"]["json_schema"]["schema"]
    assert schema["type"] == "object" and "$ref" not in schema
    assert schema["$defs"]["Node"]["properties"]["next"]["anyOf"][0] == {"$ref": "#/$defs/Node"}


async def test_the_types_validators_run_once_per_answer_and_once_per_read(
    make_agent: MakeAgent,
) -> None:
    """They ran five times before the run returned: to check, type and keep, then twice to read."""
    seen: list[str] = []

    class Counted(BaseModel):
        name: str

        @field_validator("name")
        @classmethod
        def _count(cls, name: str) -> str:
            seen.append(name)
            return name

    agent = make_agent([text('{"name": "a"}')], output_type=Counted)
    async with agent:
        res = await agent.run("name?")
        answered = len(seen)
        await agent.get_result(res.thread_id)
    assert res.output.name == "a"
    assert answered == 2  # the answer checked, then the result rebuilt from the data kept
    assert len(seen) == 3  # one more read, one more rebuild


LIST_OF_INTEGERS = {
    "type": "object",
    "properties": {"xs": {"type": "array", "items": {"type": "integer"}}},
    "required": ["xs"],
}


async def test_an_answer_with_a_problem_in_every_item_is_checked_for_the_first_ones_only(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every wrong item of a JSON Schema answer was made into an error, then all but 8 dropped.

    250,000 of them (a reply of 1.25 MB) took 15 s in the event loop and 900 MB, at each try.
    The errors made are counted, not timed: a few per try now, one per item before.
    """
    made: list[str] = []
    make_error = ValidationError.__init__

    def counted(self: ValidationError, message: str, *args: object, **kwargs: object) -> None:
        made.append(message)
        make_error(self, message, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ValidationError, "__init__", counted)
    hostile = json.dumps({"xs": ["a"] * 20_000})
    agent = make_agent([text(hostile)] * 3, output_type=LIST_OF_INTEGERS)
    async with agent:
        res = await agent.run("numbers?")
    assert res.status == "paused" and res.gate is not None
    (invalid,) = res.gate["issues"]
    assert invalid["code"] == "OUTPUT_INVALID"
    assert "xs.0: 'a' is not of type 'integer'" in invalid["message"]
    assert len(made) <= 3 * MAX_PROBLEMS, len(made)
