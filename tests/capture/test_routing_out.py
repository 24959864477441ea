"""--agentfloor-routing-out: routing.json and its LiteLLM YAML from a run of reviewed captured cases against
two models served over loopback (production and a candidate), checked against hand-worked figures; the
offline `report --routing-out`; xdist (only the controller writes); and the usage errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from scipy.stats import binomtest

from pytest_agentfloor.callsite.routing import FORMAT, VERSION, yaml_path
from pytest_agentfloor.capture.review import main as review_main
from pytest_agentfloor.stats.intervals import tango
from tests.capture.test_agent_loop import ROUTER_PROMPT, upstream
from tests.fakeserver import FakeModelServer, reply

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "captured"


def candidate(body: dict[str, Any]) -> Any:
    """Production's twin, except that its router sends every turn to the weather agent (wrong on the joke)."""
    if body["messages"][0]["content"] == ROUTER_PROMPT:
        return reply("weather")
    return upstream(body)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str]]:
    with FakeModelServer(upstream) as prod, FakeModelServer(candidate) as small:
        yield prod.url, small.url


@pytest.fixture(autouse=True)
def prod_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROD_KEY", "sk-prod-key-0123456789abcdef")


def project(pytester: pytest.Pytester, servers: tuple[str, str]) -> pytest.Pytester:
    out = pytester.path / "cases" / "captured"
    shutil.copytree(EXAMPLE, out)
    assert review_main([str(out), "--accept-all", "all"]) == 0
    prod, small = servers
    pytester.makefile(".toml", models=f"""
[models.prod]
provider = "openai"
model = "gpt-x"
base_url = "{prod}/v1"
api_key_env = "PROD_KEY"
hosted = true
pricing = {{ input_per_mtok = 2.5, output_per_mtok = 10.0 }}

[models.small]
provider = "openai"
model = "small-x"
base_url = "{small}/v1"
params_b = 0.5
pricing = {{ input_per_mtok = 0.1, output_per_mtok = 0.4 }}
hosted = false
""")
    return pytester


def run(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    return pytester.runpytest("cases/captured", "--model", "small,prod", "--agentfloor-reference", "prod",
                              "--no-probe", "-p", "no:randomly", "-p", "no:cacheprovider", *extra)


def parse_yaml(path: Path) -> Any:
    """The YAML as PyYAML (LiteLLM's reader) loads it: in this interpreter, else the system python's."""
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        system = shutil.which("python3")
        if system is None or Path(system).resolve() == Path(sys.executable).resolve():
            pytest.skip("PyYAML is not installed here (LiteLLM reads the file with it)")
        code = "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))"
        done = subprocess.run([system, "-c", code, str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            if "No module named 'yaml'" in done.stderr:
                pytest.skip("PyYAML is not installed here (LiteLLM reads the file with it)")
            raise AssertionError(done.stderr)
        return json.loads(done.stdout)
    return yaml.safe_load(path.read_text())


def test_routing_json_holds_each_site_choice_and_its_evidence(pytester: pytest.Pytester,
                                                               servers: tuple[str, str]) -> None:
    project(pytester, servers)
    result = run(pytester, "--agentfloor-routing-out", "deploy/routing.json")
    result.assert_outcomes(passed=19, failed=1)  # the candidate's router on the joke
    path = pytester.path / "deploy" / "routing.json"
    result.stdout.fnmatch_lines([f"agentfloor routing: {path}", f"agentfloor routing: {yaml_path(path)}"])
    doc = json.loads(path.read_text())
    assert (doc["format"], doc["version"], doc["reference"]) == (FORMAT, VERSION, "prod")
    assert doc["session"]["complete"] is True and doc["provisional_cases"] == 0
    assert doc["weights_from"] == "captured call mix"
    router, weather = doc["sites"]["router"], doc["sites"]["weather"]
    # router: the candidate 3 of 4, production 4 of 4: 25 points below, beyond the 10-point margin
    assert (router["model"], router["moved"], router["calls"]) == ("prod", False, 5)
    assert router["evidence"]["paired"] is None  # the reference needs no test against itself
    assert router["evidence"]["reference"]["accuracy"] == 1.0
    # weather: the candidate as good as production on all 6 cases, and cheaper per call: moved
    assert (weather["model"], weather["moved"], weather["calls"]) == ("small", True, 8)
    assert router["weight"] == round(5 / 13, 6) and weather["weight"] == round(8 / 13, 6)
    ev = weather["evidence"]
    assert ev["model"]["cases"] == ev["reference"]["cases"] == 6 and ev["model"]["accuracy"] == 1.0
    low, high = binomtest(6, 6).proportion_ci(confidence_level=0.95, method="wilson")
    assert ev["model"]["ci"] == [round(low, 6), round(high, 6)]
    paired = ev["paired"]
    assert (paired["pairs"], paired["only_model"], paired["only_reference"], paired["p_exact"]) == (6, 0, 0, 1.0)
    lo, hi = tango(0, 0, 6, 0.025)
    assert paired["difference_ci"] == [round(float(lo[0]), 6), round(float(hi[0]), 6)]
    # 6 concordant pairs cannot rule out a 10-point loss: said, not hidden behind "not worse"
    assert paired["worse"] is False and paired["noninferior"] is False and paired["difference_ci"][0] < -0.10
    # cost per call under the call mix: router on production, weather on the candidate
    costs = {s: doc["sites"][s]["evidence"]["model"]["cost_per_call_usd"] for s in ("router", "weather")}
    ref_costs = {s: doc["sites"][s]["evidence"]["reference"]["cost_per_call_usd"] for s in ("router", "weather")}
    assert ref_costs["router"] == pytest.approx((11 * 2.5 + 7 * 10.0) / 1e6)
    assert costs["weather"] == pytest.approx((11 * 0.1 + 7 * 0.4) / 1e6)
    route = 5 / 13 * costs["router"] + 8 / 13 * costs["weather"]
    assert doc["route"]["cost_per_call_usd"] == pytest.approx(route, rel=1e-6)
    assert doc["route"]["reference_cost_per_call_usd"] == pytest.approx(ref_costs["router"], rel=1e-6)
    assert doc["route"]["saving"] == pytest.approx(1 - route / ref_costs["router"], abs=1e-6)
    assert doc["route"]["accuracy"] == pytest.approx(1.0)
    assert doc["models"]["prod"] == {"provider": "openai", "model": "gpt-x", "base_url": f"{servers[0]}/v1",
                                     "api_key_env": "PROD_KEY", "hosted": True}
    assert b"sk-prod-key" not in path.read_bytes() + yaml_path(path).read_bytes()

    config = parse_yaml(yaml_path(path))
    assert config["model_list"] == [
        {"model_name": "router", "litellm_params": {"model": "openai/gpt-x", "api_base": f"{servers[0]}/v1",
                                                    "api_key": "os.environ/PROD_KEY"},
         "model_info": {"agentfloor_model": "prod"}},
        {"model_name": "weather", "litellm_params": {"model": "openai/small-x", "api_base": f"{servers[1]}/v1"},
         "model_info": {"agentfloor_model": "small"}}]

    # the same decision offline, from the session's records
    runs = pytester.path / "reports" / "runs.jsonl"
    from pytest_agentfloor.report.cli import main as report_main

    assert report_main([str(runs), "--reference", "prod", "--routing-out", str(pytester.path / "again.json"),
                        "--out", str(pytester.path / "offline")]) == 0
    again = json.loads((pytester.path / "again.json").read_text())
    assert {k: v for k, v in again.items() if k != "session"} == {k: v for k, v in doc.items() if k != "session"}
    assert again["session"]["session_id"] == doc["session"]["session_id"]


def test_under_xdist_the_controller_writes_it_from_every_worker_s_records(pytester: pytest.Pytester,
                                                                        servers: tuple[str, str]) -> None:
    pytest.importorskip("xdist")
    project(pytester, servers)
    result = run(pytester, "--agentfloor-routing-out", "routing.json", "-n", "2")
    result.assert_outcomes(passed=19, failed=1)
    doc = json.loads((pytester.path / "routing.json").read_text())
    cases = {s: e["evidence"]["reference"]["cases"] for s, e in doc["sites"].items()}
    assert cases == {"router": 4, "weather": 6}  # all 10 cases, whichever worker ran them
    assert [s for s, e in doc["sites"].items() if e["moved"]] == ["weather"]


def test_nothing_reviewed_writes_no_routing_and_says_why(pytester: pytest.Pytester, servers: tuple[str, str]) -> None:
    project(pytester, servers)
    assert review_main([str(pytester.path / "cases" / "captured"), "--import", str(sheet(pytester))]) == 0
    result = run(pytester, "--agentfloor-routing-out", "routing.json")
    result.stdout.fnmatch_lines(["agentfloor routing: * not written: no reviewed call-site case was scored "
                                 "(10 captured case(s) are provisional*"])
    assert not (pytester.path / "routing.json").exists()


def sheet(pytester: pytest.Pytester) -> Path:
    """A review sheet putting every case back to provisional."""
    out = pytester.path / "cases" / "captured"
    path = pytester.path / "sheet.csv"
    assert review_main([str(out), "--export", str(path)]) == 0
    lines = path.read_text().splitlines()
    head = lines[0].split(",")
    col = head.index("decision")
    import csv
    import io

    rows = list(csv.reader(io.StringIO(path.read_text())))
    for row in rows[1:]:
        row[col] = "provisional"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue())
    return path


@pytest.mark.parametrize("args, message", [
    (("--agentfloor-routing-out", "routing.json"), "--agentfloor-routing-out routing.json: needs --agentfloor-reference"),
    (("--agentfloor-reference", "prod", "--agentfloor-routing-out", "cases"), "is a directory; give a file name"),
])
def test_usage_errors_name_the_option(pytester: pytest.Pytester, servers: tuple[str, str], args: tuple[str, ...],
                                      message: str) -> None:
    project(pytester, servers)
    result = pytester.runpytest("cases/captured", "--model", "small,prod", "--no-probe", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_the_ini_key_sets_it(pytester: pytest.Pytester, servers: tuple[str, str]) -> None:
    project(pytester, servers)
    pytester.makeini("[pytest]\nagentfloor_routing_out = out/routing.json\nagentfloor_reference = prod\n")
    result = pytester.runpytest("cases/captured", "--model", "small,prod", "--no-probe", "-p", "no:randomly")
    result.assert_outcomes(passed=19, failed=1)
    assert json.loads((pytester.path / "out" / "routing.json").read_text())["sites"]["weather"]["model"] == "small"


def test_the_yaml_deploys_each_provider_by_its_endpoint(tmp_path: Path) -> None:
    from pytest_agentfloor.callsite.routing import litellm_yaml

    def site(model: str | None, moved: bool = True) -> dict[str, Any]:
        return {"model": model, "moved": moved, "weight": 0.25, "note": "no records",
                "evidence": {"model": {"accuracy": 0.9, "cases": 10}}}

    doc = {"session": {"session_id": "s1"}, "sites": {"a": site("local"), "b": site("qwen"), "c": site("oracle"),
                                                      "d": site(None), "e": site("pool", moved=False)}}
    meta = {"local": {"provider": "local", "model": ""},
            "qwen": {"provider": "ollama", "model": "qwen3:8b", "base_url": "http://10.0.0.2:11434"},
            "oracle": {"provider": "scripted"},
            "pool": {"provider": "openai", "model": "m", "base_url": ["http://h1/v1", "http://h2/v1"],
                     "api_key_env": "POOL_KEY"}}
    path = tmp_path / "r.litellm.yaml"
    path.write_text(litellm_yaml(doc, meta, "r.json"))
    config = parse_yaml(path)
    params = [(e["model_name"], e["litellm_params"]) for e in config["model_list"]]
    assert params == [
        ("a", {"model": "openai/qwen2.5-coder-0.5b-instruct-q4_k_m", "api_base": "os.environ/AGENTFLOOR_LOCAL_URL"}),
        ("b", {"model": "ollama_chat/qwen3:8b", "api_base": "http://10.0.0.2:11434"}),
        # an endpoint pool: one deployment per replica under the site's name, which LiteLLM balances
        ("e", {"model": "openai/m", "api_base": "http://h1/v1", "api_key": "os.environ/POOL_KEY"}),
        ("e", {"model": "openai/m", "api_base": "http://h2/v1", "api_key": "os.environ/POOL_KEY"})]
    text = path.read_text()
    assert "# c: oracle is a scripted model: no endpoint to deploy" in text and "# d: no model chosen" in text
