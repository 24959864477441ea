"""Node ids of benchmark items: the one place they are built.

pytest builds a parametrized id as ``<file>::<name>[<params>]`` and, from pytest 9.2, keeps
``[<params>]`` as a separate part of the id (``NodeId.with_params``). An id written by hand as
one name compares unequal with what ``--lf``, ``--ff``, ``--sw`` and ``--deselect`` read back
from the cache (pytest-dev/pytest#15045), so the item passes its full node id explicitly: the
string parses the same way on pytest 8 and 9. Items and records use this; config.py keeps
model names to characters that cannot break it (no ``::``, brackets or whitespace).
"""

from __future__ import annotations

import re


def params(variant: str, instance: str, run: int, model: str) -> str:
    """The ``[...]`` part of an item's id, e.g. ``v0-i0-r0-oracle``."""
    return f"{variant}-{instance}-r{run}-{model}"


def item_name(case_id: str, variant: str, instance: str, run: int, model: str) -> str:
    """The item's name as pytest shows it: ``A1[v0-i0-r0-oracle]``."""
    return f"{case_id}[{params(variant, instance, run, model)}]"


def item_nodeid(file_nodeid: str, case_id: str, variant: str, instance: str, run: int, model: str) -> str:
    """The item's full node id: ``cases/tier_A/A1.toml::A1[v0-i0-r0-oracle]``."""
    return f"{file_nodeid}::{item_name(case_id, variant, instance, run, model)}"


def split_nodeid(nodeid: str) -> tuple[str, str, str | None]:
    """(file part, case id, model) of a benchmark node id; model is None when no params are given."""
    path, _, rest = nodeid.partition("::")
    m = re.fullmatch(r"([^\[]*)(?:\[(v\d+)-(i\d+)-r(\d+)-(.+)\])?", rest)
    if not m:
        return path, rest, None
    return path, m.group(1), m.group(5)
