"""results.py field by field: every record key, the text cap, the readers' notes and the run checks.

Written against mutation testing (docs/testing.md): each test pins one documented behaviour with
hand-worked expected values, so a changed key, bound or message fails here and not only in a
pytester run that mutmut cannot attribute.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.grading import Grade
from pytest_agentfloor.grading.obligations import Verdict
from pytest_agentfloor.judge.assess import Assessment
from pytest_agentfloor.providers.scripted import ScriptedProvider
from pytest_agentfloor.results import (
    MAX_LINE_NOTES, PROPERTY_FIELDS, RunLog, build_record, cap_text, compact, junit_value, properties, read_records,
    run_problem, usable_runs, usage_invalid,
)
from pytest_agentfloor.suite.loader import load_case, resolve

REPO = Path(__file__).resolve().parents[1]
ORACLE = ModelConfig(name="oracle", provider="scripted", policy="oracle")

#: every key of a record built without a judge (docs/reports.md lists them)
RECORD_KEYS = {
    "schema", "plugin_version", "nodeid", "model", "protocol", "protocol_params", "task", "tier", "variant",
    "instance", "run", "passed", "infra_error", "first_unmet", "failure_mode", "terminal_flag", "termination",
    "turns", "calls", "tokens_in", "tokens_out", "reasoning_tokens", "latency_s", "wall_s", "busy_s", "endpoint",
    "endpoint_wait_s", "queue_s", "cost_usd",
    "calls_malformed", "calls_rejected", "calls_hallucinated", "calls_repeated", "turns_leaked", "usage_invalid",
    "error",
    "case_hash", "config", "obligations", "kind", "facets", "verdicts", "trajectory",
}


def b1(variant: str = "v0") -> tuple[Any, Any]:
    """The B1 case and the oracle's trajectory on it, with every usage figure zeroed."""
    case, digest = load_case(REPO / "cases" / "tier_B" / "B1.toml")
    resolved = resolve(case, variant, "i0", digest)
    traj = run_episode(resolved, ScriptedProvider(ORACLE), model="oracle")
    for t in traj.turns:
        t.tokens_in, t.tokens_out, t.latency_s, t.busy_s, t.reasoning_tokens, t.leaked_call = 0, 0, 0.0, 0.0, None, False
        for c in t.calls:
            c.malformed = c.hallucinated = c.repeated = False
    assert len(traj.turns) >= 2 and len(traj.calls) >= 2  # the tests below flag some of them
    return resolved, traj


MET, UNMET = Verdict("O1", True, "a call", "a call"), Verdict("O3", False, "answer 340", "answer 12")
FAILED = Grade(passed=False, verdicts=[MET, UNMET], first_unmet=UNMET, failure_mode="F6", terminal_flag="T1")
PASSED = Grade(passed=True, verdicts=[MET])


@dataclass(frozen=True)
class FacetedGrade(Grade):
    """A kind's grade (callsite, pressure) that carries scalar facts of the run."""
    facets: dict[str, Any] | None = field(default=None)


# -- build_record ---------------------------------------------------------------------------------
def test_a_record_has_exactly_the_documented_keys() -> None:
    resolved, traj = b1()
    assert set(build_record(resolved, traj, FAILED, ORACLE, "n")) == RECORD_KEYS
    judged = build_record(resolved, traj, FAILED, ORACLE, "n", judging=Assessment())
    assert set(judged) == RECORD_KEYS | {"judge", "judge_model", "judge_verdicts", "keyword_verdicts", "judge_fails",
                                         "judge_cached", "judge_requests", "judge_error", "judge_cost_usd",
                                         "judge_latency_s"}


def test_the_protocol_comes_from_its_params_else_from_the_trajectory() -> None:
    resolved, traj = b1()
    traj.protocol = "tbb"
    params = {"name": "pinned", "turn_budget": 6}
    rec = build_record(resolved, traj, PASSED, ORACLE, "n", protocol=params)
    assert (rec["protocol"], rec["protocol_params"]) == ("pinned", {"name": "pinned", "turn_budget": 6})
    rec = build_record(resolved, traj, PASSED, ORACLE, "n")
    assert (rec["protocol"], rec["protocol_params"]) == ("tbb", None)
    rec = build_record(resolved, traj, PASSED, ORACLE, "n", protocol={"turn_budget": 6})  # params without a name
    assert rec["protocol"] == "tbb"


def test_a_graded_failure_copies_mode_flag_and_first_unmet_from_the_grade() -> None:
    resolved, traj = b1()
    rec = build_record(resolved, traj, FAILED, ORACLE, "n")
    assert (rec["passed"], rec["infra_error"], rec["first_unmet"], rec["failure_mode"], rec["terminal_flag"]) == \
           (False, False, "O3", "F6", "T1")
    assert rec["obligations"] == {"O1": True, "O3": False}
    # the viewer's account: expected and observed only where an obligation is unmet
    assert rec["verdicts"] == [{"code": "O1", "ok": True},
                               {"code": "O3", "ok": False, "expected": "answer 340", "observed": "answer 12"}]
    assert build_record(resolved, traj, None, ORACLE, "n")["verdicts"] == []
    assert build_record(resolved, traj, Grade(passed=False), ORACLE, "n")["verdicts"] == []


def test_a_context_limit_is_a_harness_flag_not_a_model_verdict() -> None:
    resolved, traj = b1()
    traj.termination = "context_limit"
    for g in (FAILED, PASSED):
        rec = build_record(resolved, traj, g, ORACLE, "n")
        assert (rec["passed"], rec["infra_error"], rec["first_unmet"], rec["failure_mode"], rec["terminal_flag"],
                rec["termination"]) == (False, False, None, None, "context_limit", "context_limit")


def test_a_judge_error_is_an_infrastructure_error_and_the_records_error() -> None:
    resolved, traj = b1()
    traj.error = None
    judging = Assessment(judge="j", error="judge timed out")
    rec = build_record(resolved, traj, PASSED, ORACLE, "n", judging=judging)
    assert (rec["passed"], rec["infra_error"], rec["error"]) == (False, True, "judge timed out")
    assert (rec["failure_mode"], rec["first_unmet"], rec["terminal_flag"]) == (None, None, None)
    assert rec["judge"] == {"model": "j", "fingerprint": None, "prompt_version": rec["judge"]["prompt_version"],
                            "verdicts": [], "error": "judge timed out"}
    assert (rec["judge_model"], rec["judge_error"], rec["judge_verdicts"]) == ("j", True, 0)
    # the episode's own error is kept over the judge's
    traj.error = "provider said no"
    assert build_record(resolved, traj, PASSED, ORACLE, "n", judging=judging)["error"] == "provider said no"
    # a judge without an error leaves the episode's error (here none) alone
    traj.error = None
    rec = build_record(resolved, traj, PASSED, ORACLE, "n", judging=Assessment(judge="j"))
    assert (rec["passed"], rec["infra_error"], rec["error"], rec["judge_error"]) == (True, False, None, False)


def test_call_and_turn_flags_are_counted() -> None:
    resolved, traj = b1()
    calls = traj.calls
    calls[0].malformed = True
    calls[0].hallucinated = calls[1].hallucinated = True
    calls[1].repeated = True
    traj.turns[1].leaked_call = True
    rec = build_record(resolved, traj, PASSED, ORACLE, "n")
    assert (rec["calls_malformed"], rec["calls_hallucinated"], rec["calls_repeated"], rec["turns_leaked"]) == \
           (1, 2, 1, 1)
    assert rec["calls"] == len(calls) and rec["turns"] == len(traj.turns)


def test_usage_figures_and_their_flags() -> None:
    resolved, traj = b1()
    rec = build_record(resolved, traj, PASSED, ORACLE, "n")
    assert (rec["tokens_in"], rec["tokens_out"], rec["reasoning_tokens"], rec["usage_invalid"]) == (0, 0, None, [])
    assert rec["cost_usd"] is None  # no pricing: unknown, never $0
    traj.turns[0].reasoning_tokens = 7
    traj.turns[1].reasoning_tokens = 5
    assert build_record(resolved, traj, PASSED, ORACLE, "n")["reasoning_tokens"] == 12
    for turn_field, value, flagged in (("tokens_in", -3, "tokens_in"), ("tokens_out", 10**9, "tokens_out"),
                                       ("latency_s", -0.5, "latency_s")):
        _, traj = b1()
        setattr(traj.turns[0], turn_field, value)
        assert build_record(resolved, traj, PASSED, ORACLE, "n")["usage_invalid"] == [flagged]


def test_the_kind_and_facets_of_a_run() -> None:
    resolved, traj = b1()
    rec = build_record(resolved, traj, PASSED, ORACLE, "n")
    assert (rec["kind"], rec["facets"]) == ("episode", None)
    cell = resolved.model_copy(update={"kind": "pressure"})
    assert build_record(cell, traj, PASSED, ORACLE, "n")["kind"] == "pressure"
    # a grade's facets win; a run never graded (grade None) takes what the case says
    graded = FacetedGrade(passed=True, facets={"site": "s1", "acted": True})
    assert build_record(resolved, traj, graded, ORACLE, "n")["facets"] == {"site": "s1", "acted": True}

    described = Duck(resolved, facets=lambda: {"lane": "fixed"})
    assert build_record(described, traj, None, ORACLE, "n")["facets"] == {"lane": "fixed"}
    assert build_record(described, traj, FacetedGrade(passed=False), ORACLE, "n")["facets"] == {"lane": "fixed"}
    assert build_record(described, traj, graded, ORACLE, "n")["facets"] == {"site": "s1", "acted": True}
    assert build_record(Duck(resolved, facets={"not": "callable"}), traj, None, ORACLE, "n")["facets"] is None
    # a case of a kind (kinds.CaseKind takes any case object) that says neither: an episode without facets
    rec = build_record(Duck(resolved, hide=("kind", "facets")), traj, None, ORACLE, "n")
    assert (rec["kind"], rec["facets"], rec["task"]) == ("episode", None, "B1")


class Duck:
    """A case object of another kind: `base`'s attributes, some replaced (`**attrs`) or absent (`hide`)."""

    def __init__(self, base: Any, hide: tuple[str, ...] = (), **attrs: Any) -> None:
        self._base, self._hide = base, hide
        self.__dict__.update(attrs)

    def __getattr__(self, name: str) -> Any:
        if name in self._hide:
            raise AttributeError(name)
        return getattr(self._base, name)


def test_long_texts_in_a_record_are_cut_and_their_sizes_kept() -> None:
    resolved, traj = b1()
    traj.final_answer = "a" * 70_000
    traj.error = "e" * 65_537
    unmet = Verdict("O3", False, "x", "o" * 80_000)
    g = Grade(passed=False, verdicts=[MET, unmet], first_unmet=unmet, failure_mode="F6")
    rec = build_record(resolved, traj, g, ORACLE, "n")
    assert rec["capped"] == {"error": 65_537, "trajectory.error": 65_537, "trajectory.final_answer": 70_000,
                             "verdicts[1].observed": 80_000}
    assert rec["error"] == "e" * 65_536 + "...[cut: 65537 bytes in all]"
    assert rec["trajectory"]["final_answer"] == "a" * 65_536 + "...[cut: 70000 bytes in all]"
    assert rec["verdicts"][1]["observed"] == "o" * 65_536 + "...[cut: 80000 bytes in all]"
    assert "capped" not in build_record(*b1(), PASSED, ORACLE, "n")


def test_the_trajectory_is_stored_as_json() -> None:
    resolved, traj = b1()
    rec = build_record(resolved, traj, PASSED, ORACLE, "n")
    assert rec["trajectory"] == json.loads(traj.model_dump_json())
    assert json.loads(json.dumps(rec)) == rec  # nothing in a record needs the writer's str() fallback


# -- cap_text -------------------------------------------------------------------------------------
def test_cap_text_paths_name_where_it_cut() -> None:
    value = {"a": {"b": "x" * 9}, "c": ["y" * 9, "short"], 3: "z" * 9}
    capped, sizes = cap_text(value, limit=8)
    assert sizes == {"a.b": 9, "c[0]": 9, "3": 9}
    assert capped == {"a": {"b": "xxxxxxxx...[cut: 9 bytes in all]"},
                      "c": ["yyyyyyyy...[cut: 9 bytes in all]", "short"], 3: "zzzzzzzz...[cut: 9 bytes in all]"}
    assert cap_text("x" * 9, limit=8) == ("xxxxxxxx...[cut: 9 bytes in all]", {"": 9})
    assert cap_text(["x" * 9], limit=8) == (["xxxxxxxx...[cut: 9 bytes in all]"], {"[0]": 9})
    assert cap_text({"n": 5, "f": None}, limit=1) == ({"n": 5, "f": None}, {})


@pytest.mark.parametrize("text, limit, expected, sizes", [
    ("x" * 8, 8, "x" * 8, {}),  # exactly at the limit: kept
    ("x" * 9, 8, "x" * 8 + "...[cut: 9 bytes in all]", {"": 9}),
    ("é" * 4, 8, "é" * 4, {}),  # 4 characters, 8 bytes: at the limit in bytes
    ("é" * 5, 8, "é" * 4 + "...[cut: 10 bytes in all]", {"": 10}),
    ("é" * 5, 7, "é" * 3 + "...[cut: 10 bytes in all]", {"": 10}),  # never half a character
    ("€" * 3, 8, "€" * 2 + "...[cut: 9 bytes in all]", {"": 9}),  # 3-byte characters
    ("\ud800" * 3, 8, "...[cut: 9 bytes in all]", {"": 9}),  # lone surrogates (3 bytes each) never raise
    ("ab\ud800", 8, "ab\ud800", {}),  # short enough whatever it holds
])
def test_cap_text_counts_utf8_bytes(text: str, limit: int, expected: str, sizes: dict) -> None:
    assert cap_text(text, limit=limit) == (expected, sizes)


# -- compact, junit_value, properties -------------------------------------------------------------
def test_compact_keeps_the_property_fields_and_fills_missing_ones_with_none() -> None:
    record = {"model": "m", "task": "B1", "passed": True, "trajectory": {"big": 1}, "judge_model": "j"}
    out = compact(record)
    assert list(out) == list(PROPERTY_FIELDS)
    assert (out["model"], out["task"], out["passed"], out["judge_model"], out["tier"]) == ("m", "B1", True, "j", None)
    assert "trajectory" not in out


@pytest.mark.parametrize("value, text", [
    (None, ""), (True, "true"), (False, "false"), (0, "0"), (1, "1"), (0.25, "0.25"), ("F6", "F6"), ("", ""),
    ({"a": 1}, "{'a': 1}"), (["x"], "['x']"), (float("nan"), "nan"),
])
def test_junit_value(value: Any, text: str) -> None:
    assert junit_value(value) == text
    assert dict(properties({"facets": value}))["facets"] == text  # properties inlines the same rule


def test_properties_are_every_property_field_in_order() -> None:
    pairs = properties({"model": "m", "passed": False, "turns": 3, "first_unmet": None})
    assert [k for k, _ in pairs] == list(PROPERTY_FIELDS)
    got = dict(pairs)
    assert (got["model"], got["passed"], got["turns"], got["first_unmet"], got["task"]) == ("m", "false", "3", "", "")


# -- usage_invalid --------------------------------------------------------------------------------
@pytest.mark.parametrize("args, bad", [
    ((0, 0, 0.0), []),
    ((1, 1, 0.5), []),
    ((10**8, 10**8, 7 * 86400.0), []),  # the largest plausible values are plausible
    ((10**8 + 1, 10**8 + 1, 7 * 86400.0 + 1), ["tokens_in", "tokens_out", "latency_s"]),
    ((-1, 0, 0.0), ["tokens_in"]),
    ((None, -1, -1.0), ["tokens_out", "latency_s"]),  # None is not reported, not wrong; the rest still checked
    ((5, None, None), []),
    ((True, 3, 1.0), ["tokens_in"]),  # a boolean is no count
    (("12", 3.5, "1.0"), ["tokens_in", "latency_s"]),
    ((float("nan"), float("inf"), 1.0), ["tokens_in", "tokens_out"]),
])
def test_usage_invalid(args: tuple, bad: list[str]) -> None:
    assert usage_invalid(*args) == bad


# -- RunLog ---------------------------------------------------------------------------------------
def test_an_append_after_a_torn_last_line_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": 2, "tor')
    log = RunLog(path)
    log.append({"n": 3})
    log.append({"n": 4})  # the file now ends with a newline: nothing is inserted
    log.close()
    assert path.read_bytes() == b'{"n": 1}\n{"n": 2, "tor\n{"n":3}\n{"n":4}\n'
    assert read_records(path) == ([{"n": 1}, {"n": 3}, {"n": 4}], [f"{path}:2: not a JSON record, ignored"])


def test_another_writers_torn_line_between_two_appends_is_never_extended(tmp_path: Path) -> None:
    """RunLog skips the torn-line check when the file ends where its own last line did; another writer's
    line in between (a torn one, or a whole one) changes that, and the check runs again."""
    path = tmp_path / "runs.jsonl"
    log = RunLog(path)
    log.append({"n": 1})
    with path.open("ab") as other:  # another xdist worker, killed mid-line
        other.write(b'{"n": 2, "tor')
    log.append({"n": 3})
    with path.open("ab") as other:  # a whole line of another writer
        other.write(b'{"n": 4}\n')
    log.append({"n": 5})
    log.close()
    assert path.read_bytes() == b'{"n":1}\n{"n": 2, "tor\n{"n":3}\n{"n": 4}\n{"n":5}\n'


def test_a_file_cut_back_to_a_torn_line_between_appends_gets_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    log = RunLog(path)
    log.append({"n": 1})
    log.append({"n": 2})
    with path.open("r+b") as fh:  # cut inside the last line: the file is shorter than this writer left it
        fh.truncate(len(b'{"n":1}\n{"n"'))
    log.append({"n": 3})
    log.close()
    assert path.read_bytes() == b'{"n":1}\n{"n"\n{"n":3}\n'


def test_append_line_writes_the_line_as_given(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    log = RunLog(path)
    log.append_line(b'{"k":"v"}\n')
    log.close()
    assert path.read_bytes() == b'{"k":"v"}\n'


# -- read_records ---------------------------------------------------------------------------------
@pytest.mark.parametrize("line, note", [
    (b"[1]\n", "a JSON array, not a record object, ignored"),
    (b'"text"\n', "a JSON string, not a record object, ignored"),
    (b"true\n", "a JSON boolean, not a record object, ignored"),
    (b"42\n", "a JSON number, not a record object, ignored"),
    (b"-1.5e3\n", "a JSON number, not a record object, ignored"),
    (b"null\n", "a JSON null, not a record object, ignored"),
    (b"{oops\n", "not a JSON record, ignored"),
    (b"\xff{}\n", "not UTF-8 (byte 0xff at column 1), line ignored"),
    (b'{"a": "\xc3"}\n', "not UTF-8 (byte 0xc3 at column 8), line ignored"),
])
def test_each_bad_line_is_named_with_its_number(tmp_path: Path, line: bytes, note: str) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"n": 1}\n\n' + line + b'{"n": 2}\n')
    assert read_records(path) == ([{"n": 1}, {"n": 2}], [f"{path}:3: {note}"])


@pytest.mark.parametrize("bad, notes", [(1, 1), (MAX_LINE_NOTES, MAX_LINE_NOTES), (MAX_LINE_NOTES + 1, MAX_LINE_NOTES + 1),
                                        (9, MAX_LINE_NOTES + 1)])
def test_bad_lines_are_named_up_to_the_limit_then_counted(tmp_path: Path, bad: int, notes: int) -> None:
    assert MAX_LINE_NOTES == 5
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"n": 1}\n' + b"[]\n" * bad)
    records, problems = read_records(path)
    assert records == [{"n": 1}] and len(problems) == notes
    assert problems[:MAX_LINE_NOTES] == [f"{path}:{n}: a JSON array, not a record object, ignored"
                                         for n in range(2, 2 + min(bad, MAX_LINE_NOTES))]
    if bad > MAX_LINE_NOTES:
        assert problems[-1] == f"{path}: {bad} bad lines skipped in all ({bad - 5} more not shown)"


# -- run_problem, usable_runs ---------------------------------------------------------------------
GOOD = {"model": "m", "task": "B1", "tier": "B", "variant": "v0", "instance": "i0", "run": 0, "passed": True}


@pytest.mark.parametrize("change, problem", [
    ({}, None),
    ({"tier": "A0"}, None),
    ({"kind": None}, None),  # an old record: an episode
    ({"tier": "Z"}, "unknown tier 'Z'"),
    ({"kind": "episode", "tier": "Z"}, "unknown tier 'Z'"),
    ({"kind": "callsite", "tier": "anything"}, None),  # other kinds name their own groups
    ({"kind": "callsite", "facets": {"site": "s"}}, None),
    ({"kind": "callsite"}, None),  # no facets at all: an infrastructure error of a call site
    ({"kind": "callsite", "facets": None}, "a callsite record whose 'facets' is not an object"),
    ({"kind": "pressure", "facets": [1]}, "a pressure record whose 'facets' is not an object"),
    ({"kind": "episode", "facets": None}, None),
    ({"run": True}, "field 'run' is bool, expected int"),
    ({"run": 1.0}, "field 'run' is float, expected int"),
    ({"passed": 1}, "field 'passed' is int, expected bool"),
    ({"model": None}, "field 'model' is NoneType, expected str"),
    ({"instance": 0}, "field 'instance' is int, expected str"),
])
def test_run_problem(change: dict, problem: str | None) -> None:
    assert run_problem({**GOOD, **change}) == problem


@pytest.mark.parametrize("missing", ["model", "task", "tier", "variant", "instance", "run", "passed"])
def test_run_problem_names_a_missing_field(missing: str) -> None:
    r = dict(GOOD)
    del r[missing]
    assert run_problem(r) == f"no {missing!r} field"


def test_run_problem_rejects_what_is_not_an_object() -> None:
    assert run_problem([GOOD]) == "not an object" and run_problem(None) == "not an object"


def test_usable_runs_keeps_the_good_and_notes_the_rest() -> None:
    runs = [GOOD, "x", {**GOOD, "tier": "Z"}, {**GOOD, "run": 2}]
    good, notes = usable_runs(runs, "runs.jsonl")
    assert good == [GOOD, {**GOOD, "run": 2}]
    assert notes == ["runs.jsonl: record 2: not an object, skipped", "runs.jsonl: record 3: unknown tier 'Z', skipped"]
    assert usable_runs([], "s") == ([], [])


@pytest.mark.parametrize("bad, notes", [(MAX_LINE_NOTES, MAX_LINE_NOTES), (MAX_LINE_NOTES + 1, MAX_LINE_NOTES + 1),
                                        (8, MAX_LINE_NOTES + 1)])
def test_usable_runs_names_the_first_few_then_counts(bad: int, notes: int) -> None:
    good, out = usable_runs([GOOD] + [None] * bad, "base.jsonl", "run")
    assert good == [GOOD] and len(out) == notes
    assert out[:MAX_LINE_NOTES] == [f"base.jsonl: run {n}: not an object, skipped"
                                    for n in range(2, 2 + min(bad, MAX_LINE_NOTES))]
    if bad > MAX_LINE_NOTES:
        assert out[-1] == f"base.jsonl: {bad} unusable runs skipped in all"
