"""Fixtures: captured engine logs, an in-memory span exporter, a mock model server, agents."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ai_agent import Agent
from ai_agent.config import AgentSettings, LoggingConfig
from ai_agent.observability import configure_logging, unconfigure_logging
from ai_agent.testing import MockOpenAIServer, ScriptedModel

KEY = "sk-canary-0b5e7d2f9a41"

MakeAgent = Callable[..., Agent]


def call(name: str, **args: Any) -> dict[str, Any]:
    """A scripted turn that calls one tool."""
    return {"tool_calls": [{"name": name, "args": args}]}


def text(value: str) -> dict[str, Any]:
    """A scripted turn that answers."""
    return {"text": value}


class Logs:
    """The engine's log output, captured through configure_logging."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    def start(self, level: str = "DEBUG", *, structured: bool = True, **config: Any) -> Logs:
        configure_logging(
            LoggingConfig(level=level, structured=structured, **config), stream=self.stream
        )
        return self

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text.splitlines() if line.startswith("{")]

    def where(self, **match: Any) -> list[dict[str, Any]]:
        return [r for r in self.records() if all(r.get(k) == v for k, v in match.items())]


@pytest.fixture
def logs() -> Iterator[Logs]:
    captured = Logs()
    yield captured
    unconfigure_logging()


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


def spans_by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        out.setdefault(span.name, []).append(span)
    return out


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(api_key=KEY) as mock:
        yield mock


@pytest.fixture
def make_agent(tmp_path: Path) -> MakeAgent:
    """An Agent on a scripted model (``turns``) or on ``server``; settings as keyword sections."""

    def make(
        turns: list[Any] | None = None,
        *,
        server: MockOpenAIServer | None = None,
        settings: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Agent:
        values = dict(settings or {})
        if server is not None:
            backend = {"base_url": server.base_url, "api_key": KEY, "model": "mock-model"}
            values["model_backend"] = {**backend, **values.get("model_backend", {})}
        else:
            kwargs.setdefault("model", ScriptedModel(turns or [text("done")]))
        kwargs.setdefault("checkpoint_path", tmp_path / "runs" / "checkpoints.sqlite")
        kwargs.setdefault("memory_path", None)
        return Agent(settings=AgentSettings(_env_file=None, **values), **kwargs)

    return make
