"""The upgrade gate: may a candidate model replace the incumbent on the gated tiers?

Pure functions. The candidate's runs are paired with the baseline's on (task, variant,
instance, run). The gate passes only if *every* gated tier is certified non-inferior: an
intersection-union test (Berger 1982, Technometrics 24:295). Its null hypothesis is the union
"some tier is worse than the margin", rejected only when each tier's own null is rejected, so
testing each tier at level alpha already gives a level-alpha test of the whole and no
multiplicity correction is applied (Holm would make the gate needlessly conservative; it stays
where the claims are per tier: the paired tables). Non-inferiority uses the *guarded* interval
(the hull of the cluster bootstrap and Tango's paired score interval, :mod:`.stats.intervals`)
and, by default, the lower end of the two-sided 95 % CI (``decision="one-sided"``: the 90 %
CI's lower end).

Each tier's claim has three outcomes: certified (the bound clears -margin: PASS), refuted (the
whole interval lies at or below -margin: FAIL, the candidate is worse) and insufficient evidence
(neither: the interval is too wide, e.g. fewer pairs than even a perfect candidate needs,
:func:`.stats.intervals.min_pairs_to_certify`); the reason then says how many pairs would decide
it at the observed rates. Infrastructure errors in a tier leave it without a verdict (NO VERDICT)
unless what did run already refutes it. An absolute floor on TCR (``--gate-floor``) is held
against the point estimate or, with ``floor_bound="lower"``, the guarded interval; it works
without a baseline too. The gate as a whole also fails, with a one-line reason, when the
candidate run is partial (baseline runs of the gated tiers missing from the candidate, or the
session stopped early) or when the two runs were made under different protocols.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .results import duplicate_note, latest_runs, read_records, usable_runs
from .stats.bootstrap import ratio_ci
from .stats.intervals import min_pairs_to_certify, wilson
from .stats.paired import PairedTest, decision_tail, paired_compare, pairs_to_decide
from .suite.schema import TIERS

LEGACY_PROTOCOL = "legacy"
PASS, FAIL, INSUFFICIENT, NO_VERDICT = "PASS", "FAIL", "INSUFFICIENT EVIDENCE", "NO VERDICT"
#: what the gate can judge: call-site and pressure records are compared and reported, never gated
LADDER_ONLY = f"it certifies ladder tiers ({', '.join(TIERS)})"

_FLOOR = re.compile(r"^(?:tier_)?(A0|A|B|C|D|E|all)\s*>=\s*([0-9]*\.?[0-9]+)(%?)$")


class GateError(ValueError):
    pass


def parse_floor(text: str) -> tuple[str, float]:
    """`tier_A>=0.90` (or `A>=90%`) -> ("A", 0.9)."""
    m = _FLOOR.match(text.strip())
    if not m:
        raise GateError(f"--gate-floor {text!r}: expected TIER>=VALUE, e.g. tier_A>=0.90 or tier_B>=85%")
    value = float(m.group(2)) / (100.0 if m.group(3) or float(m.group(2)) > 1 else 1.0)
    if not 0 <= value <= 1:
        raise GateError(f"--gate-floor {text!r}: the floor must lie between 0 and 1 (or 0% and 100%)")
    return m.group(1), value


def load_baseline(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Per-run outcomes from a runs.jsonl, or from a summary.json that carries them.

    Checked as a whole: runs the gate cannot read are skipped and named, and a file with no
    usable run at all is an error (raised before any item runs).
    """
    if not path.exists():
        raise GateError(f"--agentfloor-baseline {path}: no such file")
    if not path.is_file():
        raise GateError(f"--agentfloor-baseline {path}: is a directory, not a file; give its runs.jsonl (or summary.json)")
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise GateError(f"--agentfloor-baseline {path}: not UTF-8 (byte offset {exc.start})") from None
        except (ValueError, RecursionError) as exc:
            raise GateError(f"--agentfloor-baseline {path}: not valid JSON ({str(exc)[:80]})") from None
        runs = data.get("runs") if isinstance(data, dict) else None
        if not isinstance(runs, list):
            raise GateError(f"--agentfloor-baseline {path}: this summary.json has no per-run outcomes ('runs'); "
                            "use the runs.jsonl of the baseline session instead")
        problems: list[str] = []
    else:
        runs, problems = read_records(path)
    good, notes = usable_runs(runs, f"--agentfloor-baseline {path}", "run")
    problems += notes
    if not good:
        first = f"; {problems[0].removeprefix(f'--agentfloor-baseline {path}: ')}" if problems else "; the file is empty"
        raise GateError(f"--agentfloor-baseline {path}: no usable baseline run (each needs model, task, tier, variant, "
                        f"instance, run, passed){first}")
    good, replaced = latest_runs(good)  # the one rule every command applies to a run recorded twice
    return good, problems + duplicate_note(replaced, f"--agentfloor-baseline {path}: ")


#: per claim, what the interval says (the paired tables and recipes use the same three words)
CERTIFIED, REFUTED, UNDECIDED = "certified", "refuted", "insufficient evidence"
#: the exit statuses of a gated session (docs/ci-gating.md): pass, the model is not shown fit, and
#: infrastructure trouble (an endpoint that failed) that prevented a verdict; 75 is sysexits' EX_TEMPFAIL
EXIT_PASS, EXIT_FAIL, EXIT_INFRA = 0, 1, 75
FLOOR_BOUNDS = ("point", "lower")


@dataclass(frozen=True)
class TierVerdict:
    tier: str
    status: str
    reasons: list[str]
    test: PairedTest | None
    tcr: float | None
    floor: float | None
    infra: int
    n_min: int = 1
    outcome: str | None = None  # of the non-inferiority claim: certified / refuted / insufficient evidence
    lower_pp: float | None = None  # the decision interval's bounds (pp)
    upper_pp: float | None = None
    pairs_to_decide: int | None = None  # at the observed rates, pairs with which the expected table decides
    tcr_low: float | None = None  # the guarded interval of the candidate's TCR (floors on the lower bound)
    tcr_high: float | None = None
    n_runs: int = 0

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def line(self, margin_pp: float | None, floor_bound: str = "point") -> str:
        t = self.test
        if margin_pp is None:  # a floors-only gate
            stats = (f"TCR {100 * (self.tcr or 0):.1f}% [95% CI {100 * (self.tcr_low or 0):.1f}, "
                     f"{100 * (self.tcr_high or 0):.1f}], n={self.n_runs} runs" if self.n_runs else "no scored run")
        elif t is None or t.n_pairs == 0:
            stats = "no paired runs"
        else:
            stats = (f"Δ {t.delta_pp:+.1f} pp [95% CI {t.ci95_low_pp:+.1f}, {t.ci95_high_pp:+.1f}], "
                     f"n={t.n_pairs} pairs, candidate TCR {100 * (t.tcr_model or 0):.1f}% "
                     f"vs baseline {100 * (t.tcr_ref or 0):.1f}%")
        if self.floor is not None:
            stats += f", floor {100 * self.floor:g}% on the {'point estimate' if floor_bound == 'point' else 'lower 95% bound'}"
        why = "; ".join(self.reasons)
        rule = f" (margin -{margin_pp:g} pp)" if margin_pp is not None else ""
        return f"gate tier {self.tier}: {self.status}: {stats}{rule}{': ' + why if why else ''}"

    def public(self) -> dict[str, Any]:
        """gate.json's entry for this tier."""
        t = self.test
        p = t if t is not None and t.n_pairs > 0 else None  # the paired test, when it has pairs
        return {
            "tier": self.tier, "verdict": self.status, "passed": self.passed, "outcome": self.outcome,
            "reason": "; ".join(self.reasons),
            "pairs": t.n_pairs if t is not None else 0, "min_pairs": self.n_min,
            "delta_pp": p.delta_pp if p is not None else None,
            "ci95_pp": [p.ci95_low_pp, p.ci95_high_pp] if p is not None else None,
            "ci90_pp": [p.ci90_low_pp, p.ci90_high_pp] if p is not None else None,
            "decision_interval_pp": [self.lower_pp, self.upper_pp] if p is not None else None,
            "p_noninferiority": p.p_noninferiority if p is not None else None,
            "discordant": {"candidate_only": p.mcnemar_b, "baseline_only": p.mcnemar_c} if p is not None else None,
            "candidate_tcr": self.tcr, "baseline_tcr": p.tcr_ref if p is not None else None,
            "candidate_tcr_ci95": [self.tcr_low, self.tcr_high] if self.n_runs else None,
            "floor": self.floor, "infra_errors": self.infra, "pairs_to_decide": self.pairs_to_decide,
        }


@dataclass
class GateResult:
    verdicts: list[TierVerdict]
    candidate: str
    baseline: str | None
    unpaired_candidate: int = 0
    unpaired_baseline: int = 0
    notes: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    infra_blockers: list[str] = field(default_factory=list)
    n_min: int = 1
    method: str = ""
    margin_pp: float | None = 10.0
    floor_bound: str = "point"
    selection: str = ""
    paired_of_baseline: tuple[int, int] = (0, 0)  # baseline runs of the gated tiers paired, of all of them

    @property
    def passed(self) -> bool:
        return (not self.blockers and not self.infra_blockers and bool(self.verdicts)
                and all(v.passed for v in self.verdicts))

    @property
    def exit_status(self) -> int:
        """0 passed; 75 when only infrastructure trouble stood in the way; 1 otherwise (docs/ci-gating.md)."""
        if self.passed:
            return EXIT_PASS
        if any(v.status == FAIL for v in self.verdicts) or self.blockers:
            return EXIT_FAIL
        if self.infra_blockers or any(v.status == NO_VERDICT for v in self.verdicts):
            return EXIT_INFRA
        return EXIT_FAIL

    def header(self) -> str:
        """The rule, in one line: an intersection-union test, each tier at the full level."""
        if self.margin_pp is None:
            return (f"gate: absolute floors only (no baseline): each floored tier must clear its floor on the "
                    f"{'point estimate of TCR' if self.floor_bound == 'point' else 'lower bound of its 95% CI'}")
        return (f"gate: intersection-union test (Berger 1982): passes only if every gated tier is non-inferior, "
                f"each tested on its own at the full level with no multiplicity correction ({self.method}); "
                f"a tier needs at least {self.n_min} pairs to be certified at -{self.margin_pp:g} pp")

    def selection_line(self) -> str:
        """Which selection was compared, and how much of the baseline it paired."""
        paired, of = self.paired_of_baseline
        return (f"gate: compared the selection {self.selection}"
                + (f"; {paired} of the baseline's {of} run(s) in the gated tiers paired" if self.baseline else ""))

    def reason(self) -> str:
        """One line: why the gate did not pass ('' when it passed)."""
        if self.passed:
            return ""
        parts = list(self.blockers) + list(self.infra_blockers)
        by = {s: [v.tier for v in self.verdicts if v.status == s] for s in (FAIL, INSUFFICIENT, NO_VERDICT)}
        if by[FAIL]:
            parts.append(f"failed tier(s) {', '.join(by[FAIL])}")
        if by[INSUFFICIENT]:
            parts.append(f"insufficient evidence on tier(s) {', '.join(by[INSUFFICIENT])} (not certified, not refuted)")
        if by[NO_VERDICT]:
            parts.append(f"no verdict on tier(s) {', '.join(by[NO_VERDICT])} (infrastructure errors)")
        if not self.verdicts:
            parts.append("no tier to gate")
        return "; ".join(parts)

    def public(self) -> dict[str, Any]:
        """gate.json: what a CI job reads instead of parsing the terminal."""
        return {
            "passed": self.passed, "exit_status": self.exit_status, "reason": self.reason(),
            "candidate": self.candidate, "baseline": self.baseline,
            "rule": {"test": "intersection-union (Berger 1982), no multiplicity correction"
                     if self.margin_pp is not None else "absolute floors only",
                     "margin_pp": self.margin_pp, "method": self.method, "min_pairs": self.n_min,
                     "floor_bound": self.floor_bound},
            "selection": self.selection, "blockers": self.blockers, "infra_blockers": self.infra_blockers,
            "unpaired": {"candidate": self.unpaired_candidate, "baseline": self.unpaired_baseline},
            "baseline_runs_paired": list(self.paired_of_baseline),
            "notes": self.notes, "tiers": [v.public() for v in self.verdicts],
        }


def write_gate_json(result: GateResult | None, path: Path, error: str | None = None) -> None:
    """gate.json next to the session's reports (written whole, so a reader never sees half of it)."""
    data = result.public() if result is not None else {"passed": False, "exit_status": EXIT_FAIL,
                                                      "reason": f"cannot evaluate: {error}", "tiers": []}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def _key(r: dict[str, Any]) -> tuple[str, str, str, int]:
    return (r["task"], r["variant"], r["instance"], int(r["run"]))


def protocol_of(r: dict[str, Any]) -> str:
    """The record's protocol; records written before protocols existed are the legacy protocol."""
    return str(r.get("protocol") or LEGACY_PROTOCOL)


def _excluded(record: dict[str, Any]) -> bool:
    """Runs that measured the setup, not the model: infra errors and prompts cut by the context window."""
    return bool(record.get("infra_error")) or record.get("terminal_flag") == "context_limit"


def tcr_interval(runs: list[dict[str, Any]], tail: float, *, n_boot: int = 10_000,
                 seed: int = 42) -> tuple[float | None, float | None, float | None]:
    """TCR and its guarded interval (hull of the (variant, instance, run) cluster bootstrap and Wilson,
    as the report's TCR tables), each bound with ``tail`` outside it."""
    if not runs:
        return None, None, None
    units: dict[str, list[int]] = {}
    for r in runs:
        units.setdefault(f"{r['variant']}|{r['instance']}|{r['run']}", []).append(int(bool(r["passed"])))
    num = np.array([sum(v) for v in units.values()], float)
    den = np.array([len(v) for v in units.values()], float)
    boot = ratio_ci(num, den, n_boot=n_boot, seed=seed, confidence=1 - 2 * tail)
    assert boot.low is not None and boot.high is not None  # runs is not empty: every unit has a run
    k, n = int(num.sum()), int(den.sum())
    w_lo, w_hi = (float(x) for x in wilson(k, n, tail))
    return k / n, min(boot.low, w_lo), max(boot.high, w_hi)


def _runs_for(pairs: int, items: int) -> int:
    return -(-pairs // max(items, 1))


def evaluate(candidate: list[dict[str, Any]], baseline: list[dict[str, Any]] | None, *,
             margin_pp: float = 10.0, tiers: list[str] | None = None, floors: dict[str, float] | None = None,
             baseline_model: str | None = None, n_boot: int = 10_000, seed: int = 42,
             alpha: float = 0.05, decision: str = "two-sided", min_pairs: int | None = None,
             partial: list[str] | None = None, infra_partial: list[str] | None = None,
             floor_bound: str = "point", selection: str = "", allow_changed_cases: bool = False) -> GateResult:
    """Gate ``candidate`` against ``baseline`` (None: absolute floors only).

    ``partial``: reasons the session knows it stopped early; ``infra_partial``: those that were
    endpoint trouble (a model failed the probe), which give no verdict rather than a failure.
    Runs of case versions other than the baseline's block the gate unless ``allow_changed_cases``.
    """
    floors = floors or {}
    if floor_bound not in FLOOR_BOUNDS:
        raise GateError(f"--gate-floor-bound {floor_bound!r}: valid: {', '.join(FLOOR_BOUNDS)}")
    # the gate certifies ladder tiers; call-site records (tier "callsite") are reported, not gated
    set_aside = sum(1 for r in candidate if r.get("tier") not in TIERS)
    candidate = [r for r in candidate if r.get("tier") in TIERS]
    cand_models = sorted({r["model"] for r in candidate})
    if not candidate and set_aside:
        raise GateError(f"{LADDER_ONLY} and this run holds none "
                        f"({set_aside} call-site or pressure record(s) set aside)")
    if len(cand_models) != 1:
        raise GateError(f"the gate compares one candidate model; this run has {cand_models or 'none'}")
    tail = decision_tail(alpha, decision)
    if baseline is None:
        return _floors_only(candidate, cand_models[0], tiers, floors, tail, n_boot=n_boot, seed=seed,
                            partial=partial or [], infra_partial=infra_partial or [], floor_bound=floor_bound,
                            selection=selection, set_aside=set_aside)
    baseline = [r for r in baseline if r.get("tier") in TIERS]
    base_models = sorted({r["model"] for r in baseline})
    if baseline_model is None:
        if len(base_models) != 1:
            raise GateError(f"the baseline holds models {base_models}; name one with --gate-baseline-model")
        baseline_model = base_models[0]
    elif baseline_model not in base_models:
        raise GateError(f"--gate-baseline-model {baseline_model!r} is not in the baseline (it has {base_models})")
    base_all = [r for r in baseline if r["model"] == baseline_model]
    base = {_key(r): r for r in base_all if not _excluded(r)}
    cand = {_key(r): r for r in candidate if not _excluded(r)}
    cand_any = {_key(r) for r in candidate}
    infra = _infra_counts(candidate)
    present = sorted({r["tier"] for r in candidate}, key=TIERS.index)
    gated = list(tiers or present)
    unknown = [t for t in gated if t not in TIERS]
    if unknown:
        raise GateError(f"--gate-tiers: unknown tier(s) {unknown}; valid: {', '.join(TIERS)}")
    n_min = max(min_pairs_to_certify(margin_pp, tail, "guarded"), int(min_pairs or 0))
    bound = "two-sided 95% CI lower bound" if decision == "two-sided" else "one-sided 95% bound (90% CI)"
    in_gated = [k for k, r in base.items() if r["tier"] in gated]
    result = GateResult([], cand_models[0], baseline_model,
                        unpaired_candidate=len(set(cand) - set(base)), unpaired_baseline=len(set(base) - set(cand)),
                        n_min=n_min, method=f"guarded interval, {bound} above -{margin_pp:g} pp",
                        margin_pp=float(margin_pp), floor_bound=floor_bound, selection=selection,
                        paired_of_baseline=(sum(1 for k in in_gated if k in cand), len(in_gated)))
    if set_aside:
        result.notes.append(f"{set_aside} call-site record(s) are reported but not gated (the gate checks ladder tiers)")

    cand_protocols = sorted({protocol_of(r) for r in candidate})
    base_protocols = sorted({protocol_of(r) for r in base_all})
    if cand_protocols != base_protocols:
        result.blockers.append(f"protocols differ: candidate ran {', '.join(cand_protocols)}, "
                               f"baseline {', '.join(base_protocols)}; re-run the baseline under the same protocol")
    from .versions import changed_cases, describe, refusal

    changed = changed_cases(candidate, base_all)
    if changed and not allow_changed_cases:
        result.blockers.append(refusal(changed))
    elif changed:
        result.notes.append(f"paired despite changed case versions: {describe(changed)}")
    result.blockers += [f"partial run: {why}" for why in partial or []]
    result.infra_blockers += [f"no verdict: {why}" for why in infra_partial or []]
    missing = sorted(k for k in in_gated if k not in cand_any)
    if missing:
        t, v, i, n = missing[0]
        text = (f"partial run: {len(missing)} baseline run(s) of the gated tiers were not run by the "
                f"candidate (e.g. {t}[{v}-{i}-r{n}]); run the baseline's full selection")
        (result.infra_blockers if infra_partial else result.blockers).append(text)

    for tier in gated:
        keys = sorted(k for k in cand if k in base and cand[k]["tier"] == tier)
        pm = np.array([bool(cand[k]["passed"]) for k in keys])
        pr = np.array([bool(base[k]["passed"]) for k in keys])
        units = np.array([f"{k[1]}|{k[2]}|{k[3]}" for k in keys])
        test = paired_compare(pm, pr, units if keys else None, margin_pp=margin_pp, n_boot=n_boot,
                              seed=seed, alpha=alpha, model=result.candidate, reference=baseline_model,
                              scope=tier, interval_method="guarded", decision=decision)
        reasons: list[str] = []
        n = test.n_pairs
        lo, hi = (test.ci95_low_pp, test.ci95_high_pp) if decision == "two-sided" else (test.ci90_low_pp,
                                                                                         test.ci90_high_pp)
        to_decide = None
        if n == 0:
            outcome, status = UNDECIDED, INSUFFICIENT
            reasons.append("no candidate run pairs with a baseline run in this tier")
        elif test.noninferior and n >= n_min:
            outcome, status = CERTIFIED, PASS
        elif hi is not None and hi <= -margin_pp + 1e-9:
            outcome, status = REFUTED, FAIL
            reasons.append(f"refuted: the whole interval [{lo:+.1f}, {hi:+.1f}] pp lies below -{margin_pp:g} pp, "
                           "the candidate is worse than the margin allows")
        else:
            outcome, status = UNDECIDED, INSUFFICIENT
            items = len({k[:3] for k in keys})
            to_decide = pairs_to_decide(test, margin_pp, tail, decision)
            if test.noninferior:  # only --gate-min-pairs stands in the way
                why = f"{n} pair(s), fewer than the {n_min} --gate-min-pairs asks"
                to_decide = n_min
            elif n < n_min:
                why = f"{n} pair(s); at least {n_min} are needed before any result could clear -{margin_pp:g} pp"
            else:
                why = f"the interval [{lo:+.1f}, {hi:+.1f}] pp straddles -{margin_pp:g} pp (too wide to decide)"
            if to_decide is None:
                need = "; at the observed rates no number of pairs would decide it (Δ sits at the margin)"
            else:
                need = (f"; at the observed rates about {to_decide} pairs would decide it, i.e. "
                        f"{_runs_for(to_decide, items)} run(s) per item of these {items} items "
                        "(and as many baseline runs)")
            reasons.append(f"insufficient evidence: {why}{need}")
        runs = [r for r in cand.values() if r["tier"] == tier]
        tcr, t_lo, t_hi = tcr_interval(runs, tail, n_boot=n_boot, seed=seed)
        floor = floors.get(tier, floors.get("all"))
        status = _apply_floor(status, reasons, floor, floor_bound, tcr, t_lo, t_hi)
        status = _apply_infra(status, reasons, infra.get(tier, 0))
        result.verdicts.append(TierVerdict(tier, status, reasons, test, tcr, floor, infra.get(tier, 0), n_min,
                                           outcome, lo if n else None, hi if n else None, to_decide,
                                           t_lo, t_hi, len(runs)))
    missing_floor = [t for t in floors if t != "all" and t not in gated]
    if missing_floor:
        result.notes.append(f"floors for tiers not gated here were ignored: {missing_floor}")
    return result


def _infra_counts(records: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        if _excluded(r):
            out[r["tier"]] = out.get(r["tier"], 0) + 1
    return out


def _apply_floor(status: str, reasons: list[str], floor: float | None, bound: str, tcr: float | None,
                 low: float | None, high: float | None) -> str:
    """An absolute floor: on the point estimate (met or not), or on the interval (certified, refuted, undecided)."""
    if floor is None:
        return status
    if tcr is None:
        reasons.append(f"no scored candidate run to hold against the floor {100 * floor:g}%")
        return INSUFFICIENT if status == PASS else status
    if bound == "point":
        if tcr < floor:
            reasons.append(f"TCR {100 * tcr:.1f}% is below the floor {100 * floor:.1f}%")
            return FAIL
        return status
    assert low is not None and high is not None
    if low >= floor:
        return status
    if high < floor:
        reasons.append(f"refuted: the TCR interval [{100 * low:.1f}, {100 * high:.1f}]% lies below the floor "
                       f"{100 * floor:.1f}%")
        return FAIL
    reasons.append(f"insufficient evidence for the floor: the TCR interval [{100 * low:.1f}, {100 * high:.1f}]% "
                   f"straddles {100 * floor:.1f}% (the lower bound must clear it)")
    return INSUFFICIENT if status == PASS else status


def _apply_infra(status: str, reasons: list[str], n_infra: int) -> str:
    """Infrastructure errors leave a tier without a verdict, unless what did run already refutes it."""
    if not n_infra:
        return status
    reasons.append(f"{n_infra} infrastructure error(s): the tier cannot be certified (an endpoint failed)")
    return status if status == FAIL else NO_VERDICT


def _floors_only(candidate: list[dict[str, Any]], model: str, tiers: list[str] | None, floors: dict[str, float],
                 tail: float, *, n_boot: int, seed: int, partial: list[str], infra_partial: list[str],
                 floor_bound: str, selection: str, set_aside: int) -> GateResult:
    """A gate without a baseline: each floored tier's TCR against its floor."""
    present = sorted({r["tier"] for r in candidate}, key=TIERS.index)
    gated = list(tiers or (present if "all" in floors else [t for t in TIERS if t in floors]))
    result = GateResult([], model, None, margin_pp=None, floor_bound=floor_bound, selection=selection,
                        method=f"absolute floors on the {'point estimate' if floor_bound == 'point' else 'lower bound'}")
    if set_aside:
        result.notes.append(f"{set_aside} call-site record(s) are reported but not gated (the gate checks ladder tiers)")
    result.blockers += [f"partial run: {why}" for why in partial]
    result.infra_blockers += [f"no verdict: {why}" for why in infra_partial]
    infra = _infra_counts(candidate)
    for tier in gated:
        runs = [r for r in candidate if r["tier"] == tier and not _excluded(r)]
        tcr, lo, hi = tcr_interval(runs, tail, n_boot=n_boot, seed=seed)
        floor = floors.get(tier, floors.get("all"))
        reasons: list[str] = []
        status = PASS
        if floor is None:
            reasons.append("no floor set for this tier")
            status = INSUFFICIENT
        status = _apply_floor(status, reasons, floor, floor_bound, tcr, lo, hi)
        status = _apply_infra(status, reasons, infra.get(tier, 0))
        outcome = CERTIFIED if status == PASS else REFUTED if status == FAIL else UNDECIDED
        result.verdicts.append(TierVerdict(tier, status, reasons, None, tcr, floor, infra.get(tier, 0), 0, outcome,
                                           tcr_low=lo, tcr_high=hi, n_runs=len(runs)))
    return result
