"""The configuration reference cannot drift from ``AgentSettings``."""

from __future__ import annotations

from pydantic import BaseModel

from ai_agent.config import AgentSettings
from tests.docs.settings_table import PAGE, _section, _sections, current, generate


def test_the_page_holds_the_generated_tables() -> None:
    assert current(PAGE.read_text(encoding="utf-8")) == generate(), (
        "docs/configuration.md is behind the settings: run `uv run python -m "
        "tests.docs.settings_table` and commit the page"
    )


def test_every_setting_says_what_it_does() -> None:
    missing = [
        f"{model.__name__}.{name}"
        for _, model in _sections(AgentSettings, [])
        if issubclass(model, BaseModel)
        for name, field in model.model_fields.items()
        if _section(field.annotation) is None and not field.description
    ]
    assert missing == []


def test_every_section_has_a_table() -> None:
    text = generate()
    for section in ("model_backend", "tool_config.bash", "retry", "budget", "observability"):
        assert f"### `{section}`" in text
