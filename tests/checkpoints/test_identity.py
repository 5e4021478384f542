"""The prefix identity check the delta saver uses to recognise an append."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agent.checkpoints import _identity
from ai_agent.checkpoints._identity import same_prefix


@pytest.mark.parametrize("check", [same_prefix, _identity._slow])
def test_same_objects_not_equal_ones(check: Any) -> None:
    items = [{"i": i} for i in range(500)]
    grown = [*items, {"i": 500}]
    copied = [*items]
    copied[250] = dict(items[250])  # equal, but another object
    assert check(items, grown, 500)
    assert not check(items, copied, 500)
    assert check(items, copied, 250)
    assert not check(items, copied, 251)
    assert check([], [], 0)
    assert check([1], [2], 0)


def test_the_fast_path_is_probed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_identity, "_checked", False)
    monkeypatch.setattr(_identity, "_pointer_compare", lambda: None)
    items = [object(), object()]
    assert same_prefix(items, [*items], 2)  # the item-by-item comparison answers
    assert _identity._fast is None
