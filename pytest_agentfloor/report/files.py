"""Report files: summary.json, tcr.csv, report.md and report.html from run records.

:func:`write_reports` is the one entry point, called by the plugin at session end (controller
only) and by ``python -m pytest_agentfloor report``. Every file is a pure function of the
records, the model metadata and the options, so a rebuild from ``runs.jsonl`` is byte-identical
to the session-end files: nothing run-dependent (time, host, paths, versions) is written, floats
are formatted by fixed rules and every collection is emitted in a canonical order.

The number formats live in :mod:`.format` and the ladder's tables in :mod:`.tables`; their names
are re-exported here for the callers that import them from this module.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..results import PROPERTY_FIELDS
from ..stats import Summary, aggregate
from ..stats.diagnostics import counts_from_trajectory
from .tables import config_line

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
    from ..render import escape_surrogates

    return escape_surrogates(value)  # a hand-edited runs.jsonl may hold "\ud800" in a model or task name


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
    """The part of a model's (public) config that reports use: size, provider, pricing and whether it is
    hosted (stated, or inferred from provider, base_url and pricing: config.is_hosted)."""
    from ..config import is_hosted

    cfg = dict(config or {})
    pb = cfg.get("params_b")
    pricing = cfg.get("pricing") or {}
    return {
        "params_b": None if pb is None else float(pb),
        "provider": None if cfg.get("provider") is None else str(cfg["provider"]),
        "pricing": {str(k): float(v) for k, v in sorted(pricing.items()) if v is not None},
        "hosted": is_hosted(cfg),
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


def deviations(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The repair switches and raised completion caps the records ran under, one line each (model
    names sorted): every report header names them, since they change the harness while the
    protocol's limits stay frozen."""
    seen: dict[tuple[str, ...], set[str]] = {}
    caps: dict[tuple[int, Any], set[str]] = {}
    for r in records:
        cfg = r.get("config")
        if not isinstance(cfg, Mapping):
            continue
        reps = cfg.get("repairs")
        if isinstance(reps, list) and reps:
            seen.setdefault(tuple(str(x) for x in reps), set()).add(str(r.get("model")))
        scale = cfg.get("cap_scale")
        if isinstance(scale, int) and not isinstance(scale, bool) and scale > 1:
            caps.setdefault((scale, cfg.get("max_tokens")), set()).add(str(r.get("model")))
    out = [f"repair {' + '.join(k)} ({', '.join(sorted(v))})" for k, v in sorted(seen.items())]
    out += [f"completion cap x{scale}" + (f" = {tokens:,} tokens" if isinstance(tokens, int) else "")
            + f" ({', '.join(sorted(v))})" for (scale, tokens), v in sorted(caps.items(), key=lambda kv: kv[0][0])]
    return out


def render_files(summary: Summary, meta: Mapping[str, Mapping[str, Any]],
                 runs: list[dict[str, Any]] | None = None, probe: Mapping[str, str] | None = None,
                 run: Mapping[str, Any] | None = None,
                 sections: Mapping[str, Any] | None = None, deviation: list[str] | None = None) -> dict[str, str]:
    """The text of every report file, by file name; ``run`` (session.json) heads each of them;
    ``sections``: kind sections (:mod:`.sections`)."""
    from html import escape

    from ..stats.serialize import to_jsonable
    from .html import render_html, section_html
    from .markdown import render_markdown, section_markdown

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
    if deviation:
        data["deviations"] = list(deviation)
        text = "Deviation from the protocol: " + "; ".join(deviation)
        head, _, rest = md.partition("\n")
        md = f"{head}\n\n**{text}**\n{rest}"
        html = html.replace("</header>\n", f'</header>\n<p class="deviation"><strong>{escape(text)}</strong></p>\n', 1)
    from .html import toc_html

    html = toc_html(html)
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
                  section_options: Mapping[str, Any] | None = None, deviation: list[str] | None = None,
                  **stats_opts: Any) -> Summary:
    """Aggregate ``records`` and write :data:`REPORT_FILES` into ``out_dir``; return the Summary.

    ``probe``: the session-start probe classification of each model (kept in summary.json).
    ``run``: the session's session.json (id, selection, COMPLETE/PARTIAL): ``summary.json["run"]``
    and the first line of report.md and report.html.

    ``records``: full runs.jsonl records or compact user_properties dicts (identical results).
    ``models_meta``: ``{model: public config}`` (e.g. ``{m.name: m.public()}``) or the output of
    :func:`models_meta_from_records`; only ``params_b``, ``provider`` and ``pricing`` are used,
    and only for models that have records. Each file is replaced atomically. ``deviation``: the
    repair lines of the header (:func:`deviations`; None: read from the records' ``config``).
    """
    summary, meta = build_summary(records, models_meta, reference=reference, margin_pp=margin_pp, n_boot=n_boot,
                                  seed=seed, infra_as_failure=infra_as_failure, cluster=cluster, **stats_opts)
    from .sections import compute_sections

    sections = compute_sections(prepare_records(records)[0], meta, reference=reference, options=section_options)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dev = deviations(records) if deviation is None else deviation  # records without config: the caller's
    for name, text in render_files(summary, meta, run_outcomes(records), probe, run, sections, dev).items():
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
