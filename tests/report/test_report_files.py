"""Report files: determinism, byte-identical rebuilds from runs.jsonl, CSV shape, self-contained HTML."""

from __future__ import annotations

import csv
import io
import json
import re
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_agentfloor.report import REPORT_FILES, build_summary, models_meta_from_records, write_reports
from pytest_agentfloor.report.cli import main
from pytest_agentfloor.report.files import prepare_records
from pytest_agentfloor.report.format import usd
from pytest_agentfloor.results import PROPERTY_FIELDS

TIER_TASKS = {"A0": ["A01", "A02"], "A": ["A1", "A2"], "B": ["B1", "B2"], "C": ["C1"], "D": ["D1"], "E": ["E1"]}
MODES = ["F1", "F2", "F4", "F5", "F5b", "F6", "F7", "F3"]
#: name -> (params_b, pass rate by tier, pricing, mean wall seconds)
MODELS = {
    "tiny-0.6b": (0.6, {"A0": .8, "A": .5, "B": .3, "C": .1, "D": 0., "E": 0.}, {"hourly_usd": 0.5}, 2.0),
    "mid-8b": (8.0, {"A0": 1., "A": .9, "B": .8, "C": .5, "D": .3, "E": .1}, {"hourly_usd": 0.5}, 4.0),
    "big-26b": (26.0, {"A0": 1., "A": 1., "B": .7, "C": .6, "D": .4, "E": 0.}, {"hourly_usd": 2.5}, 9.0),
    "frontier": (None, {"A0": .8, "A": 1., "B": .8, "C": .5, "D": .4, "E": .1},
                 {"input_per_mtok": 1.25, "output_per_mtok": 10.0}, 24.0),
}
N_BOOT = 400
OPTS = dict(reference="frontier", margin_pp=10.0, n_boot=N_BOOT, seed=7, infra_as_failure=False, cluster=None)


def model_config(name: str) -> dict:
    params_b, _, pricing, _ = MODELS[name]
    return {"name": name, "provider": "openai" if params_b is None else "ollama", "model": name,
            "base_url": "http://user:secret@localhost:11434", "api_key_env": None, "params_b": params_b,
            "pricing": {"hourly_usd": None, "input_per_mtok": None, "output_per_mtok": None, **pricing}}


def make_records(seed: int = 0, runs: int = 2) -> list[dict]:
    """Full run records, shaped like ``results.build_record`` output (trajectory abridged)."""
    rng = random.Random(seed)
    out = []
    for model, (_, rates, pricing, wall) in MODELS.items():
        for tier, tasks in TIER_TASKS.items():
            for task in tasks:
                for v in ("v0", "v1", "v2"):
                    for inst in ("i0", "i1"):
                        for run in range(runs):
                            infra = rng.random() < 0.03
                            passed = not infra and rng.random() < rates[tier]
                            w = round(wall * (0.5 + rng.random()), 6)
                            tin, tout = rng.randint(500, 4000), rng.randint(50, 600)
                            cost = (pricing.get("hourly_usd", 0) * w / 3600
                                    + pricing.get("input_per_mtok", 0) * tin / 1e6
                                    + pricing.get("output_per_mtok", 0) * tout / 1e6)
                            failed = not passed and not infra
                            out.append({
                                "schema": 1, "plugin_version": "0.1.0",
                                "nodeid": f"cases/tier_{tier}/{task}.toml::{task}[{v}-{inst}-r{run}-{model}]",
                                "model": model, "protocol": "agentfloor", "task": task, "tier": tier, "variant": v,
                                "instance": inst, "run": run, "passed": passed, "infra_error": infra,
                                "first_unmet": rng.choice("SPQX") if failed else None,
                                "failure_mode": rng.choice(MODES) if failed else None,
                                "terminal_flag": (rng.choice(["wrong_conclusion", "turn_limit", "budget"])
                                                  if failed else None),
                                "termination": "provider_error" if infra else "final_answer", "turns": 3, "calls": 2,
                                "tokens_in": tin, "tokens_out": tout, "latency_s": round(0.8 * w, 6), "wall_s": w,
                                "cost_usd": round(cost, 10), "error": "HTTP 503" if infra else None,
                                "case_hash": "c0ffee", "kind": "episode", "facets": None,
                                "config": model_config(model), "obligations": {"A": True},
                                "trajectory": {"turns": [], "calls": []},
                                "calls_malformed": 1 if failed else 0, "calls_hallucinated": 0,
                                "calls_repeated": 0, "turns_leaked": 0, "usage_invalid": [],
                            })
    return out


def compact(records: list[dict]) -> list[dict]:
    """What the controller gathers from user_properties."""
    return [{k: r.get(k) for k in PROPERTY_FIELDS} for r in records]


def session_meta() -> dict[str, dict]:
    """What the plugin passes: the public config of every configured model (one has no records)."""
    meta = {m: model_config(m) for m in MODELS}
    meta["configured-but-unused"] = {"params_b": 3.0, "provider": "ollama", "pricing": {}}
    return meta


def write_runs_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for r in records:
            fh.write(json.dumps(r, separators=(",", ":"), default=str) + "\n")


def read_all(d: Path) -> dict[str, bytes]:
    return {name: (d / name).read_bytes() for name in REPORT_FILES}


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return make_records()


@pytest.fixture(scope="module")
def session_dir(records: list[dict], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Report files as the plugin writes them at session end (compact records, configured meta)."""
    out = tmp_path_factory.mktemp("session") / "reports"
    write_reports(compact(records), session_meta(), out, **OPTS)
    return out


def test_every_file_is_written_and_nothing_else(session_dir: Path) -> None:
    assert sorted(p.name for p in session_dir.iterdir()) == sorted(REPORT_FILES)  # no temp files left behind


def test_rebuild_is_deterministic_and_order_independent(records: list[dict], session_dir: Path,
                                                        tmp_path: Path) -> None:
    shuffled = compact(records)
    random.Random(3).shuffle(shuffled)
    write_reports(shuffled, session_meta(), tmp_path / "again", **OPTS)
    assert read_all(tmp_path / "again") == read_all(session_dir)


def test_full_and_compact_records_give_identical_files(records: list[dict], session_dir: Path,
                                                       tmp_path: Path) -> None:
    write_reports(records, models_meta_from_records(records), tmp_path / "full", **OPTS)
    assert read_all(tmp_path / "full") == read_all(session_dir)


def test_summary_json_is_versioned_canonical_and_free_of_paths(session_dir: Path) -> None:
    text = (session_dir / "summary.json").read_text()
    data = json.loads(text)
    assert data["schema_version"] == "1.1"
    assert text == json.dumps(data, sort_keys=True, indent=2) + "\n"
    assert data["config"]["reference"] == "frontier" and data["config"]["n_boot"] == N_BOOT
    assert data["paired"]["available"] is True
    for name in REPORT_FILES:
        body = (session_dir / name).read_text()
        assert str(session_dir) not in body and "/tmp" not in body
        assert "secret" not in body and "localhost" not in body  # model URLs never reach a report


def test_tcr_csv_has_one_row_per_model_and_scope(session_dir: Path) -> None:
    rows = list(csv.DictReader(io.StringIO((session_dir / "tcr.csv").read_text())))
    summary = json.loads((session_dir / "summary.json").read_text())
    assert list(rows[0]) == ["model", "tier", "runs", "passed", "tcr", "ci_low", "ci_high", "infra"]
    scopes = ["A0", "A", "B", "C", "D", "E", "overall"]
    assert [(r["model"], r["tier"]) for r in rows] == [(m, s) for m in summary["model_order"] for s in scopes]
    assert summary["model_order"] == ["tiny-0.6b", "mid-8b", "big-26b", "frontier"]  # size order, unsized last
    for r in rows:
        est = summary["tcr"][r["model"]][r["tier"]]
        assert int(r["runs"]) == est["n_runs"] and int(r["passed"]) == est["n_passed"]
        assert int(r["infra"]) == est["n_infra"]
        assert float(r["tcr"]) == pytest.approx(est["n_passed"] / est["n_runs"], abs=1e-6)
        assert float(r["ci_low"]) <= float(r["tcr"]) <= float(r["ci_high"])


def test_html_is_self_contained_with_heatmap_and_pareto_plot(session_dir: Path) -> None:
    html = (session_dir / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert '<svg class="heatmap"' in html and '<svg class="scatter"' in html and '<svg class="failures"' in html
    assert "Pareto front" in html and 'stroke-dasharray="6 4"' in html
    assert re.search(r"\[\d+\.\d, 100\.0\]", html)  # CI text inside heatmap cells
    for forbidden in ("http://", "https://", "<script", "<link", "@import", "@font-face", "src="):
        assert forbidden not in html, forbidden
    assert html.count("url(") == html.count("url(#")  # only in-document references (the legend gradient)
    assert 'id="paired"' in html and any(f"{v}</span>" in html for v in ("yes", "yes†", "no", "too few"))
    assert "guarded (never narrower than the Wilson score interval" in html


def test_markdown_has_every_section(session_dir: Path) -> None:
    md = (session_dir / "report.md").read_text()
    for heading in ("## Task completion rate with 95% CI", "## Paired comparison against frontier",
                    "## Deployment recipes", "## Cost and latency", "## Pareto front", "## Failure modes",
                    "## First unmet obligation and terminal flag", "## Models"):
        assert heading in md, heading
    assert "| tiny-0.6b | 0.6 B |" in md and "$0.5/h" in md


def test_without_reference_the_paired_section_says_why(records: list[dict], tmp_path: Path) -> None:
    write_reports(compact(records), session_meta(), tmp_path, **{**OPTS, "reference": None})
    assert "Not computed: no reference model given." in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "summary.json").read_text())["paired"]["available"] is False


def test_cli_rebuild_is_byte_identical_to_the_session_files(records: list[dict], session_dir: Path,
                                                            tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    runs = tmp_path / "reports" / "runs.jsonl"
    write_runs_jsonl(runs, records)
    rc = main([str(runs), "--out", str(tmp_path / "rebuilt"), "--reference", "frontier", "--margin", "10",
               "--n-boot", str(N_BOOT), "--seed", "7"])
    assert rc == 0
    assert read_all(tmp_path / "rebuilt") == read_all(session_dir)
    out = capsys.readouterr()
    assert str(tmp_path / "rebuilt") in out.out and out.err == ""


def test_cli_default_out_dir_is_beside_the_runs_file(records: list[dict], tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    write_runs_jsonl(runs, records[:40])
    assert main([str(runs), "--n-boot", "50"]) == 0
    assert all((tmp_path / name).exists() for name in REPORT_FILES)


def test_cli_as_a_subprocess_matches_the_session_with_the_same_options(records: list[dict], tmp_path: Path) -> None:
    opts = dict(reference="mid-8b", margin_pp=5.0, n_boot=300, seed=11, infra_as_failure=True, cluster="task")
    write_reports(compact(records), session_meta(), tmp_path / "session", **opts)
    runs = tmp_path / "runs.jsonl"
    write_runs_jsonl(runs, records)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_agentfloor", "report", str(runs), "--out", str(tmp_path / "cli"),
         "--reference", "mid-8b", "--margin", "5", "--n-boot", "300", "--seed", "11", "--infra-as-failure",
         "--cluster", "task"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "wrote summary.json, tcr.csv, report.md, report.html, viewer.html to" in proc.stdout
    assert read_all(tmp_path / "cli") == read_all(tmp_path / "session")


def test_truncated_last_line_is_reported_and_ignored(records: list[dict], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    runs = tmp_path / "runs.jsonl"
    write_runs_jsonl(runs, records[:60])
    with runs.open("a") as fh:
        fh.write(json.dumps(records[60])[:80])  # a worker died mid-write
    assert main([str(runs), "--out", str(tmp_path / "out"), "--n-boot", "50"]) == 0
    err = capsys.readouterr().err
    assert "runs.jsonl:61: truncated last line ignored" in err
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["n_records"] == 60


def test_unknown_reference_exits_2_with_one_line(records: list[dict], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    runs = tmp_path / "runs.jsonl"
    write_runs_jsonl(runs, records[:30])
    assert main([str(runs), "--reference", "gpt-7", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown reference model 'gpt-7'" in err and "tiny-0.6b" in err
    assert not (tmp_path / "out").exists()


def test_missing_file_and_bad_option_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main([str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "runs.jsonl").write_text("")
    assert main([str(tmp_path / "runs.jsonl")]) == 2
    assert "no complete run records" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "runs.jsonl"), "--cluster", "galaxy"])
    assert exc.value.code == 2


def test_repeated_runs_keep_the_last_record(records: list[dict]) -> None:
    first = dict(records[0], passed=False, infra_error=True)
    later = dict(records[0], passed=True, infra_error=False)
    recs, notes = prepare_records([first, *records[1:], later])
    assert len(recs) == len(records)
    assert notes == ["1 repeated run record(s) replaced: the last record of a run wins (files in the order given, "
                     "lines in file order)"]
    assert [r for r in recs if r["task"] == later["task"] and r["model"] == later["model"]
            and r["variant"] == later["variant"] and r["instance"] == later["instance"]
            and r["run"] == later["run"]] == [{k: later.get(k) for k in PROPERTY_FIELDS}]
    summary, _ = build_summary([first, *records[1:], later], None, n_boot=50)
    assert notes[0] in summary.warnings


def test_stringified_properties_are_coerced() -> None:
    rec = {k: str(v) for k, v in compact(make_records(runs=1))[0].items()}
    (clean,), _ = prepare_records([rec])
    assert isinstance(clean["passed"], bool) and isinstance(clean["run"], int) and isinstance(clean["wall_s"], float)
    assert clean["failure_mode"] in (None, *MODES)


def test_models_meta_from_records_keeps_size_provider_pricing_and_hosted_only(records: list[dict]) -> None:
    meta = models_meta_from_records(records)
    assert sorted(meta) == sorted(MODELS)
    assert meta["mid-8b"] == {"params_b": 8.0, "provider": "ollama", "pricing": {"hourly_usd": 0.5}, "hosted": False}
    assert meta["frontier"]["params_b"] is None
    assert models_meta_from_records(compact(records)) == {}
    changed = [dict(r, config=dict(r["config"], params_b=9.0)) for r in records if r["model"] == "mid-8b"][:3]
    assert models_meta_from_records([*records, *changed])["mid-8b"]["params_b"] == 8.0  # the majority wins


@pytest.mark.parametrize("x,text", [(None, "—"), (0.0, "$0"), (0.00046, "$0.00046"), (0.0327, "$0.033"),
                                    (0.000998, "$0.0010"), (0.5, "$0.50"), (12.345, "$12.35")])
def test_usd_format(x: float | None, text: str) -> None:
    assert usd(x) == text


@pytest.mark.slow
def test_html_renders_in_headless_chromium(session_dir: Path, tmp_path: Path) -> None:
    """A person's check: the page renders offline to a non-trivial screenshot (skipped without chromium,
    except where AGENTFLOOR_REQUIRE_BROWSER=1, as .ci/run sets it: there a missing browser fails)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        if os.environ.get("AGENTFLOOR_REQUIRE_BROWSER", "").strip() == "1":
            pytest.fail("AGENTFLOOR_REQUIRE_BROWSER=1 but no chromium, chromium-browser or google-chrome on PATH",
                        pytrace=False)
        pytest.skip("chromium is not installed")
    png = tmp_path / "report.png"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                        f"--screenshot={png}", "--window-size=1300,2000", (session_dir / "report.html").as_uri()],
                       capture_output=True, timeout=120, env={**os.environ, "HOME": profile})
    assert png.exists() and png.stat().st_size > 20_000
