"""Who decided the semantic checks: counts of judge and keyword verdicts, cache use, judge cost.

Pure Python over run records (the JUDGE_FIELDS of results.py); records written before the
judge existed carry none of them and count as zero. The judge's cost and latency are its own:
they are never added to the judged model's cost_usd or latency_s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .records import OVERALL


@dataclass(frozen=True, slots=True)
class JudgeStats:
    judges: tuple[str, ...]          # judge models that gave verdicts in these records
    judge_verdicts: int              # semantic predicates decided by the judge
    keyword_verdicts: int            # ... by the keyword stand-in
    judge_fails: int                 # judge verdicts that were "fail"
    cache_hits: int
    judge_requests: int              # cache misses: one request each
    hit_rate: float | None           # hits / (hits + requests)
    judge_errors: int                # items that became infrastructure errors because of the judge
    judge_cost_usd: float | None     # None: a judge without pricing made requests (unknown, never $0)
    judge_latency_s: float           # summed over requests


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else 0.0


def _one(recs: list[Mapping[str, Any]]) -> JudgeStats:
    verdicts = int(sum(_num(r.get("judge_verdicts")) for r in recs))
    hits = int(sum(_num(r.get("judge_cached")) for r in recs))
    requests = int(sum(_num(r.get("judge_requests")) for r in recs))
    return JudgeStats(
        judges=tuple(sorted({str(r["judge_model"]) for r in recs if r.get("judge_model")})),
        judge_verdicts=verdicts,
        keyword_verdicts=int(sum(_num(r.get("keyword_verdicts")) for r in recs)),
        judge_fails=int(sum(_num(r.get("judge_fails")) for r in recs)),
        cache_hits=hits,
        judge_requests=requests,
        hit_rate=hits / (hits + requests) if hits + requests else None,
        judge_errors=sum(1 for r in recs if r.get("judge_error") is True),
        judge_cost_usd=None if any(r.get("judge_cost_usd") is None and _num(r.get("judge_requests")) for r in recs)
        else sum(_num(r.get("judge_cost_usd")) for r in recs),
        judge_latency_s=sum(_num(r.get("judge_latency_s")) for r in recs),
    )


def compute_judge(records: Iterable[Mapping[str, Any]]) -> dict[str, JudgeStats]:
    """{model: JudgeStats} for each judged model, plus ``overall``."""
    recs = list(records)
    by_model: dict[str, list[Mapping[str, Any]]] = {}
    for r in recs:
        by_model.setdefault(str(r.get("model")), []).append(r)
    out = {m: _one(by_model[m]) for m in sorted(by_model)}
    out[OVERALL] = _one(recs)
    return out


def wilson(k: int, n: int, alpha: float = 0.05) -> tuple[float | None, float | None]:
    """Wilson score interval for k successes in n trials at level 1 - alpha ((None, None) for n = 0);
    the one implementation in stats.intervals, as plain floats."""
    if n <= 0:
        return None, None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    from .intervals import wilson as _wilson

    lo, hi = _wilson(k, n, alpha / 2)
    return float(lo), float(hi)
