"""UserPlan lives in its own module; the state and the package name it, imported on first use."""

from __future__ import annotations

import pytest

import ai_agent
import ai_agent.state
from ai_agent.user_plan import UserPlan
from tests.test_layering import imported_by


def test_the_state_and_the_package_name_the_one_class() -> None:
    assert ai_agent.state.UserPlan is UserPlan
    assert ai_agent.UserPlan is UserPlan
    assert "UserPlan" in ai_agent.state.__all__


def test_a_name_the_state_does_not_have_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Plan'"):
        _ = ai_agent.state.Plan
    assert not hasattr(ai_agent.state, "Plan")


def test_reading_the_state_types_loads_no_pydantic() -> None:
    loaded = imported_by("from ai_agent.state import RunState, GateReport")
    assert "ai_agent.state" in loaded
    assert "pydantic" not in loaded
    assert "pydantic" in imported_by("from ai_agent.state import UserPlan")
