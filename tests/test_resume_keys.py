"""--agentfloor-resume reuses a stored result only for the same item under the same model configuration.

A changed models.toml entry and an infrastructure error both make an item run again; an
unchanged graded item is taken from runs.jsonl. Real pytest runs (pytester), scripted and
loopback-HTTP models.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.corpus import completed_records, config_fingerprint, record_key, resume_key
from pytest_agentfloor.results import PROPERTY_FIELDS
from tests.fakeserver import FakeModelServer, status
from tests.test_provider_episodes import follow_reference

REPO = Path(__file__).resolve().parents[1]
ARGS = ("cases/tier_B/B1.toml", "--variants", "v0,v1", "--instances", "i0", "--no-probe")


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    return pytester


def runs(bench: pytest.Pytester) -> list[dict]:
    """The records of the latest session (a resumed item's record is carried over unchanged)."""
    path = bench.path / "reports" / "latest" / "runs.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def scripted(**fields: object) -> str:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in fields.items())
    return f'[models.mine]\nprovider = "scripted"\npolicy = "oracle"\n{extra}'


def test_an_unchanged_configuration_is_resumed(bench: pytest.Pytester) -> None:
    bench.makefile(".toml", models=scripted(temperature=0.0))
    bench.runpytest(*ARGS, "--model", "mine").assert_outcomes(passed=2)
    first = runs(bench)
    result = bench.runpytest(*ARGS, "--model", "mine", "--agentfloor-resume")
    result.stdout.fnmatch_lines(["*resumed 2 item(s) from runs.jsonl*"])
    assert runs(bench) == first  # nothing ran again: the same records, wall times and all


@pytest.mark.parametrize("change", [{"temperature": 0.7}, {"seed": 3}, {"max_tokens": 64},
                                    {"system_prompt": "explicit_submission"}])
def test_a_changed_models_toml_entry_runs_again(bench: pytest.Pytester, change: dict) -> None:
    bench.makefile(".toml", models=scripted(temperature=0.0))
    bench.runpytest(*ARGS, "--model", "mine").assert_outcomes(passed=2)
    bench.makefile(".toml", models=scripted(**{"temperature": 0.0, **change}))
    result = bench.runpytest(*ARGS, "--model", "mine", "--agentfloor-resume")
    result.assert_outcomes(passed=2)
    assert "resumed" not in result.stdout.str()
    (key, value), = change.items()
    assert [r["config"][key] for r in runs(bench)] == [value, value]


def test_an_infrastructure_error_runs_again_and_a_graded_item_does_not(bench: pytest.Pytester) -> None:
    with FakeModelServer(lambda body: status(500, "the model runner crashed")) as server:
        bench.makefile(".toml", models=scripted() + f"""
[models.remote]
provider = "openai"
model = "tiny"
base_url = "{server.openai_url}"
retries = 0
timeout_s = 5
""")
        first = bench.runpytest(*ARGS, "--model", "mine,remote")
        first.assert_outcomes(passed=2, errors=2)
        before = runs(bench)
        assert [r["infra_error"] for r in before].count(True) == 2
        server.responder = follow_reference  # the endpoint is back
        n_before = len(server.requests)
        second = bench.runpytest(*ARGS, "--model", "mine,remote", "--agentfloor-resume")
        second.assert_outcomes(passed=2)  # only the two infrastructure errors ran again
        second.stdout.fnmatch_lines(["*resumed 2 item(s) from runs.jsonl*"])
        assert len(server.requests) - n_before == 2 * 3  # B1's reference: three model turns per item
    after = runs(bench)
    assert [r for r in after if r["model"] == "mine"] == [r for r in before if r["model"] == "mine"]
    assert sorted((r["variant"], r["passed"], r["infra_error"]) for r in after if r["model"] == "remote") == \
           [("v0", True, False), ("v1", True, False)]


def test_completed_records_skips_infrastructure_errors_and_keeps_the_last_graded(tmp_path: Path) -> None:
    base = {**{k: None for k in PROPERTY_FIELDS},
            "model": "m", "task": "B1", "variant": "v0", "instance": "i0", "run": 0, "case_hash": "h",
            "config": {"name": "m", "temperature": 0.0}, "trajectory": {}}
    lines = [{**base, "passed": False, "infra_error": False, "n": 1},
             {**base, "passed": True, "infra_error": False, "n": 2},
             {**base, "passed": False, "infra_error": True, "n": 3},  # later, but not a result
             {**base, "run": 1, "infra_error": True, "n": 4},
             {**base, "run": 2, "n": 5, "config": {"name": "m", "temperature": 0.5}},
             {k: v for k, v in base.items() if k != "trajectory"} | {"run": 3, "n": 6},
             {k: v for k, v in base.items() if k != "tier"} | {"run": 4, "n": 7}]  # reported, runs again
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    done, problems = completed_records(path)
    assert problems == [f"{path}: 1 record(s) lacking fields a resume needs were ignored (they run again)"]
    assert done[record_key(lines[1])]["n"] == 2
    assert record_key(lines[3]) not in done
    assert record_key({**lines[4], "config": base["config"]}) not in done  # another configuration
    assert done[record_key(lines[4])]["n"] == 5
    assert len(done) == 2


def test_every_part_of_the_key_tells_items_apart() -> None:
    parts = ["m", "B1", "v0", "i0", 0, "hash", "fp"]
    key = resume_key(*parts)
    for i, other in enumerate(["n", "B2", "v1", "i1", 1, "hash2", "fp2"]):
        changed = list(parts)
        changed[i] = other
        assert resume_key(*changed) != key
    assert config_fingerprint({"a": 1, "b": 2}) == config_fingerprint({"b": 2, "a": 1})
    assert config_fingerprint({"a": 1}) != config_fingerprint({"a": 2})
