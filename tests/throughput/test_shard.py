"""--agentfloor-shard K/N (issue 18): disjoint parts that together are the whole selection, independent of
the order files are collected in; the shards' runs.jsonl merge into the single-machine report."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.shard import parse_shard, shard_members

REPO = Path(__file__).resolve().parents[2]


def test_shards_partition_and_balance() -> None:
    ids = [f"cases/tier_{t}/{t}{n}.toml::{t}{n}[v{v}-i0-r0-oracle]" for t in "AB" for n in range(7) for v in range(5)]
    parts = [shard_members(ids, k, 4) for k in range(1, 5)]
    assert set().union(*parts) == set(ids)
    assert sum(map(len, parts)) == len(ids)  # disjoint
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    shuffled = ids[:]
    random.Random(3).shuffle(shuffled)
    assert [shard_members(shuffled, k, 4) for k in range(1, 5)] == parts  # order does not matter


def test_shard_rule_by_hand() -> None:
    ids = ["a", "b", "c", "d", "e"]
    ranked = sorted(ids, key=lambda s: hashlib.sha256(s.encode()).digest()[:8])
    assert shard_members(ids, 1, 2) == set(ranked[0::2])
    assert shard_members(ids, 2, 2) == set(ranked[1::2])
    assert shard_members(ids, 1, 1) == set(ids)


@pytest.mark.parametrize("text", ["0/3", "4/3", "1", "a/b", "1/0", "-1/2"])
def test_bad_shard_specs(text: str) -> None:
    with pytest.raises(ValueError, match="K/N with 1 <= K <= N"):
        parse_shard(text)


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    return pytester


def _nodeids(result: pytest.RunResult) -> list[str]:
    return [ln.split(" ")[0] for ln in result.outlines if "::" in ln and (" PASSED" in ln or " FAILED" in ln)]


def test_shards_run_disjoint_parts_of_the_selection(bench: pytest.Pytester) -> None:
    args = ("cases", "--model", "oracle,fault-plan_only", "--instances", "i0", "-v", "-p", "no:cacheprovider",
            "--agentfloor-report", "none")
    whole = set(_nodeids(bench.runpytest(*args, "--agentfloor-report-dir", "whole")))
    parts = [set(_nodeids(bench.runpytest(*args, "--agentfloor-shard", f"{k}/3", "--agentfloor-report-dir", f"s{k}"))) for k in (1, 2, 3)]
    assert whole and set().union(*parts) == whole
    assert sum(map(len, parts)) == len(whole)
    # the same shard again, collecting the tier directories in the other order
    again = bench.runpytest("cases/tier_A", "cases/tier_A0", *args[1:], "--agentfloor-shard", "2/3", "--agentfloor-report-dir", "again")
    assert set(_nodeids(again)) == parts[1]


def test_bad_shard_option_is_a_usage_error(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--agentfloor-shard", "3/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-shard: expected K/N with 1 <= K <= N*"])


def _summary_without_run(path: Path) -> dict:
    data = json.loads(path.read_text())
    data.pop("run", None)  # which session(s) it describes: one session vs a merge of three
    return data


def test_report_merges_shards_into_the_single_machine_report(bench: pytest.Pytester, tmp_path: Path) -> None:
    from pytest_agentfloor.report.cli import main as report

    args = ("cases", "--model", "oracle,fault-plan_only,fault-partial", "--instances", "i0,i1",
            "-p", "no:cacheprovider", "--agentfloor-report", "none")
    bench.runpytest(*args, "--agentfloor-report-dir", "whole")
    shards = []
    for k in (1, 2, 3):
        bench.runpytest(*args, "--agentfloor-shard", f"{k}/3", "--agentfloor-report-dir", f"s{k}")
        shards += sorted(bench.path.glob(f"s{k}/sessions/*/runs.jsonl"))
    whole = sorted(bench.path.glob("whole/sessions/*/runs.jsonl"))
    assert len(shards) == 3 and len(whole) == 1
    # a single machine's file of the very same records (timings included), in its collection order
    order = {json.loads(line)["nodeid"]: n for n, line in enumerate(whole[0].read_text().splitlines())}
    lines = [line for f in shards for line in f.read_text().splitlines() if line.strip()]
    assert sorted(json.loads(x)["nodeid"] for x in lines) == sorted(order)
    single = tmp_path / "single" / "runs.jsonl"
    single.parent.mkdir()
    single.write_text("".join(x + "\n" for x in sorted(lines, key=lambda x: order[json.loads(x)["nodeid"]])))
    assert report([str(single), "--out", str(tmp_path / "one"), "--n-boot", "500"]) == 0
    assert report([*map(str, reversed(shards)), "--out", str(tmp_path / "merged"), "--n-boot", "500"]) == 0
    for name in ("summary.json", "tcr.csv", "report.md"):
        one, merged = (tmp_path / d / name for d in ("one", "merged"))
        if name == "summary.json":
            assert _summary_without_run(merged) == _summary_without_run(one)
            assert json.loads(merged.read_text())["run"]["session_id"].startswith("merged ")  # issue 27 (13)
        elif name == "report.md":  # the merge has a run header (COMPLETE/PARTIAL); the hand-made file has none
            text = merged.read_text()
            assert "\n**Run:** session merged " in text
            assert re.sub(r"\n\n\*\*Run:\*\*[^\n]*\n", "\n", text, count=1) == one.read_text()
        else:
            assert merged.read_text() == one.read_text(), name
    # and the verdicts are those of the single-machine run itself
    whole_verdicts = {json.loads(x)["nodeid"]: json.loads(x)["passed"] for x in whole[0].read_text().splitlines()}
    assert {json.loads(x)["nodeid"]: json.loads(x)["passed"] for x in lines} == whole_verdicts


def test_report_counts_a_run_in_two_files_once(bench: pytest.Pytester, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_agentfloor.report.cli import main as report

    bench.runpytest("cases/tier_A0", "--model", "oracle", "-p", "no:cacheprovider", "--agentfloor-report", "none")
    runs = str(next(bench.path.glob("reports/sessions/*/runs.jsonl")))
    assert report([runs, "--out", str(tmp_path / "one"), "--n-boot", "200"]) == 0
    assert report([runs, runs, "--out", str(tmp_path / "twice"), "--n-boot", "200"]) == 0
    assert "repeated run record(s) replaced: the last record of a run wins" in capsys.readouterr().err
    assert (tmp_path / "twice" / "tcr.csv").read_text() == (tmp_path / "one" / "tcr.csv").read_text()
