"""Report files: summary.json, tcr.csv, report.md and report.html from run records.

:func:`write_reports` is the one entry point, called by the plugin at session end (controller
only) and by ``python -m pytest_agentfloor report``. Every file is a pure function of the
records, the model metadata and the options, so a rebuild from ``runs.jsonl`` is byte-identical
to the session-end files: nothing run-dependent (time, host, paths, versions) is written, floats
are formatted by fixed rules and every collection is emitted in a canonical order.

This module also holds the table builders and number formats shared by the Markdown, HTML and
terminal renderers, so the three always say the same thing.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..grading.failure import FAILURE_MODES, FAILURE_NAMES
from ..grading.obligations import NAMES as OBLIGATION_NAMES
from ..grading.obligations import ORDER as OBLIGATION_ORDER
from ..results import PROPERTY_FIELDS
from ..stats import OVERALL, Summary, aggregate
from ..stats.diagnostics import counts_from_trajectory

#: the files written by :func:`write_reports`, in writing order
REPORT_FILES: tuple[str, ...] = ("summary.json", "tcr.csv", "report.md", "report.html")
#: what of a model's public config the reports use (nothing else, so no URL or secret leaks in)
META_FIELDS: tuple[str, ...] = ("params_b", "provider", "pricing")
TCR_CSV_COLUMNS: tuple[str, ...] = ("model", "tier", "runs", "passed", "tcr", "ci_low", "ci_high", "infra")

_BOOL_FIELDS = ("passed", "infra_error", "judge_error")
_INT_FIELDS = ("run", "turns", "calls", "tokens_in", "tokens_out", "calls_malformed", "calls_hallucinated",
               "calls_repeated", "turns_leaked", "judge_verdicts", "keyword_verdicts", "judge_fails",
               "judge_cached", "judge_requests")
_FLOAT_FIELDS = ("latency_s", "wall_s", "busy_s", "cost_usd", "judge_cost_usd", "judge_latency_s")
_KEY = ("model", "task", "variant", "instance", "run")

TERMINAL_FLAG_SHORT: dict[str, str] = {
    "truncation": "trunc", "budget": "budget", "turn_limit": "turns", "infeasible": "infeas",
    "wrong_conclusion": "wrong", "other": "other", "none": "none",
}


# -- records and metadata -------------------------------------------------------------------
def _coerce(field_name: str, value: Any) -> Any:
    """Undo stringification (JUnit XML, some transports) of a property value; others pass through."""
    if not isinstance(value, str):
        return value
    if field_name in _BOOL_FIELDS:
        if value.lower() in ("true", "1"):
            return True
        if value.lower() in ("false", "0", ""):
            return False
    if field_name in _INT_FIELDS:
        try:
            return int(value)
        except ValueError:
            return value
    if field_name in _FLOAT_FIELDS:
        try:
            return float(value)
        except ValueError:
            return value
    if field_name in ("first_unmet", "failure_mode", "terminal_flag", "judge_model") and value in ("", "None"):
        return None
    return value


def prepare_records(records: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Compact run records: only ``PROPERTY_FIELDS``, repeats of one run collapsed (the last wins:
    results.DUPLICATE_RULE, the rule of every command).

    Full runs.jsonl records and the plugin's user_properties dicts give the same result. A run
    key (model, task, variant, instance, run) seen twice is a re-run (resume, rerun plugins);
    the later record replaces the earlier one and a note says how many were replaced.
    """
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    replaced = 0
    for r in records:
        rec = {k: _coerce(k, r.get(k)) for k in PROPERTY_FIELDS}
        if rec.get("calls_malformed") is None and isinstance(r.get("trajectory"), Mapping):
            rec.update(counts_from_trajectory(r["trajectory"]))  # records written before the counts existed
        key = tuple(str(rec.get(k)) for k in _KEY)
        if key in out:
            replaced += 1
            del out[key]  # keep insertion order = order of the last occurrence
        out[key] = rec
    from ..results import duplicate_note

    return list(out.values()), duplicate_note(replaced)


def model_meta_view(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The part of a model's (public) config that reports use: size, provider and pricing."""
    cfg = dict(config or {})
    pb = cfg.get("params_b")
    pricing = cfg.get("pricing") or {}
    return {
        "params_b": None if pb is None else float(pb),
        "provider": None if cfg.get("provider") is None else str(cfg["provider"]),
        "pricing": {str(k): float(v) for k, v in sorted(pricing.items()) if v is not None},
    }


def _meta_with_conflicts(records: Iterable[Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    seen: dict[str, Counter[str]] = {}
    for r in records:
        cfg = r.get("config")
        if "model" not in r or not isinstance(cfg, Mapping):
            continue
        view = json.dumps(model_meta_view(cfg), sort_keys=True)
        seen.setdefault(str(r["model"]), Counter())[view] += 1
    meta, notes = {}, []
    for model in sorted(seen):
        views = sorted(seen[model].items(), key=lambda kv: (-kv[1], kv[0]))
        meta[model] = json.loads(views[0][0])
        if len(views) > 1:
            notes.append(f"model {model!r}: records carry {len(views)} different configs; "
                         f"using the most frequent ({views[0][1]} records)")
    return meta, notes


def models_meta_from_records(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{model: {"params_b", "provider", "pricing"}}`` from the ``config`` of full run records.

    Records without a ``config`` (compact user_properties dicts) contribute nothing. When one
    model's records disagree, the most frequent view wins (ties: the first in JSON order).
    """
    return _meta_with_conflicts(records)[0]


def normalise_meta(models_meta: Mapping[str, Mapping[str, Any]] | None,
                   models: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Meta views of the models that have records (configured-but-unrun models are dropped)."""
    meta = dict(models_meta or {})
    return {m: model_meta_view(meta.get(m)) for m in sorted(set(models)) if m in meta}


# -- writing ------------------------------------------------------------------------------
def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` newlines) to a temp file beside ``path``, then ``os.replace``.

    A lone surrogate from a model's output (UTF-8 cannot hold one) is written as its escape,
    so one bad character never costs the whole report.
    """
    from ..render import escape_surrogates

    text = escape_surrogates(text)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def build_summary(records: Iterable[Mapping[str, Any]], models_meta: Mapping[str, Mapping[str, Any]] | None, *,
                  reference: str | None = None, margin_pp: float = 10.0, n_boot: int = 10_000, seed: int = 42,
                  infra_as_failure: bool = False, cluster: str | None = None, **stats_opts: Any,
                  ) -> tuple[Summary, dict[str, dict[str, Any]]]:
    """:func:`~pytest_agentfloor.stats.aggregate` over prepared records; returns (summary, meta views).

    ``stats_opts``: further :func:`~pytest_agentfloor.stats.aggregate` options (``interval_method``,
    ``decision``, ``infra_threshold``, ``headline_instance``).
    """
    recs, notes = prepare_records(records)
    meta = normalise_meta(models_meta, (str(r["model"]) for r in recs if r.get("model") is not None))
    from .sections import is_ladder

    ladder = [r for r in recs if is_ladder(r)]
    if not ladder and len(ladder) != len(recs):  # only other kinds: their sections are the report
        summary = aggregate([], {}, reference=None, margin_pp=margin_pp, n_boot=n_boot, seed=seed,
                            infra_as_failure=infra_as_failure, cluster=cluster, **stats_opts)
        return replace(summary, config={**summary.config, "reference": reference}), meta
    summary = aggregate(ladder, meta, reference=reference, margin_pp=margin_pp, n_boot=n_boot, seed=seed,
                        infra_as_failure=infra_as_failure, cluster=cluster, **stats_opts)
    if notes:
        summary = replace(summary, warnings=tuple(sorted({*summary.warnings, *notes})))
    return summary, meta


RUN_FIELDS: tuple[str, ...] = ("model", "task", "tier", "variant", "instance", "run", "passed", "infra_error", "kind",
                               "protocol")


def run_outcomes(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per-run outcomes, sorted: enough for a later gate to pair against this run."""
    recs, _ = prepare_records(records)
    rows = [{k: r.get(k) for k in RUN_FIELDS if k != "protocol" or r.get(k) is not None} for r in recs]
    return sorted(rows, key=lambda r: tuple(str(r.get(k)) for k in RUN_FIELDS))


def read_probe(path: Path) -> dict[str, str] | None:
    """{model: classification} from a probe.json written at session start, if there is one."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return {name: str(entry.get("classification")) for name, entry in data.items() if isinstance(entry, dict)}


def run_line(run: Mapping[str, Any] | None) -> str | None:
    """One line saying which session the report describes and whether that run is COMPLETE.

    ``run``: the session's ``session.json`` (see :mod:`pytest_agentfloor.runinfo`); None for
    records without one (e.g. a runs.jsonl assembled by hand), which says nothing.
    """
    if not run:
        return None
    state = "COMPLETE" if run.get("complete") else "PARTIAL"
    reasons = list(run.get("partial_reasons") or [])
    sel = run.get("selection") or {}
    bits = [f"session {run.get('session_id', '?')}", state + (f" ({'; '.join(reasons)})" if reasons else "")]
    if sel.get("models"):
        bits.append("models " + ", ".join(sel["models"]))
    if sel.get("paths"):
        bits.append("paths " + " ".join(sel["paths"]))
    protocol = run.get("protocol") or {}
    if protocol.get("name"):
        bits.append(f"protocol {protocol['name']}")
    windows = run.get("context_windows") or {}
    if windows:
        bits.append("context " + ", ".join(f"{m} {w if w else 'unknown'}" for m, w in windows.items()))
    return " · ".join(bits)


def render_files(summary: Summary, meta: Mapping[str, Mapping[str, Any]],
                 runs: list[dict[str, Any]] | None = None, probe: Mapping[str, str] | None = None,
                 run: Mapping[str, Any] | None = None,
                 sections: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The text of every report file, by file name; ``run`` (session.json) heads each of them;
    ``sections``: kind sections (:mod:`.sections`)."""
    from html import escape

    from ..stats.serialize import to_jsonable
    from .html import render_html
    from .markdown import render_markdown
    from .sections import section_html, section_markdown

    data = to_jsonable(summary)
    if runs is not None:
        data["runs"] = runs
    if probe:
        data["probe"] = dict(sorted(probe.items()))
    if run:
        data["run"] = dict(run)
    for key, value in (sections or {}).items():
        data[key] = to_jsonable(value)
    md, html = render_markdown(summary, meta), render_html(summary, meta)
    if sections:
        if not summary.model_order:  # no ladder records: the kinds' sections are the whole report
            md = "# AgentFloor report\n"
        md = md.rstrip("\n") + "\n\n" + section_markdown(sections)
        if not summary.model_order:
            html = html.replace("<p>No run records.</p>", "").replace(
                escape(config_line(summary)), "No ladder records: the call sites below are the whole run.", 1)
        html = html.replace("</main></body></html>", section_html(sections) + "</main></body></html>", 1)
    line = run_line(run)
    if line is not None:
        head, _, rest = md.partition("\n")
        md = f"{head}\n\n**Run:** {line}\n{rest}"
        state = "complete" if run and run.get("complete") else "partial"
        html = html.replace("</header>\n", f'</header>\n<p class="run {state}"><strong>Run:</strong> '
                            f"{escape(line)}</p>\n", 1)
    return {
        "summary.json": json.dumps(data, sort_keys=True, indent=2, allow_nan=False) + "\n",
        "tcr.csv": tcr_csv(summary),
        "report.md": md,
        "report.html": html,
    }


def write_reports(records: list[dict[str, Any]], models_meta: dict[str, dict[str, Any]] | None, out_dir: Path, *,
                  reference: str | None = None, margin_pp: float = 10.0, n_boot: int = 10_000, seed: int = 42,
                  infra_as_failure: bool = False, cluster: str | None = None,
                  probe: Mapping[str, str] | None = None, run: Mapping[str, Any] | None = None,
                  section_options: Mapping[str, Any] | None = None, **stats_opts: Any) -> Summary:
    """Aggregate ``records`` and write :data:`REPORT_FILES` into ``out_dir``; return the Summary.

    ``probe``: the session-start probe classification of each model (kept in summary.json).
    ``run``: the session's session.json (id, selection, COMPLETE/PARTIAL): ``summary.json["run"]``
    and the first line of report.md and report.html.

    ``records``: full runs.jsonl records or compact user_properties dicts (identical results).
    ``models_meta``: ``{model: public config}`` (e.g. ``{m.name: m.public()}``) or the output of
    :func:`models_meta_from_records`; only ``params_b``, ``provider`` and ``pricing`` are used,
    and only for models that have records. Each file is replaced atomically.
    """
    summary, meta = build_summary(records, models_meta, reference=reference, margin_pp=margin_pp, n_boot=n_boot,
                                  seed=seed, infra_as_failure=infra_as_failure, cluster=cluster, **stats_opts)
    from .sections import compute_sections

    sections = compute_sections(prepare_records(records)[0], meta, reference=reference, options=section_options)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in render_files(summary, meta, run_outcomes(records), probe, run, sections).items():
        atomic_write(out_dir / name, text)
    return summary


def tcr_csv(summary: Summary) -> str:
    """One row per model x scope (tiers present, then ``overall``); rates are fractions."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(TCR_CSV_COLUMNS)
    for m in summary.model_order:
        for sc in summary.scopes:
            e = summary.tcr[m][sc]
            w.writerow([m, sc, e.n_runs, e.n_passed, _num(e.tcr), _num(e.ci_low), _num(e.ci_high), e.n_infra])
    return buf.getvalue()


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.6f}"


# -- number formats -------------------------------------------------------------------------
DASH = "—"


def scope_label(scope: str) -> str:
    return "all" if scope == OVERALL else scope


def pct(x: float | None, nd: int = 1) -> str:
    return DASH if x is None else f"{100.0 * x:.{nd}f}%"


def pct_num(x: float | None, nd: int = 1) -> str:
    return DASH if x is None else f"{100.0 * x:.{nd}f}"


def ci_pct(lo: float | None, hi: float | None, nd: int = 1) -> str:
    if lo is None or hi is None:
        return DASH
    return f"[{100.0 * lo:.{nd}f}, {100.0 * hi:.{nd}f}]"


def signed(x: float | None, nd: int = 1) -> str:
    if x is None:
        return DASH
    r = round(x, nd) + 0.0
    return f"{r:+.{nd}f}"


def ci_pp(lo: float | None, hi: float | None, nd: int = 1) -> str:
    if lo is None or hi is None:
        return DASH
    return f"[{signed(lo, nd)}, {signed(hi, nd)}]"


UNKNOWN = "unknown"


def usd(x: float | None, missing: str = DASH) -> str:
    """Dollars with two significant digits below $1 ($0.00046, $0.033), cents above; ``missing`` for None."""
    if x is None:
        return missing
    if x == 0:
        return "$0"
    if abs(x) >= 1:
        return f"${x:,.2f}"
    two_sig = float(f"{abs(x):.2g}")  # round first, so 0.000998 reads $0.0010, not $0.00100
    decimals = max(2, 1 - math.floor(math.log10(two_sig)))
    return f"${x:.{decimals}f}"


def secs(x: float | None) -> str:
    if x is None:
        return DASH
    if x < 10:
        return f"{x:.2f} s"
    if x < 90:
        return f"{x:.1f} s"
    return f"{x / 60:.1f} min"


def pval(p: float | None) -> str:
    if p is None:
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def params(pb: float | None) -> str:
    return DASH if pb is None else f"{pb:g} B"


def tokens(x: float | None) -> str:
    return DASH if x is None else f"{x:,.0f}"


def pricing_text(meta: Mapping[str, Any] | None) -> str:
    p = (meta or {}).get("pricing") or {}
    parts = []
    if "hourly_usd" in p:
        parts.append(f"${p['hourly_usd']:g}/h")
    if "input_per_mtok" in p or "output_per_mtok" in p:
        parts.append(f"${p.get('input_per_mtok', 0):g}/${p.get('output_per_mtok', 0):g} per Mtok in/out")
    return ", ".join(parts) or "none"


def tcr_class(x: float | None) -> str:
    if x is None:
        return "na"
    return "good" if x >= 0.8 else "mid" if x >= 0.5 else "bad"


def verdict(raw: bool, holm: bool, status: str = "no") -> tuple[str, str]:
    """(text, class): ``yes`` holds after Holm, ``yes†`` only unadjusted, ``too few`` (insufficient
    evidence) when the pairs are too few to certify at all, ``no`` otherwise."""
    if holm:
        return "yes", "yes"
    if raw:
        return "yes†", "raw"
    if status == "insufficient evidence":
        return "too few", "na"
    return "no", "no"


UNRELIABLE = "unreliable endpoint"


def interval_caption(summary: Summary) -> str:
    """How every interval in the report was computed (printed under each table that shows one)."""
    c = summary.config
    level = f"{100 * c['ci_level']:g}%"
    if c.get("interval_method", "guarded") == "paper":
        how = (f"{level} CIs: plain percentile bootstrap as in the AgentFloor paper (--interval-method paper; "
               "it can be zero-width on small samples)")
    else:
        how = (f"{level} CIs: guarded (never narrower than the Wilson score interval for a TCR or Tango's score "
               "interval for a paired Δ; hull with the percentile bootstrap)")
    return (f"{how}; {c['n_boot']} resamples, seed {c['seed']}, resampling {c['resampling_unit']} units.")


def decision_caption(summary: Summary) -> str:
    c = summary.config
    if c.get("decision_bound", "two-sided") == "one-sided":
        return ("Non-inferior: the one-sided 95% bound (90% CI low end) is above −margin; equivalent (TOST): "
                "the 90% CI lies within ±margin.")
    return ("Non-inferior: the 95% CI's low end is above −margin (Table 1's reading); equivalent: the 95% CI "
            "lies within ±margin.")


# -- shared tables ----------------------------------------------------------------------------
@dataclass
class TextTable:
    """A table as text cells, with one style class per cell for HTML and terminal colouring."""

    key: str
    title: str
    headers: list[str]
    align: str  # one of "l"/"r"/"c" per column
    rows: list[list[str]] = field(default_factory=list)
    classes: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sections: list[int] = field(default_factory=list)  # row indexes after which a section ends

    def add(self, cells: list[str], classes: list[str] | None = None, *, end_section: bool = False) -> None:
        self.rows.append(cells)
        self.classes.append(classes or [""] * len(cells))
        if end_section:
            self.sections.append(len(self.rows) - 1)


def config_line(summary: Summary) -> str:
    c = summary.config
    unit = c["resampling_unit"]
    infra = "infra errors count as failures" if c["infra_as_failure"] else "infra errors excluded from TCR"
    ref = f"reference {c['reference']}, margin ±{c['margin_pp']:g} pp" if c["reference"] else "no reference model"
    method = c.get("interval_method", "guarded")
    return (f"{summary.n_records} run records · {len(summary.model_order)} model(s) · "
            f"tiers {', '.join(s for s in summary.scopes if s != OVERALL) or DASH} · {ref} · "
            f"{c['n_boot']} bootstrap resamples (seed {c['seed']}) over {unit} units · "
            f"{method} intervals · {infra}")


def judge_line(summary: Summary) -> str:
    """One line: who decided the semantic checks, the judge's cache use, cost and latency."""
    j = summary.judge.get(OVERALL)
    if j is None or not (j.judge_verdicts or j.keyword_verdicts or j.judge_errors):
        return "semantic checks: none in these runs"
    who = f"judge {', '.join(j.judges)}" if j.judges else "judge"
    parts = [f"semantic checks: {j.judge_verdicts} verdict(s) by the {who}, "
             f"{j.keyword_verdicts} by the keyword stand-in"]
    if j.judge_verdicts or j.judge_errors:
        parts.append(f"judge cache {j.cache_hits} hit(s), {j.judge_requests} request(s) "
                     f"(hit rate {pct(j.hit_rate, 0)})")
        parts.append(f"judge cost {usd(j.judge_cost_usd)}, latency {secs(j.judge_latency_s)} "
                     "(apart from the judged models')")
        parts.append(f"{j.judge_errors} judge error(s) (infrastructure)")
    return " · ".join(parts)


def judge_table(summary: Summary) -> TextTable:
    """Per judged model: semantic verdicts by source, judge failures and errors, cache, cost."""
    t = TextTable("judge", "Semantic checks: judge and keyword verdicts",
                  ["model", "judge", "by judge", "judge fail", "by keyword", "judge errors", "cache hits",
                   "requests", "hit rate", "judge $", "judge s"], "llrrrrrrrrr")
    for m in [*summary.model_order, OVERALL]:
        j = summary.judge.get(m)
        if j is None:
            continue
        t.add([m if m != OVERALL else "all", ", ".join(j.judges) or DASH, str(j.judge_verdicts),
               str(j.judge_fails), str(j.keyword_verdicts), str(j.judge_errors), str(j.cache_hits),
               str(j.judge_requests), pct(j.hit_rate, 0), usd(j.judge_cost_usd), secs(j.judge_latency_s)],
              end_section=m == summary.model_order[-1] if summary.model_order else False)
    t.notes.append("A semantic check is decided once per predicate and item: by the judge under --agentfloor-judge, else by "
                   "its keyword rules. Judge cost and latency are the judge's own, not part of the models' cost.")
    return t


def models_table(summary: Summary, meta: Mapping[str, Mapping[str, Any]]) -> TextTable:
    t = TextTable("models", "Models", ["model", "params", "provider", "pricing", "records", "infra errors"], "llllrr")
    for m in summary.model_order:
        info = summary.models[m]
        mm = meta.get(m) or {}
        t.add([m + (" (reference)" if info.is_reference else ""), params(info.params_b), mm.get("provider") or DASH,
               pricing_text(mm), str(info.n_records), str(info.n_infra)])
    t.notes.append("Models are listed smallest first (params); models without a size come last.")
    return t


def tcr_long_table(summary: Summary) -> TextTable:
    """Long form: one row per model x scope (the terminal's main table)."""
    t = TextTable("tcr", "AgentFloor: task completion by model and tier",
                  ["model", "tier", "runs", "passed", "TCR", "95% CI", "infra", "TCR infra=fail", "endpoint"],
                  "llrrrrrrl")
    for m in summary.model_order:
        for sc in summary.scopes:
            e = summary.tcr[m][sc]
            t.add([m, scope_label(sc), str(e.n_runs), str(e.n_passed), pct(e.tcr), ci_pct(e.ci_low, e.ci_high),
                   str(e.n_infra), pct(e.tcr_infra_as_failure) if e.n_infra else "",
                   UNRELIABLE if e.unreliable else ""],
                  ["", "", "", "", tcr_class(e.tcr), "", "infra" if e.n_infra else "", "", "bad" if e.unreliable else ""],
                  end_section=sc == OVERALL)
    t.notes.append(interval_caption(summary))
    return t


def tcr_matrix_table(summary: Summary) -> TextTable:
    """Model x tier matrix: ``TCR% [low, high]``; the best TCR of each tier is marked ``best``."""
    scopes = list(summary.scopes)
    t = TextTable("tcr_matrix", "Task completion rate with 95% CI",
                  ["model", "params", *[scope_label(s) for s in scopes]], "ll" + "r" * len(scopes))
    best = {sc: max((summary.tcr[m][sc].tcr for m in summary.model_order
                     if summary.tcr[m][sc].tcr is not None and not summary.tcr[m][sc].unreliable),
                    default=None) for sc in scopes}
    flagged = False
    for m in summary.model_order:
        cells, cls = [m, params(summary.models[m].params_b)], ["", ""]
        for sc in scopes:
            e = summary.tcr[m][sc]
            text = DASH if e.tcr is None else f"{pct_num(e.tcr)} {ci_pct(e.ci_low, e.ci_high)}"
            if e.unreliable:
                flagged = True
                text += f" ⚠ {UNRELIABLE} ({pct_num(e.tcr_infra_as_failure)} with infra as failures)"
            cells.append(text)
            cls.append(tcr_class(e.tcr) + (" best" if e.tcr is not None and not e.unreliable and e.tcr == best[sc]
                                           else ""))
        t.add(cells, cls)
    t.notes.append("Cells: TCR % [95% CI]. Best TCR per tier in bold. Runs per cell are in tcr.csv. "
                   + interval_caption(summary))
    if flagged:
        t.notes.append(f"⚠ {UNRELIABLE}: more than {100 * summary.config.get('infra_threshold', 0.05):g}% of the "
                       "cell's runs ended in an infrastructure error; the cell is never 'best' and the model is kept "
                       "out of the Pareto front and the recipes for it.")
    return t


def paired_table(summary: Summary) -> TextTable | None:
    p = summary.paired
    if not p.available:
        return None
    t = TextTable(
        "paired", f"Paired comparison against {p.reference} (margin ±{p.margin_pp:g} pp, Holm-adjusted)",
        ["model", "tier", "pairs", "model TCR", "ref TCR", "Δ pp", "95% CI", "90% CI", "non-inf", "equiv",
         "b/c", "p", "p Holm"], "llrrrrrrccrrr")
    unpaired = 0
    for m in summary.model_order:
        if m not in p.tests:
            continue
        scopes = [sc for sc in summary.scopes if sc in p.tests[m]]
        for i, sc in enumerate(scopes):
            x = p.tests[m][sc]
            last = i == len(scopes) - 1
            unpaired += x.n_unpaired_model + x.n_unpaired_ref if sc == OVERALL else 0
            if x.n_pairs == 0:
                t.add([m, scope_label(sc), "0", *[DASH] * 10], [""] * 2 + ["na"] * 11, end_section=last)
                continue
            ni, ni_c = verdict(x.noninferior, x.noninferior_holm, x.noninferiority_verdict)
            eq, eq_c = verdict(x.equivalent, x.equivalent_holm, x.equivalence_verdict)
            d_c = "" if x.delta_pp is None or x.delta_pp == 0 else ("up" if x.delta_pp > 0 else "down")
            p_c = "sig" if x.p_mcnemar_holm is not None and x.p_mcnemar_holm < p.alpha else ""
            t.add([m, scope_label(sc), str(x.n_pairs), pct(x.tcr_model), pct(x.tcr_ref), signed(x.delta_pp),
                   ci_pp(x.ci95_low_pp, x.ci95_high_pp), ci_pp(x.ci90_low_pp, x.ci90_high_pp), ni, eq,
                   f"{x.mcnemar_b}/{x.mcnemar_c}", pval(x.p_mcnemar), pval(x.p_mcnemar_holm)],
                  ["", "", "", "", "", d_c, "", "", ni_c, eq_c, "", "", p_c], end_section=last)
    t.notes.append(
        f"Δ = TCR(model) − TCR({p.reference}) over runs paired on (task, variant, instance, run). "
        + decision_caption(summary) + f" Margin ±{p.margin_pp:g} pp. " + interval_caption(summary) + " "
        f"too few = insufficient evidence: fewer than {p.n_min_pairs} pairs, too few for any result to certify "
        "the margin. "
        "yes = holds after Holm adjustment across the family (all model × tier tests, or all overall tests); "
        "yes† = holds unadjusted only. b/c: McNemar's discordant pairs, where only the model / only the "
        "reference passed; p: exact two-sided McNemar test, p Holm: Holm-adjusted in the same family.")
    if unpaired:
        t.notes.append(f"{unpaired} scored run(s) had no counterpart on the other side and are not in the pairs.")
    return t


def failure_modes_present(summary: Summary) -> list[str]:
    """FAILURE_MODES in cascade order, plus any other label with a count (e.g. ``none``)."""
    extra: set[str] = set()
    for m in summary.model_order:
        for b in summary.breakdown[m].values():
            extra |= {k for k, v in b.failure_mode.items() if v and k not in FAILURE_MODES}
    return [*FAILURE_MODES, *sorted(extra)]


def failure_table(summary: Summary) -> TextTable:
    """Failure-mode counts per model x scope (failed runs only, scopes without failures left out)."""
    modes = failure_modes_present(summary)
    t = TextTable("failures", "AgentFloor: failure modes (model failures; infra errors excluded)",
                  ["model", "tier", "failed", *modes], "llr" + "r" * len(modes))
    for m in summary.model_order:
        scopes = [sc for sc in summary.scopes if summary.breakdown[m][sc].n_failed]
        for i, sc in enumerate(scopes):
            b = summary.breakdown[m][sc]
            t.add([m, scope_label(sc), str(b.n_failed), *[str(b.failure_mode.get(k, 0) or "") for k in modes]],
                  end_section=i == len(scopes) - 1)
    t.notes.append("Failure mode of a failed run, the first of this cascade that applies: " + "; ".join(
        f"{k} {FAILURE_NAMES[k]}" for k in FAILURE_MODES) + ".")
    return t


def _labels_used(summary: Summary, attr: str, order: Iterable[str]) -> list[str]:
    used: set[str] = set()
    for m in summary.model_order:
        for b in summary.breakdown[m].values():
            used |= {k for k, v in getattr(b, attr).items() if v}
    order = list(order)
    return [k for k in order if k in used] + sorted(used - set(order))


def unmet_table(summary: Summary) -> TextTable:
    """First unmet obligation and terminal flag counts per model x scope (labels that occur only)."""
    obls = _labels_used(summary, "first_unmet", OBLIGATION_ORDER)
    flags = _labels_used(summary, "terminal_flag", TERMINAL_FLAG_SHORT)
    t = TextTable("unmet", "AgentFloor: first unmet obligation and terminal flag (failed runs)",
                  ["model", "tier", "failed", *[f"{k}" for k in obls], *[TERMINAL_FLAG_SHORT.get(k, k) for k in flags]],
                  "llr" + "r" * (len(obls) + len(flags)))
    for m in summary.model_order:
        scopes = [sc for sc in summary.scopes if summary.breakdown[m][sc].n_failed]
        for i, sc in enumerate(scopes):
            b = summary.breakdown[m][sc]
            t.add([m, scope_label(sc), str(b.n_failed), *[str(b.first_unmet.get(k, 0) or "") for k in obls],
                   *[str(b.terminal_flag.get(k, 0) or "") for k in flags]], end_section=i == len(scopes) - 1)
    if obls:
        t.notes.append("First obligation of the case that the run did not meet: " + "; ".join(
            f"{k} {OBLIGATION_NAMES.get(k, 'no obligation named' if k == 'none' else k)}" for k in obls) + ".")
    if flags:
        t.notes.append("Then how the episode ended: trunc = output truncated, budget = token or call budget, "
                       "turns = turn limit, infeas = declared infeasible, wrong = ended on a wrong conclusion, "
                       "none = no flag.")
    return t


def cost_table(summary: Summary, scope: str = OVERALL) -> TextTable:
    front = set(summary.pareto.get(scope, []))
    t = TextTable("cost", f"Cost and latency ({'all tiers' if scope == OVERALL else 'tier ' + scope})",
                  ["model", "params", "TCR", "$/run self-hosted", "$/pass self-hosted", "$/run cloud GPU",
                   "$/pass cloud GPU", "wall/run", "wall/pass", "model s/run", "model s/pass", "tokens/run",
                   "infra $", "Pareto"], "llrrrrrrrrrrrc")
    for m in summary.model_order:
        c = summary.cost[m][scope]
        unreliable = summary.tcr[m][scope].unreliable
        t.add([m, params(summary.models[m].params_b), pct(c.tcr), usd(c.cost_per_run, UNKNOWN),
               usd(c.cost_per_pass, UNKNOWN if c.n_passed else DASH), usd(c.cloud_cost_per_run, UNKNOWN),
               usd(c.cloud_cost_per_pass, UNKNOWN if c.n_passed else DASH),
               secs(c.mean_wall_s), secs(c.wall_per_pass), secs(c.mean_latency_s), secs(c.latency_per_pass),
               f"{tokens(c.mean_tokens_in)} / {tokens(c.mean_tokens_out)}",
               usd(c.infra_cost_usd, UNKNOWN) if c.n_infra else DASH,
               "✓" if m in front else (UNRELIABLE if unreliable else "")],
              ["", "", tcr_class(c.tcr), "", "", "", "", "", "", "", "", "", "",
               "yes" if m in front else ("bad" if unreliable else "")])
    t.notes.append("Cost is charged on the time the model was busy serving the run (model s), so it does not depend "
                   "on how many items ran in parallel. self-hosted: the model's hourly price, or $0.50/h for a model "
                   "with a known size; cloud GPU: $0.50 / $1.50 / $2.50 per hour for ≤ 4 B / 7–14 B / ≥ 20 B "
                   "parameters (sizes between tiers go up a tier); a model priced per token costs its token bill in "
                   "both. unknown: no price and no size, never $0. The Pareto front uses the self-hosted figure.")
    t.notes.append("Per run: mean over scored runs; per pass: per run / TCR. wall = episode wall-clock, model s = "
                   "time waiting on the model, tokens = mean input / output tokens. infra $: spent on infra-error "
                   "runs, not charged to the model. Pareto: not beaten on both cost per run and TCR by another "
                   f"model; models without a known cost and {UNRELIABLE}s are left out.")
    return t


def cost_by_tier_table(summary: Summary) -> TextTable:
    scopes = list(summary.scopes)
    t = TextTable("cost_tier", "Cost per passed task by tier (self-hosted)",
                  ["model", *[scope_label(s) for s in scopes]], "l" + "r" * len(scopes))
    for m in summary.model_order:
        t.add([m, *[usd(summary.cost[m][sc].cost_per_pass, UNKNOWN if summary.cost[m][sc].n_passed else DASH)
                    for sc in scopes]])
    t.notes.append("— = no passed run in the cell; unknown = no price and no size.")
    return t


def recipes_table(summary: Summary) -> TextTable:
    targets = [str(int(x)) if float(x).is_integer() else repr(float(x)) for x in summary.config["targets_pct"]]
    t = TextTable("recipes", "Deployment recipes: smallest model whose 95% CI lower bound clears τ",
                  ["tier", *[f"τ {k}%" for k in targets], "cost/pass", "wall/pass"], "l" + "l" * len(targets) + "rr")
    for tier, by_target in summary.recipes.items():
        cells, cls = [tier], [""]
        best = None
        for k in targets:
            r = by_target.get(k)
            if r is None or r.model is None:
                cells.append(DASH)
                cls.append("na")
                continue
            cells.append(f"{r.model} (≥{pct_num(r.ci_low)}%)")
            cls.append("yes")
            best = best or r
        cells += [usd(best.cost_per_pass, UNKNOWN) if best else DASH, secs(best.wall_per_pass) if best else DASH]
        cls += ["", ""]
        t.add(cells, cls)
    t.notes.append("A model qualifies only if its 95% CI lower bound on the tier's TCR (in brackets) is at least "
                   "τ: the data must rule out a true TCR below the target. Size order is params ascending; "
                   "cost (self-hosted) and wall per pass are those of the model named at the lowest τ. "
                   f"A model flagged {UNRELIABLE} on a tier is not recommended for it. " + interval_caption(summary))
    return t


def reliability_table(summary: Summary) -> TextTable | None:
    k_max = max((c.max_runs for m in summary.model_order for c in summary.reliability[m].values()), default=0)
    if k_max < 2:
        return None
    scopes = list(summary.scopes)
    t = TextTable("reliability", f"Reliability over repeated runs: pass^k (all k runs pass), k = 1..{k_max}",
                  ["model", "tier", "items", *[f"k={k}" for k in range(1, k_max + 1)], f"pass@{k_max}"],
                  "llr" + "r" * (k_max + 1))
    for m in summary.model_order:
        for sc in scopes:
            c = summary.reliability[m][sc]
            pts = {p.k: p for p in c.points}
            hat = [pct(pts[k].pass_hat_k) if k in pts else DASH for k in range(1, k_max + 1)]
            at = pct(pts[k_max].pass_at_k) if k_max in pts else DASH
            t.add([m, scope_label(sc), str(c.n_items), *hat, at], end_section=sc == OVERALL)
    t.notes.append("An item is a (task, variant, instance); its runs are repeats. pass^k: chance that k runs "
                   "drawn from an item all pass; pass@k: that at least one does (unbiased estimators).")
    return t


def pareto_lines(summary: Summary) -> list[str]:
    out = []
    for sc in summary.scopes:
        front = summary.pareto.get(sc) or []
        out.append(f"{scope_label(sc)}: {' → '.join(front) if front else DASH}")
    return out


def diagnostics_table(summary: Summary) -> TextTable | None:
    """Per model x tier diagnostic rates (malformed = the paper's SDR), from the per-run call counts."""
    diag = summary.diagnostics or {}
    if not any(d.n_calls or d.mean_turns for by in diag.values() for d in by.values()):
        return None
    t = TextTable("diagnostics", "Diagnostics: how the models called tools",
                  ["model", "tier", "runs", "malformed", "hallucinated", "leaked text", "repeated", "calls/run",
                   "turns/run"], "llrrrrrrr")
    for m in summary.model_order:
        for sc in summary.scopes:
            d = diag[m][sc]
            t.add([m, scope_label(sc), str(d.n_runs - d.n_runs_missing), pct(d.malformed_rate),
                   pct(d.hallucinated_rate), pct(d.leaked_rate), pct(d.repeated_rate),
                   DASH if d.mean_calls is None else f"{d.mean_calls:.1f}",
                   DASH if d.mean_turns is None else f"{d.mean_turns:.1f}"], end_section=sc == OVERALL)
    t.notes.append("Rates per tool call, pooled over the cell's runs (infra errors left out): malformed = arguments "
                   "that do not fit the tool's schema (the paper's SDR), hallucinated = a tool that does not exist, "
                   "repeated = an identical earlier call; leaked text = turns whose text looks like a tool call that "
                   "was not sent as one, per turn. — = no call (or no turn) in the cell.")
    return t


def instance_table(summary: Summary) -> TextTable | None:
    """The instance-variation ablation, one row per model x task x instance."""
    if not summary.instance_ablation:
        return None
    t = TextTable("instances", "Instance-variation ablation (not pooled into the tiers)",
                  ["model", "task", "tier", "instance", "runs", "passed", "TCR", "95% CI (Wilson)", "infra"],
                  "llllrrrrr")
    rows = list(summary.instance_ablation)
    for i, c in enumerate(rows):
        last = i == len(rows) - 1 or (rows[i + 1].model, rows[i + 1].task) != (c.model, c.task)
        t.add([c.model, c.task, c.tier, c.instance, str(c.n_runs), str(c.n_passed), pct(c.tcr),
               ci_pct(c.ci_low, c.ci_high), str(c.n_infra)], ["", "", "", "", "", "", tcr_class(c.tcr), "", ""],
              end_section=last)
    head = summary.config.get("headline_instance") or "i0"
    t.notes.append(f"Headline TCR uses instance {head} only, as the AgentFloor paper does; the other instances "
                   "change the task's data and are this separate ablation. Wilson intervals: too few runs per cell "
                   "for a bootstrap.")
    return t
