"""Bad input: models.toml, options and ini settings a user (or an attacker) can write.

Right: pytest stops before the first item with a usage error (exit 4) whose message is short,
names the file and field, or the option, says what is valid, and echoes no raw control character.
"""

from __future__ import annotations

from typing import Callable

from ..harness import Checks, Project, Run, Verdict, model_toml, sane, scenario, usage_error

GOOD = model_toml("m", "http://127.0.0.1:9/v1")


def _bad_toml(sid: str, title: str, toml: str | bytes, *names: str, point: str = "9") -> None:
    @scenario(sid, point, "models", title, f"models.toml: {title}; pytest cases --model m",
              "usage error naming models.toml and the field, no traceback")
    def run() -> Verdict:
        p = Project(sid)
        p.write("models.toml", toml)
        r = p.pytest("cases", "--model", "m", "--no-probe")
        c = Checks()
        usage_error(c, r, "models.toml", *names)
        return c.verdict()


def M(extra: str) -> str:
    return GOOD + extra + "\n"


_bad_toml("in03", "max_tokens = 0", M("max_tokens = 0"), "max_tokens")
_bad_toml("in04", "max_tokens = true (a boolean)", M("max_tokens = true"), "max_tokens")
_bad_toml("in05", "retries = -1", M("retries = -1").replace("retries = 0\n", ""), "retries")
_bad_toml("in06", "pricing input_per_mtok = -3", M("pricing = { input_per_mtok = -3.0 }"), "pricing")
_bad_toml("in07", "pricing hourly_usd = inf", M("pricing = { hourly_usd = inf }"), "pricing")
_bad_toml("in09", "base_url with a bidi override", model_toml("m", "http://127.0.0.1:9/v1\u202e"), "base_url")
_bad_toml("in10", "base_url = file:///etc/passwd", model_toml("m", "file:///etc/passwd"), "base_url")
_bad_toml("in11", "base_url = 42 (a number)", GOOD.replace('base_url = "http://127.0.0.1:9/v1"', "base_url = 42"),
          "base_url")
_bad_toml("in12", "an unknown field (typo: max_token)", M("max_token = 5"), "max_token")
_bad_toml("in13", "provider = \"anthropic\"", GOOD.replace('"openai"', '"anthropic"'), "provider")
_bad_toml("in14", "models.toml not UTF-8", GOOD.encode() + b'# caf\xe9\n', "UTF-8")
_bad_toml("in15", "models.toml not TOML", "[models.m\nprovider = openai\n", "TOML")
_bad_toml("in16", "a model name with a space", GOOD.replace('[models."m"]', '[models."my model"]'), "my model")
_bad_toml("in17", "temperature = nan", M("temperature = nan"), "temperature")
_bad_toml("in18", "context_window = -4096", M("context_window = -4096"), "context_window")
_bad_toml("in19", "max_connections = 0", M("max_connections = 0"), "max_connections")
_bad_toml("in20", "api_key_env = 5 (not a name)", M("api_key_env = 5"), "api_key_env")
_bad_toml("in21", "seed = 1.5", M("seed = 1.5"), "seed")
_bad_toml("in22", "slots on an openai model", M("slots = 4"), "slots")
_bad_toml("in23", "a pool with one URL twice", model_toml("m", "x").replace(
    'base_url = "x"', 'base_url = ["http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/"]'), "base_url")


def _bad_option(sid: str, title: str, args: tuple[str, ...], *names: str, point: str = "9",
                ini: str | None = None) -> None:
    @scenario(sid, point, "options", title, f"pytest cases {' '.join(args)}",
              "usage error naming the option (or ini key and file), no traceback, no raw control characters")
    def run() -> Verdict:
        p = Project(sid)
        p.models(GOOD)
        if ini is not None:
            p.write("pytest.ini", ini)
        r = p.pytest("cases", *args)
        c = Checks()
        usage_error(c, r, *names)
        return c.verdict()


_bad_option("op01", "--episode-timeout nan", ("--model", "oracle", "--episode-timeout", "nan"), "--episode-timeout")
_bad_option("op02", "--episode-timeout -1", ("--model", "oracle", "--episode-timeout", "-1"), "--episode-timeout")
_bad_option("op03", "--episode-timeout 1e400", ("--model", "oracle", "--episode-timeout", "1e400"), "--episode-timeout")
_bad_option("op04", "--agentfloor-runs 0", ("--model", "oracle", "--agentfloor-runs", "0"), "--agentfloor-runs")
_bad_option("op05", "--agentfloor-runs 10**40", ("--model", "oracle", "--agentfloor-runs", "1" + "0" * 40),
            "--agentfloor-runs")
_bad_option("op06", "--agentfloor-concurrency 0", ("--model", "oracle", "--agentfloor-concurrency", "0"),
            "--agentfloor-concurrency")
_bad_option("op07", "--agentfloor-shard 3/2", ("--model", "oracle", "--agentfloor-shard", "3/2"), "--agentfloor-shard")
_bad_option("op08", "--agentfloor-shard 1/0", ("--model", "oracle", "--agentfloor-shard", "1/0"), "--agentfloor-shard")
_bad_option("op09", "--max-cost -1", ("--model", "oracle", "--max-cost", "-1"), "--max-cost")
_bad_option("op10", "--max-cost nan", ("--model", "oracle", "--max-cost", "nan"), "--max-cost")
_bad_option("op11", "--variants v0,,x", ("--model", "oracle", "--variants", "v0,,x"), "--variants")
_bad_option("op12", "--instances i99 (no case has it)", ("--model", "oracle", "--instances", "i99"), "--instances")
_bad_option("op13", "--agentfloor-report bogus", ("--model", "oracle", "--agentfloor-report", "bogus"),
            "--agentfloor-report")
_bad_option("op14", "--agentfloor-keep-sessions -3", ("--model", "oracle", "--agentfloor-keep-sessions", "-3"),
            "--agentfloor-keep-sessions")
_bad_option("op15", "--step-budget-scale 0", ("--model", "oracle", "--step-budget-scale", "0"), "--step-budget-scale")
_bad_option("op16", "--step-budget-scale 1e300 (turn budget no episode ends under)",
            ("--model", "oracle", "--step-budget-scale", "1e300"), "--step-budget-scale")
_bad_option("op17", "--token-budget 0", ("--model", "oracle", "--token-budget", "0"), "--token-budget")
_bad_option("op18", "--gate-floor 'tier_Z>=0.5' (no such tier)", ("--model", "oracle", "--gate-floor", "tier_Z>=0.5"),
            "tier_Z")
_bad_option("op19", "--agentfloor-baseline missing.jsonl", ("--model", "oracle", "--agentfloor-baseline",
                                                           "missing.jsonl"), "missing.jsonl")
_bad_option("op20", "--agentfloor-menu 0", ("--model", "oracle", "--agentfloor-menu", "0"), "--agentfloor-menu")
_bad_option("op21", "--agentfloor-judge oracle (a scripted judge)", ("--model", "oracle", "--agentfloor-judge",
                                                                     "oracle"), "--agentfloor-judge")
_bad_option("op22", "--agentfloor-judge-cache bogus", ("--model", "oracle", "--agentfloor-judge-cache", "bogus"),
            "--agentfloor-judge-cache")
_bad_option("op23", "--models-file missing.toml", ("--model", "oracle", "--models-file", "missing.toml"),
            "missing.toml")
_bad_option("op24", "--callsite-weights intent=nan", ("--model", "oracle", "--callsite-weights", "intent=nan"),
            "--callsite-weights")
_bad_option("op25", "--infra-threshold 2", ("--model", "oracle", "--infra-threshold", "2"), "--infra-threshold")
_bad_option("op26", "--agentfloor-margin 1e9", ("--model", "oracle", "--agentfloor-margin", "1e9"), "margin")
_bad_option("op27", "ini agentfloor_runs = abc", ("--model", "oracle"), "agentfloor_runs", "pytest.ini",
            ini="[pytest]\nagentfloor_runs = abc\n")
_bad_option("op28", "ini agentfloor_episode_timeout = 0", ("--model", "oracle"), "agentfloor_episode_timeout",
            ini="[pytest]\nagentfloor_episode_timeout = 0\n")
_bad_option("op29", "--model with ESC and a bidi override", ("--model", "m\x1b[31m\u202e",), "--model")
_bad_option("op30", "--agentfloor-report-dir is a file", ("--model", "oracle", "--agentfloor-report-dir",
                                                          "models.toml"), "--agentfloor-report-dir")
_bad_option("op31", "--agentfloor-progress-interval -1", ("--model", "oracle", "--agentfloor-progress-interval", "-1"),
            "--agentfloor-progress-interval")
_bad_option("op32", "--gate-min-pairs -1 in a benchmark run", ("--model", "oracle", "--gate-floor", "tier_A>=0.5",
                                                               "--gate-min-pairs", "-1"), "--gate-min-pairs")
_bad_option("op33", "--agentfloor-baseline a directory", ("--model", "oracle", "--agentfloor-baseline", "cases"),
            "cases")
_bad_option("op34", "--agentfloor-encoding bogus", ("--model", "oracle", "--agentfloor-encoding", "bogus"),
            "--agentfloor-encoding")
_bad_option("op35", "--reasoning-effort extreme", ("--model", "oracle", "--agentfloor-reasoning-effort",
                                                             "extreme"),
            "--agentfloor-reasoning-effort")


@scenario("op36", "9", "options", "--agentfloor-baseline a binary file",
          "write 4 KiB of random bytes to base.jsonl; pytest cases --model oracle --agentfloor-baseline base.jsonl",
          "usage error naming base.jsonl, no traceback")
def op36() -> Verdict:
    import os

    p = Project("op36")
    p.write("base.jsonl", os.urandom(4096))
    r = p.pytest("cases", "--model", "oracle", "--agentfloor-baseline", "base.jsonl")
    c = Checks()
    usage_error(c, r, "base.jsonl")
    return c.verdict()


@scenario("op37", "9", "options", "--agentfloor-progress-interval 0 does not spin",
          "pytest cases --model oracle --agentfloor-progress lines --agentfloor-progress-interval 0",
          "either a usage error or a run whose output stays bounded (no line per redraw flood)")
def op37() -> Verdict:
    p = Project("op37")
    r = p.pytest("cases", "--model", "oracle", "--agentfloor-progress", "lines", "--agentfloor-progress-interval", "0")
    c = Checks()
    c.expect(r.ret in (0, 4), f"exit 0 or a usage error (exit {r.ret})")
    c.expect(len(r.text) < 60_000, f"bounded output ({len(r.text):,} chars)")
    c.note(f"exit {r.ret}, {len(r.text):,} chars")
    return c.verdict()


def _absurd_toml(sid: str, title: str, extra: str, field: str, run_ok: "Callable[[Checks, Run], None]",
                 args: tuple[str, ...] = ()) -> None:
    """An absurd value in a working model's table: a usage error naming the field, or a run that stays right."""
    @scenario(sid, "9", "models", title, f"models.toml: {extra} on a model served by the loopback reference "
              "solution; pytest cases --model m --variants v0 --instances i0",
              "usage error naming the field, or a run where the model's items are graded as its answers deserve "
              "(nothing charged to the model, nothing non-finite written)")
    def run() -> Verdict:
        from tests.fakeserver import FakeModelServer

        from ..oracle import Oracle

        p = Project(sid)
        with FakeModelServer(Oracle()) as srv:
            text = model_toml("m", srv.openai_url)
            key = extra.split("=", 1)[0].strip()
            text = "\n".join(ln for ln in text.splitlines() if not ln.startswith(key + " ")) + "\n" + extra + "\n"
            p.models(text)
            r = p.pytest("cases", "--model", "m", "--variants", "v0", "--instances", "i0", "--no-probe",
                         "--episode-timeout", "60", *args, timeout=120)
        c = Checks()
        if r.ret == 4:
            usage_error(c, r, "models.toml", field)
        else:
            sane(c, r)
            run_ok(c, r)
            c.note(f"no usage error: exit {r.ret}, {r.outcomes}")
        return c.verdict()


def _passes(c: Checks, r: Run) -> None:
    c.expect(r.outcomes.get("passed") == 1, f"the right answer passes ({r.outcomes})")


def _finite_cost(c: Checks, r: Run) -> None:
    _passes(c, r)
    costs = [x.get("cost_usd") for x in r.last_records()]
    c.expect(all(x is None or (isinstance(x, (int, float)) and x == x and abs(x) < 1e300) for x in costs),
             f"a finite cost or unknown ({costs})")
    summary = r.root / "reports" / "summary.json"
    if summary.exists():
        import json

        try:
            json.loads(summary.read_text(), parse_constant=lambda n: (_ for _ in ()).throw(ValueError(n)))
        except ValueError as exc:
            c.expect(False, f"summary.json strict JSON ({exc})")


def _never(c: Checks, r: Run) -> None:
    c.expect(False, "a usage error: no run can be right with this value")


def _infra_not_model(c: Checks, r: Run) -> None:
    recs = r.last_records()
    c.expect(recs and all(x["infra_error"] and x["failure_mode"] is None for x in recs),
             "no item charged to the model")


_absurd_toml("in01", "timeout_s = 1e300 (overflows a thread wait)", "timeout_s = 1e300", "timeout_s", _passes)
_absurd_toml("in02", "rpm = 1e-300 (one request per 1e300 minutes)", "rpm = 1e-300", "rpm", _never)
_absurd_toml("in08", "pricing input_per_mtok = 1e308 (cost overflows to inf)",
             "pricing = { input_per_mtok = 1e308, output_per_mtok = 1e308 }", "pricing", _finite_cost)
_absurd_toml("in24", "temperature = -1", "temperature = -1.0", "temperature", _never)
_absurd_toml("in25", "timeout_s = 1e-300 (no request can finish)", "timeout_s = 1e-300", "timeout_s",
             _infra_not_model)
_absurd_toml("in26", "max_tokens = 10**15 (absurd completion cap)", "max_tokens = 1000000000000000", "max_tokens",
             _passes)
_absurd_toml("in27", "context_window = 10**15 on an openai model", "context_window = 1000000000000000",
             "context_window", _passes)
_absurd_toml("in28", "rpm = 1e12 (no spacing at all)", "rpm = 1e12", "rpm", _passes)
_absurd_toml("in29", "pricing hourly_usd = 1e308", "pricing = { hourly_usd = 1e308 }", "pricing", _finite_cost)
