"""``python -m pytest_agentfloor report runs.jsonl``: rebuild every report file from recorded runs.

No model and no pytest run is needed: model metadata (size, provider, pricing) comes from the
records' ``config``. Given the options of a session, the files are byte-identical to the ones
that session wrote.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from ..reportdir import SESSIONS, read_session
from ..runinfo import merged_run
from ..results import read_records, usable_runs
from .args import MAX_BOOT, number_in, whole_number
from .args import OneLineParser as _Parser
from .files import REPORT_FILES, _meta_with_conflicts, prepare_records, read_probe, write_reports


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m pytest_agentfloor report",
                description="Rebuild summary.json, tcr.csv, report.md and report.html from a runs.jsonl.")
    p.add_argument("runs", type=Path, nargs="+",
                   help="runs.jsonl written by a pytest-agentfloor session; several (e.g. one per --agentfloor-shard) are merged")
    p.add_argument("--out", type=Path, default=None, help="output directory (default: the runs file's directory)")
    p.add_argument("--reference", default=None, metavar="MODEL", help="reference model for the paired tests")
    p.add_argument("--callsite-weights", default="", metavar="SITE=W,...",
                   help="relative call frequency per call site for routed accuracy, e.g. intent=10,actuator=3")
    p.add_argument("--callsite-verdict", choices=("raw", "holm"), default="raw",
                   help="which McNemar p decides 'differs' in the call-site paired table: raw = exact (seed 001), "
                        "holm = Holm-adjusted (default raw)")
    p.add_argument("--margin", type=number_in(0.0, 100.0), default=10.0, metavar="PP",
                   help="non-inferiority/equivalence margin in percentage points (default 10)")
    p.add_argument("--n-boot", type=whole_number(1, MAX_BOOT), default=10_000, metavar="N",
                   help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=int, default=42, metavar="S", help="bootstrap seed (default 42)")
    p.add_argument("--infra-as-failure", action="store_true", help="score infrastructure errors as failed runs")
    p.add_argument("--cluster", choices=("auto", "unit", "task", "run"), default="auto",
                   help="bootstrap resampling unit: (variant, instance, run) tuples, tasks or single runs "
                        "(default auto: unit, or run with --interval-method paper)")
    p.add_argument("--interval-method", choices=("guarded", "paper"), default="guarded",
                   help="guarded: never narrower than the Wilson/Tango score interval (default); paper: the "
                        "AgentFloor paper's plain percentile bootstrap")
    p.add_argument("--noninferiority-bound", choices=("two-sided", "one-sided"), default="two-sided",
                   help="lower end of the 95%% CI (default) or the one-sided 95%% bound (90%% CI)")
    p.add_argument("--infra-threshold", type=number_in(0.0, 1.0), default=0.05, metavar="SHARE",
                   help="infra-error share above which a model is flagged unreliable in a tier (default 0.05)")
    p.add_argument("--routing-out", type=Path, default=None, metavar="PATH",
                   help="write the call-site routing chosen against --reference to this JSON file, and a LiteLLM "
                   "proxy config beside it (<stem>.litellm.yaml), as --agentfloor-routing-out does")
    p.add_argument("--print", dest="print_tables", action="store_true", help="also print the terminal tables")
    return p


def merge_runs(paths: list[Path]) -> tuple[list[dict], list[str]]:
    """The usable records of every file, one per run by results.DUPLICATE_RULE (the last wins), so
    merging a file with itself or overlapping shards cannot inflate a table, and a run recorded
    twice with different outcomes is resolved as compare, the gate and resume resolve it."""
    from ..results import duplicate_note, latest_runs

    merged: list[dict] = []
    problems: list[str] = []
    for path in paths:
        records, notes = read_records(path)
        records, skipped = usable_runs(records, str(path))
        problems += notes + skipped
        merged += records
    protocols = sorted({str(r.get("protocol") or "legacy") for r in merged})
    if len(protocols) > 1:  # the same run under two protocols is two measurements, not a duplicate
        raise MixedProtocols(f"the records were made under several protocols ({', '.join(protocols)}); a report is "
                             "of one protocol's runs: report each protocol's runs.jsonl apart")
    merged, replaced = latest_runs(merged)
    return merged, problems + duplicate_note(replaced)


class MixedProtocols(ValueError):
    """The files to merge hold runs of more than one protocol."""


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    prog = "agentfloor report"
    missing = [str(p) for p in args.runs if not p.is_file()]
    if missing:
        print(f"{prog}: error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        print(f"{prog}: error: --out {args.out}: is a file, not a directory; name a directory for the reports",
              file=sys.stderr)
        return 2
    try:
        records, problems = merge_runs(args.runs)
    except MixedProtocols as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"{prog}: {problem}", file=sys.stderr)
    if not records:
        print(f"{prog}: error: no complete run records in {', '.join(map(str, args.runs))}", file=sys.stderr)
        return 2
    meta, conflicts = _meta_with_conflicts(records)
    for note in conflicts:
        print(f"{prog}: {note}", file=sys.stderr)
    models = sorted({str(r.get("model")) for r in prepare_records(records)[0]})
    if args.reference is not None and args.reference not in models:
        print(f"{prog}: error: unknown reference model {args.reference!r}; models in the runs: "
              f"{', '.join(models)}", file=sys.stderr)
        return 2
    if args.routing_out is not None and args.reference is None:
        print(f"{prog}: error: --routing-out needs --reference MODEL (the production model)", file=sys.stderr)
        return 2
    if args.routing_out is not None and args.routing_out.is_dir():
        print(f"{prog}: error: --routing-out {args.routing_out}: is a directory; give a file name, e.g. routing.json",
              file=sys.stderr)
        return 2
    from ..callsite.stats import parse_weights

    try:
        section_options = {"callsite_weights": parse_weights(args.callsite_weights),
                           "callsite_verdict": args.callsite_verdict, "margin_pp": args.margin}
    except ValueError as exc:
        print(f"{prog}: error: --callsite-weights: {exc}", file=sys.stderr)
        return 2
    first = args.runs[0]
    out = args.out if args.out is not None else first.parent
    try:
        summary = write_reports(records, meta, out, reference=args.reference, margin_pp=args.margin,
                                n_boot=args.n_boot, seed=args.seed, infra_as_failure=args.infra_as_failure,
                                cluster=None if args.cluster == "auto" else args.cluster,
                                probe=read_probe(first.parent / "probe.json") if len(args.runs) == 1 else None,
                                run=_run_of(args.runs),
                                interval_method=args.interval_method, decision=args.noninferiority_bound,
                                infra_threshold=args.infra_threshold,
                                section_options=section_options)
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. --out under a file, a full disk
        print(f"{prog}: error: cannot write the reports to {out} ({exc.strerror or exc})", file=sys.stderr)
        return 2
    from .viewer import VIEWER_FILE, write_viewer

    try:
        write_viewer(list(args.runs), out / VIEWER_FILE)
    except OSError as exc:
        print(f"{prog}: error: cannot write {out / VIEWER_FILE} ({exc})", file=sys.stderr)
        return 2
    if args.print_tables:
        from ..render import escape_surrogates
        from .sections import compute_sections
        from .terminal import render_text, section_text

        width = max(shutil.get_terminal_size((120, 24)).columns, 80)
        sections = compute_sections(prepare_records(records)[0], meta, reference=args.reference,
                                    options=section_options)
        if summary.model_order or not sections:
            sys.stdout.write(escape_surrogates(render_text(summary, width=width, markup=sys.stdout.isatty())))
        if sections:
            sys.stdout.write(escape_surrogates(section_text(sections, width=width, markup=sys.stdout.isatty())))
    print(f"{prog}: {len(prepare_records(records)[0])} records, {len(models)} model(s); wrote "
          f"{', '.join(REPORT_FILES)}, {VIEWER_FILE} to {out}")
    if args.routing_out is not None:
        return _routing(prog, records, meta, args, {**section_options, "routing_out": args.routing_out,
                                                    "run": _run_of(args.runs)})
    return 0


def _routing(prog: str, records: list[dict], meta: dict[str, Any], args: Any, options: dict[str, Any]) -> int:
    from .files import atomic_write
    from .sections import export_files

    # the deployment needs each model's endpoint (model id, base_url, key variable): the records' own config
    configs = {str(r["model"]): dict(r["config"]) for r in records if isinstance(r.get("config"), dict) and "model" in r}
    meta = {m: {**configs.get(m, {}), **view} for m, view in meta.items()}
    files, problems = export_files(prepare_records(records)[0], meta, reference=args.reference, options=options)
    for problem in problems:
        print(f"{prog}: error: {problem}", file=sys.stderr)
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
            print(f"{prog}: wrote {path}")
    except OSError as exc:
        print(f"{prog}: error: cannot write {args.routing_out} ({exc})", file=sys.stderr)
        return 2
    return 1 if problems else 0


def _run_of(runs: list[Path]) -> dict[str, Any] | None:
    """The COMPLETE/PARTIAL state the report states: one file's own session.json; several files merged;
    a session directory's runs.jsonl without its session.json (a killed session) PARTIAL, as unknown;
    a runs.jsonl assembled by hand elsewhere states nothing."""
    if len(runs) > 1:
        return merged_run([(str(p), read_session(p.parent)) for p in runs])
    run = read_session(runs[0].parent)
    if run is None and runs[0].parent.parent.name == SESSIONS:
        return merged_run([(str(runs[0]), None)])
    return run
