"""A safe arithmetic evaluator for the built-in ``calculator`` tool.

The input is never handed to ``eval``, ``exec`` or ``compile``: a small tokenizer and a
recursive-descent parser compute the value directly, with exact fractions (so ``0.1 + 0.2`` is
``0.3``), and turn it into a `Decimal` at the end.

Grammar, loosest binding first:

    expression := term (("+" | "-") term)*
    term       := unary (("*" | "/" | "//" | "%" | "mod") unary)*
    unary      := ("+" | "-") unary | power
    power      := percent (("**" | "^") unary)?        right-associative: 2^3^2 = 2^9
    percent    := primary ("%" (("of" | "off") unary)?)?
    primary    := number | "(" expression ")"
    number     := 42 | 3.14 | .5 | 1e3 | 2.5E-4 | 1,234,567.89

As in Python, ``-2**2`` is ``-4``, ``2**-1`` is ``0.5``, ``//`` floors and ``%`` takes the sign of
the divisor. ``^`` is a power, never xor. The typographic multiplication sign (U+00D7), middle
dot (U+00B7), division sign (U+00F7) and minus sign (U+2212) are read as ``*``, ``*``, ``/`` and
``-``. A ``,`` is only a thousands separator (groups of exactly three digits), never a
decimal comma.

Percentages:

* ``p%`` alone is ``p/100``: ``349 * 19.5%`` is ``68.055``.
* ``p% of x`` is ``x * p/100``: ``19.5% of 349`` is ``68.055``; it can stand wherever a number
  can, and binds like a power: ``2 * 10% of 50`` is ``10``.
* ``p% off x`` is ``x * (1 - p/100)``: ``20% off 50`` is ``40``.
* ``a + p%`` and ``a - p%`` add or take off ``p`` percent *of a*, as a pocket calculator does:
  ``50 + 10%`` is ``55``. This reading applies only when the whole right-hand term is a bare
  ``p%``; ``50 + 10% * 2`` is ``50.2``.
* ``%`` right after an operand is a percent sign unless a number or ``(`` follows, which makes it
  modulo: ``10 % 3`` is ``1`` but ``10% - 3`` is ``-2.9``. Write ``7 % (-2)`` or ``7 mod -2`` for
  modulo by a negative number.

A leading ``calc``, ``calculate``, ``compute``, ``evaluate``, ``what is`` or ``what's`` (any case)
and trailing ``?`` or ``=`` are ignored, so ``what is 2 + 2?`` works. Error positions count from
the start of the text as given, prefix included.

Limits keep every input fast: at most 1,000 characters, 64 levels of nesting, and no number
(including any intermediate result) beyond about 1,000 digits, so ``9**9**9`` is refused at once
rather than computed. Integer results are exact; other results keep every digit of their integer
part and at least 28 significant digits.

Examples:
    >>> format_number(evaluate("what is 19.5% of 349?"))
    '68.055'
    >>> format_number(evaluate("50 + 10%"))
    '55'
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Context, Decimal, Overflow, Underflow
from fractions import Fraction
from typing import Literal

__all__ = ["CalculatorError", "evaluate", "format_number"]

MAX_EXPRESSION_LENGTH = 1000
MAX_DEPTH = 64
MAX_DIGITS = 1000
PRECISION = 28

# Every number of MAX_DIGITS digits fits in this many bits (10**1000 < 2**3322), so the bound is
# "about" MAX_DIGITS digits: it also lets through 10**1000 itself.
_MAX_BITS = (MAX_DIGITS * 33220 + 9999) // 10000
# Plain notation for 1e-20 <= |x| < 1e50; exponent notation beyond, where a string of zeros
# would hide the size rather than show it.
_PLAIN_MIN_EXPONENT = -20
_PLAIN_MAX_EXPONENT = 49

_PREFIX = re.compile(
    r"\s*(?:what\s+is|what['\u2019]s|calculate|calc|compute|evaluate)(?![A-Za-z])[\s:]*",
    re.IGNORECASE,
)
_SUFFIX = re.compile(r"[\s?=]*\Z")
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>
        (?: \d{1,3} (?:,\d{3})+ (?![\d,]) | \d+ ) (?:\.\d*)?   # 1,234 or 1234, then .5 or .
      | \.\d+                                               # .5
    ) (?P<exponent>[eE][+-]?\d+)?
  | (?P<op>\*\*|//|[-+*/%^()\u00d7\u00b7\u00f7\u2212])
  | (?P<word>[A-Za-z]+)
    """,
    re.VERBOSE,
)
_OPERATOR_ALIASES = {"\u00d7": "*", "\u00b7": "*", "\u00f7": "/", "\u2212": "-"}
_WORDS = ("of", "off", "mod")


class CalculatorError(ValueError):
    """The expression cannot be parsed or evaluated.

    Attributes:
        position: 1-based character position of the problem in the input, when there is one.

    Examples:
        >>> try:
        ...     evaluate("2 +* 3")
        ... except CalculatorError as exc:
        ...     print(exc)
        cannot parse "2 +* 3": unexpected '*' at position 4; expected a number or '('
    """

    def __init__(self, message: str, *, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


@dataclass(frozen=True)
class _Token:
    kind: Literal["number", "op", "word", "end"]
    text: str
    index: int  # 0-based offset in the original input
    value: Fraction = Fraction(0)

    def describe(self) -> str:
        if self.kind == "end":
            return "end of input"
        if self.kind == "number":
            return f"number {self.text}"
        if self.kind == "word":
            return f"word {self.text!r}"
        return repr(self.text)


def evaluate(expression: str) -> Decimal:
    """Evaluate an arithmetic expression (grammar in the module docstring).

    Args:
        expression: The text to evaluate, such as ``"349 * 19.5%"`` or ``"what is 2^10?"``.

    Returns:
        The value; exact for integers, else with at least 28 significant digits.

    Raises:
        CalculatorError: The text is not an expression this grammar accepts, divides by zero,
            or a number grows beyond the limits. The message names the position and what was
            expected there.

    Examples:
        >>> evaluate("(1 + 2) * 3 // 2")
        Decimal('4')
        >>> evaluate("0.1 + 0.2")
        Decimal('0.3')
    """
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CalculatorError(
            f"expression too long: {len(expression)} characters, at most {MAX_EXPRESSION_LENGTH}"
        )
    tokens = _tokenize(expression)
    return _to_decimal(_Parser(expression, tokens).parse())


def format_number(value: Decimal) -> str:
    """Write a number for people: no exponent for ordinary sizes, no trailing zeros.

    Args:
        value: Any Decimal; NaN and infinities are written as Decimal writes them.

    Returns:
        ``"68.055"``, ``"2"``, ``"0.5"``, ``"-1234567"``; beyond ``1e50`` or below ``1e-20``
        in magnitude, exponent notation such as ``"1.5E+60"``.

    Examples:
        >>> format_number(Decimal("2.500")), format_number(Decimal("1E+3"))
        ('2.5', '1000')
    """
    if not value.is_finite():
        return str(value)
    if value.is_zero():
        return "0"
    # normalize() rounds to the context precision; give it room for every digit.
    digits = len(value.as_tuple().digits)
    normal = value.normalize(Context(prec=max(digits, 1)))
    if _PLAIN_MIN_EXPONENT <= normal.adjusted() <= _PLAIN_MAX_EXPONENT:
        return format(normal, "f")
    return format(normal, "E")


# --- tokenizer -----------------------------------------------------------------------------------


def _tokenize(source: str) -> list[_Token]:
    """Split the input into tokens, skipping a natural-language prefix and a trailing ?/=."""
    start = 0
    prefix = _PREFIX.match(source)
    if prefix:
        start = prefix.end()
    suffix = _SUFFIX.search(source, start)
    end = suffix.start() if suffix else len(source)
    tokens: list[_Token] = []
    index = start
    while index < end:
        match = _TOKEN.match(source, index, end)
        if match is None:
            raise _unexpected_character(source, index)
        index = match.end()
        kind = match.lastgroup
        if kind == "space":
            continue
        tokens.append(_make_token(source, match))
    tokens.append(_Token("end", "", end))
    if len(tokens) == 1:
        raise CalculatorError(
            f"cannot parse \"{source}\": nothing to calculate; expected a number or '('"
        )
    return tokens


def _make_token(source: str, match: re.Match[str]) -> _Token:
    start = match.start()
    if match.group("number") is not None:
        return _Token("number", match.group(0), start, _parse_number(source, match))
    if match.group("op") is not None:
        text = match.group("op")
        return _Token("op", _OPERATOR_ALIASES.get(text, text), start)
    word = match.group("word").lower()
    if word not in _WORDS:
        raise CalculatorError(
            f'cannot parse "{source}": unknown word {match.group("word")!r} at position '
            f"{start + 1}; only 'of', 'off' and 'mod' are understood",
            position=start + 1,
        )
    return _Token("word", word, start)


def _parse_number(source: str, match: re.Match[str]) -> Fraction:
    whole, _, fraction = match.group("number").replace(",", "").partition(".")
    exponent_text = match.group("exponent")
    exponent = int(exponent_text[1:]) if exponent_text else 0
    # The exponent is checked before 10**exponent is built: 1e999999999 must not be computed.
    if abs(exponent) <= MAX_DIGITS:
        value = Fraction(int(whole + fraction), 10 ** len(fraction)) * Fraction(10) ** exponent
        if not _too_big(value):
            return value
    raise CalculatorError(
        f'cannot evaluate "{source}": the number at position {match.start() + 1} has more '
        f"than about {MAX_DIGITS} digits",
        position=match.start() + 1,
    )


def _unexpected_character(source: str, index: int) -> CalculatorError:
    char = source[index]
    if char == ",":
        hint = "a ',' is only a thousands separator, as in 1,234,567"
    else:
        hint = "expected a number, an operator or a parenthesis"
    return CalculatorError(
        f'cannot parse "{source}": unexpected {char!r} at position {index + 1}; {hint}',
        position=index + 1,
    )


# --- parser and evaluation -----------------------------------------------------------------------

_ADDITIVE = ("+", "-")
_MULTIPLICATIVE = ("*", "/", "//", "%", "mod")
_POWER = ("**", "^")


class _Parser:
    """Recursive descent over the token list; each method is one rule of the grammar."""

    def __init__(self, source: str, tokens: list[_Token]) -> None:
        self.source = source
        self.tokens = tokens
        self.position = 0
        self.depth = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.position]

    def advance(self) -> _Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def parse(self) -> Fraction:
        value = self.expression()
        if self.token.kind != "end":
            raise self.unexpected("an operator or the end of the expression")
        return value

    def expression(self) -> Fraction:
        value, _ = self.term()
        while self.token.text in _ADDITIVE:
            operator = self.advance()
            right, percent = self.term()
            if percent is not None:  # "a + p%": p percent of a, as a pocket calculator reads it
                right = value * percent
            value = self.check_size(
                value + right if operator.text == "+" else value - right, operator
            )
        return value

    def term(self) -> tuple[Fraction, Fraction | None]:
        """Returns the value and, if the term is a bare ``p%``, the ratio ``p/100``."""
        value, percent = self.unary()
        while self.token.text in _MULTIPLICATIVE:
            operator = self.advance()
            right, _ = self.unary()
            product = value * right if operator.text == "*" else self.divide(value, right, operator)
            value = self.check_size(product, operator)
            percent = None
        return value, percent

    def unary(self) -> tuple[Fraction, Fraction | None]:
        if self.token.text not in _ADDITIVE:
            return self.power()
        sign = self.advance()
        with self.nested(sign):
            value, _ = self.unary()
        return (-value if sign.text == "-" else value), None

    def power(self) -> tuple[Fraction, Fraction | None]:
        base, percent = self.percent()
        if self.token.text not in _POWER:
            return base, percent
        operator = self.advance()
        with self.nested(operator):
            exponent, _ = self.unary()  # unary recurses into power: right-associative
        return _power(base, exponent, self, operator), None

    def percent(self) -> tuple[Fraction, Fraction | None]:
        value = self.primary()
        if self.token.text != "%" or self.next_starts_operand():
            return value, None
        self.advance()
        ratio = value / 100
        if self.token.text not in ("of", "off"):
            return ratio, ratio
        word = self.advance()
        with self.nested(word):
            whole, _ = self.unary()
        result = whole * ratio if word.text == "of" else whole * (1 - ratio)
        return self.check_size(result, word), None

    def primary(self) -> Fraction:
        token = self.token
        if token.kind == "number":
            self.advance()
            return token.value
        if token.text != "(":
            raise self.unexpected("a number or '('")
        self.advance()
        with self.nested(token):
            value = self.expression()
        if self.token.text != ")":
            raise self.unexpected(
                f"an operator or ')' to close the '(' at position {token.index + 1}"
            )
        self.advance()
        return value

    def next_starts_operand(self) -> bool:
        following = self.tokens[self.position + 1]
        return following.kind == "number" or following.text == "("

    @contextmanager
    def nested(self, token: _Token) -> Iterator[None]:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nested more than {MAX_DEPTH} levels deep", token, verb="parse")
        try:
            yield
        finally:
            self.depth -= 1

    def divide(self, left: Fraction, right: Fraction, operator: _Token) -> Fraction:
        if right == 0:
            raise self.error("division by zero", operator)
        if operator.text == "/":
            return left / right
        if operator.text == "//":
            return Fraction(left // right)
        return left % right  # "%" and "mod": Python's modulo, the sign of the divisor

    def check_size(self, value: Fraction, token: _Token) -> Fraction:
        if _too_big(value):
            raise self.error(f"the result has more than about {MAX_DIGITS} digits", token)
        return value

    def unexpected(self, expected: str) -> CalculatorError:
        problem = f"unexpected {self.token.describe()}"
        return self.error(problem, self.token, verb="parse", hint=f"expected {expected}")

    def error(
        self, problem: str, token: _Token, *, verb: str = "evaluate", hint: str = ""
    ) -> CalculatorError:
        position = token.index + 1
        tail = f"; {hint}" if hint else ""
        return CalculatorError(
            f'cannot {verb} "{self.source}": {problem} at position {position}{tail}',
            position=position,
        )


def _power(base: Fraction, exponent: Fraction, parser: _Parser, operator: _Token) -> Fraction:
    if exponent.denominator == 1:
        return _integer_power(base, exponent.numerator, parser, operator)
    if base < 0:
        raise parser.error("a negative number to a fractional power has no real value", operator)
    if base == 0:
        if exponent < 0:
            raise parser.error("division by zero", operator)
        return Fraction(0)
    # Irrational in general: computed in Decimal with guard digits, then kept as a fraction.
    context = Context(
        prec=PRECISION + 12, Emax=MAX_DIGITS, Emin=-MAX_DIGITS, traps=[Overflow, Underflow]
    )
    try:
        result = context.power(_decimal(base, context), _decimal(exponent, context))
    except (Overflow, Underflow):
        raise parser.error(
            f"the result has more than about {MAX_DIGITS} digits", operator
        ) from None
    return parser.check_size(Fraction(result), operator)


def _integer_power(base: Fraction, exponent: int, parser: _Parser, operator: _Token) -> Fraction:
    if base == 0 and exponent < 0:
        raise parser.error("division by zero", operator)
    # 0, 1 and -1 stay small under any exponent, which the size estimate below cannot see.
    if base in (0, 1):
        return base if exponent else Fraction(1)
    if base == -1:
        return Fraction(-1 if exponent % 2 else 1)
    # Estimate from below before computing (size - 1 <= log2 of the larger part), so 9**9**9 is
    # refused at once; the exact check on the result follows.
    size = max(base.numerator.bit_length(), base.denominator.bit_length())
    if abs(exponent) * (size - 1) > _MAX_BITS:
        raise parser.error(f"the result has more than about {MAX_DIGITS} digits", operator)
    return parser.check_size(base**exponent, operator)


def _too_big(value: Fraction) -> bool:
    return max(value.numerator.bit_length(), value.denominator.bit_length()) > _MAX_BITS


def _decimal(value: Fraction, context: Context) -> Decimal:
    return context.divide(Decimal(value.numerator), Decimal(value.denominator))


def _to_decimal(value: Fraction) -> Decimal:
    if value.denominator == 1:
        return Decimal(value.numerator)
    # Keep every digit of the integer part, and at least PRECISION significant digits.
    integer_digits = len(str(abs(value.numerator) // value.denominator))
    return _decimal(value, Context(prec=max(PRECISION, integer_digits + 6)))
