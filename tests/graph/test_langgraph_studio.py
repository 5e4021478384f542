"""LangGraph's tools see the pipeline: its JSON schemas, and the langgraph.json of `langgraph dev`.

LangGraph Studio and ``langgraph dev`` read a graph's input, output and state schemas through
pydantic, which refuses ``typing.TypedDict`` on Python < 3.12. The project supports 3.11
(``requires-python``), and this suite runs on the interpreter the project is installed with.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph.state import CompiledStateGraph
from langgraph.warnings import LangGraphDeprecatedSinceV10
from pydantic import TypeAdapter

from ai_agent.graph.build import build_graph
from ai_agent.state import RunState

ROOT = Path(__file__).resolve().parents[2]


def _oldest_python() -> tuple[int, int]:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    major, minor = spec.removeprefix(">=").split(".")[:2]
    return int(major), int(minor)


def _assert_state_schema(schema: dict[str, Any]) -> None:
    assert schema["type"] == "object"
    for channel in ("task", "messages", "issues", "status"):
        assert channel in schema["properties"], channel


def test_the_graph_schemas_build_on_this_python() -> None:
    graph = build_graph()
    _assert_state_schema(graph.get_input_jsonschema())
    _assert_state_schema(graph.get_output_jsonschema())
    # The server's state schema (what Studio's state view shows) is the state TypedDict's.
    _assert_state_schema(TypeAdapter(RunState).json_schema())


def test_this_suite_runs_on_the_oldest_supported_python() -> None:
    # The schemas above broke only below 3.12: the check means something only there.
    assert sys.version_info[:2] == _oldest_python() or sys.version_info[:2] > (3, 11)


def _load_graph(spec: str) -> Any:
    """What ``langgraph dev`` does with a ``graphs`` entry: import the file, take the name."""
    path, _, name = spec.partition(":")
    module_spec = importlib.util.spec_from_file_location("studio_graph", ROOT / path)
    assert module_spec is not None
    assert module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def test_langgraph_json_points_at_the_pipeline() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["dependencies"] == ["."]
    assert (ROOT / config["env"]).name == ".env"
    assert config["python_version"] == "{}.{}".format(*_oldest_python())
    (spec,) = config["graphs"].values()
    graph = _load_graph(spec)
    assert isinstance(graph, CompiledStateGraph)
    assert set(graph.nodes) >= {"recall", "draft", "gate", "finalize", "persist"}
    # The server brings its own checkpointer; a graph compiled with one would be refused.
    assert graph.checkpointer is None
    _assert_state_schema(graph.get_input_jsonschema())
    _assert_state_schema(graph.get_output_jsonschema())
    # What the server's /schemas asks besides: a context schema it can render, and the config's.
    assert graph.get_context_jsonschema() is None
    with pytest.warns(LangGraphDeprecatedSinceV10):  # the server still asks it (langgraph < 0.6)
        assert graph.config_schema().model_json_schema()["type"] == "object"


@pytest.mark.parametrize("method", ["get_input_jsonschema", "get_output_jsonschema"])
def test_schemas_are_plain_json(method: str) -> None:
    schema = getattr(build_graph(), method)()
    assert json.loads(json.dumps(schema)) == schema
