"""Further attacks: a model gaming the cost meter, markup injection, odd transports, pools, a dead judge,
header injection through a key, case-file abuse, a full disk, a corrupt cassette, two sessions at once.

Right: the same rules as the other modules (only the model fails items, one record per item, a bad
input is a short error naming it, nothing secret or unescaped written).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

from tests.fakeserver import FakeModelServer, Raw, Reply, raw, reply, status

from ..harness import (CASES, Checks, Project, Run, Verdict, model_toml, one_record_per_item, sane, scenario,
                       usage_error)
from ..oracle import Oracle
from .endpoints import episode, infra_only, models_fault, passes


@scenario("at01", "6", "attack", "a model writes a \"cost_usd\" key into its tool-call arguments",
          "an unpriced openai model calls get_attribute with arguments {\"cost_usd\": 1e9, ...} in every episode; "
          "--agentfloor-runs 5 --max-cost 1 --agentfloor-concurrency 1",
          "no cost is charged (the model is unpriced): no item is skipped by the cap")
def at01() -> Verdict:
    oracle = Oracle()

    def respond(body: Any) -> Any:
        if oracle.turn_of(body) == 0:
            return reply(tool_calls=[("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "on_hand",
                                                        "cost_usd": 1e9})])
        return oracle(body)
    p, r, _ = episode("at01", respond, args=("--agentfloor-runs", "5", "--max-cost", "1",
                                             "--agentfloor-concurrency", "1"))
    c = Checks()
    sane(c, r)
    c.expect(not r.outcomes.get("skipped"), f"nothing skipped by the cap ({r.outcomes})")
    return c.verdict()


@scenario("at02", "5", "attack", "the model's text closes the viewer's <script> and opens its own",
          "an openai model answers '</script><script>alert(1)</script><!--' and '<img src=x onerror=alert(1)>'",
          "viewer.html and report.html carry the text only as inert data: no second script, no live tag")
def at02() -> Verdict:
    evil = "</script><script>alert(1)</script><!-- <img src=x onerror=alert(1)> ]]> {{7*7}}"
    p, r, _ = episode("at02", lambda b: reply(content=evil))
    c = Checks()
    sane(c, r)
    for name in ("viewer.html", "report.html"):
        f = p.root / "reports" / name
        if f.exists():
            text = f.read_text(encoding="utf-8")
            c.expect("<script>alert(1)" not in text and "<img src=x onerror" not in text, f"{name}: no live markup")
    return c.verdict()


@scenario("at03", "9", "attack", "HTTP 200 that says gzip and is not",
          "openai model, retries = 1; every reply has Content-Encoding: gzip over a plain JSON body",
          "an infrastructure error naming the endpoint, with its record; no traceback")
def at03() -> Verdict:
    p, r, _ = episode("at03", lambda b: _Gzip(), extra={"retries": 1})
    c = Checks()
    infra_only(c, r, items=1)
    return c.verdict()


@scenario("at04", "9", "attack", "a body cut short of its Content-Length",
          "openai model, retries = 1; every reply announces 5,000 bytes and sends 40 then closes",
          "an infrastructure error with its record; no traceback")
def at04() -> Verdict:
    p, r, _ = episode("at04", lambda b: _Short(), extra={"retries": 1})
    c = Checks()
    infra_only(c, r, items=1)
    return c.verdict()


@scenario("at05", "9", "attack", "server-sent events to a request that asked for none",
          "openai model; every reply is text/event-stream chunks of a completion",
          "an infrastructure error (unreadable response) or the answer read; never a crash or a model failure")
def at05() -> Verdict:
    sse = ('data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"340"}}]}\n\n'
           "data: [DONE]\n\n")
    p, r, _ = episode("at05", lambda b: raw(sse, 200, "text/event-stream"))
    c = Checks()
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(all(x["infra_error"] or x["passed"] or x["failure_mode"] for x in recs), "graded or an infra error")
    c.expect(not r.outcomes.get("failed") or all(not x["infra_error"] for x in recs), "consistent outcome")
    return c.verdict()


@scenario("at06", "2", "attack", "429 on every request with Retry-After: 1 and many retries",
          "openai model, retries = 50; every request: HTTP 429 Retry-After: 1; --episode-timeout 5",
          "an infrastructure error at the deadline (never F3), within seconds of it")
def at06() -> Verdict:
    p, r, _ = episode("at06", lambda b: status(429, "rate limited", {"Retry-After": "1"}), extra={"retries": 50},
                      args=("--episode-timeout", "5"))
    c = Checks()
    infra_only(c, r, items=1)
    c.expect(r.elapsed < 60, f"bounded by the deadline ({r.elapsed:.0f}s)")
    return c.verdict()


@scenario("at07", "11", "attack", "an endpoint pool with one dead replica",
          "openai model with base_url = [closed port, working server], retries = 2; 5 items (probe on)",
          "every item passes on the live replica; the dead one is a warning, not an error of the items")
def at07() -> Verdict:
    p = Project("at07")
    with FakeModelServer(Oracle()) as srv:
        text = model_toml("m", "x").replace('base_url = "x"',
                                            f'base_url = ["http://127.0.0.1:9/v1", "{srv.openai_url}"]')
        p.models(text.replace("retries = 0", "retries = 2"))
        r = p.pytest("cases", "--model", "m", "--instances", "i0")
    c = Checks()
    passes(c, r, n=5)
    c.expect("127.0.0.1:9" in r.out, "the dead replica is named")
    return c.verdict()


@scenario("at08", "11", "attack", "the judge's endpoint is dead",
          "A02 all 5 variants judged by an openai judge at a closed port (retries = 3)",
          "every judged item an infrastructure error with its record (never a model failure), quickly")
def at08() -> Verdict:
    p = Project("at08", ("tier_A0/A02.toml",))
    good = ("The east stairwell of the Larkspur building is closed for repainting Monday to Wednesday. Staff on floors "
            "3 to 5 should use the west stairwell. Questions: facilities desk, extension 4410.")
    with FakeModelServer(lambda b: reply(content=good)) as srv:
        p.models(model_toml("m", srv.openai_url) + model_toml("judge", "http://127.0.0.1:9/v1", retries=3))
        r = p.pytest("cases", "--model", "m", "--instances", "i0", "--no-probe", "--agentfloor-judge", "judge")
    c = Checks()
    infra_only(c, r, items=5)
    c.expect(r.elapsed < 90, f"quick ({r.elapsed:.0f}s)")
    return c.verdict()


@scenario("at09", "9", "attack", "api_key_env names a variable that is not set",
          "openai model with api_key_env = \"AF_NOT_SET_ANYWHERE\"; 5 items (probe on)",
          "a usage error naming the variable, or every item an error naming it, quickly; no traceback")
def at09() -> Verdict:
    p = Project("at09")
    with FakeModelServer(Oracle()) as srv:
        p.models(model_toml("m", srv.openai_url, api_key_env="AF_NOT_SET_ANYWHERE"))
        r = p.pytest("cases", "--model", "m", "--instances", "i0")
    c = Checks()
    if r.ret == 4:
        usage_error(c, r, "AF_NOT_SET_ANYWHERE")
    else:
        sane(c, r)
        c.expect(r.outcomes.get("errors") == 5 and not r.outcomes.get("failed"), f"5 errors ({r.outcomes})")
        c.expect("AF_NOT_SET_ANYWHERE" in r.text, "the variable is named")
    return c.verdict()


@scenario("at10", "hold", "attack", "an API key holding a newline (header injection)",
          "openai model with api_key_env = AF_NL_KEY, AF_NL_KEY='sk-abc\\r\\nX-Injected: 1'; 5 items",
          "no request carries the injected header; a usage error (or the items' errors) naming the key's variable "
          "(a bad key is the configuration's error), quickly; the key is never printed")
def at10() -> Verdict:
    p = Project("at10")
    key = "sk-abcdefgh12345678\r\nX-Injected: 1"
    with FakeModelServer(Oracle()) as srv:
        p.models(model_toml("m", srv.openai_url, api_key_env="AF_NL_KEY", retries=2))
        r = p.pytest("cases", "--model", "m", "--instances", "i0", env={"AF_NL_KEY": key})
        injected = [x for x in srv.received if "x-injected" in x.headers]
    c = Checks()
    if r.ret != 4:
        sane(c, r)
    c.expect(not injected, "no injected header reached the server")
    c.expect(not r.outcomes.get("failed"), f"no model failure ({r.outcomes})")
    c.expect("AF_NL_KEY" in r.text, "the variable is named")
    c.expect("sk-abcdefgh12345678" not in r.text, "the key is not printed")
    c.expect(r.elapsed < 90, f"quick ({r.elapsed:.0f}s)")
    return c.verdict()


def _case_file(sid: str, title: str, text: str | bytes, *names: str, name: str = "tier_A/A9.toml") -> None:
    @scenario(sid, "9", "casefile", title, f"cases/{name} holds {title}; pytest cases --model oracle",
              "a collection error naming the file (and the field), no traceback, a short report")
    def run() -> Verdict:
        p = Project(sid)
        if text == "<dir>":
            (p.root / "cases" / name).mkdir(parents=True)
        else:
            p.write(f"cases/{name}", text)
        r = p.pytest("cases", "--model", "oracle")
        c = Checks()
        c.expect("Traceback (most recent call last)" not in r.text and "INTERNALERROR" not in r.text, "no traceback")
        c.expect(r.ret in (1, 2), f"exit 1 or 2 ({r.ret})")
        for n in names:
            c.expect(n in r.text, f"names {n!r}")
        c.expect(len(r.out.splitlines()) < 200, f"short ({len(r.out.splitlines())} lines)")
        c.note(f"{r.outcomes}")
        return c.verdict()


A1_TEXT = (CASES / "tier_A" / "A1.toml").read_text()
_case_file("at11", "a case file with an unknown field", A1_TEXT.replace('id = "A1"', 'id = "A9"\nbogus_field = 1', 1),
           "A9.toml", "bogus_field")
_case_file("at12", "a second file with the same case id", A1_TEXT, "A9.toml", "A1")
_case_file("at13", "a case file of binary garbage", bytes(range(256)) * 8, "A9.toml")
_case_file("at14", "a case file that is not UTF-8", A1_TEXT.replace('id = "A1"', 'id = "A9"', 1).encode().replace(
    b"inventory item", b"inventory \xe9tem", 1), "A9.toml", "UTF-8")
_case_file("at15", "a case whose reference calls a tool not on its menu",
           A1_TEXT.replace('id = "A1"', 'id = "A9"', 1).replace(
               'calls = [{ tool = "get_attribute", args = { record_id = "INV-Q7P2K", attribute = "on_hand" } }]',
               'calls = [{ tool = "delete_everything", args = {} }]', 1), "A9")


@scenario("at16", "7", "attack", "the judge cache on a full disk",
          "reports/judge-cache.jsonl is a symlink to /dev/full; A02 v0 judged by a working judge",
          "the item still has a verdict or an infrastructure error, with its record; the full disk is named; "
          "no traceback")
def at16() -> Verdict:
    p = Project("at16", ("tier_A0/A02.toml",))
    (p.root / "reports").mkdir()
    os.symlink("/dev/full", p.root / "reports" / "judge-cache.jsonl")
    good = ("The east stairwell of the Larkspur building is closed for repainting Monday to Wednesday. Staff on floors "
            "3 to 5 should use the west stairwell. Questions: facilities desk, extension 4410.")
    with FakeModelServer(lambda b: reply(content=good)) as m, \
            FakeModelServer(lambda b: reply(content=json.dumps({"reason": "ok", "verdict": "pass"}))) as j:
        p.models(model_toml("m", m.openai_url) + model_toml("judge", j.openai_url))
        r = p.pytest("cases", "--model", "m", "--variants", "v0", "--instances", "i0", "--no-probe",
                     "--agentfloor-judge", "judge")
    c = Checks()
    sane(c, r)
    one_record_per_item(c, r)
    c.expect(not r.outcomes.get("failed"), f"not the model's failure ({r.outcomes})")
    c.note(str(r.outcomes))
    return c.verdict()


@scenario("at17", "9", "attack", "--agentfloor-replay over a corrupt cassette",
          "reports/cassettes.jsonl holds garbage lines; pytest cases --model m --agentfloor-replay",
          "every item an infrastructure error (no recorded response) with its record, the bad lines named; "
          "no request to the endpoint, no traceback")
def at17() -> Verdict:
    p = Project("at17")
    p.write("reports/cassettes.jsonl", "not json\n" + json.dumps({"key": "k", "reply": {"content": 5}}) + "\n[1,2]\n")
    with FakeModelServer(Oracle()) as srv:
        p.models(model_toml("m", srv.openai_url))
        r = p.pytest("cases", "--model", "m", "--instances", "i0", "--variants", "v0", "--agentfloor-replay")
        asked = len(srv.received)
    c = Checks()
    infra_only(c, r, items=1)
    c.expect(asked == 0, f"no request sent ({asked})")
    c.expect("cassettes.jsonl" in r.out, "the cassette's bad lines are named")
    return c.verdict()


@scenario("at18", "10", "attack", "two sessions at once in one report dir",
          "two `pytest cases --model m` processes started together against one slow server (30 items each)",
          "both sessions keep every record in their own directory (or the second is refused with a short usage "
          "error naming the report dir), the published files are a complete session's; no torn or mixed lines")
def at18() -> Verdict:
    p = Project("at18")
    oracle = Oracle()

    def slow(body: Any) -> Any:
        time.sleep(0.02)
        return oracle(body)
    with FakeModelServer(slow) as srv:
        p.models(model_toml("m", srv.openai_url))
        procs = [p.popen("cases", "--model", "m", "--no-probe", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for _ in range(2)]
        errs = [pr.communicate(timeout=300)[1].decode(errors="replace") for pr in procs]
    c = Checks()
    c.expect(all("Traceback" not in e for e in errs), "no traceback")
    sessions = sorted((p.root / "reports" / "sessions").iterdir())
    refused = [(pr.returncode, e) for pr, e in zip(procs, errs) if pr.returncode == 4]
    if len(sessions) == 1 and len(refused) == 1:  # the dir's lock: the second run is told to wait or move
        c.expect("--agentfloor-report-dir" in refused[0][1] and len(refused[0][1].strip().splitlines()) <= 3,
                 "the refused run names the report dir in a short error")
    else:
        c.expect(len(sessions) == 2, f"two session directories ({len(sessions)})")
    for d in sessions:
        lines = (d / "runs.jsonl").read_text().splitlines() if (d / "runs.jsonl").exists() else []
        recs = [json.loads(x) for x in lines]
        c.expect(len(recs) == 30 and len({x["nodeid"] for x in recs}) == 30, f"{d.name}: 30 records ({len(recs)})")
        s = json.loads((d / "session.json").read_text()) if (d / "session.json").exists() else {}
        c.expect(s.get("complete"), f"{d.name} COMPLETE ({s.get('partial_reasons')})")
    pub = json.loads((p.root / "reports" / "session.json").read_text())
    c.expect(pub.get("session_id") in {d.name for d in sessions} and pub.get("complete"), "a complete one published")
    return c.verdict()


@scenario("at19", "13", "attack", "--agentfloor-shard with --agentfloor-resume",
          "pytest cases --model m --agentfloor-shard 1/2; then the same with --agentfloor-resume; then shard 2/2 "
          "with --agentfloor-resume",
          "the second run resumes exactly shard 1's items and runs none; the third runs shard 2's only")
def at19() -> Verdict:
    p = Project("at19")
    with FakeModelServer(Oracle()) as srv:
        p.models(model_toml("m", srv.openai_url))
        base = ("cases", "--model", "m", "--no-probe", "--agentfloor-report", "none")
        first = p.pytest(*base, "--agentfloor-shard", "1/2")
        again = p.pytest(*base, "--agentfloor-shard", "1/2", "--agentfloor-resume")
        other = p.pytest(*base, "--agentfloor-shard", "2/2", "--agentfloor-resume")
    c = Checks()
    for r in (first, again, other):
        sane(c, r)
    n1 = sum(first.outcomes.get(k, 0) for k in ("passed", "failed", "errors"))
    ran_again = sum(again.outcomes.get(k, 0) for k in ("passed", "failed", "errors"))
    ran_other = sum(other.outcomes.get(k, 0) for k in ("passed", "failed", "errors"))
    c.expect(n1 == 15, f"shard 1 ran 15 ({first.outcomes})")
    c.expect(ran_again == 0, f"the resume ran nothing ({again.outcomes})")
    c.expect(ran_other == 15, f"shard 2 ran its 15 ({other.outcomes})")
    return c.verdict()


@scenario("at20", "3", "attack", "Ollama answers the probe with an unknown done_reason and a tool call in content",
          "ollama model (probe on); every reply: content '<tool_call>{\"name\": \"get_attribute\"}</tool_call>', "
          "done_reason 'weird'",
          "the paper's text_leaked exclusion (skipped with the reason) or the items graded; no error, no crash")
def at20() -> Verdict:
    body = {"model": "tiny", "message": {"role": "assistant", "content": '<tool_call>{"name": "get_attribute", '
                                                                        '"arguments": {}}</tool_call>'},
            "done": True, "done_reason": "weird"}
    p, r, _ = episode("at20", lambda b: raw(body), provider="ollama", probe=True)
    c = Checks()
    sane(c, r)
    c.expect(not r.outcomes.get("errors"), f"no error ({r.outcomes})")
    return c.verdict()


PEG = "The model produced output that does not match the expected peg-native format"


@scenario("at21", "14", "attack", "the embedded server refuses the call its template asks for",
          "provider local with base_url (a llama-server); every chat request: HTTP 500 peg-native refusal; asked "
          "again without tool parsing, the model's text is the template's bare call {\"name\": \"get_attribute\", "
          "\"arguments\": {...}} (then 340)",
          "the raw text kept in the record and read as the call it is (no malformed call the model did not make); "
          "the item graded, never an infrastructure error")
def at21() -> Verdict:
    call = '{"name": "get_attribute", "arguments": {"record_id": "INV-Q7P2K", "attribute": "on_hand"}}'

    def setup(srv: FakeModelServer) -> None:
        srv.raw_text = call
    p, r, srv = episode("at21", lambda b: status(500, PEG), provider="local", setup=setup)
    c = Checks()
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(recs and not any(x["infra_error"] for x in recs), f"graded ({r.outcomes})")
    c.expect(all(x["termination"] != "malformed_call" for x in recs), "not a malformed call")
    c.expect(any(call in json.dumps(x) or "get_attribute" in json.dumps(x["trajectory"]) for x in recs),
             "the model's text is in the record")
    return c.verdict()


@scenario("at22", "14", "attack", "the embedded server refuses and cannot render the raw text",
          "provider local with base_url; every chat request: HTTP 500 'Failed to parse input at pos 3'; the server "
          "has no /apply-template (404)",
          "the server's refusal is the model's malformed call (F2) with the message in the record; not retried")
def at22() -> Verdict:
    p, r, srv = episode("at22", lambda b: status(500, "Failed to parse input at pos 3"), provider="local",
                        extra={"retries": 3})
    c = Checks()
    models_fault(c, r, mode="F2", words=("Failed to parse input",))
    c.expect(len(srv.received) == 1, f"not retried ({len(srv.received)})")
    return c.verdict()


@scenario("at23", "1", "attack", "max_connections = 2: episodes in flight and the items' JUnit time",
          "openai model, max_connections = 2, concurrency 64; 20 items of A1 whose requests take 0.1 s each; "
          "--junitxml",
          "the server never sees more than 2 requests at once; every testcase's JUnit time is its episode's own "
          "time (wall_s), not its wait; no timeout")
def at23() -> Verdict:
    import threading
    import xml.etree.ElementTree as ET

    oracle = Oracle()
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def respond(body: Any) -> Any:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        try:
            time.sleep(0.1)
            return oracle(body)
        finally:
            with lock:
                state["now"] -= 1
    p, r, _ = episode("at23", respond, extra={"max_connections": 2}, variants=None,
                      args=("--agentfloor-runs", "4", "--junitxml", "junit.xml", "-o", "junit_family=xunit1",
                            "--episode-timeout", "3"))
    c = Checks()
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(state["peak"] <= 2, f"at most 2 requests at once ({state['peak']})")
    c.expect(not any(x["termination"] == "timeout" for x in recs), "no timeout")
    by_name = {x["nodeid"].rsplit("::", 1)[-1]: x for x in recs}
    junit = p.root / "junit.xml"
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            rec = by_name.get(case.get("name") or "")
            if rec:
                c.expect(float(case.get("time") or 0) <= rec["wall_s"] + 1.0,
                         f"{case.get('name')}: JUnit time {case.get('time')} vs wall_s {rec['wall_s']}")
    c.note(f"peak {state['peak']}, queue_s in all {sum(x.get('queue_s') or 0 for x in recs):.1f}")
    return c.verdict()


@scenario("at24", "7", "attack", "a distractor flood in pressure cells",
          "openai model answers every turn of 8 pressure cells (overdue-invoice, V128) with 64 calls, one to each "
          "menu tool, 2 KB of arguments each",
          "each record at most 1 MiB, runs.jsonl bounded, terminal output bounded; the items failed as the "
          "model's, one record each")
def at24() -> Verdict:
    def flood(body: Any) -> Any:
        names = [t["function"]["name"] for t in body.get("tools") or []][:64]
        return reply(tool_calls=[(n, {"q": "x" * 2048, "i": i}) for i, n in enumerate(names)])
    p = Project("at24", ("pressure/accounting.toml",))
    with FakeModelServer(flood) as srv:
        p.models(model_toml("m", srv.openai_url))
        r = p.pytest("cases/pressure/accounting.toml", "--model", "m", "--no-probe", "-k",
                     "overdue-invoice and V128", timeout=600)
    c = Checks()
    sane(c, r, max_out=300_000)
    recs = one_record_per_item(c, r)
    sizes = [len(x) for f in p.root.glob("reports/sessions/*/runs.jsonl") for x in f.read_text().splitlines()]
    c.expect(sizes and max(sizes) <= 1024 * 1024 + 1024, f"records at most 1 MiB ({max(sizes) if sizes else 0:,})")
    c.expect(not any(x["infra_error"] for x in recs), "no infrastructure error")
    c.note(f"{len(recs)} records, largest {max(sizes) if sizes else 0:,} bytes, terminal {len(r.text):,} chars")
    return c.verdict()


@scenario("at25", "9", "attack", "an installation's entity id with a trailing newline",
          "cases/callsite/installations/site_a.toml with entity id 'light.porch\\n'; pytest cases/callsite/actuator.toml "
          "--model oracle",
          "a collection error naming the file and the field, no newline in any node id, no traceback")
def at25() -> Verdict:
    p = Project("at25", ("callsite/actuator.toml",))
    f = p.root / "cases" / "callsite" / "installations" / "site_a.toml"
    text = f.read_text()
    f.write_text(text.replace('id = "light.porch"', 'id = "light.porch\\n"', 1))
    r = p.pytest("cases/callsite/actuator.toml", "--model", "oracle")
    c = Checks()
    c.expect(text != f.read_text(), "the id was changed")
    c.expect("Traceback (most recent call last)" not in r.text and "INTERNALERROR" not in r.text, "no traceback")
    c.expect(r.ret in (1, 2, 4) and "site_a.toml" in r.text, f"an error naming the file (exit {r.ret})")
    c.note(f"exit {r.ret}: {[ln for ln in r.text.splitlines() if 'site_a' in ln][:1]}")
    return c.verdict()


class _Gzip(Raw):
    def __init__(self) -> None:
        super().__init__({"id": "x", "object": "chat.completion", "choices": []})


class _Short(Raw):
    def __init__(self) -> None:
        super().__init__("")


def _patch() -> None:
    """Two more fake-server actions: a body that lies about its encoding, one cut short of its length."""
    from tests import fakeserver

    handler = fakeserver.FakeModelServer.handler_class
    if getattr(handler, "_corpus_transport", False):
        return
    original = handler._perform

    def perform(self: Any, action: Any, path: str, body: Any) -> None:
        if isinstance(action, _Gzip):
            data = b'{"id": "x", "choices": []}'
            self._send(200, data, "application/json", {"Content-Encoding": "gzip"})
            return
        if isinstance(action, _Short):
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "5000")
                self.end_headers()
                self.wfile.write(b'{"id": "x", "object": "chat.completion", ')
                self.wfile.flush()
            except OSError:
                pass
            self.close_connection = True
            return
        original(self, action, path, body)

    handler._perform = perform
    handler._corpus_transport = True


_patch()
del Reply, Run
