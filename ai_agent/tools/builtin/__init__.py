"""Built-in tools, activated by name (``Agent(tools=["calculator"])``, ``--tools calculator``)."""

from __future__ import annotations

from typing import Any

from ai_agent.state import ToolResult
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = ["builtin_tools"]


def _calculator(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
    from ai_agent.tools.builtin.calculator import CalculatorError, evaluate, format_number

    expression = args.get("expression")
    if not isinstance(expression, str) or not expression.strip():
        return ToolResult(
            status="error",
            error="give an arithmetic expression, e.g. '19.5% of 349'",
            meta={"code": "BAD_ARGUMENTS"},
        )
    try:
        value = evaluate(expression)
    except CalculatorError as exc:
        return ToolResult(status="error", error=str(exc), meta={"code": "CANNOT_PARSE"})
    return ToolResult(status="ok", content=format_number(value))


CALCULATOR = ToolSpec(
    name="calculator",
    fn=_calculator,
    description="Evaluate an arithmetic expression exactly: + - * / // % ** ^, parentheses, and "
    "percentages such as '19.5% of 349' or '50 + 10%'. Returns the number.",
    parameters={
        "type": "object",
        "properties": {
            "expression": {"type": "string", "description": "The expression, e.g. 19.5% of 349"}
        },
        "required": ["expression"],
    },
    category=ToolCategory.READ_ONLY,
)


def builtin_tools() -> list[ToolSpec]:
    """Every built-in tool's spec (the catalog the Agent starts from)."""
    return [CALCULATOR]
