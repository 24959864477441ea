"""What a session will cost before it runs (`--agentfloor-plan`), and the `--max-cost` cap while it runs.

The plan counts the collected items per model and tier, the most model requests they may make
(one per turn of each item's budget) and, from earlier runs of the same model and tier in the
report directory, the requests, cost and wall time to expect. It never calls a model.

The cap reads the running cost from the session's runs.jsonl, which every process (the
controller or any xdist worker) appends to, so all workers stop at the same total.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .report.format import UNKNOWN
from .results import read_records
from .suite.schema import TIERS


@dataclass
class History:
    """Means of earlier runs of one model on one tier."""

    runs: int = 0
    turns: float = 0.0
    cost_usd: float = 0.0
    costed: int = 0  # runs with a known cost: an unpriced model's cost is unknown (null), never $0
    wall_s: float = 0.0

    def add(self, r: dict[str, Any]) -> None:
        self.runs += 1
        self.turns += float(r.get("turns") or 0)
        cost = r.get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0:
            self.cost_usd += float(cost)
            self.costed += 1
        self.wall_s += float(r.get("wall_s") or 0)

    def merge(self, other: "History") -> None:
        self.runs += other.runs
        self.turns += other.turns
        self.cost_usd += other.cost_usd
        self.costed += other.costed
        self.wall_s += other.wall_s


@dataclass
class PlanRow:
    model: str
    tier: str
    items: int
    max_requests: int
    history: History = field(default_factory=History)

    @property
    def expected_requests(self) -> float | None:
        h = self.history
        return self.items * h.turns / h.runs if h.runs else None

    @property
    def cost_usd(self) -> float | None:
        """The mean over the earlier runs whose cost is known (as the reports average); None: unknown."""
        h = self.history
        return self.items * h.cost_usd / h.costed if h.costed else None

    @property
    def cost_unknown(self) -> bool:
        """Earlier runs exist but none has a cost (no pricing): unknown, not "no history"."""
        return bool(self.history.runs) and not self.history.costed

    @property
    def wall_s(self) -> float | None:
        h = self.history
        return self.items * h.wall_s / h.runs if h.runs else None


#: beside a session's runs.jsonl: its sums per (model, tier), stamped with the size and mtime of the
#: runs.jsonl they were read from, so that the plan (--co) reads one small file per earlier session
#: instead of every record of it (twenty sessions of 2,000 items are over 100 MB of JSON: seconds to parse)
HISTORY_CACHE = "plan-history.json"


def history(report_dir: Path) -> tuple[dict[tuple[str, str], History], int]:
    """Per (model, tier) sums over every session's runs.jsonl in the report dir (infra errors left out)."""
    out: dict[tuple[str, str], History] = defaultdict(History)
    files = sorted(Path(report_dir).glob("sessions/*/runs.jsonl"))
    for path in files:
        for key, h in session_history(path).items():
            out[key].merge(h)
    return dict(out), len(files)


def session_history(path: Path) -> dict[tuple[str, str], History]:
    """One session's sums: from its cache when that was made from the runs.jsonl as it is now, else
    read from the records (and the cache written, where the directory lets it be)."""
    try:
        st = path.stat()
    except OSError:
        return {}
    stamp = [st.st_size, st.st_mtime_ns]
    cache = path.with_name(HISTORY_CACHE)
    cached = _read_cache(cache, stamp)
    if cached is not None:
        return cached
    sums: dict[tuple[str, str], History] = defaultdict(History)
    for r in read_records(path)[0]:
        if isinstance(r.get("model"), str) and isinstance(r.get("tier"), str) and not r.get("infra_error"):
            sums[(r["model"], r["tier"])].add(r)
    rows = [[m, t, h.runs, h.turns, h.cost_usd, h.costed, h.wall_s] for (m, t), h in sorted(sums.items())]
    _write_cache(cache, json.dumps({"stamp": stamp, "rows": rows}))
    return dict(sums)


#: the largest cache read (a session of 100,000 items over 20 models and 6 tiers is about 20 KB)
MAX_CACHE_BYTES = 1 << 20


def _write_cache(cache: Path, text: str) -> None:
    """Best effort (a read-only report dir or a full disk only cost the next plan the same read): a fresh
    temporary file of its own (O_EXCL: never through a link someone left there), then renamed over the
    cache (a link at the cache's name is replaced, not followed)."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{cache.name}.", suffix=".tmp", dir=cache.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, cache)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def _read_cache(cache: Path, stamp: list[int]) -> dict[tuple[str, str], History] | None:
    """The cached sums if the cache is a small regular file holding well-formed rows for this stamp, else
    None (read the records): a link, a FIFO, a device or a huge file is never read, and no content crashes."""
    try:
        st = cache.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CACHE_BYTES:
            return None
        data = json.loads(cache.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("stamp") != stamp or not isinstance(data.get("rows"), list):
        return None
    out: dict[tuple[str, str], History] = {}
    for row in data["rows"]:
        history = _cached_row(row)
        if history is None:
            return None
        out[(row[0], row[1])] = history
    return out


def _cached_row(row: Any) -> History | None:
    """A row [model, tier, runs, turns, cost, costed, wall] as records can make it, else None: whole counts
    with 1 <= runs and costed <= runs, finite non-negative sums."""
    if not (isinstance(row, list) and len(row) == 7 and isinstance(row[0], str) and isinstance(row[1], str)):
        return None
    m, t, runs, turns, cost, costed, wall = row
    if not (type(runs) is int and type(costed) is int and 1 <= runs and 0 <= costed <= runs):
        return None
    sums = (turns, cost, wall)
    if not all(type(x) in (int, float) and 0 <= x <= 1e300 for x in sums):  # no NaN, inf or 10**400 (no float)
        return None
    return History(runs, float(turns), float(cost), costed, float(wall))


def build_plan(items: list[Any], report_dir: Path) -> tuple[list[PlanRow], int]:
    """Rows per model and tier for the collected case items; and how many earlier sessions were read."""
    rows: dict[tuple[str, str], PlanRow] = {}
    for item in items:
        model = getattr(item, "model", None)
        if model is None:
            continue
        case = item.resolved_case
        if case is None:
            continue
        tier = str(case.tier)
        row = rows.setdefault((model.name, tier), PlanRow(model.name, tier, 0, 0))
        row.items += 1
        row.max_requests += int(getattr(case, "turn_budget", 1) or 1)  # a call-site case is one request
    past, n_sessions = history(report_dir)
    for key, row in rows.items():
        row.history = past.get(key, History())
    order = {m: i for i, m in enumerate(dict.fromkeys(getattr(i, "model").name for i in items
                                                      if getattr(i, "model", None) is not None))}
    return sorted(rows.values(), key=lambda r: (order.get(r.model, 0), tier_order(r.tier))), n_sessions


def tier_order(tier: str) -> tuple[int, str]:
    """Ladder tiers in ladder order, then any other kind's tier (call sites) by name."""
    return (TIERS.index(tier), "") if tier in TIERS else (len(TIERS), tier)


def _usd(x: float | None, missing: str = "—") -> str:
    return missing if x is None else f"${x:,.4f}" if x < 1 else f"${x:,.2f}"


def _dur(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 120:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def render_plan(rows: list[PlanRow], n_sessions: int, workers: int, pricing: dict[str, str]) -> list[str]:
    """The plan as terminal lines: per model and tier, then a total per model and overall."""
    head = f"{'model':24} {'tier':4} {'items':>6} {'max req':>8} {'exp req':>8} {'est cost':>10} {'est wall':>9}"
    lines = ["agentfloor plan (no model is called):", head]
    for r in rows:
        exp = "—" if r.expected_requests is None else f"{r.expected_requests:,.0f}"
        lines.append(f"{r.model[:24]:24} {r.tier:4} {r.items:>6} {r.max_requests:>8} {exp:>8} "
                     f"{_usd(r.cost_usd, UNKNOWN if r.cost_unknown else '—'):>10} {_dur(r.wall_s):>9}")
    total_items = sum(r.items for r in rows)
    known = [r for r in rows if r.history.runs]
    # one row of unknown cost makes the total unknown: a sum without it would read as the whole bill
    cost = None if any(r.cost_unknown for r in known) else sum(r.cost_usd or 0 for r in known)
    wall = sum(r.wall_s or 0 for r in known) / max(workers, 1)
    lines.append(f"{'total':24} {'':4} {total_items:>6} {sum(r.max_requests for r in rows):>8} "
                 f"{sum(r.expected_requests or 0 for r in known):>8,.0f} {_usd(cost, UNKNOWN) if known else '—':>10} "
                 f"{_dur(wall) if known else '—':>9}")
    unknown = sorted({r.model for r in rows if not r.history.runs})
    lines.append(f"estimates from {n_sessions} earlier session(s) in the report dir"
                 + (f", wall time over {workers} worker(s)" if workers > 1 else ""))
    for m in unknown:
        lines.append(f"no earlier runs of {m} on some tiers: its cost there is unknown (pricing: {pricing.get(m, 'none')}); "
                     "max req is the most requests its items can make")
    for m in sorted({r.model for r in rows if r.cost_unknown}):
        lines.append(f"earlier runs of {m} carry no cost (no pricing when they ran): its cost is unknown, not $0")
    return lines


# -- the running-cost cap ------------------------------------------------------------------
#: a record's own cost: the first "cost_usd" key of the line (records write it before the trajectory, where a
#: model's tool-call arguments could hold a key of that name), a number or null; null may be followed by
#: what its turns with sane usage cost (results.record_and_text: "cost_known_usd")
_COST = re.compile(rb'"cost_usd":\s*(?:(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)|null(?:,\s*"cost_known_usd":\s*'
                   rb'([0-9.]+(?:[eE][-+]?[0-9]+)?))?)')


class CostMeter:
    """The cost of the records appended to a runs.jsonl after `start` bytes, read incrementally."""

    def __init__(self, path: Path | None, start: int = 0):
        self.path, self.offset, self.spent = path, start, 0.0

    def read(self) -> float:
        if self.path is None or not self.path.exists():
            return self.spent
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        for line in data[:end].splitlines():
            m = _COST.search(line)
            if m and (m.group(1) or m.group(2)):
                usd = float(m.group(1) or m.group(2))
                if math.isfinite(usd) and usd > 0:  # a negative cost (an older record) never refunds the cap
                    self.spent += usd
        self.offset += end
        return self.spent


def max_cost_reason(cap: float, spent: float) -> str:
    return f"--max-cost {cap:g} USD reached (spent {spent:.4f} USD): not run"


# -- the gate's sample sizes, before any model call -----------------------------------------
#: the regression the plan prices besides an identical model (the issue's "5 pp worse")
WORSE_PP = 5.0


@dataclass
class GatePlanRow:
    """One gated tier: what this selection pairs, and the pairs an identical / a worse model needs."""

    tier: str
    items_per_run: int
    pairs_now: int
    baseline_runs_per_item: int
    discordance: float  # per pair and direction, for an identical candidate
    discordance_from: str
    identical: int | None  # pairs with which an identical model's expected table passes
    worse_pass: int | None  # pairs from which a WORSE_PP worse model passes (margin > WORSE_PP)
    worse_refuted: int | None  # pairs from which it is refuted, at the plan's margin or the suggested one
    refute_margin: float | None  # the margin worse_refuted is for


def identical_discordance(runs: list[dict[str, Any]]) -> tuple[float, str]:
    """Expected share of pairs where only one of two identical, independent models passes.

    With per-item pass probability p_i that is mean p_i (1 - p_i) each way. From an item's k passes
    in n >= 2 runs, k (n - k) / (n (n - 1)) is unbiased for p_i (1 - p_i); with one run per item
    the tier's p (1 - p) is used, the largest value any spread of p_i with that mean allows.
    """
    per: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for r in runs:
        per[(r["task"], r["variant"], r["instance"])].append(bool(r["passed"]))
    rep = [v for v in per.values() if len(v) >= 2]
    if rep:
        return sum(sum(v) * (len(v) - sum(v)) / (len(v) * (len(v) - 1)) for v in rep) / len(rep), \
            "the baseline's repeated runs"
    p = sum(bool(r["passed"]) for r in runs) / len(runs) if runs else 0.0
    return p * (1 - p), "p(1-p), the worst case: one baseline run per item"


def gate_plan(items: list[Any], baseline: list[dict[str, Any]], *, margin_pp: float, tail: float,
              tiers: list[str] | None) -> list[GatePlanRow]:
    """Per gated tier, from the collected items and the baseline's runs only (no model is called)."""
    from .gate import _excluded
    from .stats.intervals import pairs_needed

    keys: dict[str, set[tuple[str, str, str, int]]] = defaultdict(set)
    for item in items:
        case = item.resolved_case if getattr(item, "model", None) is not None else None
        if case is not None and str(case.tier) in TIERS:
            keys[str(case.tier)].add((str(case.id), str(item.variant), str(item.instance), int(item.run)))
    base = [r for r in baseline if not _excluded(r)]
    rows = []
    for tier in tiers or [t for t in TIERS if t in keys]:
        b_runs = [r for r in base if r.get("tier") == tier]
        b_keys = {(r["task"], r["variant"], r["instance"], int(r["run"])) for r in b_runs}
        items_per_run = len({k[:3] for k in keys.get(tier, set())})
        runs_per_item = max((int(r["run"]) for r in b_runs), default=-1) + 1
        d, source = identical_discordance(b_runs)
        worse = WORSE_PP / 100.0
        b, c = d, min(d + worse, 1.0 - d)
        if margin_pp > WORSE_PP:
            worse_pass = pairs_needed(b, c, margin_pp, tail)
            refute_margin = WORSE_PP / 2
        else:
            worse_pass, refute_margin = None, margin_pp
        worse_refuted = pairs_needed(b, c, refute_margin, tail, refute=True) if refute_margin < WORSE_PP else None
        rows.append(GatePlanRow(tier, items_per_run, len(keys.get(tier, set()) & b_keys), runs_per_item, d, source,
                                pairs_needed(d, d, margin_pp, tail), worse_pass, worse_refuted,
                                refute_margin if worse_refuted is not None else None))
    return rows


def _pairs(n: int | None, items: int) -> str:
    if n is None:
        return "more than 100,000 pairs"
    return f"{n:,} pairs ({-(-n // max(items, 1)):,} run(s) per item)"


def render_gate_plan(rows: list[GatePlanRow], baseline: str, margin_pp: float, bound: str) -> list[str]:
    """The gate's part of --agentfloor-plan: per tier, the runs an identical and a worse model need."""
    lines = [f"gate plan against {baseline}: each tier must be certified on its own (intersection-union test) "
             f"at -{margin_pp:g} pp, {bound}; the figures are the pairs at which the expected table decides "
             "(about even odds), per tier:"]
    for r in rows:
        if not r.items_per_run:
            lines.append(f"gate plan tier {r.tier}: no collected item in this tier")
            continue
        line = (f"gate plan tier {r.tier}: {r.items_per_run} item(s) per run, {r.pairs_now} pair(s) with this "
                f"selection; an identical model passes from {_pairs(r.identical, r.items_per_run)} "
                f"(discordance {100 * r.discordance:.1f}% each way, from {r.discordance_from})")
        if r.worse_pass is not None or margin_pp > WORSE_PP:
            line += (f"; a {WORSE_PP:g} pp worse one lies inside the margin: it fails as insufficient evidence "
                     f"below {_pairs(r.worse_pass, r.items_per_run)} and passes from there")
            if r.worse_refuted is not None:
                line += (f"; to fail it, gate with --gate-margin {r.refute_margin:g}: refuted from "
                         f"{_pairs(r.worse_refuted, r.items_per_run)}")
        elif r.worse_refuted is not None:
            line += f"; a {WORSE_PP:g} pp worse one is refuted (FAIL) from {_pairs(r.worse_refuted, r.items_per_run)}"
        else:
            line += f"; a {WORSE_PP:g} pp worse one sits on the margin: no number of pairs decides it"
        need = -(-(r.identical or 0) // r.items_per_run)
        if r.identical is not None and need > r.baseline_runs_per_item:
            line += (f"; the baseline has {r.baseline_runs_per_item} run(s) per item: record it with "
                     f"--agentfloor-runs {need} or more too (run k pairs with baseline run k)")
        lines.append(line)
    return lines
