"""Endpoint faults: hangs, deaths mid-sweep, Retry-After, odd error bodies, context overflows, parse refusals.

Right (issue 27): only the model fails items. An endpoint's or the harness's trouble is an
infrastructure error (an *error* of the item, `infra_error` true, no failure mode) with its record
kept and its cause named; the server's own statement that the model's output did not parse is the
model's malformed call (F2) with the message in the record; a context overflow is the setup's
`context_limit`; queued time never counts against the deadline; a dead endpoint costs seconds, not
every item's retries.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from tests.fakeserver import FakeModelServer, drop, raw, reply, stall, status, trickle

from ..harness import Checks, Project, Run, Verdict, model_toml, one_record_per_item, sane, scenario, url_for
from ..oracle import Oracle, then


def episode(sid: str, responder: Callable[[Any], Any], *, provider: str = "openai", extra: dict[str, Any] | None = None,
            args: tuple[str, ...] = (), cases: tuple[str, ...] = ("tier_A/A1.toml",), variants: str | None = "v0",
            probe: bool = False, setup: Callable[[FakeModelServer], None] | None = None,
            timeout: float = 240, max_stall: float = 30.0) -> tuple[Project, Run, FakeModelServer]:
    p = Project(sid, cases)
    srv = FakeModelServer(responder, max_stall_s=max_stall)
    with srv:
        if setup is not None:
            setup(srv)
        p.models(model_toml("m", url_for(srv, provider), provider, **(extra or {})))
        base = ["cases", "--model", "m", "--instances", "i0"]
        if variants:
            base += ["--variants", variants]
        if not probe:
            base.append("--no-probe")
        r = p.pytest(*base, *args, timeout=timeout)
    return p, r, srv


def infra_only(c: Checks, r: Run, *, words: tuple[str, ...] = (), items: int | None = None) -> list[dict[str, Any]]:
    """Every item an error of the setup with its record: infra_error, no failure mode, the cause named."""
    sane(c, r)
    recs = one_record_per_item(c, r)
    o = r.outcomes
    c.expect(not o.get("failed"), f"no item failed as the model's ({o})")
    c.expect(o.get("errors", 0) >= 1, f"the items are errors ({o})")
    if items is not None:
        c.expect(o.get("errors", 0) == items, f"{items} errors ({o})")
    c.expect(all(x["infra_error"] and x["failure_mode"] is None for x in recs),
             f"records say infra_error, no failure mode ({[(x['termination'], x['failure_mode']) for x in recs][:3]})")
    for w in words:
        c.expect(any(w.lower() in str(x.get("error")).lower() for x in recs) or w.lower() in r.out.lower(),
                 f"the cause names {w!r}")
    if recs:
        c.note(f"{recs[0]['termination']}: {str(recs[0].get('error'))[:140]}")
    return recs


def passes(c: Checks, r: Run, n: int = 1) -> list[dict[str, Any]]:
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(r.outcomes.get("passed") == n, f"{n} passed ({r.outcomes})")
    return recs


def models_fault(c: Checks, r: Run, mode: str | None = None, termination: str | None = None,
                 words: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The model's own failure: failed (not an error), a failure mode, the record kept."""
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(r.outcomes.get("failed", 0) >= 1 and not r.outcomes.get("errors"), f"failed, not errors ({r.outcomes})")
    c.expect(all(not x["infra_error"] for x in recs), "not an infrastructure error")
    if mode:
        c.expect(all(x["failure_mode"] == mode for x in recs), f"failure mode {mode} ({[x['failure_mode'] for x in recs]})")
    if termination:
        c.expect(all(x["termination"] == termination for x in recs),
                 f"termination {termination} ({[x['termination'] for x in recs]})")
    for w in words:
        c.expect(any(w in json.dumps(x) for x in recs), f"the record holds {w!r}")
    if recs:
        c.note(f"{recs[0]['termination']} {recs[0]['failure_mode']}: {str(recs[0].get('error'))[:120]}")
    return recs


def context_limit(c: Checks, r: Run) -> None:
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(r.outcomes.get("errors") == len(recs) >= 1 and not r.outcomes.get("failed"),
             f"an error of the setup, not a failure ({r.outcomes})")
    c.expect(all(x["termination"] == "context_limit" and x["failure_mode"] is None for x in recs),
             f"termination context_limit ({[x['termination'] for x in recs]})")
    c.expect(len(r.out.splitlines()) < 120, f"a short report ({len(r.out.splitlines())} lines)")
    if recs:
        c.note(str(recs[0].get("error"))[:140])


BOTH = ("openai", "ollama")


# -- hangs and drops ----------------------------------------------------------------------------------
for n, prov in enumerate(BOTH):
    def _hang(prov: str = prov, sid: str = f"ep0{n + 1}") -> None:
        @scenario(sid, "2", "endpoint", f"a server that hangs past timeout_s ({prov})",
                  f"{prov} model, timeout_s = 2, retries = 1; the server stalls 30 s on every request",
                  "an infrastructure error with its record (not F3), within seconds")
        def run() -> Verdict:
            p, r, _ = episode(sid, lambda b: stall(300, reply(content="late")), provider=prov,
                              extra={"timeout_s": 2, "retries": 1}, max_stall=300)
            c = Checks()
            infra_only(c, r, items=1)
            c.expect(r.elapsed < 120, f"bounded time ({r.elapsed:.0f}s; unbounded would be 600 s)")
            return c.verdict()
    _hang()


@scenario("ep03", "2", "endpoint", "a hang past --episode-timeout",
          "openai model, timeout_s = 30; the server stalls 30 s; --episode-timeout 2",
          "an infrastructure error naming the harness's deadline, never F3")
def ep03() -> Verdict:
    p, r, _ = episode("ep03", lambda b: stall(30, reply(content="late")), args=("--episode-timeout", "2"),
                      extra={"timeout_s": 30})
    c = Checks()
    infra_only(c, r, items=1)
    c.expect("F3" not in r.out, "F3 never named")
    return c.verdict()


for n, prov in enumerate(BOTH):
    def _drop(prov: str = prov, sid: str = f"ep0{n + 4}") -> None:
        @scenario(sid, "11", "endpoint", f"every request's connection dropped ({prov}), 10 items",
                  f"{prov} model, retries = 3; the server closes every connection unanswered; --agentfloor-runs 10",
                  "10 infrastructure errors with records, the endpoint taken out after 5 failures: well under 60 s")
        def run() -> Verdict:
            p, r, srv = episode(sid, lambda b: drop(), provider=prov, extra={"retries": 3},
                                args=("--agentfloor-runs", "10", "--agentfloor-concurrency", "1"))
            c = Checks()
            infra_only(c, r, items=10, words=("endpoint down",))
            c.expect(len(srv.received) <= 8, f"at most a few requests ({len(srv.received)})")
            c.expect(r.elapsed < 90, f"bounded time ({r.elapsed:.0f}s)")
            return c.verdict()
    _drop()


@scenario("ep06", "hold", "endpoint", "nothing listens at base_url (probe on)",
          "openai model at 127.0.0.1:9 (closed); pytest cases --model m (probe on), 5 variants",
          "every item an error naming the endpoint and what to check; quick; exit non-zero")
def ep06() -> Verdict:
    p = Project("ep06")
    p.models(model_toml("m", "http://127.0.0.1:9/v1", retries=3))
    r = p.pytest("cases", "--model", "m", "--instances", "i0")
    c = Checks()
    sane(c, r)
    c.expect(r.outcomes.get("errors") == 5 and not r.outcomes.get("failed"), f"5 errors ({r.outcomes})")
    c.expect("127.0.0.1:9" in r.out, "the endpoint is named")
    c.expect(r.elapsed < 90, f"quick ({r.elapsed:.0f}s)")
    return c.verdict()


# -- error statuses with odd bodies ---------------------------------------------------------------------
def _status_case(sid: str, title: str, action: Any, words: tuple[str, ...], prov: str = "openai",
                 point: str = "9", extra: dict[str, Any] | None = None) -> None:
    @scenario(sid, point, "endpoint", title, f"{prov} model; every request answered with {title}",
              "an infrastructure error with its record, its message kept and short; never a model failure")
    def run() -> Verdict:
        p, r, _ = episode(sid, lambda b: action, provider=prov, extra=extra or {"retries": 1})
        c = Checks()
        recs = infra_only(c, r, words=words)
        c.expect(all(len(str(x.get("error"))) < 2000 for x in recs), "a bounded error text")
        return c.verdict()


_status_case("ep07", "HTTP 500 with an HTML page", raw("<html><body><h1>500 Internal Server Error</h1>" + "x" * 50_000 +
                                                       "</body></html>", 500, "text/html"), ("500",))
_status_case("ep08", "HTTP 502 with an empty body (ollama)", raw(b"", 502, "text/plain"), ("502",), prov="ollama")
_status_case("ep17", "HTTP 400 FastAPI {'detail': 'Invalid tools schema'}",
             raw({"detail": "Invalid tools schema"}, 400), ("Invalid tools schema",))
_status_case("ep18", "HTTP 422 FastAPI detail list", raw({"detail": [{"loc": ["body", "messages", 0], "msg":
                                                                       "field required", "type": "missing"}]}, 422),
             ("field required",))
_status_case("ep46", "HTTP 500 FastAPI {'detail': ...} (ollama)", raw({"detail": "engine crashed: CUDA error"}, 500),
             ("CUDA error",), prov="ollama")
_status_case("ep47", "HTTP 401 whose body is not JSON", raw("Unauthorized", 401, "text/plain"), ("401",))
_status_case("ep48", "HTTP 404 model not found (ollama)", status(404, 'model "tiny" not found, try pulling it first'),
             ("not found",), prov="ollama")
_status_case("ep49", "HTTP 200 whose body is not JSON", raw("<html>gateway</html>", 200, "text/html"), ())
_status_case("ep50", "HTTP 200 JSON with no choices", raw({"id": "x", "object": "chat.completion"}), ())
_status_case("ep51", "HTTP 200 with choices: []", raw({"id": "x", "object": "chat.completion", "choices": []}), ())
_status_case("ep52", "HTTP 200 with body null", raw("null"), ())
_status_case("ep53", "HTTP 200 ollama body with only {'error': ...}", raw({"error": "model runner crashed"}),
             ("model runner crashed",), prov="ollama")
_status_case("ep54", "HTTP 400 with a 2 MB error message", status(400, "bad request " + "y" * 2_000_000), ("400",))
_status_case("ep55", "HTTP 500 with an error message full of ANSI escapes",
             status(500, "\x1b[31mboom\x1b[0m\x1b]0;owned\x07 \u202egnp.exe"), ("boom",))


# -- Retry-After -----------------------------------------------------------------------------------------
def _retry_case(sid: str, title: str, headers: dict[str, str], code: int = 429, point: str = "2") -> None:
    @scenario(sid, point, "endpoint", f"{code} with {title}, then the right answer",
              f"openai model, retries = 3; the first request gets HTTP {code} {headers}, then the reference solution",
              "the item passes (the pause is queue_s, not the model's), no crash, bounded time")
    def run() -> Verdict:
        oracle = Oracle()
        p, r, _ = episode(sid, then(lambda b: status(code, "slow down", headers), 1, oracle), extra={"retries": 3})
        c = Checks()
        recs = passes(c, r)
        c.expect(r.elapsed < 90, f"bounded time ({r.elapsed:.0f}s)")
        if recs:
            c.note(f"queue_s {recs[0].get('queue_s')}, endpoint_wait_s {recs[0].get('endpoint_wait_s')}, "
                   f"wall_s {recs[0].get('wall_s')}")
        return c.verdict()


_retry_case("ep09", "Retry-After: 2", {"Retry-After": "2"}, code=503)
_retry_case("ep11", "Retry-After: soon (garbage)", {"Retry-After": "soon"})
_retry_case("ep12", "Retry-After: -5", {"Retry-After": "-5"})
_retry_case("ep13", "Retry-After: 1e309", {"Retry-After": "1e309"})
_retry_case("ep14", "Retry-After: nan", {"Retry-After": "nan"})
_retry_case("ep15", "retry-after-ms: 1500", {"retry-after-ms": "1500"})
_retry_case("ep16", "Retry-After: an HTTP date in the past", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
_retry_case("ep56", "retry-after-ms: inf", {"retry-after-ms": "inf"})


@scenario("ep10", "2", "endpoint", "503 with Retry-After: 99999 on every request",
          "openai model, retries = 3; every request gets 503 Retry-After: 99999",
          "an infrastructure error naming the Retry-After, quickly (the cap), never F3")
def ep10() -> Verdict:
    p, r, _ = episode("ep10", lambda b: status(503, "overloaded", {"Retry-After": "99999"}), extra={"retries": 3})
    c = Checks()
    infra_only(c, r, items=1, words=("Retry-After",))
    c.expect(r.elapsed < 90, f"quick ({r.elapsed:.0f}s)")
    return c.verdict()


@scenario("ep57", "2", "endpoint", "503 with Retry-After of 23 nines on every request",
          "openai model, retries = 3; every request gets 503 Retry-After: 99999999999999999999999",
          "an infrastructure error naming the Retry-After cap, quickly; no overflow, never F3")
def ep57() -> Verdict:
    p, r, _ = episode("ep57", lambda b: status(503, "overloaded", {"Retry-After": "9" * 23}), extra={"retries": 3})
    c = Checks()
    infra_only(c, r, items=1, words=("Retry-After",))
    c.expect(r.elapsed < 90, f"quick ({r.elapsed:.0f}s; three honoured holds would be 180 s and more)")
    return c.verdict()


@scenario("ep44", "2", "endpoint", "a Retry-After hold longer than the episode's time left",
          "openai model, retries = 3; the first answer is 429 Retry-After: 20; --episode-timeout 5",
          "an infrastructure error at once (never F3, never a wait of 20 s)")
def ep44() -> Verdict:
    oracle = Oracle()
    p, r, _ = episode("ep44", then(lambda b: status(429, "slow", {"Retry-After": "20"}), 1, oracle),
                      extra={"retries": 3}, args=("--episode-timeout", "5"))
    c = Checks()
    infra_only(c, r, items=1)
    return c.verdict()


# -- queues ---------------------------------------------------------------------------------------------------
class _Slow:
    def __init__(self, delay: float):
        self.oracle = Oracle(wrong=())
        self.delay = delay

    def __call__(self, body: Any) -> Any:
        time.sleep(self.delay)
        return self.oracle(body)


@scenario("ep33", "1", "endpoint", "max_connections = 1 under concurrency 64 with --episode-timeout 1",
          "openai model, max_connections = 1; server answers A1's reference after 0.15 s; 5 variants x 4 runs; "
          "--episode-timeout 1.5 (every episode needs ~0.3 s of its own)",
          "no timeout at all: the wait for the connection is queue_s; every item passes")
def ep33() -> Verdict:
    p, r, _ = episode("ep33", _Slow(0.15), extra={"max_connections": 1}, variants=None,
                      args=("--agentfloor-runs", "4", "--episode-timeout", "1.5", "--agentfloor-concurrency", "64"))
    c = Checks()
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(r.outcomes.get("passed") == 20, f"20 passed ({r.outcomes})")
    c.expect(not any(x["termination"] == "timeout" for x in recs), "no timeout")
    c.note(f"queue_s in all {sum(x.get('queue_s') or 0 for x in recs):.1f}")
    return c.verdict()


@scenario("ep34", "1", "endpoint", "rpm = 120 spacing with --episode-timeout 1",
          "openai model, rpm = 120 (one start per 0.5 s); 5 items of 2 requests; --episode-timeout 1",
          "no timeout: the spacing is queue_s; every item passes")
def ep34() -> Verdict:
    p, r, _ = episode("ep34", Oracle(), extra={"rpm": 120}, variants=None, args=("--episode-timeout", "1"))
    c = Checks()
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(r.outcomes.get("passed") == 5, f"5 passed ({r.outcomes})")
    c.expect(not any(x["termination"] == "timeout" for x in recs), "no timeout")
    return c.verdict()


@scenario("ep58", "1", "endpoint", "a 429 hold shared by 8 episodes in flight, --episode-timeout 4",
          "openai model, retries = 3, concurrency 8; the first request of the session gets 429 Retry-After: 3; "
          "8 items; --episode-timeout 4",
          "every item passes: the shared hold is queued time for all of them, not their deadline")
def ep58() -> Verdict:
    oracle = Oracle()
    p, r, _ = episode("ep58", then(lambda b: status(429, "slow", {"Retry-After": "3"}), 1, _Slow(0.05)),
                      extra={"retries": 3}, variants=None,
                      args=("--agentfloor-runs", "2", "--episode-timeout", "4", "--agentfloor-concurrency", "8"))
    del oracle
    c = Checks()
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(r.outcomes.get("passed") == 10, f"10 passed ({r.outcomes})")
    c.expect(not any(x["termination"] == "timeout" for x in recs), "no timeout")
    return c.verdict()


# -- a server that dies mid-sweep --------------------------------------------------------------------------
@scenario("ep31", "11", "endpoint", "the server dies mid-sweep (20 items)",
          "openai model, retries = 3, concurrency 1; 5 variants x 4 runs; the server is stopped after 6 requests",
          "the remaining items end quickly as infrastructure errors naming the endpoint (down), records kept")
def ep31() -> Verdict:
    p = Project("ep31")
    oracle = Oracle()
    srv = FakeModelServer(oracle)
    srv.start()
    p.models(model_toml("m", srv.openai_url, retries=3))
    proc = p.popen("cases", "--model", "m", "--instances", "i0", "--agentfloor-runs", "4", "--no-probe",
                   "--agentfloor-concurrency", "1", stdout=-1, stderr=-1)
    from ..harness import wait_for

    wait_for(lambda: oracle.requests >= 6, 60)
    srv.stop()
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=300)
    r = Run(p.root, [], proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
            time.monotonic() - t0)
    c = Checks()
    sane(c, r)
    recs = one_record_per_item(c, r)
    c.expect(len(recs) == 20, f"20 records ({len(recs)})")
    c.expect(not r.outcomes.get("failed"), f"no model failure ({r.outcomes})")
    errs = [x for x in recs if x["infra_error"]]
    c.expect(errs and all(x["failure_mode"] is None for x in errs), "errors are infrastructure errors")
    c.expect(any("endpoint down" in str(x.get("error")) for x in errs), "the endpoint is named down")
    c.expect(r.elapsed < 45, f"the rest took {r.elapsed:.0f}s")
    return c.verdict()


@scenario("ep32", "11", "endpoint", "after a dead server, --agentfloor-resume picks the errors up",
          "as ep31 but the server comes back; pytest ... --agentfloor-resume",
          "every item ran once more only if it had no result; all 20 pass in the end; one record per item")
def ep32() -> Verdict:
    p = Project("ep32")
    healthy = {"on": False}
    oracle = Oracle()
    with FakeModelServer(lambda b: oracle(b) if healthy["on"] else status(502, "bad gateway")) as srv:
        p.models(model_toml("m", srv.openai_url, retries=3))
        args = ("cases", "--model", "m", "--instances", "i0", "--agentfloor-runs", "4", "--no-probe",
                "--agentfloor-concurrency", "1")
        first = p.pytest(*args)
        healthy["on"] = True
        second = p.pytest(*args, "--agentfloor-resume")
    c = Checks()
    sane(c, first)
    sane(c, second)
    c.expect(first.outcomes.get("errors") == 20, f"first: 20 errors ({first.outcomes})")
    c.expect(second.outcomes.get("passed") == 20, f"second: 20 passed ({second.outcomes})")
    rep = p.cli("report", "reports/latest/runs.jsonl", "--out", "merged", "--n-boot", "200")
    c.expect(rep.ret == 0, f"report exit {rep.ret}")
    return c.verdict()


# -- context overflows ------------------------------------------------------------------------------------
def _ctx(sid: str, title: str, action: Any, prov: str = "openai") -> None:
    @scenario(sid, "8", "endpoint", f"context overflow: {title}", f"{prov} model; every request answered {title}",
              "termination context_limit: an error of the setup with its record and a short message, not F-mode")
    def run() -> Verdict:
        p, r, _ = episode(sid, lambda b: action, provider=prov)
        c = Checks()
        context_limit(c, r)
        return c.verdict()


_ctx("ep19", "FastAPI 400 {'detail': \"This model's maximum context length is 4096 tokens...\"}",
     raw({"detail": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}, 400))
_ctx("ep20", "vLLM 400 in OpenAI's error shape", status(400, "This model's maximum context length is 2048 tokens "
                                                              "and your request has 3000 input tokens"))
_ctx("ep21", "llama.cpp 400 'exceeds the available context size'",
     raw({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}}, 400))
_ctx("ep22", "Ollama 400 'the input length exceeds the context length'",
     status(400, "the input length exceeds the context length"), prov="ollama")
_ctx("ep59", "TGI 422 'inputs tokens + max_new_tokens must be <= 4096'",
     raw({"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 3900 `inputs` "
                   "tokens and 1024 `max_new_tokens`", "error_type": "validation"}, 422))
_ctx("ep60", "Gemini-style 400 'The input token count (1200000) exceeds the maximum number of tokens allowed'",
     raw([{"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens "
                                             "allowed (1048576).", "status": "INVALID_ARGUMENT"}}], 400))
_ctx("ep61", "OpenAI 400 with code context_length_exceeded and no wording",
     raw({"error": {"message": "Invalid request.", "type": "invalid_request_error", "param": "messages",
                    "code": "context_length_exceeded"}}, 400))


@scenario("ep62", "8", "endpoint", "prompt tokens reach the configured context_window",
          "openai model with context_window = 64; the server reports prompt_tokens = 64 and answers wrongly",
          "context_limit (not a model failure), a short report")
def ep62() -> Verdict:
    p, r, _ = episode("ep62", lambda b: reply(content="I cannot tell.", tokens_in=64), extra={"context_window": 64})
    c = Checks()
    context_limit(c, r)
    return c.verdict()


# -- the server could not parse the model's tool call -------------------------------------------------------
@scenario("ep23", "12", "endpoint", "llama.cpp's 500 for an unparseable tool call under provider openai",
          "openai model, retries = 3; every request: HTTP 500 {'error': {'code': 500, 'message': "
          "'Failed to parse tool call arguments as JSON: ...', 'type': 'server_error'}}",
          "the model's malformed call (F2) with the server's message in the record; not retried")
def ep23() -> Verdict:
    body = {"error": {"code": 500, "message": "Failed to parse tool call arguments as JSON: [json.exception.parse_error"
                                              ".101] parse error at line 1, column 12", "type": "server_error"}}
    p, r, srv = episode("ep23", lambda b: raw(body, 500), extra={"retries": 3})
    c = Checks()
    models_fault(c, r, mode="F2", words=("Failed to parse tool call",))
    c.expect(len(srv.received) == 1, f"not retried ({len(srv.received)} requests)")
    return c.verdict()


@scenario("ep24", "12", "endpoint", "Ollama's 500 'error parsing tool call' under provider ollama",
          "ollama model, retries = 3; every request: HTTP 500 {'error': \"error parsing tool call: raw='{\\\"name\\\": "
          "get_attribute', err=unexpected end of JSON input\"}",
          "the model's malformed call (F2) with the server's message in the record; not retried")
def ep24() -> Verdict:
    msg = "error parsing tool call: raw='{\"name\": \"get_attribute\", \"arguments\": {', err=unexpected end of JSON input"
    p, r, srv = episode("ep24", lambda b: status(500, msg), provider="ollama", extra={"retries": 3})
    c = Checks()
    models_fault(c, r, mode="F2", words=("error parsing tool call",))
    c.expect(len(srv.received) == 1, f"not retried ({len(srv.received)} requests)")
    return c.verdict()


@scenario("ep63", "12", "endpoint", "llama.cpp's peg-native refusal under provider openai, probe on",
          "openai model (probe on); every request: HTTP 500 'The model produced output that does not match the "
          "expected peg-native format'",
          "the probe does not exclude the model; its item fails as F2 with the message in the record")
def ep63() -> Verdict:
    msg = "The model produced output that does not match the expected peg-native format"
    p, r, _ = episode("ep63", lambda b: status(500, msg), probe=True, extra={"retries": 2})
    c = Checks()
    models_fault(c, r, mode="F2", words=("peg-native",))
    return c.verdict()


@scenario("ep64", "12", "endpoint", "llama.cpp's 500 'Failed to parse input at pos 0' under provider ollama",
          "ollama model (a llama.cpp-based server behind Ollama's API); every request: HTTP 500 'Failed to parse "
          "input at pos 0: <tool_call>{bad'",
          "the model's malformed call (F2) with the message in the record; not retried")
def ep64() -> Verdict:
    msg = "Failed to parse input at pos 0: <tool_call>{bad"
    p, r, srv = episode("ep64", lambda b: status(500, msg), provider="ollama", extra={"retries": 3})
    c = Checks()
    models_fault(c, r, mode="F2", words=("Failed to parse input",))
    c.expect(len(srv.received) == 1, f"not retried ({len(srv.received)} requests)")
    return c.verdict()


# -- redirects and the network ------------------------------------------------------------------------------
@scenario("ep35", "hold", "endpoint", "a 307 redirect to another host",
          "openai model; the server answers every request 307 Location: http://127.0.0.2:<other>/v1/chat/completions",
          "nothing reaches the other server (requests go only to the configured endpoint); an infrastructure error")
def ep35() -> Verdict:
    with FakeModelServer(Oracle()) as other:
        port = other.url.rsplit(":", 1)[1]
        target = f"http://localhost:{port}/v1/chat/completions"

        def redirect(body: Any) -> Any:
            return _Redirect(target)
        p, r, _ = episode("ep35", redirect)
        reached = len(other.received)
    c = Checks()
    c.expect(reached == 0, f"the other server got {reached} request(s)")
    if reached == 0:
        infra_only(c, r)
    return c.verdict()


class _Redirect:
    def __init__(self, location: str):
        self.location = location


def _patch_redirect() -> None:
    """Teach the fake server one more action: a redirect (what a hostile proxy in front of a model sends)."""
    from tests import fakeserver

    handler = fakeserver.FakeModelServer.handler_class
    if getattr(handler, "_corpus_redirect", False):
        return
    original = handler._perform

    def perform(self: Any, action: Any, path: str, body: Any) -> None:
        if isinstance(action, _Redirect):
            self._send(307, b"", "text/plain", {"Location": action.location})
            return
        original(self, action, path, body)

    handler._perform = perform
    handler._corpus_redirect = True


_patch_redirect()


# -- Ollama's /api/show ----------------------------------------------------------------------------------------
def _show(sid: str, title: str, value: Any) -> None:
    @scenario(sid, "9", "endpoint", f"Ollama /api/show context_length = {title}",
              f"ollama model without context_window; /api/show answers context_length {title}; the chat answers A1",
              "a sane num_ctx is sent (an integer >= 2048) or a warning names the server's value; the item passes")
    def run() -> Verdict:
        def setup(srv: FakeModelServer) -> None:
            srv.context_length = value  # type: ignore[assignment]
        p, r, srv = episode(sid, Oracle(), provider="ollama", setup=setup, probe=True)
        c = Checks()
        sent = [b.get("options", {}).get("num_ctx") for b in srv.requests if isinstance(b, dict)]
        ok = all(isinstance(x, int) and not isinstance(x, bool) and x >= 2048 for x in sent)
        warned = "context" in r.out.lower() and "warning" in r.out.lower()
        c.expect(ok or warned, f"num_ctx sent {sent[:2]}, no warning")
        passes(c, r)
        return c.verdict()


_show("ep36", "true", True)
_show("ep37", "1", 1)
_show("ep38", '"abc"', "abc")
_show("ep39", "1e30", 1e30)
_show("ep65", "-4096", -4096)


# -- a slow start, then health ------------------------------------------------------------------------------
@scenario("ep42", "11", "endpoint", "three 503 'model is loading' answers, then health",
          "openai model, retries = 3; the first 3 requests get HTTP 503 (no Retry-After), then the reference",
          "the item passes: three failures are not an endpoint down")
def ep42() -> Verdict:
    p, r, _ = episode("ep42", then(lambda b: status(503, "model is loading"), 3, Oracle()), extra={"retries": 3})
    c = Checks()
    passes(c, r)
    return c.verdict()


@scenario("ep27", "2", "endpoint", "a body trickled 2 bytes a second",
          "openai model, timeout_s = 3, retries = 0; the server sends headers and then 2 bytes per second",
          "an infrastructure error within seconds (a hard bound), record kept")
def ep27() -> Verdict:
    p, r, _ = episode("ep27", lambda b: trickle(1.0, 2, reply(content="340")), extra={"timeout_s": 3})
    c = Checks()
    infra_only(c, r, items=1)
    c.expect(r.elapsed < 90, f"bounded ({r.elapsed:.0f}s; the trickled body takes minutes)")
    return c.verdict()
