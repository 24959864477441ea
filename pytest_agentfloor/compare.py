"""``python -m pytest_agentfloor compare A/runs.jsonl B/runs.jsonl ...``: compare stored runs.

The first file is the baseline; every later file is compared with it. Per model and tier: the
paired difference in TCR over the (task, variant, instance, run) both made, with its 95% CI
and McNemar's b/c (Holm across each comparison's tests); the items whose outcome changed; and
the upgrade gate's verdict computed by :func:`gate.evaluate`, exactly as a session run with
``--baseline A`` gives it, with the same exit status (0 passed, 1 failed, 2 unusable input).
A model name that occurs in several files is kept apart, labelled by session. Within one file, a
run recorded more than once is resolved by results.DUPLICATE_RULE (the last record wins), as
``report``, the gate and ``--agentfloor-resume`` resolve it, and a note says how many.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .plan import tier_order
from .suite.schema import TIERS


@dataclass(frozen=True)
class Series:
    """The runs of one model in one file."""

    label: str  # "model @ session"
    model: str
    source: str
    runs: dict[tuple[str, str, str, int], dict[str, Any]]


def _key(r: dict[str, Any]) -> tuple[str, str, str, int]:
    return (r["task"], r["variant"], r["instance"], int(r["run"]))


def series_of(source: str, records: list[dict[str, Any]]) -> list[Series]:
    """Each model's runs in one file; a run recorded twice keeps its last record (DUPLICATE_RULE)."""
    models = sorted({r["model"] for r in records})
    return [Series(f"{m} @ {source}", m, source, {_key(r): r for r in records if r["model"] == m}) for m in models]


def pairings(base: list[Series], cand: list[Series]) -> tuple[list[tuple[Series, Series]], list[str]]:
    """Each candidate model against the same model name in the baseline, else the baseline's only model."""
    by_name = {s.model: s for s in base}
    out, notes = [], []
    for c in cand:
        ref = by_name.get(c.model) or (base[0] if len(base) == 1 else None)
        if ref is None:
            notes.append(f"{c.label}: no model of that name in the baseline, which holds "
                         f"{', '.join(s.model for s in base)}; not compared")
            continue
        out.append((c, ref))
    return out, notes


def paired_rows(cand: Series, ref: Series, *, margin_pp: float, n_boot: int, seed: int) -> list[Any]:
    """One PairedTest per tier present and overall, Holm-adjusted across them; infra errors left out."""
    import numpy as np

    from .stats.paired import apply_holm, paired_compare

    keys = sorted(k for k in cand.runs if k in ref.runs and not cand.runs[k].get("infra_error")
                  and not ref.runs[k].get("infra_error"))
    tiers = sorted({cand.runs[k]["tier"] for k in keys}, key=tier_order)
    tests = []
    for scope in tiers + ["overall"]:
        ks = [k for k in keys if scope == "overall" or cand.runs[k]["tier"] == scope]
        pm = np.array([bool(cand.runs[k]["passed"]) for k in ks], dtype=bool)
        pr = np.array([bool(ref.runs[k]["passed"]) for k in ks], dtype=bool)
        units = np.array([f"{k[1]}|{k[2]}|{k[3]}" for k in ks])
        tests.append(paired_compare(pm, pr, units if ks else None, margin_pp=margin_pp, n_boot=n_boot, seed=seed,
                                    model=cand.label, reference=ref.label, scope=scope))
    return apply_holm(tests[:-1], f"{cand.label} vs {ref.label}", 0.05) + tests[-1:]


def _same_versions(cand: Series, ref: Series, *, allow: bool) -> tuple[Series, Series]:
    """The pair with the runs of changed case versions left out (printed), unless `allow`."""
    import dataclasses

    from .versions import changed_cases, describe, refusal

    changed = changed_cases(cand.runs.values(), ref.runs.values())
    if not changed:
        return cand, ref
    if allow:
        print(f"  paired despite changed case versions: {describe(changed)}")
        return cand, ref
    print(f"  not paired: {refusal(changed, '--allow-changed-cases')}")
    gone = set(changed)
    return tuple(dataclasses.replace(s, runs={k: r for k, r in s.runs.items() if k[0] not in gone})
                 for s in (cand, ref))  # type: ignore[return-value]


def changed_items(cand: Series, ref: Series) -> list[tuple[str, tuple[str, str, str, int]]]:
    """("fixed" | "broke", key) for every paired item whose outcome differs, baseline order."""
    out = []
    for k in sorted(set(cand.runs) & set(ref.runs)):
        a, b = ref.runs[k], cand.runs[k]
        if a.get("infra_error") or b.get("infra_error") or bool(a["passed"]) == bool(b["passed"]):
            continue
        out.append(("fixed" if b["passed"] else "broke", k))
    return out


def run_ref(source: str, model: str, key: tuple[str, str, str, int]) -> str:
    """One run as the viewer names it in a link (viewer.js refOf): session/model/case/variant/instance/rN,
    each part percent-encoded, so the link names the run itself and survives a regenerated file."""
    task, variant, instance, run = key
    return "/".join(quote(str(p), safe="") for p in (source, model, task, variant, instance, f"r{run}"))


def viewer_fragment(cand: Series, key: tuple[str, str, str, int], ref: Series | None = None) -> str:
    """The viewer link of a changed item: that item's runs listed (item=), and the candidate's run opened
    beside the baseline's (run=CAND,BASE), aligned turn by turn."""
    task, variant, instance, run = key
    opened = [run_ref(cand.source, cand.model, key)] + ([run_ref(ref.source, ref.model, key)] if ref else [])
    return f"#item={quote(f'{task}/{variant}/{instance}/r{run}', safe='')}&run={','.join(opened)}"


def _pp(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def parser() -> argparse.ArgumentParser:
    from .report.args import MAX_BOOT, number_in, whole_number
    from .report.args import OneLineParser as _Parser

    p = _Parser(prog="python -m pytest_agentfloor compare",
                description="Compare stored runs: paired differences, changed items and the gate verdict. "
                            "The first file is the baseline. Exit status: 0 gate passed (or no gate), "
                            "1 gate failed, 2 unusable input, 75 no verdict (infrastructure errors).")
    p.add_argument("runs", type=Path, nargs="+", help="runs.jsonl files; the first is the baseline")
    p.add_argument("--gate-margin", type=number_in(0.0, 100.0), default=10.0, metavar="PP",
                   help="non-inferiority margin in percentage points (default 10, as --gate-margin)")
    p.add_argument("--gate-tiers", default="", metavar="LIST", help="tiers the gate checks (default: all present)")
    p.add_argument("--gate-floor", action="append", default=[], metavar="TIER>=X",
                   help="absolute TCR floor, e.g. tier_A>=0.90; repeatable")
    p.add_argument("--noninferiority-bound", choices=("two-sided", "one-sided"), default="two-sided",
                   help="bound that certifies non-inferiority (default two-sided, as --noninferiority-bound)")
    p.add_argument("--gate-min-pairs", type=whole_number(0), default=0, metavar="N",
                   help="raise the pairs a gated tier needs before it can pass (as --gate-min-pairs)")
    p.add_argument("--gate-baseline-model", default=None, metavar="NAME",
                   help="the baseline model when the first file holds several")
    p.add_argument("--n-boot", type=whole_number(1, MAX_BOOT), default=10_000, metavar="N",
                   help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=int, default=42, metavar="S", help="bootstrap seed (default 42)")
    p.add_argument("--changed", type=whole_number(0), default=20, metavar="N",
                   help="changed items listed per comparison (default 20; all are counted)")
    p.add_argument("--allow-changed-cases", action="store_true",
                   help="pair runs of case files that changed between the files (they are named either way; "
                        "without this they are left unpaired and the gate fails)")
    p.add_argument("--viewer", type=Path, default=None, metavar="FILE",
                   help="also write one transcript viewer of all the files; changed items link into it")
    return p


def main(argv: list[str] | None = None) -> int:
    from .gate import GateError, parse_floor
    from .report.viewer import load_sources, write_viewer

    args = parser().parse_args(argv)
    prog = "agentfloor compare"
    if len(args.runs) < 2:
        print(f"{prog}: error: give at least two runs.jsonl files (the first is the baseline)", file=sys.stderr)
        return 2
    missing = [str(p) for p in args.runs if not p.is_file()]
    if missing:
        print(f"{prog}: error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.n_boot < 1 or not 0 <= args.gate_margin <= 100:
        print(f"{prog}: error: --n-boot must be >= 1 and --gate-margin within [0, 100]", file=sys.stderr)
        return 2
    try:
        floors = dict(parse_floor(f) for chunk in args.gate_floor for f in chunk.split(",") if f)
    except GateError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    tiers = [t.strip().removeprefix("tier_") for t in args.gate_tiers.split(",") if t.strip()] or None
    bad = [t for t in tiers or [] if t not in TIERS]
    if bad:
        print(f"{prog}: error: --gate-tiers: unknown tier(s) {bad}; valid: {', '.join(TIERS)}", file=sys.stderr)
        return 2
    sources, problems = load_sources(args.runs)
    from .results import duplicate_note, latest_runs

    for path, (_, recs) in zip(args.runs, sources):
        problems += duplicate_note(latest_runs(recs)[1], f"{path}: ")
    for problem in problems:
        print(f"{prog}: {problem}", file=sys.stderr)
    empty = [str(p) for p, (_, recs) in zip(args.runs, sources) if not recs]
    if empty:
        print(f"{prog}: error: no complete run records in {', '.join(empty)}", file=sys.stderr)
        return 2
    if args.viewer is not None:
        if not args.viewer.parent.is_dir():
            print(f"{prog}: error: --viewer {args.viewer}: no directory {args.viewer.parent} to write it in",
                  file=sys.stderr)
            return 2
        try:
            write_viewer(args.runs, args.viewer)
        except OSError as exc:
            print(f"{prog}: error: --viewer {args.viewer}: cannot write it ({exc.strerror or exc})", file=sys.stderr)
            return 2
        print(f"{prog}: wrote {args.viewer}")
    base_label, base_records = sources[0]
    base = series_of(base_label, base_records)
    status = 0
    for path, (label, records) in zip(args.runs[1:], sources[1:]):
        print(f"\n== {path} ({label}) vs baseline {args.runs[0]} ({base_label})")
        pairs, notes = pairings(base, series_of(label, records))
        for note in notes:
            print(f"  {note}")
        for cand, ref in pairs:
            print(f"\n  {cand.label}  vs  {ref.label}")
            cand, ref = _same_versions(cand, ref, allow=args.allow_changed_cases)
            print(f"  {'tier':8} {'pairs':>6} {'TCR cand':>9} {'TCR base':>9} {'Δ pp':>7} {'95% CI':>16} "
                  f"{'b/c':>7} {'McNemar p':>10} {'p Holm':>7}")
            for t in paired_rows(cand, ref, margin_pp=args.gate_margin, n_boot=args.n_boot, seed=args.seed):
                ci = "—" if t.delta_pp is None else f"[{_pp(t.ci95_low_pp)}, {_pp(t.ci95_high_pp)}]"
                holm = "" if t.p_mcnemar_holm is None else f"{t.p_mcnemar_holm:.3g}"
                print(f"  {t.scope:8} {t.n_pairs:>6} {_pct(t.tcr_model):>9} {_pct(t.tcr_ref):>9} "
                      f"{_pp(t.delta_pp):>7} {ci:>16} {t.mcnemar_b:>3}/{t.mcnemar_c:<3} "
                      f"{t.p_mcnemar if t.n_pairs else float('nan'):>10.3g} {holm:>7}")
            unpaired = len(set(cand.runs) ^ set(ref.runs))
            if unpaired:
                print(f"  unpaired: {len(set(cand.runs) - set(ref.runs))} candidate item(s) without a baseline "
                      f"counterpart, {len(set(ref.runs) - set(cand.runs))} baseline item(s) not in the candidate")
            changed = changed_items(cand, ref)
            broke = sum(1 for kind, _ in changed if kind == "broke")
            print(f"  outcome changed on {len(changed)} item(s): {broke} passed before and fail now, "
                  f"{len(changed) - broke} failed before and pass now")
            for kind, key in changed[: args.changed]:
                link = f"  {args.viewer}{viewer_fragment(cand, key, ref)}" if args.viewer else ""
                print(f"    {kind:5} {key[0]}[{key[1]}-{key[2]}-r{key[3]}]{link}")
            if len(changed) > args.changed:
                print(f"    ... {len(changed) - args.changed} more (--changed N lists more)")
        # the gate, exactly as a session run with --baseline <first file> would give it
        print()
        got = _gate(args, records, path, tiers, floors)
        status = 1 if 1 in (status, got) else max(status, got)  # a failed gate outranks one without a verdict
    return status


def stopped_reasons(runs_file: Path) -> list[str]:
    """The PARTIAL reasons in the session.json beside a runs file that say it stopped early (not a
    narrowed selection, which the gate judges itself), as the session gives them to the gate."""
    from .reportdir import read_session
    from .runinfo import narrowing

    run = read_session(runs_file.parent)
    if not run:
        return []
    try:
        narrowed = set(narrowing(run.get("selection") or {}, Path.cwd()))
    except (KeyError, TypeError, AttributeError):
        narrowed = set()
    return [r for r in run.get("partial_reasons") or []
            if r not in narrowed and not str(r).startswith("selection narrower than the case set")
            and not re.fullmatch(r"\d+ item\(s\) deselected", str(r))]


def _gate(args: argparse.Namespace, records: list[dict[str, Any]], path: Path, tiers: list[str] | None,
          floors: dict[str, float]) -> int:
    """Print the gate's lines as the session prints them; 0 passed, 1 failed, 75 no verdict (infrastructure)."""
    from .gate import LADDER_ONLY, GateError, evaluate, load_baseline
    from .reportdir import read_session
    from .runinfo import selection_text
    from .suite.schema import TIERS

    stopped = stopped_reasons(path)
    run = read_session(path.parent) or {}
    try:
        selection = selection_text(run["selection"], Path.cwd()) if run.get("selection") else ""
    except (KeyError, TypeError, AttributeError):
        selection = ""
    infra = [r for r in stopped if re.match(r"model .+: endpoint failed the probe", r)]
    if not any(r.get("tier") in TIERS for r in records) and not floors:
        # call-site and pressure records are compared above; the gate certifies ladder tiers, so it has
        # nothing to say here (not a failure: "cannot evaluate" made a call-site comparison exit 1)
        kinds = sorted({str(r.get("kind") or r.get("tier")) for r in records})
        print(f"agentfloor gate: none: {LADDER_ONLY}; these runs hold "
              f"{', '.join(kinds) or 'no'} records, compared above")
        return 0
    try:
        baseline, _ = load_baseline(args.runs[0])
        result = evaluate(records, baseline, margin_pp=args.gate_margin, tiers=tiers, floors=floors,
                          baseline_model=args.gate_baseline_model, decision=args.noninferiority_bound,
                          min_pairs=args.gate_min_pairs, partial=[r for r in stopped if r not in infra],
                          infra_partial=infra, selection=selection, allow_changed_cases=args.allow_changed_cases)
    except (GateError, KeyError, ValueError) as exc:
        print("agentfloor gate: FAILED")
        print(f"gate: cannot evaluate: {exc}")
        return 1
    print(f"agentfloor gate: {result.candidate} vs {result.baseline} ({args.runs[0].name})")
    print(result.header())
    if result.selection:
        print(result.selection_line())
    for blocker in result.blockers + result.infra_blockers:
        print(f"gate: {blocker}")
    for v in result.verdicts:
        print(v.line(args.gate_margin))
    if result.unpaired_candidate or result.unpaired_baseline:
        print(f"gate: unpaired runs: {result.unpaired_candidate} candidate run(s) without a baseline "
              f"counterpart, {result.unpaired_baseline} baseline run(s) not re-run")
    for note in result.notes:
        print(f"gate: {note}")
    if result.passed:
        print("agentfloor gate: PASSED")
        return 0
    failed = [v.tier for v in result.verdicts if not v.passed]
    head = "NO VERDICT" if result.exit_status == 75 else "FAILED"
    print(f"agentfloor gate: {head} ({', '.join(failed) or 'see above'})")
    print(f"gate: {head}: {result.reason()} (exit status {result.exit_status})")
    return result.exit_status


if __name__ == "__main__":
    sys.exit(main())
