"""``--output-schema FILE``: a typed answer on the command line, and a bad schema refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT, main
from tests.cli.scripts import script

SCHEMA = {
    "title": "Total",
    "type": "object",
    "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}},
    "required": ["amount", "currency"],
}
ANSWER = {"amount": 68.055, "currency": "EUR"}


def schema_file(tmp_path: Path, value: Any, name: str = "schema.json") -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return str(path)


def test_a_typed_run_prints_its_json_and_show_and_export_show_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    model = script(tmp_path, {"text": "68 euros"}, {"text": json.dumps(ANSWER)})
    schema = schema_file(tmp_path, SCHEMA)
    argv = ["run", "total?", "--model", model, "--db", db, "--output-schema", schema, "--quiet"]
    assert main(argv) == EXIT["completed"]
    assert json.loads(capsys.readouterr().out) == ANSWER

    assert main(["runs", "--db", db, "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert main(["show", run["thread_id"], "--db", db, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["output"] == ANSWER and shown["status"] == "completed"
    assert main(["show", run["thread_id"], "--db", db]) == 0
    assert '"currency": "EUR"' in capsys.readouterr().out
    page = tmp_path / "run.html"
    assert main(["export", run["thread_id"], "--db", db, "--html", str(page)]) == 0
    assert "<th>Output</th>" in page.read_text() and "&quot;EUR&quot;" in page.read_text()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ({"type": "object", "properties": {"n": {"type": 7}}}, "not a valid JSON Schema"),
        ({"type": "array", "items": {"type": "number"}}, "must describe a JSON object"),
        ([1, 2], "holds a JSON list, not a JSON Schema"),
        ("{not json", "is not valid JSON"),
    ],
)
def test_a_schema_file_that_cannot_type_an_answer_is_a_one_line_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, says: str
) -> None:
    model = script(tmp_path, {"text": "{}"})
    schema = schema_file(tmp_path, content)
    code = main(["run", "x", "--model", model, "--db", str(tmp_path / "c.sqlite"),
                 "--output-schema", schema])  # fmt: skip
    err = capsys.readouterr().err
    assert code == EXIT["usage"]
    assert says in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_schema_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = script(tmp_path, {"text": "{}"})
    missing = str(tmp_path / "nope.json")
    code = main(["run", "x", "--model", model, "--output-schema", missing])
    assert code == EXIT["usage"]
    assert "nope.json" in capsys.readouterr().err


def test_a_streamed_typed_run_prints_its_json_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, {"text": "sixty-eight euros " * 20}, {"text": json.dumps(ANSWER)})
    schema = schema_file(tmp_path, SCHEMA)
    argv = ["run", "total?", "--model", model, "--db", str(tmp_path / "c.sqlite"),
            "--output-schema", schema, "--stream", "--quiet"]  # fmt: skip
    assert main(argv) == EXIT["completed"]
    out = capsys.readouterr().out
    assert "sixty-eight" not in out  # the prose is no final answer of a typed run
    assert out.count('"currency": "EUR"') == 1
    assert json.loads(out[out.index("{") :]) == ANSWER
