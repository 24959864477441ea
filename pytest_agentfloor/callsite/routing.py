"""``--agentfloor-routing-out``: the chosen routing as files a deployment reads (docs/capture.md, "Route").

Two files from one CallSiteSummary, both pure text built here and written by the caller:

- ``routing.json`` (:data:`FORMAT`, :data:`VERSION`): each site's model under the
  ``matched_reference`` policy (the cheapest model per call that the paired test does not find
  worse than the reference and whose accuracy is within the margin; the reference where none
  does), with the evidence that chose it: accuracy and its interval for the model and the
  reference, the exact McNemar test, the paired difference with its score interval, cost and
  latency per call, and the site's share of the calls;
- ``<stem>.litellm.yaml``: the same assignment as a LiteLLM proxy ``model_list``, one
  ``model_name`` per call site, so each call site's client asks the proxy for its site's name.

Why the paired difference interval is there too: "not found worse" by McNemar is absence of
evidence on a few cases, not evidence of equivalence. The Tango score interval of the difference
says how large a loss the data still allow, and ``noninferior`` says whether its lower end clears
the margin; the routing rule does not need it, a deployer should read it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .stats import CallSiteSummary, Route, SiteAccuracy, SiteTest

FORMAT = "agentfloor-routing"
VERSION = 1
POLICY = "matched_reference"
#: what routing.json keeps of the session's session.json: which run decided, and whether it ran to its end
SESSION_KEYS = ("session_id", "finished_utc", "complete", "partial_reasons", "plugin_version")


class RoutingUnavailable(ValueError):
    """No routing can be written from this run; the message says why."""


def yaml_path(json_path: Path) -> Path:
    """``routing.json`` -> ``routing.litellm.yaml``, beside it."""
    return json_path.with_name(json_path.stem + ".litellm.yaml")


def _num(x: float | None, nd: int = 6) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else round(float(x), nd)


def _cell(c: SiteAccuracy | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"cases": c.n_cases, "passed": _num(c.passed), "accuracy": _num(c.accuracy),
            "ci": [_num(c.ci_low), _num(c.ci_high)], "infra_errors": c.n_infra,
            "cost_per_call_usd": _num(c.cost_per_call, 10), "latency_s": _num(c.latency_s)}


def _paired(test: SiteTest | None, alpha: float, margin_pp: float) -> dict[str, Any] | None:
    if test is None:
        return None
    from ..stats.intervals import tango

    n, b, c = test.n_pairs, test.only_model, test.only_reference
    lo, hi = tango(b, c, n, alpha / 2)
    low, high = float(lo[0]), float(hi[0])
    return {"pairs": n, "only_model": b, "only_reference": c, "p_exact": _num(test.p_value),
            "p_holm": _num(test.p_holm), "worse": bool(test.significant and c > b),
            "difference": _num((b - c) / n if n else None), "difference_ci": [_num(low), _num(high)],
            "noninferior": bool(n and low > -margin_pp / 100)}


def routing_document(s: CallSiteSummary, meta: Mapping[str, Mapping[str, Any]],
                     run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The routing.json object; RoutingUnavailable when the run cannot choose one."""
    if not s.sites:
        raise RoutingUnavailable("no reviewed call-site case was scored" + (
            f" ({s.provisional} captured case(s) are provisional: `capture review` them)" if s.provisional else ""))
    route: Route | None = next((r for r in s.routing if r.policy == POLICY), None)
    if s.reference is None or route is None:
        raise RoutingUnavailable("the reference has no call-site records (name the production model with "
                                 "--agentfloor-reference)")
    tests = {(t.site, t.model): t for t in s.tests}
    sites: dict[str, Any] = {}
    for site in s.sites:
        model = route.assignment.get(site) or None
        ref = s.accuracy[site].get(s.reference)
        entry: dict[str, Any] = {
            "model": model, "moved": bool(model and model != s.reference), "weight": _num(s.weights.get(site)),
            "calls": s.site_calls.get(site)}
        if model is None:
            entry["note"] = f"the reference {s.reference} has no scored records here"
        entry["evidence"] = {
            "model": _cell(s.accuracy[site].get(model)) if model else None,
            "reference": _cell(ref),
            "paired": _paired(tests.get((site, model)), s.alpha, s.margin_pp) if model and model != s.reference
            else None}
        sites[site] = entry
    base = next((r for r in s.routing if r.base), None)
    used = sorted({m for e in sites.values() if (m := e["model"])})
    from ..config import is_hosted

    return {
        "format": FORMAT, "version": VERSION,
        "session": {k: run[k] for k in SESSION_KEYS if k in run} if run else {},
        "reference": s.reference,
        "rule": {"policy": POLICY, "alpha": s.alpha, "margin_pp": s.margin_pp,
                 "verdict": "exact p" if s.verdict == "raw" else "Holm-adjusted p",
                 "test": "exact two-sided McNemar, paired on (case, variant, instance, run)",
                 "interval": "Wilson score (accuracy), Tango score (paired difference)",
                 "ci_level": round(1 - s.alpha, 6)},
        "weights_from": s.weights_from,
        "provisional_cases": s.provisional,
        "sites": sites,
        "route": {"accuracy": _num(route.accuracy), "cost_per_call_usd": _num(route.cost_per_call, 10),
                  "reference_cost_per_call_usd": _num(base.cost_per_call, 10) if base else None,
                  "saving": _num(route.saving)},
        "models": {m: {"provider": (meta.get(m) or {}).get("provider"), "model": (meta.get(m) or {}).get("model"),
                       "base_url": (meta.get(m) or {}).get("base_url"),
                       "api_key_env": (meta.get(m) or {}).get("api_key_env"),
                       "hosted": is_hosted(dict(meta.get(m) or {}))} for m in used},
        "warnings": list(s.warnings),
    }


def _q(text: Any) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(str(text), ensure_ascii=False)


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{100 * x:.0f}%"


def _deployments(name: str, cfg: Mapping[str, Any]) -> tuple[list[list[tuple[str, str]]], str]:
    """(litellm_params of each deployment, as (key, value) pairs; a comment) for one configured model: one
    deployment per endpoint of a pool (LiteLLM balances the deployments of one model_name); none: not deployable."""
    provider = cfg.get("provider")
    model = str(cfg.get("model") or "")
    urls = cfg.get("base_url")
    pool: list[str | None] = list(urls) if isinstance(urls, (list, tuple)) and urls else [urls or None]
    key = [("api_key", _q(f"os.environ/{cfg['api_key_env']}"))] if cfg.get("api_key_env") else []
    if provider == "openai":
        return [[("model", _q(f"openai/{model}")), *([("api_base", _q(u))] if u else []), *key] for u in pool], ""
    if provider == "ollama":
        return [[("model", _q(f"ollama_chat/{model}")), ("api_base", _q(u or "http://localhost:11434")), *key]
                for u in pool], ""
    if provider == "local":
        from ..local.model_files import ALIASES

        served = _q(f"openai/{ALIASES.get(model, model)}")
        if pool[0]:
            return [[("model", served), ("api_base", _q(u))] for u in pool], "the embedded model's server"
        return ([[("model", served), ("api_base", _q("os.environ/AGENTFLOOR_LOCAL_URL"))]],
                "the embedded model: start its server by hand (docs/local-model.md) and set AGENTFLOOR_LOCAL_URL")
    return [], f"{name} is a {provider} model: no endpoint to deploy"


def litellm_yaml(doc: Mapping[str, Any], meta: Mapping[str, Mapping[str, Any]], json_name: str) -> str:
    """A LiteLLM proxy config (``model_list``) routing each call site, by its name, to its chosen model."""
    session = (doc.get("session") or {}).get("session_id") or "?"
    lines = [f"# LiteLLM proxy config written by pytest-agentfloor (--agentfloor-routing-out), session {session}.",
             "# One model_name per call site: each call site's client asks the proxy for its site's name.",
             f"# Evidence for every choice: {json_name} (format {FORMAT} v{VERSION}).", "model_list:"]
    skipped = []
    for site, e in doc["sites"].items():
        model = e.get("model")
        if not model:
            skipped.append(f"# {site}: no model chosen ({e.get('note', 'no records')})")
            continue
        deployments, why = _deployments(model, meta.get(model) or {})
        if not deployments:
            skipped.append(f"# {site}: {why}")
            continue
        ev = (e.get("evidence") or {}).get("model") or {}
        summary = (f"{model}: {_pct(ev.get('accuracy'))} of {ev.get('cases')} case(s), "
                   f"{_pct(e.get('weight'))} of calls" + ("" if e.get("moved") else ", the reference"))
        for params in deployments:
            lines += [f"  - model_name: {_q(site)}  # {summary}", "    litellm_params:" + (f"  # {why}" if why else "")]
            lines += [f"      {k}: {v}" for k, v in params]
            lines += ["    model_info:", f"      agentfloor_model: {_q(model)}"]
    if len(lines) == 4:
        lines[-1] = "model_list: []"
    return "\n".join(lines + skipped) + "\n"


def routing_files(s: CallSiteSummary, meta: Mapping[str, Mapping[str, Any]], path: Path,
                  run: Mapping[str, Any] | None = None) -> dict[Path, str]:
    """{routing.json path: text, its YAML's path: text}; RoutingUnavailable when no routing can be chosen."""
    doc = routing_document(s, meta, run)
    return {path: json.dumps(doc, indent=2, allow_nan=False, ensure_ascii=False) + "\n",
            yaml_path(path): litellm_yaml(doc, meta, path.name)}


def export(s: CallSiteSummary, meta: Mapping[str, Mapping[str, Any]], options: Mapping[str, Any]) -> dict[Path, str]:
    """The call-site section's export (report.sections): the routing files when ``routing_out`` is set."""
    out = options.get("routing_out")
    if not out:
        return {}
    try:
        return routing_files(s, meta, Path(out), options.get("run"))
    except RoutingUnavailable as exc:
        raise RoutingUnavailable(f"{out} not written: {exc}") from None
