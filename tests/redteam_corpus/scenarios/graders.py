"""Hostile output through the graders: call-site sites, recorded outputs (`import`), the judge's parser.

Right (issue 27, "every grader is total"): for any string a model can return, the item gets a
verdict with its reason (or an infrastructure error with its record) in bounded time, exactly one
record per item, no traceback; the accuracy never silently leaves an item out.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakeserver import FakeModelServer, reply

from ..harness import Checks, Project, Verdict, model_toml, one_record_per_item, sane, scenario

SITES = {
    "codegen": "codegen-blocking-01",
    "planner": "planner-chain-01",
    "actuator": "actuator-a_control-01",
    "intent": "intent-crud-01",
    "action_label": "action_label-camera-01",
}
BIG = 1024 * 1024


def _site_case(sid: str, site: str, title: str, output: str, point: str = "4") -> None:
    @scenario(sid, point, "grader", f"{site}: {title}",
              f"openai model answers call-site case {SITES[site]} with {title}",
              "a failed item (the model's) with its reason and one record, in bounded time; no traceback")
    def run() -> Verdict:
        p = Project(sid, (f"callsite/{site}.toml",))
        with FakeModelServer(lambda b: reply(content=output)) as srv:
            p.models(model_toml("m", srv.openai_url))
            r = p.pytest(f"cases/callsite/{site}.toml", "--model", "m", "--no-probe", "-k", SITES[site],
                         timeout=120)
        c = Checks()
        sane(c, r)
        recs = one_record_per_item(c, r)
        c.expect(len(recs) == 1 and r.outcomes.get("failed") == 1, f"one failed item ({r.outcomes})")
        c.expect(all(not x["infra_error"] and x.get("first_unmet") for x in recs), "a verdict with its reason")
        c.expect(r.elapsed < 90, f"bounded time ({r.elapsed:.0f}s)")
        if recs:
            c.note(f"{recs[0].get('first_unmet')}")
        return c.verdict()


_site_case("gr01", "codegen", '"1+" * 4000', "1+" * 4000 + "1")
_site_case("gr02", "codegen", "100,000 open parentheses", "(" * 100_000)
_site_case("gr03", "codegen", "a NUL byte in the source", "async def run(x):\x00\n    pass")
_site_case("gr04", "codegen", "a 5 MB string literal", "x = '" + "a" * (5 * BIG) + "'")
_site_case("gr05", "codegen", "lambda: nested 20,000 deep", "f = " + "lambda: " * 20_000 + "1")
_site_case("gr06", "codegen", "a 200-deep f-string", "x = " + "f'{" * 200 + "1" + "}'" * 200)
_site_case("gr21", "codegen", "an expression of 10**6 operands", "x = " + "+".join(["1"] * 1_000_000))
_site_case("gr22", "codegen", "a lone surrogate in the source", "async def run(x):\n    return '\ud800'")
_site_case("gr23", "codegen", "a ```python fence around 1,000,000 dots", "```python\n" + "a" + ".b" * 500_000 + "\n```")
_site_case("gr07", "planner", "a plan holding NaN", '[{"agent": "lights", "task": NaN}]')
_site_case("gr08", "planner", "JSON nested 100,000 deep", "[" * 100_000 + "]" * 100_000)
_site_case("gr09", "planner", "a 5,000-digit integer", '[{"agent": ' + "9" * 5000 + "}]")
_site_case("gr24", "planner", "1e999 in a plan", '[{"agent": "lights", "task": 1e999}]')
_site_case("gr10", "actuator", "brightness 1e999", '[{"domain": "light", "service": "turn_on", '
           '"service_data": {"entity_id": "light.kitchen", "brightness": 1e999}}]')
_site_case("gr11", "actuator", "a lone surrogate in an entity id", '[{"domain": "light", "service": "turn_on", '
           '"service_data": {"entity_id": "light.\\ud800"}}]')
_site_case("gr25", "actuator", "100,000 service calls", json.dumps([{"domain": "light", "service": "turn_on",
                                                                     "service_data": {"entity_id": f"light.l{i}"}}
                                                                    for i in range(100_000)]))
_site_case("gr26", "actuator", "a JSON array hidden in 1 MB of prose", "ok " * 300_000 + '[{"domain": "light"}]')
_site_case("gr12", "intent", "10 MB of text", "home_assistant " * (10 * BIG // 15))
_site_case("gr13", "intent", "ANSI escapes around the label", "\x1b[31mhome_assistant\x1b[0m\x1b]0;x\x07")
_site_case("gr15", "intent", "a lone surrogate", "\udcff")
_site_case("gr14", "action_label", "an empty reply", "")
_site_case("gr27", "action_label", "a bidi override in the label", "\u202ecamera\u202c")


@scenario("gr19", "4", "grader", "import: recorded outputs no grader can read",
          "python -m pytest_agentfloor import out.jsonl --cases cases/callsite/planner.toml -- -k planner-chain-0, "
          "with outputs nested 100,000 deep, 5,000 digits, a lone surrogate",
          "each item graded with a verdict and one record; no traceback")
def gr19() -> Verdict:
    p = Project("gr19", ("callsite/planner.toml",))
    outs = ["[" * 100_000 + "]" * 100_000, '[{"agent": ' + "9" * 5000 + "}]", "\ud800 no plan"]
    lines = [json.dumps({"case_id": f"planner-chain-0{i + 1}", "model": "rec", "output": o}) for i, o in enumerate(outs)]
    p.write("out.jsonl", "\n".join(lines) + "\n")
    r = p.cli("import", "out.jsonl", "--cases", "cases/callsite/planner.toml", "--", "-k", "planner-chain-0",
              "-p", "no:cacheprovider")
    c = Checks()
    sane(c, r)
    recs = [json.loads(x) for f in p.root.rglob("sessions/*/runs.jsonl") for x in f.read_text().splitlines() if x]
    graded = [x for x in recs if str(x.get("task")).startswith("planner-chain-0")]
    c.expect(len([x for x in graded if not x.get("infra_error")]) >= 3, f"three graded records ({len(graded)})")
    c.note(f"exit {r.ret}, {r.outcomes}")
    return c.verdict()


@scenario("gr28", "9", "grader", "import: a recorded-outputs line with case_id holding a newline",
          "python -m pytest_agentfloor import out.jsonl --cases cases/callsite/intent.toml; one line's case_id is "
          "'intent-crud-01\\n'",
          "a short error naming out.jsonl:1 and the field, before any item; or the line refused with a note")
def gr28() -> Verdict:
    p = Project("gr28", ("callsite/intent.toml",))
    p.write("out.jsonl", json.dumps({"case_id": "intent-crud-01\n", "model": "rec", "output": "home_assistant"}) + "\n")
    r = p.cli("import", "out.jsonl", "--cases", "cases/callsite/intent.toml", "--", "-p", "no:cacheprovider")
    c = Checks()
    c.expect("Traceback" not in r.text, "no traceback")
    c.expect("out.jsonl" in r.text, "names the file")
    c.note(f"exit {r.ret}: {(r.err.strip() or r.out.strip()).splitlines()[-1][:160] if r.text.strip() else ''}")
    return c.verdict()


# -- the judge -----------------------------------------------------------------------------------------------
GOOD_ANSWER = ("The east stairwell of the Larkspur building is closed for repainting Monday to Wednesday. Staff "
               "on floors 3 to 5 should use the west stairwell. Questions: facilities desk, extension 4410.")


def judge_run(sid: str, judge_reply: Any, *, cache: str | bytes | None = None, args: tuple[str, ...] = (),
              judged_text: str = GOOD_ANSWER, cache_is_dir: bool = False) -> tuple[Project, Any]:
    p = Project(sid, ("tier_A0/A02.toml",))
    with FakeModelServer(lambda b: reply(content=judged_text)) as model, \
            FakeModelServer(judge_reply if callable(judge_reply) else (lambda b: judge_reply)) as judge:
        p.models(model_toml("m", model.openai_url) + model_toml("judge", judge.openai_url))
        if cache is not None:
            p.write("reports/judge-cache.jsonl", cache)
        if cache_is_dir:
            (p.root / "reports" / "judge-cache.jsonl").mkdir(parents=True)
        r = p.pytest("cases", "--model", "m", "--variants", "v0", "--instances", "i0", "--no-probe",
                     "--agentfloor-judge", "judge", *args, timeout=180)
    return p, r


def _judge_case(sid: str, title: str, content: str, point: str = "4") -> None:
    @scenario(sid, point, "judge", f"the judge replies {title}",
              f"A02 v0 judged by an openai judge that replies {title}",
              "the judged item is an infrastructure error (the judge failed) with its record; never a model "
              "failure, no traceback, bounded output")
    def run() -> Verdict:
        p, r = judge_run(sid, reply(content=content))
        c = Checks()
        sane(c, r)
        recs = one_record_per_item(c, r)
        c.expect(r.outcomes.get("errors") == 1 and not r.outcomes.get("failed"), f"an error ({r.outcomes})")
        c.expect(all(x["infra_error"] and x["failure_mode"] is None for x in recs), "infra error, no failure mode")
        if recs:
            c.note(str(recs[0].get("error"))[:140])
        return c.verdict()


_judge_case("gr20", "JSON nested 100,000 deep", "{" + '"a":{' * 100_000 + "}" * 100_001)
_judge_case("gr29", "a 20 MB reason", json.dumps({"reason": "r" * (20 * BIG), "verdict": "pass"}))
_judge_case("gr30", "verdict NaN", '{"reason": "x", "verdict": NaN}')
_judge_case("gr31", "a reason with ANSI and a lone surrogate", json.dumps({"reason": "\x1b[2J\ud800", "verdict": "maybe"}))
_judge_case("gr32", "prose around the JSON", 'Sure! {"reason": "fine", "verdict": "pass"} Hope this helps.')


@scenario("gr33", "5", "judge", "the judge's valid reason holds a lone surrogate and ANSI escapes",
          "A02 v0 judged; the judge replies {'reason': 'bad \\ud800 \\x1b[31m', 'verdict': 'fail'}",
          "the item fails (the judge's verdict), one record, reports and viewer written, output escaped")
def gr33() -> Verdict:
    p, r = judge_run("gr33", reply(content=json.dumps({"reason": "bad \ud800 \x1b[31m", "verdict": "fail"})))
    c = Checks()
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(r.outcomes.get("failed") == 1, f"failed ({r.outcomes})")
    c.expect((p.root / "reports" / "viewer.html").exists() and (p.root / "reports" / "report.html").exists(),
             "reports written")
    return c.verdict()
