"""The judge's pure parts: strict reply parsing, cache keys, the cache file, Wilson intervals, case fields."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.judge.assess import assess
from pytest_agentfloor.judge.cache import JudgeCache
from pytest_agentfloor.judge.client import cache_key, fingerprint, judge_config
from pytest_agentfloor.suite.predicates import semantic_groups
from pytest_agentfloor.judge.prompt import PROMPT_VERSION, UnparseableReply, parse_reply
from pytest_agentfloor.stats.judge import wilson
from pytest_agentfloor.suite.loader import load_case, resolve
from pytest_agentfloor.suite.schema import AnswerCheck, Gold
from pytest_agentfloor.trajectory import Trajectory

REPO = Path(__file__).resolve().parents[2]


# -- strict parsing -------------------------------------------------------------------------
@pytest.mark.parametrize("reply, expected", [
    ('{"verdict": "pass", "reason": "Every element is there."}', (True, "Every element is there.")),
    ('  {"reason": "Adds a cause.", "verdict": "fail"}\n', (False, "Adds a cause.")),
    ('{"verdict":"fail","reason":"Two\\nlines  collapse."}', (False, "Two lines collapse.")),
])
def test_a_bare_json_verdict_is_read(reply: str, expected: tuple[bool, str]) -> None:
    assert parse_reply(reply) == expected


@pytest.mark.parametrize("reply, why", [
    (None, "empty"),
    ("", "empty"),
    ("pass", "not a bare JSON object"),
    ('Sure! {"verdict": "pass", "reason": "ok"}', "not a bare JSON object"),
    ('```json\n{"verdict": "pass", "reason": "ok"}\n```', "not a bare JSON object"),
    ('{"verdict": "pass", "reason": "ok",}', "invalid JSON"),
    ('{"verdict": "PASS", "reason": "ok"}', "verdict must be"),
    ('{"verdict": true, "reason": "ok"}', "verdict must be"),
    ('{"verdict": "pass"}', "exactly the keys"),
    ('{"verdict": "pass", "reason": "ok", "score": 1}', "exactly the keys"),
    ('{"verdict": "pass", "verdict": "fail", "reason": "ok"}', "more than once"),
    ('{"verdict": "pass", "reason": "  "}', "non-empty"),
    ('{"verdict": "pass", "reason": 3}', "non-empty"),
    ('{"verdict": "pass", "reason": "' + "x" * 500 + '"}', "one sentence"),
])
def test_anything_else_is_unparseable_and_says_why(reply: str | None, why: str) -> None:
    with pytest.raises(UnparseableReply, match=why):
        parse_reply(reply)


# -- keys -----------------------------------------------------------------------------------
ARGS = dict(judge_fp="0123456789abcdef", predicate="no_invented_facts", rubric="Nothing added.", case_id="A02",
            context="c" * 64, text="The east stairwell is closed.")


def test_the_key_changes_with_every_part_it_covers() -> None:
    base = cache_key(**ARGS)
    assert len(base) == 64 and base == cache_key(**ARGS)
    for field, other in [("judge_fp", "fedcba9876543210"), ("predicate", "required_elements"),
                         ("rubric", "Nothing added!"), ("case_id", "A03"), ("context", "d" * 64),
                         ("text", "The east stairwell is closed. ")]:
        assert cache_key(**{**ARGS, field: other}) != base, field


def test_the_key_is_the_same_in_another_process() -> None:
    code = ("import json,sys; from pytest_agentfloor.judge.client import cache_key; "
            "print(cache_key(**json.loads(sys.argv[1])))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(ARGS)], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == cache_key(**ARGS)


def test_the_judge_runs_at_temperature_0_with_a_fixed_seed_and_a_secret_free_fingerprint() -> None:
    cfg = ModelConfig(name="j", provider="openai", model="m", temperature=0.7, api_key_env="SECRET_VAR",
                      base_url="http://user:pw@127.0.0.1:1/v1")
    fixed = judge_config(cfg)
    assert (fixed.temperature, fixed.seed) == (0.0, 42)
    assert judge_config(cfg.model_copy(update={"seed": 7})).seed == 7
    fp = fingerprint(fixed)
    assert fp == fingerprint(fixed.model_copy(update={"timeout_s": 5.0, "retries": 0, "name": "other"}))
    assert fp != fingerprint(fixed.model_copy(update={"model": "m2"}))
    assert fp == fingerprint(fixed.model_copy(update={"base_url": "http://127.0.0.1:1/v1"}))  # credentials stripped


# -- the cache file ---------------------------------------------------------------------------
def entry(key: str, verdict: str = "pass") -> dict:
    return {"key": key, "verdict": verdict, "reason": "r", "prompt_version": PROMPT_VERSION}


def test_cache_round_trip_and_modes(tmp_path: Path) -> None:
    path = tmp_path / "judge-cache.jsonl"
    k1, k2 = "1" * 64, "2" * 64
    JudgeCache(path).put(entry(k1))
    assert JudgeCache(path).get(k1)["verdict"] == "pass"
    assert JudgeCache(path, "write").get(k1) is None  # write: always ask, store the answer
    JudgeCache(path, "read").put(entry(k2))  # read: never stores
    assert JudgeCache(path).get(k2) is None
    JudgeCache(path, "write").put(entry(k1, "fail"))  # a later entry wins
    assert JudgeCache(path).get(k1)["verdict"] == "fail"
    with pytest.raises(ValueError, match="readwrite, read, write, off"):
        JudgeCache(path, "on")


def test_a_reader_sees_what_another_writer_appended_since(tmp_path: Path) -> None:
    path = tmp_path / "judge-cache.jsonl"
    reader, writer = JudgeCache(path), JudgeCache(path)
    assert reader.get("3" * 64) is None
    writer.put(entry("3" * 64))
    assert reader.get("3" * 64) is not None


def test_torn_and_bad_lines_are_skipped_and_never_extended(tmp_path: Path) -> None:
    path = tmp_path / "judge-cache.jsonl"
    good = json.dumps(entry("4" * 64))
    path.write_text(good + "\nnot json\n" + json.dumps({"key": "short"}) + "\n" + '{"key": "5555')  # torn last line
    cache = JudgeCache(path)
    assert cache.get("4" * 64) is not None and cache.bad_lines == 2
    cache.put(entry("6" * 64))
    lines = path.read_text().splitlines()
    assert lines[-2] == '{"key": "5555' and json.loads(lines[-1])["key"] == "6" * 64
    fresh = JudgeCache(path)
    assert fresh.get("6" * 64) is not None and fresh.bad_lines == 3


# -- Wilson interval ---------------------------------------------------------------------------
@pytest.mark.parametrize("k, n", [(0, 1), (1, 1), (24, 48), (40, 48), (0, 24), (24, 24), (7, 13)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(ci.low, abs=1e-9) and hi == pytest.approx(ci.high, abs=1e-9)


def test_wilson_hand_worked() -> None:
    # k=8, n=10, z=1.959964: centre (0.8 + 0.192079) / 1.384146 = 0.716740,
    # half 1.959964 * sqrt(0.016 + 0.0096037) / 1.384146 = 0.226578 -> [0.490, 0.943]
    lo, hi = wilson(8, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)
    assert wilson(0, 0) == (None, None)


# -- case fields and the keyword stand-in -------------------------------------------------------
def test_predicate_and_rubric_need_a_semantic_check() -> None:
    with pytest.raises(ValueError, match="add semantic = true"):
        AnswerCheck(kind="contains", values=["x"], rubric="Says x.")
    with pytest.raises(ValueError, match="lower-case"):
        AnswerCheck(kind="contains", values=["x"], semantic=True, predicate="No Facts")


def test_a_custom_predicate_needs_one_rubric() -> None:
    with pytest.raises(ValueError, match="give its 'rubric'"):
        Gold(answer=[AnswerCheck(kind="contains", values=["x"], semantic=True, predicate="mine")])
    with pytest.raises(ValueError, match="2 different rubrics"):
        Gold(answer=[AnswerCheck(kind="contains", values=["x"], semantic=True, predicate="mine", rubric="A."),
                     AnswerCheck(kind="contains", values=["y"], semantic=True, predicate="mine", rubric="B.")])
    Gold(answer=[AnswerCheck(kind="contains", values=["x"], semantic=True, predicate="mine", rubric="A."),
                 AnswerCheck(kind="contains", values=["y"], semantic=True, predicate="mine")])


def test_the_ladder_semantic_predicates() -> None:
    found = {}
    for cid in ("A02", "A03", "A05"):
        case, digest = load_case(REPO / "cases" / "tier_A0" / f"{cid}.toml")
        found[cid] = [g.predicate for g in semantic_groups(resolve(case, "v0", "i0", digest))]
    assert found == {"A02": ["required_elements", "no_invented_facts"],
                     "A03": ["required_elements", "no_invented_facts"],
                     "A05": ["required_elements", "only_requested_items"]}


def test_without_a_judge_each_predicate_gets_one_keyword_verdict() -> None:
    case, digest = load_case(REPO / "cases" / "tier_A0" / "A03.toml")
    rc = resolve(case, "v0", "i0", digest)
    traj = Trajectory(case_id="A03", tier="A0", variant="v0", instance="i0", run=0, model="m", tools=[],
                      termination="final_answer",
                      final_answer="A memory leak stopped the payment queue; a restart fixed it and no payments were lost.")
    a = assess(rc, traj, None)
    assert [(j.predicate, j.source, j.passed) for j in a.verdicts] == [
        ("required_elements", "keyword", True), ("no_invented_facts", "keyword", False)]
    assert a.scalars()["keyword_verdicts"] == 2 and a.scalars()["judge_verdicts"] == 0
    empty = assess(rc, traj.model_copy(update={"final_answer": None}), None)
    assert empty.verdicts == []


def test_judge_counts_and_an_unpriced_judge_cost_is_unknown() -> None:
    from pytest_agentfloor.stats.judge import compute_judge

    recs = [{"model": "m", "judge_model": "j", "judge_verdicts": 2, "keyword_verdicts": 0, "judge_fails": 1,
             "judge_cached": 1, "judge_requests": 1, "judge_error": False, "judge_cost_usd": None,
             "judge_latency_s": 0.5},
            {"model": "m", "keyword_verdicts": 2},  # a record written without the judge
            {"model": "n", "judge_model": "j", "judge_verdicts": 0, "judge_error": True, "judge_requests": 0,
             "judge_cost_usd": 0.0}]
    out = compute_judge(recs)
    m, all_ = out["m"], out["overall"]
    assert (m.judge_verdicts, m.keyword_verdicts, m.judge_fails, m.cache_hits, m.judge_requests) == (2, 2, 1, 1, 1)
    assert m.hit_rate == 0.5 and m.judge_cost_usd is None and m.judge_latency_s == 0.5
    assert out["n"].judge_errors == 1 and out["n"].hit_rate is None and out["n"].judge_cost_usd == 0.0
    assert all_.judge_errors == 1 and all_.judges == ("j",)
