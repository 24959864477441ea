"""Time the embedded local model: weights check, server start, probe, and episodes per tier.

Needs the `local` extra. Starts llama-server (the project's template for the Qwen model), probes
it, then runs every case file present in the chosen tiers (variant/instance as given) through the
same episode loop and grader the plugin uses, sequentially, and reports per tier: episodes, TCR,
mean and median wall time per episode, mean request latency, and tokens.

    python benchmarks/bench_local_model.py                       # tiers A and B, v0, i0, Qwen 0.5B
    python benchmarks/bench_local_model.py --tiers A0,A,B,C,D,E --variants v0,v1 --json out.json
    python benchmarks/bench_local_model.py --model smollm2-135m-instruct --tiers A

Wall times depend on what else the machine runs: llama.cpp's threads spin-wait, so on a small
machine shared with other work the numbers spread widely (see docs/local-model.md).

AGENTFLOOR_BENCH_SMOKE=1 runs it in a smoke size (tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import argparse
import json
import statistics
import os
import sys
import tempfile
import time
from pathlib import Path

SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))  # tests/test_benchmarks.py: seconds, in CI

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_agentfloor.config import ModelConfig  # noqa: E402
from pytest_agentfloor.episode import run_episode  # noqa: E402
from pytest_agentfloor.grading import grade, remaining_steps  # noqa: E402
from pytest_agentfloor.local.model_files import ensure_model, spec_for  # noqa: E402
from pytest_agentfloor.local.server import LocalServer, default_threads, template_path  # noqa: E402
from pytest_agentfloor.probe import probe  # noqa: E402
from pytest_agentfloor.providers.local import LocalProvider  # noqa: E402
from pytest_agentfloor.suite.loader import load_case, resolve  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="", help="local model key (default: the Qwen 0.5B model)")
    ap.add_argument("--tiers", default="A0" if SMOKE else "A,B")
    ap.add_argument("--variants", default="v0")
    ap.add_argument("--instances", default="i0")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--timeout", type=float, default=120.0, help="per-request timeout (s)")
    ap.add_argument("--threads", type=int, default=None, help=f"llama-server threads (default {default_threads()})")
    ap.add_argument("--cases", type=Path, default=REPO / "cases")
    ap.add_argument("--log", type=Path, default=None, help="server log (default: a temporary file)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args(argv)

    spec = spec_for(args.model)
    t = time.perf_counter()
    model_path = ensure_model(spec)
    weights_s = time.perf_counter() - t
    log = args.log or Path(tempfile.mkdtemp(prefix="agentfloor-bench-")) / "local-server.log"
    template = template_path(spec.template) if spec.template else None
    server = LocalServer(model_path, template=template, log_path=log, ctx_size=spec.ctx_size,
                         threads=args.threads, alias=spec.key)
    out: dict = {"model": spec.key, "threads": server.threads, "weights_check_s": round(weights_s, 3),
                 "server_log": str(log)}
    with server:
        out["server_start_s"] = round(server.start_s or 0.0, 3)
        cfg = ModelConfig(name="local", provider="local", model=spec.key, base_url=server.openai_url,
                          max_tokens=args.max_tokens, timeout_s=args.timeout, retries=1)
        provider = LocalProvider(cfg)
        try:
            t = time.perf_counter()
            res = probe(provider)
            out["probe"] = {"classification": res.classification, "detail": res.detail,
                            "wall_s": round(time.perf_counter() - t, 3)}
            print(f"model {spec.key}: weights {weights_s:.2f}s, server start {server.start_s:.2f}s, "
                  f"probe {res.classification} ({res.detail})", flush=True)
            out["episodes"] = run_tiers(provider, args)
        finally:
            provider.close()
    out["tiers"] = summarise(out["episodes"])
    print_table(out["tiers"])
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


def run_tiers(provider: LocalProvider, args: argparse.Namespace) -> list[dict]:
    episodes = []
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    instances = [i.strip() for i in args.instances.split(",") if i.strip()]
    for tier in [t.strip() for t in args.tiers.split(",") if t.strip()]:
        for path in sorted((args.cases / f"tier_{tier}").glob("*.toml")):
            case, digest = load_case(path)
            for v in variants:
                if v not in case.prompts:
                    continue
                for i in instances:
                    if i != "i0" and i not in case.instances:
                        continue
                    resolved = resolve(case, v, i, digest)
                    for r in range(args.runs):
                        traj = run_episode(resolved, provider, model="local", run=r,
                                           remaining_steps=remaining_steps, timeout_s=600)
                        g = grade(resolved, traj)
                        rec = {"task": case.id, "tier": case.tier, "variant": v, "instance": i, "run": r,
                               "passed": bool(g.passed and traj.termination != "provider_error"),
                               "infra_error": traj.termination == "provider_error",
                               "termination": traj.termination, "failure_mode": g.failure_mode,
                               "turns": len(traj.turns), "calls": len(traj.calls),
                               "requests_latency_s": [round(t.latency_s, 3) for t in traj.turns],
                               "tokens_in": traj.tokens_in, "tokens_out": traj.tokens_out,
                               "wall_s": round(traj.wall_s, 3), "error": traj.error}
                        episodes.append(rec)
                        print(f"  {case.id:4} {v}-{i}-r{r}: {'PASS' if rec['passed'] else 'fail'} "
                              f"{traj.termination:15} {rec['failure_mode'] or '':4} {traj.wall_s:6.2f}s "
                              f"turns {rec['turns']} calls {rec['calls']} tok {traj.tokens_in}/{traj.tokens_out}",
                              flush=True)
    return episodes


def summarise(episodes: list[dict]) -> dict[str, dict]:
    tiers: dict[str, dict] = {}
    for tier in dict.fromkeys(e["tier"] for e in episodes):
        eps = [e for e in episodes if e["tier"] == tier]
        graded = [e for e in eps if not e["infra_error"]]
        lat = [x for e in eps for x in e["requests_latency_s"]]
        walls = [e["wall_s"] for e in eps]
        tiers[tier] = {
            "episodes": len(eps), "graded": len(graded), "passed": sum(e["passed"] for e in graded),
            "tcr": round(sum(e["passed"] for e in graded) / len(graded), 3) if graded else None,
            "mean_wall_s": round(statistics.mean(walls), 2), "median_wall_s": round(statistics.median(walls), 2),
            "max_wall_s": round(max(walls), 2), "requests": len(lat),
            "mean_request_s": round(statistics.mean(lat), 2) if lat else None,
            "tokens_in": sum(e["tokens_in"] for e in eps), "tokens_out": sum(e["tokens_out"] for e in eps),
            "terminations": {t: sum(e["termination"] == t for e in eps) for t in sorted({e["termination"] for e in eps})},
        }
    return tiers


def print_table(tiers: dict[str, dict]) -> None:
    print(f"{'tier':4} {'eps':>4} {'pass':>4} {'TCR':>6} {'mean s':>7} {'median s':>8} {'max s':>6} {'req s':>6}  terminations")
    for tier, t in tiers.items():
        tcr = "-" if t["tcr"] is None else f"{t['tcr']:.0%}"
        req = "-" if t["mean_request_s"] is None else f"{t['mean_request_s']:.2f}"
        print(f"{tier:4} {t['episodes']:>4} {t['passed']:>4} {tcr:>6} {t['mean_wall_s']:>7.2f} {t['median_wall_s']:>8.2f} "
              f"{t['max_wall_s']:>6.2f} {req:>6}  {t['terminations']}")


if __name__ == "__main__":
    raise SystemExit(main())
