"""The scenarios, one module per area; importing a module registers its scenarios (harness.scenario)."""

from __future__ import annotations

import importlib

MODULES = ("inputs", "endpoints", "replies", "graders", "kills", "files", "secrets", "attacks")


def load_all() -> None:
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
