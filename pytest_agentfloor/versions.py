"""Case versions: a run of a changed case file is not a run of the same item.

Every record carries its case's content hash (`case_hash`, the case file's bytes). Pairing two
runs of one (task, variant, instance, run) is only a comparison of models when both ran the same
case version; the gate, `compare` and `--resume` name the cases whose versions differ and refuse
to pair them unless told to (`--agentfloor-allow-changed-cases`, `compare --allow-changed-cases`).
"""

from __future__ import annotations

from typing import Any, Iterable

ALLOW_FLAG = "--agentfloor-allow-changed-cases"


def _hashes(records: Iterable[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in records:
        h = r.get("case_hash")
        if isinstance(h, str) and h and isinstance(r.get("task"), str):
            out.setdefault(r["task"], set()).add(h)
    return out


def changed_cases(candidate: Iterable[dict[str, Any]], baseline: Iterable[dict[str, Any]]) -> list[str]:
    """Tasks present on both sides whose case versions differ (records without a hash are not judged)."""
    cand, base = _hashes(candidate), _hashes(baseline)
    return sorted(t for t in cand.keys() & base.keys() if cand[t] != base[t])


def describe(changed: list[str], *, since: str = "the baseline was recorded", limit: int = 12) -> str:
    shown = ", ".join(changed[:limit]) + (f" and {len(changed) - limit} more" if len(changed) > limit else "")
    return f"{len(changed)} case(s) changed since {since}: {shown}"


def refusal(changed: list[str], flag: str = ALLOW_FLAG + " (compare: --allow-changed-cases)") -> str:
    """The one-line reason a pairing is refused."""
    return (f"case versions differ: {describe(changed)}; re-run the baseline on the current cases "
            f"(or pass {flag} to pair them anyway)")


def drop_changed(records: list[dict[str, Any]], changed: list[str]) -> list[dict[str, Any]]:
    """The records of every other case."""
    gone = set(changed)
    return [r for r in records if r.get("task") not in gone]
