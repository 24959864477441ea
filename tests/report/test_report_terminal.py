"""Session-end terminal tables through a stand-in for pytest's terminal reporter."""

from __future__ import annotations

import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_agentfloor.report import build_summary, render_summary, render_text

TIERS = {"A0": ["A01", "A02"], "A": ["A1"], "B": ["B1", "B2"]}
RATES = {"oracle": 1.0, "small-1b": 0.4, "ref-api": 0.8}
META = {"oracle": {"params_b": None}, "small-1b": {"params_b": 1.0}, "ref-api": {"params_b": None}}


def props(seed: int = 0) -> list[dict]:
    """Compact records, as the controller collects them from user_properties."""
    rng = random.Random(seed)
    out = []
    for model, rate in RATES.items():
        for tier, tasks in TIERS.items():
            for task in tasks:
                for v in ("v0", "v1"):
                    for run in range(3):
                        infra = model == "small-1b" and rng.random() < 0.05
                        passed = not infra and rng.random() < rate
                        failed = not passed and not infra
                        out.append({"model": model, "task": task, "tier": tier, "variant": v, "instance": "i0",
                                    "run": run, "passed": passed, "infra_error": infra,
                                    "first_unmet": "S" if failed else None, "failure_mode": "F5" if failed else None,
                                    "terminal_flag": "wrong_conclusion" if failed else None,
                                    "termination": "final_answer", "turns": 2, "calls": 1, "tokens_in": 900,
                                    "tokens_out": 80, "latency_s": 0.25, "wall_s": 0.5, "cost_usd": 0.0})
    return out


class FakeReporter:
    """The parts of pytest's TerminalReporter that render_summary uses."""

    def __init__(self, width: int = 120, markup: bool = False):
        self.hasmarkup = markup
        self.config = SimpleNamespace(get_terminal_writer=lambda: SimpleNamespace(fullwidth=width))
        self.out: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.out.append(f"{sep * 5} {title} {sep * 5}\n")

    def write(self, text: str) -> None:
        self.out.append(text)

    def write_line(self, text: str) -> None:
        self.out.append(text + "\n")

    @property
    def text(self) -> str:
        return "".join(self.out)


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


@pytest.fixture(scope="module")
def with_ref():
    return build_summary(props(), META, reference="ref-api", n_boot=300)[0]


def test_main_table_keeps_its_title_and_row_shape(with_ref) -> None:
    rep = FakeReporter()
    render_summary(rep, props(), with_ref)
    text = rep.text
    assert "===== agentfloor =====" in text
    assert "AgentFloor: task completion by model and tier" in text
    assert re.search(r"^│ oracle +│ all +│ .*100\.0% │", text, re.M)
    assert re.search(r"│ oracle +│ A0 +│ +12 │ +12 │ +100\.0% │ \[75\.8, 100\.0\] │ +0 │", text)


def test_paired_table_only_with_a_reference(with_ref) -> None:
    rep = FakeReporter()
    render_summary(rep, props(), with_ref)
    assert "AgentFloor: paired comparison against ref-api (margin ±10 pp, Holm-adjusted)" in rep.text
    assert re.search(r"│ small-1b +│ all +│ +\d+ │ +-\d+\.\d │ +\[-\d", rep.text)  # pairs, Δ pp, 95% CI
    rep2 = FakeReporter()
    render_summary(rep2, props(), build_summary(props(), META, n_boot=300)[0])
    assert "paired comparison" not in rep2.text
    assert "AgentFloor: task completion by model and tier" in rep2.text


def test_failures_cost_and_recipes_are_shown(with_ref) -> None:
    text = render_text(with_ref, width=120)
    assert "AgentFloor: failure modes" in text and "AgentFloor: first unmet obligation and terminal flag" in text
    assert re.search(r"│ small-1b +│ all +│ +\d+ │", text)
    assert "AgentFloor: cost and latency" in text and "wall/pass" in text
    assert "AgentFloor: deployment recipes" in text and "τ 80%" in text
    # 12/12: the guarded lower bound is Wilson's 12 / (12 + 1.96²) = 75.8 %, so oracle serves τ 60 and 70 only
    assert "oracle (≥75.8%)" in text


@pytest.mark.parametrize("width", [80, 120, 160])
def test_fits_the_terminal_width(with_ref, width: int) -> None:
    text = render_text(with_ref, width=width)
    assert max(len(line) for line in text.splitlines()) <= width


def test_colour_follows_hasmarkup(with_ref) -> None:
    plain, colour = FakeReporter(markup=False), FakeReporter(markup=True)
    render_summary(plain, props(), with_ref)
    render_summary(colour, props(), with_ref)
    assert "\x1b[" not in plain.text and "\x1b[" in colour.text
    assert re.sub(r"\x1b\[[0-9;]*m", "", colour.text) == plain.text


def test_table_lines_do_not_depend_on_record_order_or_timings() -> None:
    recs = props()
    shuffled = [dict(r, wall_s=r["wall_s"] * 3, latency_s=r["latency_s"] * 2) for r in recs]
    random.Random(1).shuffle(shuffled)
    a, b = FakeReporter(), FakeReporter()
    render_summary(a, recs)  # summary computed from the records (default options)
    render_summary(b, shuffled)
    assert table_lines(a.text) and table_lines(a.text) == table_lines(b.text)
    assert a.text != b.text  # the timings table did change, and none of its lines starts with │


def test_modes(with_ref, tmp_path: Path) -> None:
    rep = FakeReporter()
    render_summary(rep, props(), with_ref, mode="none")
    assert rep.text == ""
    render_summary(rep, props(), with_ref, mode="all", out_dir=tmp_path)
    assert f"agentfloor reports: {tmp_path / 'summary.json'}" in rep.text


def test_a_cell_with_only_infra_errors_reads_dash() -> None:
    recs = [dict(r, passed=False, infra_error=True, failure_mode=None, first_unmet=None, terminal_flag=None)
            if r["model"] == "small-1b" and r["tier"] == "B" else r for r in props()]
    text = render_text(build_summary(recs, META, n_boot=100)[0], width=120)
    assert re.search(r"│ small-1b +│ B +│ +0 │ +0 │ +- │ +- │ +12 │", text)


@pytest.mark.parametrize("width", [80, 120, 200])
def test_tables_fit_by_dropping_columns_never_by_cutting_numbers(width: int) -> None:
    """Issue 34: at 80 columns rich cut cells (`60.…`, `[23.1, 88.…`, `1…` for 150 runs) and the right
    border went. Long model names and large counts: every line fits, nothing is cut, borders close."""
    long = {"oracle": "qwen2.5-coder-32b-instruct-q4_k_m", "small-1b": "llama-3.2-1b-instruct-q8_0",
            "ref-api": "gpt-4o-mini-2024-07-18"}
    records = [{**r, "model": long[r["model"]]} for r in props() for _ in range(13)]
    meta = {long[k]: v for k, v in META.items()}
    summary = build_summary(records, meta, reference=long["ref-api"], n_boot=200)[0]
    text = render_text(summary, width=width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, [ln for ln in lines if len(ln) > width][:3]
    assert "…" not in text, [ln for ln in lines if "…" in ln][:5]
    for line in lines:
        if line.startswith(("│", "┃")):
            assert line.rstrip().endswith(("│", "┃")), line  # the right border is there
    if width == 80:
        assert "omitted; see report.md" in text  # what was dropped is said
    if width == 200:
        assert "[" in text and "TCR" in text


def test_the_flag_legend_names_every_flag_shown() -> None:
    """Issue 34: the legend left out `other`, the main job's most common flag (14 of 27)."""
    from pytest_agentfloor.report.tables import TERMINAL_FLAG_SHORT, unmet_table

    records = props()
    flags = ["other", "truncation", "turn_limit", "wrong_conclusion", "budget", "infeasible"]
    failed = [r for r in records if not r["passed"] and not r["infra_error"]]
    for n, r in enumerate(failed):
        r["terminal_flag"] = flags[n % len(flags)]
    summary = build_summary(records, META, n_boot=100)[0]
    table = unmet_table(summary)
    legend = table.notes[-1]
    for flag in flags:
        header = TERMINAL_FLAG_SHORT.get(flag, flag)
        assert header in table.headers and f"{header} = " in legend, (header, legend)
    assert "other = none of these" in legend
    text = render_text(summary, width=200)
    assert "Then how the episode ended: " in text and "other = " in text  # the terminal shows it too
