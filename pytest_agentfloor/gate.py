"""The upgrade gate: may a candidate model replace the incumbent on the gated tiers?

Pure functions. The candidate's runs are paired with the baseline's on (task, variant,
instance, run); per gated tier the candidate must be non-inferior and clear any absolute TCR
floor. Non-inferiority always uses the *guarded* interval (the hull of the bootstrap and Tango's
paired score interval, see :mod:`.stats.intervals`) and, by default, the stricter bound: the
lower end of the two-sided 95 % CI must be above −margin (``decision="one-sided"``: the 90 %
CI's lower end), Holm-corrected across the gated tiers.

Three verdicts per tier: PASS, FAIL, and INSUFFICIENT EVIDENCE when the tier has fewer pairs
than even a perfect candidate (no discordant pair) would need to clear the margin
(:func:`.stats.intervals.min_pairs_to_certify`; ``min_pairs`` can only raise it). The gate as a
whole also fails, with a one-line reason, when the candidate run is partial (baseline runs of
the gated tiers missing from the candidate, or the session reports -x/--maxfail/interrupt/
collection errors) or when the two runs were made under different protocols. Unpaired runs and
infrastructure errors are reported, never silently dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .results import read_records, usable_runs
from .stats.intervals import min_pairs_to_certify
from .stats.paired import PairedTest, apply_holm, decision_tail, paired_compare
from .suite.schema import TIERS

LEGACY_PROTOCOL = "legacy"
PASS, FAIL, INSUFFICIENT = "PASS", "FAIL", "INSUFFICIENT EVIDENCE"

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
    return good, problems


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

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def line(self, margin_pp: float) -> str:
        t = self.test
        if t is None or t.n_pairs == 0:
            stats = "no paired runs"
        else:
            stats = (f"Δ {t.delta_pp:+.1f} pp [95% CI {t.ci95_low_pp:+.1f}, {t.ci95_high_pp:+.1f}], "
                     f"n={t.n_pairs} pairs, candidate TCR {100 * (t.tcr_model or 0):.1f}% "
                     f"vs baseline {100 * (t.tcr_ref or 0):.1f}%")
        why = "; ".join(self.reasons)
        return f"gate tier {self.tier}: {self.status}: {stats} (margin -{margin_pp:g} pp){': ' + why if why else ''}"


@dataclass
class GateResult:
    verdicts: list[TierVerdict]
    candidate: str
    baseline: str
    unpaired_candidate: int = 0
    unpaired_baseline: int = 0
    notes: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    n_min: int = 1
    method: str = ""

    @property
    def passed(self) -> bool:
        return not self.blockers and bool(self.verdicts) and all(v.passed for v in self.verdicts)

    def reason(self) -> str:
        """One line: why the gate did not pass ('' when it passed)."""
        if self.passed:
            return ""
        parts = list(self.blockers)
        short = [v for v in self.verdicts if not v.passed]
        insufficient = [v.tier for v in short if v.status == INSUFFICIENT]
        failed = [v.tier for v in short if v.status == FAIL]
        if insufficient:
            parts.append(f"insufficient evidence on tier(s) {', '.join(insufficient)} "
                         f"(fewer than {self.n_min} pairs)")
        if failed:
            parts.append(f"failed tier(s) {', '.join(failed)}")
        if not self.verdicts:
            parts.append("no tier to gate")
        return "; ".join(parts)


def _key(r: dict[str, Any]) -> tuple[str, str, str, int]:
    return (r["task"], r["variant"], r["instance"], int(r["run"]))


def protocol_of(r: dict[str, Any]) -> str:
    """The record's protocol; records written before protocols existed are the legacy protocol."""
    return str(r.get("protocol") or LEGACY_PROTOCOL)


def _excluded(record: dict[str, Any]) -> bool:
    """Runs that measured the setup, not the model: infra errors and prompts cut by the context window."""
    return bool(record.get("infra_error")) or record.get("terminal_flag") == "context_limit"


def evaluate(candidate: list[dict[str, Any]], baseline: list[dict[str, Any]], *, margin_pp: float = 10.0,
             tiers: list[str] | None = None, floors: dict[str, float] | None = None,
             baseline_model: str | None = None, n_boot: int = 10_000, seed: int = 42,
             alpha: float = 0.05, decision: str = "two-sided", min_pairs: int | None = None,
             partial: list[str] | None = None, allow_changed_cases: bool = False) -> GateResult:
    """Gate ``candidate`` against ``baseline``; ``partial``: reasons the session knows it stopped early.
    Runs of case versions other than the baseline's block the gate unless ``allow_changed_cases``."""
    floors = floors or {}
    # the gate certifies ladder tiers; call-site records (tier "callsite") are reported, not gated
    set_aside = sum(1 for r in candidate if r.get("tier") not in TIERS)
    candidate = [r for r in candidate if r.get("tier") in TIERS]
    baseline = [r for r in baseline if r.get("tier") in TIERS]
    cand_models = sorted({r["model"] for r in candidate})
    if len(cand_models) != 1:
        raise GateError(f"the gate compares one candidate model; this run has {cand_models or 'none'}")
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
    infra: dict[str, int] = {}
    for r in candidate:
        if _excluded(r):
            infra[r["tier"]] = infra.get(r["tier"], 0) + 1
    present = sorted({r["tier"] for r in candidate}, key=TIERS.index)
    gated = [t for t in (tiers or present)]
    unknown = [t for t in gated if t not in TIERS]
    if unknown:
        raise GateError(f"--gate-tiers: unknown tier(s) {unknown}; valid: {', '.join(TIERS)}")
    tail = decision_tail(alpha, decision)
    n_min = max(min_pairs_to_certify(margin_pp, tail, "guarded"), int(min_pairs or 0))
    bound = "two-sided 95% CI lower bound" if decision == "two-sided" else "one-sided 95% bound (90% CI)"
    result = GateResult([], cand_models[0], baseline_model,
                        unpaired_candidate=len(set(cand) - set(base)), unpaired_baseline=len(set(base) - set(cand)),
                        n_min=n_min, method=f"guarded interval, {bound}")
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
    for why in partial or []:
        result.blockers.append(f"partial run: {why}")
    missing = sorted(k for k, r in base.items() if r["tier"] in gated and k not in cand_any)
    if missing:
        t, v, i, n = missing[0]
        result.blockers.append(f"partial run: {len(missing)} baseline run(s) of the gated tiers were not run by the "
                               f"candidate (e.g. {t}[{v}-{i}-r{n}]); run the baseline's full selection")

    tests: list[PairedTest] = []
    for tier in gated:
        keys = sorted(k for k in cand if k in base and cand[k]["tier"] == tier)
        pm = np.array([bool(cand[k]["passed"]) for k in keys])
        pr = np.array([bool(base[k]["passed"]) for k in keys])
        units = np.array([f"{k[1]}|{k[2]}|{k[3]}" for k in keys])
        tests.append(paired_compare(pm, pr, units if keys else None, margin_pp=margin_pp, n_boot=n_boot,
                                    seed=seed, alpha=alpha, model=result.candidate, reference=baseline_model,
                                    scope=tier, interval_method="guarded", decision=decision))
    tests = apply_holm(tests, "gate", alpha)
    for tier, test in zip(gated, tests):
        reasons: list[str] = []
        runs = [r for r in cand.values() if r["tier"] == tier]
        tcr = sum(1 for r in runs if r["passed"]) / len(runs) if runs else None
        status = PASS
        if test.n_pairs == 0:
            reasons.append("no candidate run pairs with a baseline run in this tier")
            status = INSUFFICIENT
        elif test.n_pairs < n_min:
            reasons.append(f"insufficient evidence: {test.n_pairs} pair(s); at least {n_min} are needed before any "
                           f"result could clear -{margin_pp:g} pp ({result.method})")
            status = INSUFFICIENT
        elif not test.noninferior_holm:
            lb = test.ci95_low_pp if decision == "two-sided" else test.ci90_low_pp
            if test.noninferior:  # the tier's own bound clears the margin; the correction over tiers does not
                reasons.append(f"not non-inferior after Holm correction over {len(gated)} tiers: {bound} "
                               f"{lb:+.1f} pp clears -{margin_pp:g} pp on its own, but the adjusted p = "
                               f"{test.p_noninferiority_holm:.4f} is not below {tail:g} "
                               "(more pairs or runs would certify it)")
            else:
                reasons.append(f"not non-inferior: {bound} {lb:+.1f} pp does not clear -{margin_pp:g} pp")
            status = FAIL
        floor = floors.get(tier, floors.get("all"))
        if floor is not None and (tcr is None or tcr < floor):
            reasons.append(f"TCR {100 * (tcr or 0):.1f}% is below the floor {100 * floor:.1f}%")
            status = FAIL if status == PASS else status
        if infra.get(tier):
            reasons.append(f"{infra[tier]} infrastructure error(s): the tier cannot be certified")
            status = FAIL if status == PASS else status
        result.verdicts.append(TierVerdict(tier, status, reasons, test, tcr, floor, infra.get(tier, 0), n_min))
    missing_floor = [t for t in floors if t != "all" and t not in gated]
    if missing_floor:
        result.notes.append(f"floors for tiers not gated here were ignored: {missing_floor}")
    return result
