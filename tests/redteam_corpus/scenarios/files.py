"""Files: duplicate records across report/compare/gate/regrade, odd report dirs, a corrupt judge cache,
commands given files they cannot use.

Right (issue 27): one documented rule for a run recorded twice, applied (and said) by every command,
or a refusal; a bad file or argument is a short error naming it (exit 2 for a command, 4 for pytest);
nothing crashes with a traceback, nothing is lost silently.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

from tests.fakeserver import FakeModelServer, reply

from ..harness import Checks, Project, Run, Verdict, model_toml, sane, scenario, usage_error
from .graders import GOOD_ANSWER, judge_run

_LOCK = threading.Lock()
_RUNS: dict[str, Path] = {}


def oracle_runs(name: str = "tier_A") -> Path:
    """A real runs.jsonl of the oracle over tier A (150 records), made once per corpus run."""
    with _LOCK:
        if name not in _RUNS:
            p = Project(f"_runs_{name}", (name,))
            p.pytest("cases", "--model", "oracle", "--agentfloor-report", "none")
            _RUNS[name] = next((p.root / "reports" / "sessions").glob("*/runs.jsonl"))
        return _RUNS[name]


def records_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def write_jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def cmd_error(c: Checks, r: Run, *names: str) -> None:
    usage_error(c, r, *names, max_lines=8)  # the error and at most the few bad lines it names


def _summary_tcr(path: Path) -> Any:
    data = json.loads(path.read_text())
    return data.get("tcr") or data.get("tables") or data


# -- duplicates -------------------------------------------------------------------------------------------------
@scenario("f01", "hold", "files", "report of the same runs.jsonl given twice",
          "python -m pytest_agentfloor report runs.jsonl runs.jsonl --out out",
          "each run counted once, and the command says it applied the duplicate rule")
def f01() -> Verdict:
    src = oracle_runs()
    p = Project("f01", ())
    shutil.copy(src, p.root / "runs.jsonl")
    r = p.cli("report", "runs.jsonl", "runs.jsonl", "--out", "out", "--n-boot", "100")
    once = p.cli("report", "runs.jsonl", "--out", "once", "--n-boot", "100")
    c = Checks()
    sane(c, r)
    c.expect(r.ret == 0, f"exit 0 ({r.ret})")
    c.expect("repeated run record" in r.text or "duplicate" in r.text.lower(), "the rule is named")
    a, b = (p.root / "out" / "report.md"), (p.root / "once" / "report.md")
    if a.exists() and b.exists():
        strip = lambda t: [ln for ln in t.splitlines() if not ln.startswith("**Run:**") and ln.strip()]  # noqa: E731
        c.expect(strip(a.read_text()) == strip(b.read_text()), "the same report as from one copy")
    return c.verdict()


def _conflict(p: Project) -> tuple[Path, Path]:
    recs = records_of(oracle_runs())
    first = p.root / "a" / "runs.jsonl"
    later = p.root / "b" / "runs.jsonl"
    write_jsonl(first, recs)
    flipped = [dict(r, passed=False, failure_mode="F5b", first_unmet="A") for r in recs if r["variant"] == "v0"]
    write_jsonl(later, flipped)
    return first, later


@scenario("f02", "hold", "files", "report and compare over the same conflicting records",
          "a/runs.jsonl (all passed) then b/runs.jsonl (the v0 runs again, failed): report a b; compare a b",
          "both commands apply the same documented rule and say so; the report's TCR is the rule's")
def f02() -> Verdict:
    p = Project("f02", ())
    a, b = _conflict(p)
    r = p.cli("report", str(a), str(b), "--out", "out", "--n-boot", "100")
    cmp = p.cli("compare", str(a), str(b), "--n-boot", "100")
    c = Checks()
    sane(c, r)
    sane(c, cmp)
    c.expect(r.ret == 0, f"report exit {r.ret}")
    c.expect("repeated run record" in r.text, "report names the rule")
    c.expect(cmp.ret in (0, 1, 75), f"compare exit {cmp.ret}")
    csv = p.root / "out" / "tcr.csv"
    if csv.exists():
        c.expect("80" in csv.read_text() or "0.8" in csv.read_text(), "TCR 80% (the later, failed v0 runs win)")
    return c.verdict()


@scenario("f03", "hold", "files", "compare: the candidate holds one run twice with different outcomes",
          "compare base.jsonl cand.jsonl where cand.jsonl has each v0 run twice (pass, then fail)",
          "the rule is applied and named (or the file refused); no traceback")
def f03() -> Verdict:
    p = Project("f03", ())
    recs = records_of(oracle_runs())
    base = write_jsonl(p.root / "base.jsonl", recs)
    cand = write_jsonl(p.root / "cand.jsonl", recs + [dict(r, passed=False) for r in recs if r["variant"] == "v0"])
    r = p.cli("compare", str(base), str(cand), "--n-boot", "100")
    c = Checks()
    sane(c, r)
    c.expect("repeated run record" in r.text or r.ret == 2, "the rule named, or a refusal")
    return c.verdict()


@scenario("f04", "hold", "files", "the gate's baseline holds duplicates",
          "pytest cases --model oracle --agentfloor-baseline base.jsonl, base.jsonl with every run twice "
          "(first failed, then passed)",
          "the gate applies the rule and says so (or refuses the baseline with a short error)")
def f04() -> Verdict:
    p = Project("f04", ("tier_A",))
    recs = records_of(oracle_runs())
    write_jsonl(p.root / "base.jsonl", [dict(r, passed=False) for r in recs] + recs)
    r = p.pytest("cases", "--model", "oracle", "--agentfloor-baseline", "base.jsonl")
    c = Checks()
    sane(c, r)
    c.expect("repeated run record" in r.text or r.ret == 4, f"the rule named or a refusal (exit {r.ret})")
    return c.verdict()


@scenario("f05", "hold", "files", "regrade over a file holding each run twice",
          "python -m pytest_agentfloor regrade twice.jsonl --cases cases --write out.jsonl",
          "one re-graded record per run (the rule applied and named) or a refusal; no traceback")
def f05() -> Verdict:
    p = Project("f05", ("tier_A",))
    recs = records_of(oracle_runs())
    write_jsonl(p.root / "twice.jsonl", recs + recs)
    r = p.cli("regrade", "twice.jsonl", "--cases", "cases", "--write", "out.jsonl")
    c = Checks()
    sane(c, r)
    out = p.root / "out.jsonl"
    if r.ret == 0 and out.exists():
        n = len(records_of(out))
        c.expect(n == len(recs), f"one record per run ({n} for {len(recs)})")
        c.expect("repeated run record" in r.text, "the rule named")
    else:
        c.expect(r.ret == 2, f"a refusal (exit {r.ret})")
    return c.verdict()


@scenario("f30", "hold", "files", "report over records of two protocols of the same runs",
          "a.jsonl under protocol agentfloor, b.jsonl: the same runs marked protocol tbb; report a b",
          "kept apart or refused with a short error; never one protocol's runs silently replacing the other's")
def f30() -> Verdict:
    p = Project("f30", ())
    recs = records_of(oracle_runs())
    a = write_jsonl(p.root / "a.jsonl", recs)
    b = write_jsonl(p.root / "b.jsonl", [dict(r, protocol="tbb", passed=False) for r in recs])
    r = p.cli("report", str(a), str(b), "--out", "out", "--n-boot", "100")
    c = Checks()
    sane(c, r)
    if r.ret == 0:
        c.expect("protocol" in r.text.lower(), "the mix of protocols is named")
    else:
        c.expect(r.ret == 2 and "protocol" in r.text.lower(), f"a refusal naming the protocols (exit {r.ret})")
    c.note(f"exit {r.ret}: {r.err.strip()[-160:]}")
    return c.verdict()


# -- bad files and arguments to the commands -------------------------------------------------------------------
def _cmd_case(sid: str, title: str, args: tuple[str, ...], files: dict[str, str | bytes], *names: str,
              point: str = "9") -> None:
    @scenario(sid, point, "files", title, "python -m pytest_agentfloor " + " ".join(args),
              "exit 2 with a short error naming the file or option; no traceback")
    def run() -> Verdict:
        p = Project(sid, ("tier_A",) if args[0] == "regrade" else ())
        for rel, text in files.items():
            if text == "<dir>":
                (p.root / rel).mkdir(parents=True, exist_ok=True)
            elif text == "<runs>":
                (p.root / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(oracle_runs(), p.root / rel)
            else:
                p.write(rel, text)
        r = p.cli(*args)
        c = Checks()
        cmd_error(c, r, *names)
        return c.verdict()


_cmd_case("f06", "report on an empty file", ("report", "empty.jsonl"), {"empty.jsonl": ""}, "empty.jsonl")
_cmd_case("f07", "report on binary garbage", ("report", "bin.jsonl"), {"bin.jsonl": bytes(range(256)) * 40},
          "bin.jsonl")
_cmd_case("f08", "report on a directory", ("report", "adir"), {"adir": "<dir>"}, "adir")
_cmd_case("f09", "report --out onto an existing file", ("report", "runs.jsonl", "--out", "afile"),
          {"runs.jsonl": "<runs>", "afile": "x"}, "afile")
_cmd_case("f11", "view on a missing file", ("view", "nope.jsonl"), {}, "nope.jsonl")
_cmd_case("f12", "compare with one missing file", ("compare", "runs.jsonl", "nope.jsonl"), {"runs.jsonl": "<runs>"},
          "nope.jsonl")
_cmd_case("f13", "regrade of records without trajectories", ("regrade", "r.jsonl", "--cases", "cases"),
          {"r.jsonl": json.dumps({"model": "m", "task": "A1", "tier": "A", "variant": "v0", "instance": "i0",
                                  "run": 0, "passed": True}) + "\n"}, "r.jsonl")
_cmd_case("f31", "report on records of an unknown tier only",
          ("report", "r.jsonl"), {"r.jsonl": json.dumps({"model": "m", "task": "Z1", "tier": "Z", "variant": "v0",
                                                         "instance": "i0", "run": 0, "passed": True}) + "\n"},
          "r.jsonl")
_cmd_case("f33", "compare --viewer into a missing directory", ("compare", "runs.jsonl", "runs.jsonl", "--viewer",
                                                               "no/such/dir/v.html"), {"runs.jsonl": "<runs>"},
          "--viewer")


@scenario("f36", "9", "files", "regrade --write into a missing directory",
          "python -m pytest_agentfloor regrade runs.jsonl --cases cases --write no/such/out.jsonl",
          "the directory made and every record written, or exit 2 naming the path; no traceback")
def f36() -> Verdict:
    p = Project("f36", ("tier_A",))
    shutil.copy(oracle_runs(), p.root / "runs.jsonl")
    n = len(records_of(p.root / "runs.jsonl"))
    r = p.cli("regrade", "runs.jsonl", "--cases", "cases", "--write", "no/such/out.jsonl")
    c = Checks()
    sane(c, r)
    out = p.root / "no" / "such" / "out.jsonl"
    if r.ret == 0:
        c.expect(out.exists() and len(records_of(out)) == n, "every record written")
    else:
        c.expect(r.ret == 2 and "no/such" in r.text, f"a short error naming the path (exit {r.ret})")
    return c.verdict()


_cmd_case("f39", "compare --n-boot 10**12", ("compare", "runs.jsonl", "runs.jsonl", "--n-boot", "1000000000000"),
          {"runs.jsonl": "<runs>"}, "--n-boot")
_cmd_case("f58", "compare --changed -5", ("compare", "runs.jsonl", "runs.jsonl", "--changed", "-5"),
          {"runs.jsonl": "<runs>"}, "--changed")
_cmd_case("f40", "report --n-boot -5", ("report", "runs.jsonl", "--n-boot", "-5"), {"runs.jsonl": "<runs>"}, "--n-boot")
_cmd_case("f41", "report --margin nan", ("report", "runs.jsonl", "--margin", "nan"), {"runs.jsonl": "<runs>"}, "--margin")
_cmd_case("f42", "report --infra-threshold 7", ("report", "runs.jsonl", "--infra-threshold", "7"),
          {"runs.jsonl": "<runs>"}, "--infra-threshold")
_cmd_case("f43", "view --port -1 --serve", ("view", "runs.jsonl", "--serve", "--port", "-1"), {"runs.jsonl": "<runs>"},
          "--port")
_cmd_case("f44", "regrade --judge-cache bogus", ("regrade", "runs.jsonl", "--cases", "cases", "--judge-cache", "bogus"),
          {"runs.jsonl": "<runs>"}, "--judge-cache")
_cmd_case("f45", "compare --gate-floor 'A>=abc'", ("compare", "runs.jsonl", "runs.jsonl", "--gate-floor", "A>=abc"),
          {"runs.jsonl": "<runs>"}, "A>=abc")


@scenario("f14", "9", "files", "report over records with wrong field types",
          "report r.jsonl where 40 of 150 records have run '0', passed 'yes' or tier 7",
          "the good records reported; the bad ones skipped, each kind named (a few, then a count); exit 0")
def f14() -> Verdict:
    p = Project("f14", ())
    recs = records_of(oracle_runs())
    for i, r in enumerate(recs[:40]):
        r.update([("run", "0"), ("passed", "yes"), ("tier", 7)][i % 3:i % 3 + 1])
    write_jsonl(p.root / "r.jsonl", recs)
    r = p.cli("report", "r.jsonl", "--out", "out", "--n-boot", "100")
    c = Checks()
    sane(c, r)
    c.expect(r.ret == 0, f"exit 0 ({r.ret})")
    c.expect("skipped" in r.text, "the bad records are named as skipped")
    c.expect(len(r.err.splitlines()) < 15, f"a bounded note ({len(r.err.splitlines())} lines)")
    return c.verdict()


@scenario("f15", "7", "files", "report and view over a record whose model name is 100,000 characters",
          "report r.jsonl; view r.jsonl (one record's model is 'm' * 100000)",
          "exit 0, bounded terminal output, files written")
def f15() -> Verdict:
    p = Project("f15", ())
    recs = records_of(oracle_runs())
    recs[0]["model"] = "m" * 100_000
    write_jsonl(p.root / "r.jsonl", recs)
    r = p.cli("report", "r.jsonl", "--out", "out", "--n-boot", "100")
    v = p.cli("view", "r.jsonl", "--out", "v.html")
    c = Checks()
    sane(c, r, max_out=150_000)
    sane(c, v)
    c.expect(r.ret == 0 and v.ret == 0, f"exit 0 ({r.ret}, {v.ret})")
    return c.verdict()


@scenario("f35", "hold", "files", "regrade --write onto its own input",
          "python -m pytest_agentfloor regrade runs.jsonl --cases cases --write runs.jsonl",
          "refused with a short error, or every record re-graded and written (none lost)")
def f35() -> Verdict:
    p = Project("f35", ("tier_A",))
    shutil.copy(oracle_runs(), p.root / "runs.jsonl")
    n = len(records_of(p.root / "runs.jsonl"))
    r = p.cli("regrade", "runs.jsonl", "--cases", "cases", "--write", "runs.jsonl")
    c = Checks()
    sane(c, r)
    after = len(records_of(p.root / "runs.jsonl")) if (p.root / "runs.jsonl").exists() else 0
    c.expect(r.ret == 2 or after == n, f"refused, or {n} records kept ({after}, exit {r.ret})")
    return c.verdict()


@scenario("f37", "9", "files", "view over a record whose trajectory is a string",
          "view r.jsonl where one record's trajectory is 'oops' and another's turns is 5",
          "the viewer is written (the odd records shown as they are or skipped with a note); exit 0")
def f37() -> Verdict:
    p = Project("f37", ())
    recs = records_of(oracle_runs())
    recs[0]["trajectory"] = "oops"
    recs[1]["trajectory"]["turns"] = 5
    write_jsonl(p.root / "r.jsonl", recs)
    r = p.cli("view", "r.jsonl", "--out", "v.html")
    rep = p.cli("report", "r.jsonl", "--out", "out", "--n-boot", "100")
    c = Checks()
    sane(c, r)
    sane(c, rep)
    c.expect(r.ret == 0 and rep.ret == 0, f"exit 0 ({r.ret}, {rep.ret})")
    return c.verdict()


@scenario("f27", "9", "files", "a summary.json baseline holding NaN",
          "pytest cases --model oracle --agentfloor-baseline summary.json whose runs hold NaN and a string",
          "a short usage error naming the file, or the bad runs skipped with a note; no traceback")
def f27() -> Verdict:
    p = Project("f27", ("tier_A",))
    p.write("summary.json", '{"records": [{"model": NaN, "task": "A1"}], "runs": "x"}')
    r = p.pytest("cases", "--model", "oracle", "--agentfloor-baseline", "summary.json")
    c = Checks()
    c.expect("Traceback" not in r.text and "INTERNALERROR" not in r.text, "no traceback")
    c.expect(r.ret == 4 and "summary.json" in r.text, f"a usage error naming the file (exit {r.ret})")
    return c.verdict()


# -- the report dir ------------------------------------------------------------------------------------------
def _dir_case(sid: str, title: str, make: dict[str, str], *, args: tuple[str, ...] = (), usage: bool = False,
              names: tuple[str, ...] = ()) -> None:
    @scenario(sid, "9", "reportdir", title, f"{make} in the project; pytest cases --model oracle {' '.join(args)}",
              "a short usage error naming the path" if usage else
              "the session runs and publishes (or says why not) without a traceback; records kept")
    def run() -> Verdict:
        p = Project(sid)
        for rel, kind in make.items():
            target = p.root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if kind == "dir":
                target.mkdir(exist_ok=True)
            elif kind.startswith("link:"):
                target.symlink_to(kind[5:])
            else:
                target.write_text(kind)
        r = p.pytest("cases", "--model", "oracle", *args)
        c = Checks()
        if usage:
            usage_error(c, r, *names)
        else:
            sane(c, r)
            c.expect(r.ret in (0, 1), f"exit 0/1 ({r.ret})")
            recs = [x for f in p.root.rglob("sessions/*/runs.jsonl") for x in f.read_text().splitlines()]
            c.expect(len(recs) == 30, f"30 records ({len(recs)})")
        return c.verdict()


_dir_case("f16", "reports/sessions is a file", {"reports/sessions": "x"}, usage=True, names=("sessions",))
_dir_case("f17", "reports/latest is a regular file", {"reports/latest": "x"})
_dir_case("f18", "reports/latest is a directory", {"reports/latest/keep.txt": "x"})
_dir_case("f21", "reports/runs.jsonl is a directory", {"reports/runs.jsonl": "dir"}, usage=True, names=("runs.jsonl",))
_dir_case("f22", "reports/judge-cache.jsonl is a directory", {"reports/judge-cache.jsonl": "dir"}, usage=True,
          names=("judge-cache.jsonl",))
_dir_case("f29", "reports/session.json is a directory", {"reports/session.json": "dir"})
_dir_case("f46", "reports/report.html is a directory", {"reports/report.html": "dir"})
_dir_case("f47", "reports is a dangling symlink", {"reports": "link:/nonexistent/agentfloor-reports"}, usage=True,
          names=("reports",))
_dir_case("f48", "reports/sessions/<id> taken by a file named like a session",
          {"reports/sessions/20991231-235959.000-ffff": "x"})
_dir_case("f49", "a report dir whose name holds ESC and a newline", {}, args=("--agentfloor-report-dir", "rep\x1b[2Jx\ny"))
_dir_case("f50", "reports/viewer.html is a symlink to /dev/full", {"reports/viewer.html": "link:/dev/full"})


# -- the judge's cache ------------------------------------------------------------------------------------------
def _cache_case(sid: str, title: str, cache: str | bytes, *, expect_note: bool = True) -> None:
    @scenario(sid, "7", "judgecache", f"judge cache: {title}",
              f"reports/judge-cache.jsonl holds {title}; A02 v0 judged by a working judge",
              "bad lines named (a few), counted and ignored; the item judged afresh with its record; bounded output")
    def run() -> Verdict:
        verdict = reply(content=json.dumps({"reason": "it keeps the rule", "verdict": "pass"}))
        p, r = judge_run(sid, verdict, cache=cache)
        c = Checks()
        sane(c, r)
        c.expect(r.outcomes.get("passed") == 1, f"the item judged and passed ({r.outcomes})")
        if expect_note:
            c.expect("judge-cache" in r.text or "judge cache" in r.text, "the bad lines are named")
        c.expect(len(r.text) < 50_000, f"bounded output ({len(r.text):,})")
        return c.verdict()


_cache_case("f23", "binary garbage and a non-JSON line", bytes(range(1, 256)) + b"\nnot json\n")
_cache_case("f24", "an entry with a 20 MB reason", json.dumps({"key": "a" * 64, "verdict": "pass",
                                                                "reason": "r" * (20 * 1024 * 1024)}) + "\n")
_cache_case("f26", "an entry with verdict 'maybe'", json.dumps({"key": "b" * 64, "verdict": "maybe", "reason": "x"}) + "\n")
_cache_case("f51", "10,000 bad lines", "{}\n" * 10_000)
_cache_case("f52", "a line nested 100,000 deep", "[" * 100_000 + "]" * 100_000 + "\n")
_cache_case("f53", "a torn last line", json.dumps({"key": "c" * 64, "verdict": "pass", "reason": "x"})[:30])


@scenario("f54", "7", "judgecache", "judge cache entry forged for the item's own key",
          "run once to fill the cache, then replace the reason of its entries with 'ok\\x1b[2J\\ud800' (valid shape)",
          "the cached verdict is used and its reason shown escaped; reports written; no traceback")
def f54() -> Verdict:
    verdict = reply(content=json.dumps({"reason": "it keeps the rule", "verdict": "pass"}))
    p = Project("f54", ("tier_A0/A02.toml",))
    c = Checks()
    with FakeModelServer(lambda b: reply(content=GOOD_ANSWER)) as model, FakeModelServer(lambda b: verdict) as judge:
        p.models(model_toml("m", model.openai_url) + model_toml("judge", judge.openai_url))
        args = ("cases", "--model", "m", "--variants", "v0", "--instances", "i0", "--no-probe",
                "--agentfloor-judge", "judge")
        first = p.pytest(*args)
        cache = p.root / "reports" / "judge-cache.jsonl"
        c.expect(first.outcomes.get("passed") == 1 and cache.exists(), f"the cache was written ({first.outcomes})")
        if cache.exists():
            lines = [json.loads(x) for x in cache.read_text().splitlines() if x.strip()]
            cache.write_text("".join(json.dumps(dict(e, reason="ok\x1b[2J\ud800", verdict="fail")) + "\n"
                                     for e in lines))
            again = p.pytest(*args, "--agentfloor-judge-cache", "read")
            sane(c, again)
            c.expect(again.outcomes.get("failed") == 1, f"the cached verdict decides ({again.outcomes})")
    return c.verdict()
