"""Fixtures for driving whole runs with scripted models."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec, UserPlan
from ai_agent.config import AgentSettings
from ai_agent.testing import ScriptedModel

MakeAgent = Callable[..., Agent]


def call(name: str, **args: Any) -> dict[str, Any]:
    """A scripted turn that calls one tool."""
    return {"tool_calls": [{"name": name, "args": args}]}


def text(value: str) -> dict[str, Any]:
    """A scripted turn that answers."""
    return {"text": value}


def count_plan_parses(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every value parsed into a UserPlan from now on (``UserPlan.model_validate``)."""
    seen: list[Any] = []
    validate = UserPlan.model_validate.__func__  # type: ignore[attr-defined]

    def counting(cls: type[UserPlan], value: Any, *args: Any, **kwargs: Any) -> UserPlan:
        seen.append(value)
        return validate(cls, value, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(UserPlan, "model_validate", classmethod(counting))
    return seen


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "checkpoints.sqlite"


@pytest.fixture
def make_agent(db: Path, tmp_path: Path) -> MakeAgent:
    def make(turns: list[Any] | None = None, **kwargs: Any) -> Agent:
        kwargs.setdefault("model", ScriptedModel(turns or [text("done")]))
        kwargs.setdefault("checkpoint_path", db)
        kwargs.setdefault("memory_path", tmp_path / "memory.jsonl")
        kwargs.setdefault("settings", AgentSettings())
        return Agent(**kwargs)

    return make


def recorder(
    log: list[dict[str, Any]],
    *,
    category: ToolCategory = ToolCategory.READ_ONLY,
    name: str = "note",
    requires_env: tuple[str, ...] = (),
    result: dict[str, Any] | None = None,
) -> ToolSpec:
    """A tool that records each call in ``log`` and returns ``result`` (default ok)."""

    def fn(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        log.append({"args": args, "ctx": ctx})
        return result or {"status": "ok", "content": f"noted {args}"}

    return ToolSpec(
        name,
        fn,
        description="Record a note.",
        category=category,
        requires_env=requires_env,
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )
