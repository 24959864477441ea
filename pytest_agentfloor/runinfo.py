"""What a session ran: its selection, and whether the run is COMPLETE or PARTIAL and why.

Every report file carries this (``summary.json["run"]``), so a table never claims more than the
run behind it. A run is PARTIAL when its selection is narrower than the full case set (``-k``,
``-m``, node ids, case files or tier directories instead of the case root, ``--deselect``,
``--lf``, ``--variants``, ``--instances``, ``--agentfloor-shard``) or when it did not run all it selected (``-x`` /
``--maxfail`` stop, interrupt, collection errors, a model whose endpoint failed the probe).
"""

from __future__ import annotations

import re
from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import Any

import pytest


def _rel(path: str, base: Path) -> str:
    head, sep, tail = path.partition("::")
    try:
        head = str(Path(head).resolve().relative_to(base))
    except ValueError:
        pass
    return head + sep + tail


def _narrow_path(arg: str, base: Path) -> bool:
    """A node id, a case file or a tier directory is narrower than a case root."""
    if "::" in arg:
        return True
    p = (base / arg).resolve()
    return p.is_file() or (p.is_dir() and p.name.startswith("tier_"))


def selection(config: pytest.Config, options: Any) -> dict[str, Any]:
    """The options that decide which items run, as given (no secrets: models by name only)."""
    base = Path(config.invocation_params.dir).resolve()
    opt = config.option
    return {
        "paths": [_rel(str(a), base) for a in config.args],
        "keyword": getattr(opt, "keyword", "") or None,
        "markexpr": getattr(opt, "markexpr", "") or None,
        "deselect": list(getattr(opt, "deselect", None) or []),
        "last_failed": bool(getattr(opt, "lf", False)),
        "stepwise": bool(getattr(opt, "stepwise", False)),
        "maxfail": int(getattr(opt, "maxfail", 0) or 0),
        "models": [m.name for m in options.selected],
        "variants": "all" if options.variants is None else sorted(options.variants, key=lambda v: int(v[1:])),
        "instances": "all" if options.instances is None else sorted(options.instances, key=lambda i: int(i[1:])),
        "runs": options.runs,
        "resume": bool(options.resume),
        "shard": "/".join(map(str, options.shard)) if getattr(options, "shard", None) else None,
    }


def narrowing(sel: dict[str, Any], base: Path) -> list[str]:
    """Why the selection is narrower than the full case set (empty: it is the full set)."""
    out = []
    narrow = [p for p in sel["paths"] if _narrow_path(p, base)]
    if narrow:
        out.append("selection narrower than the case set: " + ", ".join(narrow))
    if sel["keyword"]:
        out.append(f"-k {sel['keyword']!r}")
    if sel["markexpr"]:
        out.append(f"-m {sel['markexpr']!r}")
    if sel["deselect"]:
        out.append(f"--deselect ({len(sel['deselect'])})")
    if sel["last_failed"]:
        out.append("--lf (last failures only)")
    if sel["stepwise"]:
        out.append("--sw (stepwise)")
    if sel["variants"] != "all":
        out.append("--variants " + ",".join(sel["variants"]))
    if sel["instances"] != "all":
        out.append("--instances " + ",".join(sel["instances"]))
    if sel.get("shard"):
        out.append(f"--agentfloor-shard {sel['shard']} (one part; merge the shards' runs.jsonl with `report`)")
    return out


def selection_text(sel: dict[str, Any], base: Path) -> str:
    """The selection as the user gave it, in one line (the gate's header names what it compared)."""
    parts = [" ".join(sel.get("paths") or []) or "(rootdir)"]
    parts += [p for p in narrowing(sel, base) if not p.startswith("selection narrower")]
    parts.append(f"--agentfloor-runs {sel.get('runs')}")
    return ", ".join(parts)


def stop_reason(session: pytest.Session, exitstatus: int) -> str | None:
    """Why the session ended before running everything, if it did (-x/--maxfail, interrupt, an
    abnormal end: any exit status other than tests passed, failed or none collected)."""
    dsession = session.config.pluginmanager.getplugin("dsession")  # xdist's controller loop
    stopped = getattr(dsession, "shouldstop", None) or session.shouldfail or session.shouldstop
    if stopped:
        return f"stopped early: {stopped}"
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        return "interrupted"
    if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        # an internal error (a closed pipe under xdist, a crashed plugin) or a usage error: whatever
        # the counts say, the process did not end normally, so its run is not COMPLETE
        try:
            name = pytest.ExitCode(exitstatus).name.lower().replace("_", " ")
        except ValueError:
            name = "unknown"
        return f"ended abnormally (exit status {int(exitstatus)}: {name})"
    return None


_SHARD_REASON = "--agentfloor-shard "
_DESELECTED = re.compile(r"\d+ item\(s\) deselected")


def merged_run(parts: list[tuple[str, dict[str, Any] | None]]) -> dict[str, Any]:
    """The COMPLETE/PARTIAL state of several runs files read as one (``report A B ...``).

    ``parts``: (runs file, its session.json or None). COMPLETE only if every file has a session.json,
    every session is complete apart from being one shard, and the shards of one split
    (``K/N``) are all there, each once; the reasons otherwise say which part is missing or partial.
    """
    reasons: list[str] = []
    shards: dict[int, set[int]] = {}
    models: list[str] = []
    for source, run in parts:
        if not run:
            reasons.append(f"{source}: no session.json beside it (whether that run is complete is unknown)")
            continue
        sel = run.get("selection") or {}
        models += [m for m in sel.get("models") or [] if m not in models]
        shard = sel.get("shard")
        own = [r for r in run.get("partial_reasons") or [] if not str(r).startswith(_SHARD_REASON)]
        if shard:  # the other shards' items count as deselected in each shard: the merge has them
            own = [r for r in own if not _DESELECTED.fullmatch(str(r))]
            try:
                k, n = (int(x) for x in str(shard).split("/"))
                shards.setdefault(n, set())
                if k in shards[n]:
                    reasons.append(f"{source}: shard {k}/{n} given twice")
                shards[n].add(k)
            except ValueError:
                reasons.append(f"{source}: unreadable shard {shard!r}")
        elif not run.get("complete") and not own:
            own = ["PARTIAL"]
        reasons += [f"{source}: {r}" for r in own]
    if len(shards) > 1:
        reasons.append(f"shards of different splits ({', '.join(f'/{n}' for n in sorted(shards))}) merged")
    for n, ks in sorted(shards.items()):
        missing = sorted(set(range(1, n + 1)) - ks)
        if missing:
            reasons.append(f"shard(s) {', '.join(f'{k}/{n}' for k in missing)} not among the merged files")
    ids = [str(run.get("session_id", "?")) for _, run in parts if run]
    return {"session_id": "merged " + " + ".join(ids) if ids else "merged", "complete": not reasons,
            "partial_reasons": reasons, "selection": {"models": models}, "merged_from": [s for s, _ in parts]}


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
