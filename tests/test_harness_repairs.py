"""The repair switches: prompt placement, the connector-first router, the option, and that a repair
reaches records, resume keys, cassette keys and report headers (pytester, scripted policies)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.corpus import config_fingerprint, request_key
from pytest_agentfloor.episode import SYSTEM_PROMPTS
from pytest_agentfloor.harness_repairs import (
    INTERFACE_GUIDE, WORKFLOW_SENTENCE, check_repairs, repaired_prompt, route_menu, sentences,
)

REPO = Path(__file__).resolve().parents[1]


def test_workflow_prompt_replaces_the_second_sentence_and_the_guide_follows_it() -> None:
    base = SYSTEM_PROMPTS["default"]
    s = sentences(base)
    assert len(s) == 4
    w = sentences(repaired_prompt(base, ("workflow_prompt",)))
    assert w == [s[0], WORKFLOW_SENTENCE, s[2], s[3]]
    g = repaired_prompt(base, ("interface_guide",))
    assert g == " ".join([s[0], s[1], INTERFACE_GUIDE, s[2], s[3]])
    both = repaired_prompt(base, ("interface_guide", "workflow_prompt"))
    assert both == " ".join([s[0], WORKFLOW_SENTENCE, INTERFACE_GUIDE, s[2], s[3]])
    assert repaired_prompt(base, ("router",)) == base and repaired_prompt(base, ()) == base
    with pytest.raises(ValueError, match="second sentence"):
        repaired_prompt("One sentence only.", ("workflow_prompt",))


def tool(name: str, route: str | None = None) -> dict:
    desc = f"Search the {name} records." + (f" Route: {route}." if route else "")
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {}}}


MENU = [tool("a", "workspace finance, region eu, collection invoices"),
        tool("b", "workspace finance, region us, collection invoices"),
        tool("c", "workspace hr, region eu, collection staff"), tool("submit")]


def test_router_narrows_to_the_unique_named_route_and_keeps_route_free_tools() -> None:
    menu, how = route_menu("Check the invoices of the finance workspace in the EU region.", MENU)
    assert how == "narrowed" and menu is not None and [t["function"]["name"] for t in menu] == ["a", "submit"]


@pytest.mark.parametrize(("text", "how"), [
    ("Check the invoices.", "absent"),                                  # no route named
    ("Check finance invoices in eu and in us.", "ambiguous"),          # two routes named
    ("Check the eu region's invoices for the finance-team.", "absent"),  # whole words only
])
def test_router_leaves_the_menu_unchanged_without_a_unique_route(text: str, how: str) -> None:
    assert route_menu(text, MENU) == (None, how)


def test_router_reads_public_descriptions_only() -> None:
    """The same user text and menu give the same menu whatever the case's gold: route_menu takes no case."""
    import inspect

    assert list(inspect.signature(route_menu).parameters) == ["user_text", "tools"]
    one_route = [tool("a", "workspace w, region r, collection c"), tool("submit")]
    assert route_menu("w r c", one_route) == (None, "no-change")


def test_repair_names_are_checked_and_sorted() -> None:
    assert check_repairs(["router", "workflow_prompt", "router"]) == ("router", "workflow_prompt")
    with pytest.raises(ValueError, match="unknown repair.*valid: workflow_prompt"):
        check_repairs(["retry"])
    assert ModelConfig(name="m", provider="scripted", policy="oracle", repairs=["router", "interface_guide"]).repairs \
        == ("interface_guide", "router")


def test_a_repair_changes_the_resume_and_cassette_keys_and_none_keeps_the_old_ones() -> None:
    plain = ModelConfig(name="m", provider="scripted", policy="oracle")
    fixed = ModelConfig(name="m", provider="scripted", policy="oracle", repairs=())
    repaired = plain.model_copy(update={"repairs": ("router",)})
    assert "repairs" not in plain.public() and fixed.public() == plain.public()
    assert repaired.public()["repairs"] == ["router"]
    assert config_fingerprint(plain.public()) != config_fingerprint(repaired.public())
    msgs = [{"role": "user", "content": "x"}]
    assert request_key(plain, msgs, []) != request_key(repaired, msgs, [])
    assert request_key(plain, msgs, []) == request_key(fixed, msgs, [])


MODELS = """
[models.wshy]
provider = "scripted"
policy = "workflow_shy"
[models.gshy]
provider = "scripted"
policy = "guide_shy"
"""


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "pressure", pytester.path / "cases" / "pressure")
    pytester.makefile(".toml", models=MODELS)
    return pytester


def runs(pytester: pytest.Pytester) -> list[dict]:
    return [json.loads(x) for x in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]


def test_workflow_prompt_rescues_the_policy_that_skips_dependent_reads(bench: pytest.Pytester) -> None:
    sel = ["cases/pressure/accounting.toml", "--agentfloor-protocol", "tbb", "-m", "V8 and raw and fixed", "-p",
           "no:randomly", "--model", "wshy"]
    bench.runpytest(*sel)
    before = {(r["task"], r["variant"]): r["passed"] for r in runs(bench)}
    # low workflow: 3 calls, unaffected; medium (4 calls) and high (5) lose their dependent reads
    assert {v for (t, v), ok in before.items() if not ok} == {"V8-high-raw", "V8-medium-raw"}
    result = bench.runpytest(*sel, "--agentfloor-repair", "workflow_prompt", "--agentfloor-resume")
    recs = [r for r in runs(bench) if r["config"].get("repairs")]
    assert len(recs) == len(before)  # a repair is another configuration: --resume runs it again
    assert "resumed" not in result.stdout.str()
    assert all(r["passed"] for r in recs)
    assert all(r["config"]["repairs"] == ["workflow_prompt"] and r["trajectory"]["repairs"] == ["workflow_prompt"]
               for r in recs)
    system = recs[0]["trajectory"]["messages"][0]["content"]
    assert WORKFLOW_SENTENCE in system
    result.stdout.fnmatch_lines(["*deviation from the protocol: repair workflow_prompt (wshy)*"])
    md = (bench.path / "reports" / "report.md").read_text()
    assert "Deviation from the protocol: repair workflow_prompt (wshy)" in md.split("\n## ")[0]
    summary = json.loads((bench.path / "reports" / "summary.json").read_text())
    assert summary["deviations"] == ["repair workflow_prompt (wshy)"]
    assert "Deviation from the protocol" in (bench.path / "reports" / "report.html").read_text()


def test_interface_guide_rescues_the_policy_that_cannot_read_typed_records(bench: pytest.Pytester) -> None:
    sel = ["cases/pressure/email.toml", "--agentfloor-protocol", "tbb", "-m", "V8 and Wlow and fixed", "-p",
           "no:randomly", "--model", "gshy"]
    bench.runpytest(*sel)
    first = runs(bench)
    assert {r["variant"] for r in first if not r["passed"]} == {"V8-low-compact", "V8-low-typed"}
    bench.runpytest(*sel, "--agentfloor-repair", "interface_guide")
    again = [r for r in runs(bench) if r["config"].get("repairs") == ["interface_guide"]]
    assert len(again) == len(first) and all(r["passed"] for r in again)


def test_bad_repair_names_are_usage_errors(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/pressure", "--model", "wshy", "--agentfloor-repair", "retry", "--co")
    result.stderr.fnmatch_lines(["*--agentfloor-repair: unknown repair(s) retry; valid: workflow_prompt*"])
    bench.makeini("[pytest]\nagentfloor_repairs = router bogus\n")
    result = bench.runpytest("cases/pressure", "--model", "wshy", "--co")
    result.stderr.fnmatch_lines(["*agentfloor_repairs*unknown repair(s) bogus*"])


def test_arms_parse_to_canonical_labels_and_refuse_what_is_not_an_arm() -> None:
    from pytest_agentfloor.harness_repairs import arm_label, parse_arm

    assert parse_arm("none") == ((), None)
    assert parse_arm("router + controller+cap16") == (("controller", "router"), 16)
    assert arm_label(*parse_arm("cap4+router")) == "router+cap4" and arm_label((), None) == "none"
    for bad, why in [("cap1", "at most one capN"), ("cap16+cap4", "at most one capN"), ("router+none", "stands alone"),
                     ("retry", "unknown repair"), ("", "stands alone")]:
        with pytest.raises(ValueError, match=why):
            parse_arm(bad)


def test_a_raised_cap_changes_the_resume_and_cassette_keys() -> None:
    plain = ModelConfig(name="m", provider="scripted", policy="oracle")
    high = plain.model_copy(update={"cap_scale": 16, "max_tokens": 16 * 1024})
    assert "cap_scale" not in plain.public() and high.public()["cap_scale"] == 16
    assert config_fingerprint(plain.public()) != config_fingerprint(high.public())
    msgs = [{"role": "user", "content": "x"}]
    assert request_key(plain, msgs, []) != request_key(high, msgs, [])
    with pytest.raises(ValueError, match="cap_scale"):
        ModelConfig(name="m", provider="scripted", policy="oracle", cap_scale=1)


def test_arms_name_their_configurations_and_scale_the_frozen_cap(bench: pytest.Pytester) -> None:
    bench.makefile(".toml", models=MODELS + '[models.big]\nprovider = "scripted"\npolicy = "oracle"\ncap_scale = 4\n')
    result = bench.runpytest("cases/pressure/accounting.toml", "--model", "wshy,big", "--agentfloor-protocol", "tbb",
                             "--agentfloor-arms", "none,router+cap16", "-m", "overdue-invoice and V8 and Wlow and "
                             "raw and fixed", "--agentfloor-arms", "cap16+router", "-p", "no:randomly")
    assert result.ret == 4  # big already has cap_scale: the arm cannot scale it again
    result.stderr.fnmatch_lines(["*--agentfloor-arms: arm 'router+cap16': models.big already has cap_scale = 4*"])
    result = bench.runpytest("cases/pressure/accounting.toml", "--model", "wshy", "--agentfloor-protocol", "tbb",
                             "--agentfloor-arms", "none,router+cap16,cap16+router", "-m",
                             "overdue-invoice and V8 and Wlow and raw and fixed", "-p", "no:randomly")
    result.assert_outcomes(passed=2)  # the two spellings of one arm are one arm
    recs = {r["model"]: r for r in runs(bench)}
    assert recs["wshy"]["config"]["max_tokens"] == 1024 and "cap_scale" not in recs["wshy"]["config"]
    arm = recs["wshy+router+cap16"]
    assert (arm["config"]["max_tokens"], arm["config"]["cap_scale"], arm["config"]["repairs"]) == (16384, 16, ["router"])
    assert arm["facets"]["repairs"] == ["router"] and arm["facets"]["cap_scale"] == 16
    result.stdout.fnmatch_lines(["*deviation from the protocol: completion cap x16 = 16,384 tokens (wshy+router+cap16)*"])
    result = bench.runpytest("cases/pressure/accounting.toml", "--model", "big", "--agentfloor-protocol", "tbb",
                             "-m", "overdue-invoice and V8 and Wlow and raw and fixed", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert runs(bench)[-1]["config"]["max_tokens"] == 4096  # models.toml's cap_scale: the protocol's cap x4
    for bad in ("cap99", "none+router"):
        result = bench.runpytest("cases/pressure", "--model", "wshy", "--agentfloor-arms", bad, "--co")
        result.stderr.fnmatch_lines([f"*--agentfloor-arms: arm '{bad}'*"])
