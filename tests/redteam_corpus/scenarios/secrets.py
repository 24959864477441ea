"""Secrets: the API key and the base_url's password never written, whatever echoes them.

Right: no file the session writes (runs.jsonl, reports/, viewer.html, probe.json, JUnit XML,
cassettes, the judge cache) and no terminal line holds the key or the password, as is or in any
escaping; the verdicts are what they would be without masking.
"""

from __future__ import annotations

import json
from typing import Any, Callable
from urllib.parse import quote

from tests.fakeserver import FakeModelServer, raw, reply, status

from ..harness import Checks, Project, Verdict, model_toml, no_secret, sane, scenario
from ..oracle import Oracle

KEY = "sk-live-Zq8RedTeamKey7731xy"
PASSWORD = "p@ss/Word:Qx7&Lm9"
TELL = ("RedTeamKey7731", "Word:Qx7", quote("Word:Qx7", safe=""), "Qx7&Lm9")


def secret_run(sid: str, responder: Callable[[Any], Any], *, provider: str = "openai", probe: bool = False,
               args: tuple[str, ...] = (), judge: Callable[[Any], Any] | None = None,
               cases: tuple[str, ...] = ("tier_A/A1.toml",)) -> tuple[Project, Any]:
    p = Project(sid, cases)
    env = {"AF_RT_KEY": KEY, "AF_RT_JUDGE_KEY": KEY[::-1]}
    with FakeModelServer(responder) as srv, FakeModelServer(judge or Oracle()) as jsrv:
        url = srv.openai_url if provider == "openai" else srv.url
        host = url.split("://", 1)[1]
        url = f"http://agent:{quote(PASSWORD, safe='')}@{host}"
        text = model_toml("m", url, provider, api_key_env="AF_RT_KEY")
        if judge is not None:
            text += model_toml("judge", jsrv.openai_url, api_key_env="AF_RT_JUDGE_KEY")
        p.models(text)
        base = ["cases", "--model", "m", "--instances", "i0", "--variants", "v0", "--junitxml", "junit.xml", "-rA",
                "-vv"]
        if not probe:
            base.append("--no-probe")
        if judge is not None:
            base += ["--agentfloor-judge", "judge"]
        r = p.pytest(*base, *args, env=env)
    return p, r


def _secret_case(sid: str, title: str, responder: Callable[[Any], Any], **kw: Any) -> None:
    @scenario(sid, "hold", "secrets", title, f"a model with api_key_env and a base_url password; {title}",
              "the key and the password appear in no file the session wrote and not in the terminal")
    def run() -> Verdict:
        p, r = secret_run(sid, responder, **kw)
        c = Checks()
        sane(c, r)
        no_secret(c, p, r, *TELL, KEY[::-1][:14])
        c.note(str(r.outcomes))
        return c.verdict()


def _echo_first(make: Callable[[], Any]) -> Callable[[Any], Any]:
    oracle = Oracle()

    def respond(body: Any) -> Any:
        return make() if oracle.turn_of(body) == 0 else oracle(body)
    return respond


_secret_case("s01", "the model echoes the key in its text", _echo_first(lambda: reply(content=f"my key: {KEY}")))
_secret_case("s02", "the model puts the key in tool-call arguments (JSON-escaped, with a quote)",
             _echo_first(lambda: reply(tool_calls=[("get_attribute", {"record_id": f'"{KEY}"', "attribute": "on_hand"})])))
_secret_case("s03", "the model echoes the URL-quoted password", _echo_first(lambda: reply(
    content=f"http://agent:{quote(PASSWORD, safe='')}@host and {PASSWORD}")))
_secret_case("s04", "the server's 401 body echoes the key", lambda b: status(401, f"Incorrect API key provided: {KEY}"))
_secret_case("s05", "the server's 500 body echoes the base_url with its password",
             lambda b: status(500, f"upstream http://agent:{quote(PASSWORD, safe='')}@10.0.0.1 failed ({PASSWORD})"))
_secret_case("s06", "the key in the probe's reply (probe on)", lambda b: reply(content=f"I hold {KEY}"), probe=True)
_secret_case("s07", "the key echoed by an Ollama model", _echo_first(lambda: reply(content=f"key={KEY}")),
             provider="ollama")
_secret_case("s08", "the key in a tool name", _echo_first(lambda: reply(tool_calls=[(KEY, {})])))
_secret_case("s09", "the key echoed with --agentfloor-record (cassettes)", _echo_first(lambda: reply(content=KEY)),
             args=("--agentfloor-record",))
_secret_case("s10", "the judge's key echoed by the judged model",
             lambda b: reply(content=f"The east stairwell is closed; use the west one; extension 4410. {KEY[::-1]}"),
             judge=lambda b: reply(content=json.dumps({"reason": "fine", "verdict": "pass"})),
             cases=("tier_A0/A02.toml",))
_secret_case("s11", "the judge's reason echoes the judge key",
             lambda b: reply(content="The east stairwell is closed; use the west one; extension 4410."),
             judge=lambda b: reply(content=json.dumps({"reason": f"key {KEY[::-1]}", "verdict": "fail"})),
             cases=("tier_A0/A02.toml",))
_secret_case("s12", "the key base64-free but split by a newline and in an error body as JSON",
             lambda b: raw({"error": {"message": f"bad key {json.dumps(KEY)}", "type": "auth"}}, 403))
_secret_case("s13", "a reply of 70 KiB with the key straddling the 64 KiB cut",
             _echo_first(lambda: reply(content="x" * (64 * 1024 - 8) + KEY + " 340")))
_secret_case("s14", "the key in a call-site reply (codegen)", lambda b: reply(content=f"api_key = '{KEY}'"),
             cases=("callsite/codegen.toml",), args=("-k", "codegen-blocking-01", "--variants", "all"))


@scenario("s15", "hold", "secrets", "OPENAI_API_KEY in the environment and no api_key_env",
          "a loopback openai model without api_key_env; OPENAI_API_KEY=<secret> in the environment; the model echoes "
          "whatever Authorization it received",
          "the environment's key is neither sent to the endpoint nor written anywhere")
def s15() -> Verdict:
    seen: list[str] = []

    def respond(body: Any) -> Any:
        return reply(content="340")
    p = Project("s15")
    with FakeModelServer(respond) as srv:
        p.models(model_toml("m", srv.openai_url))
        r = p.pytest("cases", "--model", "m", "--instances", "i0", "--variants", "v0", "--no-probe",
                     env={"OPENAI_API_KEY": KEY})
        seen = [x.headers.get("authorization", "") for x in srv.received]
    c = Checks()
    sane(c, r)
    c.expect(not any(KEY in h for h in seen), "the environment's key was not sent")
    no_secret(c, p, r, KEY)
    return c.verdict()


@scenario("s16", "hold", "secrets", "a key in the base_url's query string",
          "base_url = http://127.0.0.1:PORT/v1?api-key=<secret>; the server answers 500 echoing its URL",
          "the query's key is never written or printed")
def s16() -> Verdict:
    p = Project("s16")
    with FakeModelServer(lambda b: status(500, f"bad request to /v1?api-key={KEY}")) as srv:
        p.models(model_toml("m", srv.openai_url + f"?api-key={KEY}", retries=0))
        r = p.pytest("cases", "--model", "m", "--instances", "i0", "--variants", "v0", "--no-probe")
    c = Checks()
    sane(c, r)
    no_secret(c, p, r, KEY)
    return c.verdict()
