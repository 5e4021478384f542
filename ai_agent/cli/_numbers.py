r"""Numbers typed on the command line, read as typed: argparse ``type`` functions.

``int()`` and ``float()`` take the digits of every script (``int("\u0661")``, an Arabic-Indic
one, is 1), ``float()`` takes "nan" and "inf", and a negative count reaches SQLite's LIMIT,
where -1 means no limit at all.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["amount_arg", "count_arg"]

# Eighteen digits keep a count within SQLite's 64-bit integers.
_MAX_COUNT_DIGITS = 18


def count_arg(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of ASCII digits, at least ``minimum``."""

    def count(text: str) -> int:
        digits = text.isascii() and text.isdigit() and len(text) <= _MAX_COUNT_DIGITS
        if not digits or int(text) < minimum:
            raise argparse.ArgumentTypeError(
                f"give a whole number of at least {minimum} in the digits 0-9, such as "
                f"{max(minimum, 5)} (got {text[:20]!r})"
            )
        return int(text)

    return count


def amount_arg(*, positive: bool) -> Callable[[str], float]:
    """An argparse ``type``: a finite decimal number in ASCII, more than 0 or not negative."""
    least = "more than 0" if positive else "0 or more"

    def amount(text: str) -> float:
        try:
            value = float(text) if text.isascii() else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(
                f"give a number {least} in the digits 0-9, such as 2 or 0.5 (got {text[:20]!r})"
            )
        return value

    return amount
