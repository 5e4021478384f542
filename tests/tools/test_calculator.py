"""Tests for the calculator's evaluator: a table of results, every error path, and properties."""

from __future__ import annotations

import ast
import time
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ai_agent.tools.builtin import calculator
from ai_agent.tools.builtin.calculator import CalculatorError, evaluate, format_number

RESULTS = [
    # plain arithmetic and precedence
    ("1 + 2 * 3", "7"),
    ("(1 + 2) * 3", "9"),
    ("10 - 4 - 3", "3"),
    ("2 * 3 / 4", "1.5"),
    ("7 // 2", "3"),
    ("-7 // 2", "-4"),
    ("7 % 3", "1"),
    ("-8 % 3", "1"),
    ("8 % (-3)", "-1"),
    ("8 % -3", "-2.92"),
    ("7 mod (-2)", "-1"),
    ("7 MOD -2", "-1"),
    ("5.5 % 2", "1.5"),
    ("0.1 + 0.2", "0.3"),
    ("1 / 3", "0.3333333333333333333333333333"),
    ("2 / 3", "0.6666666666666666666666666667"),
    ("1 / 8", "0.125"),
    # unary signs
    ("-3", "-3"),
    ("+3", "3"),
    ("--3", "3"),
    ("2 - -3", "5"),
    ("-(2 + 3)", "-5"),
    # powers
    ("2 ** 10", "1024"),
    ("2 ^ 10", "1024"),
    ("2 ^ 3 ^ 2", "512"),
    ("(2 ^ 3) ^ 2", "64"),
    ("-2 ** 2", "-4"),
    ("(-2) ** 2", "4"),
    ("2 ** -1", "0.5"),
    ("2 ** -2 ** 2", "0.0625"),
    ("4 ^ 0.5", "2"),
    ("2 ^ 0.5", "1.414213562373095048801688724"),
    ("8 ^ (1/3)", "2"),
    ("0 ^ 0", "1"),
    ("0 ^ 5", "0"),
    ("0 ^ 0.5", "0"),
    ("1 ^ 99999999999999", "1"),
    ("1 ^ -99999999999999", "1"),
    ("(-1) ^ 100000000000000", "1"),
    ("(-1) ^ 99999999999999", "-1"),
    ("(-1) ^ -99999999999999", "-1"),
    ("(-1) ^ -100000000000000", "1"),
    ("(-1) ^ 0", "1"),
    ("0 ^ 100000000000000", "0"),
    ("(1/2) ^ 3", "0.125"),
    ("2 ^ 3000 // 2 ^ 2999", "2"),
    ("2 ** 100", "1267650600228229401496703205376"),
    # numbers
    ("1e3", "1000"),
    ("2.5E-4", "0.00025"),
    ("1.5e+2", "150"),
    (".5", "0.5"),
    ("5.", "5"),
    ("007", "7"),
    ("1,234,567", "1234567"),
    ("1,234.5 * 2", "2469"),
    ("1e-30", "1E-30"),
    ("10 ^ 60", "1E+60"),
    # percentages
    ("19.5% of 349", "68.055"),
    ("349 * 19.5%", "68.055"),
    ("19.5 % of 349", "68.055"),
    ("20% off 50", "40"),
    ("50 + 10%", "55"),
    ("50 - 10%", "45"),
    ("50 + 10% * 2", "50.2"),
    ("50 + (10%)", "50.1"),
    ("50 + -10%", "49.9"),
    ("10% - 3", "-2.9"),
    ("10%", "0.1"),
    ("2 * 10% of 50", "10"),
    ("10% of 50 + 5", "10"),
    ("50% of 50% of 80", "20"),
    ("(5 + 5)% of 200", "20"),
    ("10% of -50", "-5"),
    ("-10% of 50", "-5"),
    ("10 %(3)", "1"),
    ("10% ^ 2", "0.01"),
    # natural language around the expression
    ("what is 2 + 2?", "4"),
    ("What's 19.5% of 349?", "68.055"),
    ("what\u2019s 2 ^ 5", "32"),
    ("WHAT IS 1 + 1", "2"),
    ("calc 6 * 7", "42"),
    ("Calculate: 6 * 7 =", "42"),
    ("compute (1 + 1)", "2"),
    ("evaluate 3^2 ?", "9"),
    ("  12 / 4 =  ", "3"),
    # typographic operators
    ("3 \u00d7 4", "12"),
    ("3 \u00b7 4", "12"),
    ("12 \u00f7 4", "3"),
    ("5 \u2212 7", "-2"),
]


@pytest.mark.parametrize(("expression", "expected"), RESULTS)
def test_evaluate(expression: str, expected: str) -> None:
    assert format_number(evaluate(expression)) == expected


def test_results_are_decimals_and_integers_are_exact() -> None:
    assert evaluate("2 ** 200") == Decimal(2**200)
    assert evaluate("10 ** 30 + 1 / 3") == Decimal("1000000000000000000000000000000.333333")
    assert isinstance(evaluate("1 / 3"), Decimal)


ERRORS = [
    ("2 +* 3", "cannot parse \"2 +* 3\": unexpected '*' at position 4; expected a number or '('"),
    ("2 +", "unexpected end of input at position 4; expected a number or '('"),
    ("2 3", "unexpected number 3 at position 3; expected an operator or the end of the expression"),
    ("2)", "unexpected ')' at position 2; expected an operator or the end of the expression"),
    ("(1 + 2", "at position 7; expected an operator or ')' to close the '(' at position 1"),
    ("()", "unexpected ')' at position 2; expected a number or '('"),
    ("2(3)", "unexpected '(' at position 2; expected an operator or the end"),
    ("10 mod", "unexpected end of input at position 7; expected a number or '('"),
    ("5 of 3", "unexpected word 'of' at position 3; expected an operator or the end"),
    ("2 = 3", "unexpected '=' at position 3; expected a number, an operator or a parenthesis"),
    ("2 & 3", "unexpected '&' at position 3"),
    ("1.2.3", "unexpected number .3 at position 4"),
    ("1,5", "unexpected ',' at position 2; a ',' is only a thousands separator"),
    ("1,2345", "unexpected ',' at position 2"),
    ("what is 2 +", "unexpected end of input at position 12"),
    ("x + 1", "unknown word 'x' at position 1; only 'of', 'off' and 'mod' are understood"),
    ("calculator 2", "unknown word 'calculator' at position 1"),
    ("2e", "unknown word 'e' at position 2"),
    ("", 'cannot parse "": nothing to calculate'),
    ("   ", "nothing to calculate"),
    ("what is ?", "nothing to calculate"),
    ("1 / 0", 'cannot evaluate "1 / 0": division by zero at position 3'),
    ("1 // (2 - 2)", "division by zero at position 3"),
    ("1 % 0", "division by zero at position 3"),
    ("1 mod 0", "division by zero at position 3"),
    ("0 ^ -1", "division by zero at position 3"),
    ("0 ^ -0.5", "division by zero at position 3"),
    ("(-8) ^ 0.5", "a negative number to a fractional power has no real value at position 6"),
    ("9**9**9", "the result has more than about 1000 digits at position 2"),
    ("10 ^ 1001", "more than about 1000 digits at position 4"),
    ("3 ^ 2100", "more than about 1000 digits at position 3"),
    ("10 ^ 1000 * 10", "more than about 1000 digits at position 11"),
    ("10 ^ 600 + 10 ^ 600 * 10 ^ 600", "more than about 1000 digits at position 21"),
    ("2 ^ 3321 + 2 ^ 3321", "more than about 1000 digits at position 10"),
    ("1 / 2 ^ 3321 - 1 / 3 ^ 2000", "more than about 1000 digits at position 14"),
    ("1e600 * 1e600", "more than about 1000 digits at position 7"),
    ("(1/3) ^ 3000", "more than about 1000 digits at position 7"),
    ("2 ^ -3300.5", "more than about 1000 digits at position 3"),
    ("2 ^ 4000.5", "more than about 1000 digits at position 3"),
    ("2 ^ -4000.5", "more than about 1000 digits at position 3"),
    ("1e999 % of 1e999", "more than about 1000 digits at position 9"),
    ("1e999 % off 1e999", "more than about 1000 digits at position 9"),
    ("1e1001", "the number at position 1 has more than about 1000 digits"),
    ("1e-1001", "the number at position 1 has more than about 1000 digits"),
    ("2 + 1e999999999", "the number at position 5 has more than about 1000 digits"),
    ("9" * 990 + "e20", "the number at position 1 has more than about 1000 digits"),
    ("10%%", "unexpected end of input at position 5; expected a number or '('"),
    ("(" * 65 + "1" + ")" * 65, "nested more than 64 levels deep at position 65"),
    ("-" * 65 + "1", "nested more than 64 levels deep at position 65"),
    ("2" + "^2" * 65, "nested more than 64 levels deep at position 130"),
]


@pytest.mark.parametrize(("expression", "message"), ERRORS)
def test_errors_name_the_position_and_what_was_expected(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError) as info:
        evaluate(expression)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_error_carries_the_position() -> None:
    with pytest.raises(CalculatorError) as info:
        evaluate("2 +* 3")
    assert info.value.position == 4
    with pytest.raises(CalculatorError) as info:
        evaluate("")
    assert info.value.position is None


def test_too_long_input_is_refused_without_echo() -> None:
    text = "1+" * 500 + "1"
    with pytest.raises(CalculatorError) as info:
        evaluate(text)
    assert str(info.value) == "expression too long: 1001 characters, at most 1000"
    assert format_number(evaluate("1+" * 499 + "1")) == "500"


def test_huge_powers_are_refused_quickly() -> None:
    started = time.perf_counter()
    for expression in ("9**9**9", "2 ^ 10 ^ 100", "1.0001 ^ 1e900", "(3/2) ^ -99999999"):
        with pytest.raises(CalculatorError, match="more than about 1000 digits"):
            evaluate(expression)
    assert time.perf_counter() - started < 1.0


def test_the_deepest_allowed_nesting_works() -> None:
    assert evaluate("(" * 64 + "1" + ")" * 64) == 1
    assert evaluate("-" * 64 + "1") == 1


def test_no_eval_exec_or_compile() -> None:
    with open(calculator.__file__, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert called  # the walk sees calls at all
    assert not called & {"eval", "exec", "compile", "__import__", "getattr"}


# --- format_number -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("68.0550", "68.055"),
        ("2", "2"),
        ("2.000", "2"),
        ("0.5", "0.5"),
        ("-0.50", "-0.5"),
        ("0", "0"),
        ("-0.000", "0"),
        ("1E+3", "1000"),
        ("1234567.000", "1234567"),
        ("0.00001", "0.00001"),
        ("1E-20", "0.00000000000000000001"),
        ("1E-21", "1E-21"),
        ("9.99E+49", "99900000000000000000000000000000000000000000000000"),
        ("1E+50", "1E+50"),
        ("-1.2300E+60", "-1.23E+60"),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
    ],
)
def test_format_number(value: str, expected: str) -> None:
    assert format_number(Decimal(value)) == expected


def test_format_number_keeps_every_digit_of_a_long_integer() -> None:
    value = Decimal(2**150 + 1)
    assert format_number(value) == str(2**150 + 1)


# --- properties against Python arithmetic --------------------------------------------------------

LITERALS = st.integers(min_value=0, max_value=1000).map(str)


def _binary(parts: tuple[str, str, str]) -> str:
    left, operator, right = parts
    if operator == "%" and right.startswith(("-", "+")):
        # A sign after % makes it a percent sign in this grammar (documented); Python reads modulo.
        right = f"({right})"
    return f"{left} {operator} {right}"


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", "//", "%"]), children).map(_binary),
        children.map(lambda child: f"-{child}"),
        children.map(lambda child: f"({child})"),
        # The base is parenthesised and the exponent a small literal: chains such as
        # 9 ** 9 ** 9 would hang Python, the oracle, not the calculator.
        st.tuples(children, st.integers(0, 3)).map(lambda t: f"({t[0]}) ** {t[1]}"),
    )


INTEGER_EXPRESSIONS = st.recursive(LITERALS, _extend, max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(INTEGER_EXPRESSIONS)
def test_integer_expressions_match_python(expression: str) -> None:
    try:
        expected = eval(expression, {"__builtins__": {}})  # the oracle; only generated text
    except ZeroDivisionError:
        with pytest.raises(CalculatorError, match="division by zero"):
            evaluate(expression)
        return
    assert evaluate(expression) == expected


def _fraction_binary(
    parts: tuple[tuple[str, Fraction | None], str, tuple[str, Fraction | None]],
) -> tuple[str, Fraction | None]:
    (left_text, left), operator, (right_text, right) = parts
    text = f"({left_text}) {operator} ({right_text})"
    if left is None or right is None:
        return text, None
    if operator == "/":
        return text, None if right == 0 else left / right
    return text, {"+": left + right, "-": left - right, "*": left * right}[operator]


DECIMAL_LITERALS = st.decimals(
    min_value=-1000, max_value=1000, places=3, allow_nan=False, allow_infinity=False
).map(lambda d: (str(d), Fraction(d)))

RATIONAL_EXPRESSIONS = st.recursive(
    DECIMAL_LITERALS,
    lambda children: st.tuples(children, st.sampled_from(["+", "-", "*", "/"]), children).map(
        _fraction_binary
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(RATIONAL_EXPRESSIONS)
def test_division_matches_exact_fractions(case: tuple[str, Fraction | None]) -> None:
    expression, expected = case
    if expected is None:
        with pytest.raises(CalculatorError, match="division by zero"):
            evaluate(expression)
        return
    result = evaluate(expression)
    if expected.denominator == 1:
        assert result == expected.numerator
    else:
        # Rounded to at least 28 significant digits: relative error below 1e-27.
        assert abs(Fraction(result) - expected) <= abs(expected) / 10**27


@settings(max_examples=200, deadline=None)
@given(st.decimals(min_value=-(10**12), max_value=10**12, places=6, allow_nan=False))
def test_format_number_round_trips(value: Decimal) -> None:
    text = format_number(value)
    assert "E" not in text
    assert Decimal(text) == value
    assert evaluate(text.lstrip("-")) == abs(value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_text_gives_a_value_or_a_calculator_error(text: str) -> None:
    try:
        result = evaluate(text)
    except CalculatorError:
        return
    assert isinstance(result, Decimal)
