"""The argument parser of the stand-alone commands (report, view, compare): usage errors in one line.

A module of its own so that each command imports it without importing another command.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")
