"""--agentfloor-shard K/N: split the selected items into N disjoint parts for N machines or CI jobs.

An item's shard depends only on its node id and the set of selected node ids, never on the
order files are collected in: node ids are ordered by a hash of their text and dealt round-robin,
so shard sizes differ by at most one and every selected item lands in exactly one shard.
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterable

_SPEC = re.compile(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*")


def parse_shard(text: str) -> tuple[int, int] | None:
    """'K/N' (1 <= K <= N) -> (K, N); '' -> None; anything else raises ValueError naming what is valid."""
    if not text.strip():
        return None
    m = _SPEC.fullmatch(text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"--agentfloor-shard: expected K/N with 1 <= K <= N (e.g. 2/4), got {text[:40]!r}")
    return int(m.group(1)), int(m.group(2))


def _rank(nodeid: str) -> tuple[bytes, str]:
    return hashlib.sha256(nodeid.encode()).digest()[:8], nodeid


def shard_members(nodeids: Iterable[str], k: int, n: int) -> set[str]:
    """The node ids of shard `k` of `n` (1-based)."""
    ordered = sorted(set(nodeids), key=_rank)
    return set(ordered[k - 1::n])
