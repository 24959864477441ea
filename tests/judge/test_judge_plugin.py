"""The judge inside pytest runs, against a fake judge over real HTTP (tests/fakeserver.py).

The judged model is the scripted oracle (the cases' reference answers), so every verdict
here is the judge's: what it says decides the item, and how it fails decides the error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeModelServer, reply, stall, status

REPO = Path(__file__).resolve().parents[2]
INVENTED = "It adds a cause that the log does not give."


def verdict(v: str, reason: str) -> Any:
    return reply(content=json.dumps({"verdict": v, "reason": reason}), tokens_in=300, tokens_out=20)


def strict_on_invention(body: dict[str, Any]) -> Any:
    """A judge that fails every no_invented_facts question and passes the rest."""
    user = body["messages"][-1]["content"]
    return verdict("fail", INVENTED) if "RULE (no_invented_facts)" in user else verdict("pass", "All there.")


@pytest.fixture
def judge_server():
    with FakeModelServer(strict_on_invention) as srv:
        yield srv


def models_toml(url: str) -> str:
    return (f'[models.fj]\nprovider = "openai"\nmodel = "judge-1"\nbase_url = "{url}"\ntimeout_s = 0.5\n'
            'retries = 0\npricing = { input_per_mtok = 1.0, output_per_mtok = 2.0 }\n')


@pytest.fixture
def bench(pytester: pytest.Pytester, judge_server: FakeModelServer) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    (pytester.path / "models.toml").write_text(models_toml(judge_server.openai_url))
    return pytester


def latest_records(p: pytest.Pytester) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (p.path / "reports" / "latest" / "runs.jsonl").read_text().splitlines()]


def summary(p: pytest.Pytester) -> dict[str, Any]:
    return json.loads((p.path / "reports" / "latest" / "summary.json").read_text())


def cache_lines(p: pytest.Pytester) -> list[dict[str, Any]]:
    path = p.path / "reports" / "judge-cache.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


A02 = ("cases/tier_A0/A02.toml", "--model", "oracle", "--variants", "v0", "-p", "no:cacheprovider")


def test_the_judge_decides_the_semantic_checks_and_every_report_says_so(bench: pytest.Pytester,
                                                                      judge_server: FakeModelServer) -> None:
    result = bench.runpytest(*A02, "--agentfloor-judge", "fj", "--junitxml=out.xml", "-o", "junit_family=xunit1")
    result.assert_outcomes(failed=1)
    # the failure message carries the judge's verdicts and reasons
    result.stdout.fnmatch_lines(["*Q (answer): expected no_invented_facts: *; observed the judge says fail: " + INVENTED,
                                 "*semantic checks (judge fj, prompt judge-v1):*",
                                 "*required_elements: pass (asked): All there.*",
                                 "*no_invented_facts: FAIL (asked): " + INVENTED + "*",
                                 "*semantic checks: 2 verdict(s) by the judge fj, 0 by the keyword stand-in*"])
    # two questions, each asked at temperature 0 with the fixed seed, in JSON mode
    assert len(judge_server.requests) == 2
    for body in judge_server.requests:
        assert (body["temperature"], body["seed"], body["response_format"]) == (0.0, 42, {"type": "json_object"})
        assert "tools" not in body
    (rec,) = latest_records(bench)
    assert rec["passed"] is False and rec["infra_error"] is False and rec["first_unmet"] == "Q"
    assert [(v["predicate"], v["source"], v["verdict"], v["reason"]) for v in rec["judge"]["verdicts"]] == [
        ("required_elements", "judge", "pass", "All there."), ("no_invented_facts", "judge", "fail", INVENTED)]
    assert (rec["judge_verdicts"], rec["keyword_verdicts"], rec["judge_requests"], rec["judge_cached"]) == (2, 0, 2, 0)
    # the judge's cost is its own (2 x (300 in + 20 out) at $1/$2 per Mtok), not the judged model's
    assert rec["judge_cost_usd"] == pytest.approx(2 * (300e-6 + 40e-6)) and rec["cost_usd"] is None  # oracle: unpriced
    j = summary(bench)["judge"]["overall"]
    assert (j["judge_verdicts"], j["keyword_verdicts"], j["judge_fails"], j["judge_requests"], j["judges"]) == (
        2, 0, 1, 2, ["fj"])
    md = (bench.path / "reports" / "latest" / "report.md").read_text()
    assert "## Semantic checks: judge and keyword verdicts" in md and "| oracle | fj | 2 | 1 | 0 |" in md
    assert 'id="judge"' in (bench.path / "reports" / "latest" / "report.html").read_text()
    props = {p.get("name"): p.get("value") for p in ET.parse(bench.path / "out.xml").getroot().iter("property")}
    assert (props["judge_model"], props["judge_verdicts"], props["keyword_verdicts"]) == ("fj", "2", "0")


def test_without_a_judge_the_keyword_stand_in_is_counted(bench: pytest.Pytester,
                                                        judge_server: FakeModelServer) -> None:
    result = bench.runpytest("cases/tier_A0", "--model", "oracle", "--variants", "v0", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*semantic checks: 0 verdict(s) by the judge, 6 by the keyword stand-in*"])
    assert judge_server.requests == []
    j = summary(bench)["judge"]
    assert (j["overall"]["keyword_verdicts"], j["overall"]["judge_verdicts"], j["overall"]["hit_rate"]) == (6, 0, None)


def test_cache_hits_make_no_request_and_persist_across_sessions(bench: pytest.Pytester,
                                                               judge_server: FakeModelServer) -> None:
    bench.runpytest(*A02, "--agentfloor-runs", "2", "--agentfloor-judge", "fj").assert_outcomes(failed=2)
    assert len(judge_server.requests) == 2  # run r1 judges the same text: both verdicts from the cache
    assert summary(bench)["judge"]["overall"]["hit_rate"] == 0.5
    assert len(cache_lines(bench)) == 2
    result = bench.runpytest(*A02, "--agentfloor-runs", "2", "--agentfloor-judge", "fj")
    result.assert_outcomes(failed=2)
    assert len(judge_server.requests) == 2
    assert summary(bench)["judge"]["overall"]["hit_rate"] == 1.0
    assert "4 hit(s), 0 request(s) (hit rate 100%)" in " ".join(result.stdout.str().split())
    rec = latest_records(bench)[0]
    assert all(v["cached"] for v in rec["judge"]["verdicts"])
    assert "(cached)" in result.stdout.str()
    bench.runpytest(*A02, "--agentfloor-judge", "fj", "--agentfloor-judge-cache", "off").assert_outcomes(failed=1)
    assert len(judge_server.requests) == 4 and len(cache_lines(bench)) == 2
    bench.runpytest(*A02, "--agentfloor-judge", "fj", "--agentfloor-judge-cache", "read").assert_outcomes(failed=1)
    assert len(judge_server.requests) == 4


@pytest.mark.parametrize("action, says", [
    (status(500, "judge overloaded"), "HTTP 500: judge overloaded"),
    (reply(content="Verdict: pass. The summary is fine."), "unparseable reply"),
    (reply(content='```json\n{"verdict": "pass", "reason": "ok"}\n```'), "not a bare JSON object"),
    (reply(content='{"verdict": "pass", "reason": "ok", "confidence": 0.9}'), "exactly the keys"),
    (stall(3.0), "timed out after 0.5s"),
], ids=["http-500", "prose", "fenced", "extra-key", "timeout"])
def test_a_judge_that_fails_makes_an_infrastructure_error(bench: pytest.Pytester, judge_server: FakeModelServer,
                                                          action: Any, says: str) -> None:
    judge_server.push(action)
    result = bench.runpytest(*A02, "--agentfloor-judge", "fj")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*infrastructure error (judge): judge fj: *{says}*"])
    (rec,) = latest_records(bench)
    assert rec["infra_error"] is True and rec["judge_error"] is True and rec["passed"] is False
    assert rec["failure_mode"] is None and says in rec["judge"]["error"]
    s = summary(bench)
    assert s["judge"]["overall"]["judge_errors"] == 1
    assert s["models"]["oracle"]["n_infra"] == 1  # counted apart, not as a model failure
    assert cache_lines(bench) == []  # nothing cached from a failed judge


def test_unknown_scripted_or_badly_cached_judges_are_usage_errors(bench: pytest.Pytester) -> None:
    r = bench.runpytest(*A02, "--agentfloor-judge", "nope")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*--agentfloor-judge: unknown model 'nope'; configured: *fj*"])
    r = bench.runpytest(*A02, "--agentfloor-judge", "oracle")
    r.stderr.fnmatch_lines(["*--agentfloor-judge: 'oracle' is a scripted model and cannot judge text*"])
    r = bench.runpytest(*A02, "--agentfloor-judge", "fj", "--agentfloor-judge-cache", "sometimes")
    r.stderr.fnmatch_lines(["*--agentfloor-judge-cache: expected one of readwrite, read, write, off, got 'sometimes'*"])


def test_two_xdist_workers_share_one_cache(bench: pytest.Pytester, judge_server: FakeModelServer) -> None:
    args = ("cases/tier_A0", "--model", "oracle", "--agentfloor-runs", "2", "--agentfloor-judge", "fj", "-n", "2", "-p", "no:cacheprovider")
    first = bench.runpytest_subprocess(*args)
    outcomes = first.parseoutcomes()
    assert outcomes["passed"] == 30 and outcomes["failed"] == 20  # A02, A03 fail on invention (x5 variants x2 runs)
    asked = len(judge_server.requests)
    # 3 judged cases x 5 variants x 2 predicates = 30 distinct questions, each asked at least once;
    # the second run of an item may race the first on the other worker, never more than twice
    assert 30 <= asked <= 60
    lines = cache_lines(bench)
    assert len({e["key"] for e in lines}) == 30 and len(lines) == asked  # every line whole: no interleaving
    recs = latest_records(bench)
    assert sum(r["judge_verdicts"] for r in recs) == 60
    assert sum(r["judge_cached"] for r in recs) == 60 - asked
    second = bench.runpytest_subprocess(*args)
    assert second.parseoutcomes() == outcomes
    assert len(judge_server.requests) == asked  # everything from the shared cache
    assert summary(bench)["judge"]["overall"]["hit_rate"] == 1.0


def test_regrade_rejudges_from_the_cache_with_no_server(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    with FakeModelServer(strict_on_invention) as srv:
        (pytester.path / "models.toml").write_text(models_toml(srv.openai_url))
        pytester.runpytest("cases/tier_A0", "--model", "oracle", "--variants", "v0", "--agentfloor-judge", "fj",
                           "-p", "no:cacheprovider").assert_outcomes(passed=3, failed=2)
        asked = len(srv.requests)
    runs = str(pytester.path / "reports" / "latest" / "runs.jsonl")

    def regrade(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest_agentfloor", "regrade", runs, *extra],
                              capture_output=True, text=True, cwd=pytester.path, timeout=120)

    out = regrade("--judge", "fj", "--write", "again.jsonl")  # the server is gone: only the cache can answer
    assert out.returncode == 0, out.stderr
    assert f"{asked} verdict(s) by judge fj ({asked} from the cache, 0 request(s))" in out.stdout
    assert "0 outcome(s) changed" in out.stdout
    again = [json.loads(line) for line in (pytester.path / "again.jsonl").read_text().splitlines()]
    assert sum(r["judge_cached"] for r in again) == asked and sum(r["judge_requests"] for r in again) == 0
    # a miss with no server: the record keeps its stored grade, and says why
    missed = regrade("--judge", "fj", "--judge-cache", "off")
    assert missed.returncode == 0 and "not re-graded: judge fj:" in missed.stderr
    assert "connection refused" in missed.stderr and "0 outcome(s) changed" in missed.stdout
    # without --judge the keyword stand-ins decide: the oracle's answers pass them
    keyword = regrade()
    assert "2 outcome(s) changed; passed 3 -> 5" in keyword.stdout


def test_resume_reruns_items_judged_otherwise(bench: pytest.Pytester, judge_server: FakeModelServer) -> None:
    args = ("cases/tier_A0", "--model", "oracle", "--variants", "v0", "-p", "no:cacheprovider")
    bench.runpytest(*args).assert_outcomes(passed=5)  # keyword stand-ins
    result = bench.runpytest(*args, "--agentfloor-resume", "--agentfloor-judge", "fj")
    result.assert_outcomes(passed=1, failed=2, deselected=2)  # A02, A03, A05 run again; A01, A04 resumed
    result.stdout.fnmatch_lines(["*--resume: 3 item(s) whose semantic checks were decided otherwise than by "
                                 "this session's judge run again*", "*resumed 2 item(s)*"])
    assert len(judge_server.requests) == 6
    result = bench.runpytest(*args, "--agentfloor-resume", "--agentfloor-judge", "fj")
    result.stdout.fnmatch_lines(["*resumed 5 item(s)*"])
    assert len(judge_server.requests) == 6


def test_replay_judges_from_the_cache_only(bench: pytest.Pytester, judge_server: FakeModelServer) -> None:
    bench.runpytest(*A02, "--agentfloor-record", "--agentfloor-judge", "fj", "--agentfloor-judge-cache", "off").assert_outcomes(failed=1)
    assert len(judge_server.requests) == 2
    result = bench.runpytest(*A02, "--agentfloor-replay", "--agentfloor-judge", "fj")  # the answer is recorded, its verdicts are not
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no cached verdict for required_elements*--agentfloor-replay makes no live request*"])
    assert len(judge_server.requests) == 2
    bench.runpytest(*A02, "--agentfloor-record", "--agentfloor-judge", "fj").assert_outcomes(failed=1)
    assert len(judge_server.requests) == 4
    bench.runpytest(*A02, "--agentfloor-replay", "--agentfloor-judge", "fj").assert_outcomes(failed=1)  # now from the cache
    assert len(judge_server.requests) == 4
