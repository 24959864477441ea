"""The argument parser of the stand-alone commands (report, view, compare): usage errors in one line.

A module of its own so that each command imports it without importing another command.
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def whole_number(minimum: int, maximum: int | None = None) -> Any:
    """An argparse type: a whole number within [minimum, maximum]; anything else is a usage error."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum or (maximum is not None and value > maximum):
            valid = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
            raise argparse.ArgumentTypeError(f"expected a whole number {valid}, got {text[:40]!r}")
        return value

    parse.__name__ = "whole number"
    return parse


#: the most bootstrap resamples a command takes: 10,000 is the default, a million is already minutes and
#: gigabytes; more is a typo (10**12 asked numpy for 7 TiB)
MAX_BOOT = 1_000_000


def number_in(low: float, high: float) -> Any:
    """An argparse type: a finite number within [low, high]; NaN, inf and anything else are usage errors."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not low <= value <= high:  # also NaN
            raise argparse.ArgumentTypeError(f"expected a number from {low:g} to {high:g}, got {text[:40]!r}")
        return value

    parse.__name__ = "number"
    return parse
