"""Kills and resumes: SIGKILL, SIGINT, SIGTERM, a closed stdout pipe, a killed xdist worker, with and
without xdist; --agentfloor-resume across selections.

Right (issue 27): a session is COMPLETE only if every selected item ran and the process ended
normally; a crashed or killed session never replaces the published files of a complete one; every
item that ran has exactly one record, and a resume picks up exactly what has no result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.fakeserver import FakeModelServer

from ..harness import (Checks, Project, Run, Verdict, count_lines, kill_group, model_toml, sane, scenario, wait_for)
from ..oracle import Oracle

#: A1 alone is the whole case set: 5 variants x 6 instances = 30 items, COMPLETE when all run
ALL = ("cases", "--model", "m", "--no-probe")


class SlowOracle(Oracle):
    def __init__(self) -> None:
        super().__init__()
        self.delay = 0.0

    def __call__(self, body: Any) -> Any:
        if self.delay:
            time.sleep(self.delay)
        return super().__call__(body)


def complete_first(p: Project, srv: FakeModelServer, *args: str) -> tuple[Run, dict[str, Any]]:
    """A complete session published first (every item of the case set)."""
    r = p.pytest(*ALL, *args)
    pub = p.root / "reports" / "session.json"
    return r, json.loads(pub.read_text()) if pub.exists() else {}


def sessions(p: Project) -> dict[str, dict[str, Any] | None]:
    out = {}
    base = p.root / "reports" / "sessions"
    for d in sorted(base.iterdir()) if base.is_dir() else []:
        f = d / "session.json"
        out[d.name] = json.loads(f.read_text()) if f.exists() else None
    return out


def killed_checks(c: Checks, p: Project, first: dict[str, Any], killed_dirs: list[str]) -> None:
    """The killed session is not COMPLETE (anywhere it says so), the published one is the first's, and
    `report` over the killed session's records says PARTIAL."""
    pub = json.loads((p.root / "reports" / "session.json").read_text())
    c.expect(first.get("complete"), f"the first session was complete ({first.get('partial_reasons')})")
    c.expect(pub.get("session_id") == first.get("session_id"), "the complete session stays published")
    summary = p.root / "reports" / "summary.json"
    if summary.exists():
        run = json.loads(summary.read_text()).get("run") or {}
        c.expect(run.get("session_id") in (None, first.get("session_id")), "summary.json is the complete session's")
    for name in killed_dirs:
        s = sessions(p).get(name)
        c.expect(s is None or not s.get("complete"), f"killed session {name} not COMPLETE")
        runs = p.root / "reports" / "sessions" / name / "runs.jsonl"
        if runs.exists():
            out = p.root / f"rep-{name}"
            rep = p.cli("report", str(runs), "--out", str(out), "--n-boot", "100")
            c.expect(rep.ret == 0 and "Traceback" not in rep.text, f"report on the killed records (exit {rep.ret})")
            if (out / "summary.json").exists():
                run = json.loads((out / "summary.json").read_text()).get("run") or {}
                c.expect(run.get("complete") is False, f"report says PARTIAL ({run.get('complete')})")
            recs = [json.loads(x) for x in runs.read_text().splitlines() if x.strip().endswith("}")]
            ids = [x["nodeid"] for x in recs]
            c.expect(len(ids) == len(set(ids)), "no item recorded twice")
            c.note(f"{len(recs)} records before the kill")


def _kill_case(sid: str, title: str, how: str, sig: int, xdist: bool, *, worker: bool = False) -> None:
    @scenario(sid, "10", "kill", title, how,
              "the killed session is never COMPLETE, never replaces the published complete session; report on "
              "its records says PARTIAL; no item recorded twice")
    def run() -> Verdict:
        p = Project(sid)
        oracle = SlowOracle()
        with FakeModelServer(oracle) as srv:
            p.models(model_toml("m", srv.openai_url))
            extra = ("-n", "2") if xdist else ("-p", "no:xdist")
            _, first = complete_first(p, srv, *extra)
            oracle.delay = 0.25
            before = set(sessions(p))
            proc = p.popen(*ALL, *extra, "--agentfloor-concurrency", "1", stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

            def started() -> bool:
                new = set(sessions(p)) - before
                return any(count_lines(p.root / "reports" / "sessions" / n / "runs.jsonl") >= 4 for n in new)
            wait_for(started, 90)
            if worker:
                kids = _children(proc.pid)
                victim = kids[-1] if kids else proc.pid
                os.kill(victim, signal.SIGKILL)
                try:
                    proc.wait(timeout=180)
                except subprocess.TimeoutExpired:
                    kill_group(proc)
            elif sig == signal.SIGKILL:
                kill_group(proc, sig)
                proc.wait(timeout=30)
            else:
                os.kill(proc.pid, sig)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    kill_group(proc)
                    proc.wait()
        c = Checks()
        killed = sorted(set(sessions(p)) - before)
        c.expect(killed, "the killed session has a directory")
        killed_checks(c, p, first, killed)
        c.note(f"exit {proc.returncode}")
        return c.verdict()


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, ValueError, IndexError):
                pass
    return sorted(out)


_kill_case("k01", "SIGKILL mid-run", "a complete session first; then the same run (0.25 s a request), SIGKILL to its "
           "process group after 4 records", signal.SIGKILL, False)
_kill_case("k02", "SIGKILL mid-run under -n 2", "as k01 with -n 2", signal.SIGKILL, True)
_kill_case("k03", "SIGINT mid-run", "as k01, SIGINT to the pytest process", signal.SIGINT, False)
_kill_case("k04", "SIGINT mid-run under -n 2", "as k03 with -n 2", signal.SIGINT, True)
_kill_case("k07", "SIGTERM mid-run", "as k01, SIGTERM to the pytest process", signal.SIGTERM, False)
_kill_case("k21", "SIGTERM mid-run under -n 2", "as k07 with -n 2", signal.SIGTERM, True)
_kill_case("k08", "one xdist worker SIGKILLed", "as k02, but SIGKILL to one worker process only", signal.SIGKILL, True,
           worker=True)


def _pipe_case(sid: str, xdist: bool) -> None:
    @scenario(sid, "10", "kill", f"stdout closed after 3 lines{' under -n 2' if xdist else ''}",
              f"a complete session first; then `pytest cases --model m {'-n 2 ' if xdist else ''}-v | head` (closed after 3 items)",
              "the session ends PARTIAL (not COMPLETE) and does not replace the published complete one")
    def run() -> Verdict:
        p = Project(sid)
        oracle = SlowOracle()
        with FakeModelServer(oracle) as srv:
            p.models(model_toml("m", srv.openai_url))
            extra = ("-n", "2") if xdist else ("-p", "no:xdist")
            _, first = complete_first(p, srv, *extra)
            oracle.delay = 0.05
            before = set(sessions(p))
            proc = p.popen(*ALL, *extra, "-v", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert proc.stdout is not None
            seen = 0
            while seen < 3:  # three item lines, then the reader goes away (as `| head` does)
                line = proc.stdout.readline()
                if not line:
                    break
                seen += b"::" in line
            proc.stdout.close()
            try:
                proc.wait(timeout=240)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                proc.wait()
        c = Checks()
        killed = sorted(set(sessions(p)) - before)
        c.expect(killed, "the session has a directory")
        killed_checks(c, p, first, killed)
        c.note(f"exit {proc.returncode}")
        return c.verdict()


_pipe_case("k05", False)
_pipe_case("k06", True)


# -- resume ------------------------------------------------------------------------------------------------
def _resume_case(sid: str, title: str, first_args: tuple[str, ...], second_args: tuple[str, ...], point: str = "13",
                 *, kill_first: bool = False, change_case: bool = False, torn: bool = False,
                 expect_resumed: int | None = None, expect_ran: int | None = None,
                 expect_complete: bool | None = True) -> None:
    @scenario(sid, point, "resume", title,
              f"pytest {' '.join(first_args)}; then pytest {' '.join(second_args)}",
              "the resumed session runs exactly what has no result (within its selection), reports one record per "
              "item, and is COMPLETE only when the whole case set has a result")
    def run() -> Verdict:
        p = Project(sid)
        oracle = SlowOracle()
        with FakeModelServer(oracle) as srv:
            p.models(model_toml("m", srv.openai_url))
            if kill_first:
                oracle.delay = 0.2
                proc = p.popen(*first_args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                wait_for(lambda: any(count_lines(f) >= 6 for f in (p.root / "reports").rglob("runs.jsonl")), 90)
                kill_group(proc)
                proc.wait()
                oracle.delay = 0.0
                r1 = None
            else:
                r1 = p.pytest(*first_args)
            if change_case:
                f = p.root / "cases" / "tier_A" / "A1.toml"
                f.write_text(f.read_text().replace("Answer with a number only:", "Answer with a number only, please:"))
            if torn:
                for f in (p.root / "reports").rglob("runs.jsonl"):
                    with f.open("ab") as fh:
                        fh.write(b'{"model": "m", "task": "A1", "varia')
            r2 = p.pytest(*second_args)
        c = Checks()
        if r1 is not None:
            sane(c, r1)
        sane(c, r2)
        o = r2.outcomes
        ran = o.get("passed", 0) + o.get("failed", 0) + o.get("errors", 0)
        if expect_ran is not None:
            c.expect(ran == expect_ran, f"{expect_ran} item(s) ran ({o})")
        m = __import__("re").search(r"resumed (\d+) item", r2.text)
        resumed = int(m.group(1)) if m else 0
        if expect_resumed is not None:
            c.expect(resumed == expect_resumed, f"{expect_resumed} resumed ({resumed})")
        latest = p.root / "reports" / "latest" / "runs.jsonl"
        sess = json.loads((latest.parent / "session.json").read_text()) if (latest.parent / "session.json").exists() \
            else None
        if sess is not None and expect_complete is not None:
            c.expect(bool(sess.get("complete")) == expect_complete,
                     f"complete = {expect_complete} ({sess.get('complete')}, {sess.get('partial_reasons')})")
        rep = p.cli("report", str(latest), "--out", "rep", "--n-boot", "100")
        c.expect(rep.ret == 0 and "Traceback" not in rep.text, f"report exit {rep.ret}")
        summ = p.root / "rep" / "summary.json"
        if summ.exists():
            data = json.loads(summ.read_text())
            n = sum(1 for _ in data.get("records", [])) if isinstance(data.get("records"), list) else None
            if n is not None and expect_ran is not None and expect_resumed is not None:
                c.expect(n == expect_ran + expect_resumed, f"report counts {expect_ran + expect_resumed} runs ({n})")
        c.note(f"ran {ran}, resumed {resumed}, {o}")
        return c.verdict()


_resume_case("k09", "resume after SIGKILL completes the case set", ALL, (*ALL, "--agentfloor-resume"),
             kill_first=True, expect_complete=True)
_resume_case("k11", "resume across selections: -k v0, then all", (*ALL, "-k", "v0"), (*ALL, "--agentfloor-resume"),
             expect_resumed=6, expect_ran=24, expect_complete=True)
_resume_case("k12", "resume after the case file changed", ALL, (*ALL, "--agentfloor-resume"),
             change_case=True, expect_resumed=0, expect_ran=30, expect_complete=True)
_resume_case("k13", "resume under -n 2 after -k v1", (*ALL, "-k", "v1", "-n", "2"),
             (*ALL, "--agentfloor-resume", "-n", "2"), expect_resumed=6, expect_ran=24, expect_complete=True)
_resume_case("k10", "resume over a torn last line", ALL, (*ALL, "--agentfloor-resume"), torn=True, expect_resumed=30,
             expect_ran=0, expect_complete=True)
_resume_case("k14", "resume narrower than the first run (-k v2)", ALL, (*ALL, "--agentfloor-resume", "-k", "v2"),
             expect_resumed=6, expect_ran=0, expect_complete=False)
_resume_case("k18", "resume with more runs (--agentfloor-runs 2)", (*ALL, "--instances", "i0"),
             (*ALL, "--instances", "i0", "--agentfloor-runs", "2", "--agentfloor-resume"), expect_resumed=5,
             expect_ran=5, expect_complete=False)
_resume_case("k22", "resume with another model config (--agentfloor-system-prompt structured)", ALL, (*ALL, "--agentfloor-resume",
                                                                                   "--agentfloor-system-prompt",
                                                                                   "structured"),
             expect_resumed=0, expect_ran=30, expect_complete=True)


@scenario("k16", "10", "kill", "-x stops at the first failure",
          "pytest cases --model m -x (v1 answers wrongly in A1 i1..)",
          "the session is PARTIAL (stopped by -x) and does not replace a complete one")
def k16() -> Verdict:
    p = Project("k16")
    with FakeModelServer(SlowOracle()) as srv:
        p.models(model_toml("m", srv.openai_url))
        _, first = complete_first(p, srv)
        before = set(sessions(p))
        r = p.pytest(*ALL, "-x")
    c = Checks()
    sane(c, r)
    killed_checks(c, p, first, sorted(set(sessions(p)) - before))
    return c.verdict()


@scenario("k20", "10", "kill", "--max-cost stops an xdist run",
          "model priced 1000 USD/Mtok; pytest cases --model m -n 2 --max-cost 0.05",
          "PARTIAL (stopped by the cap), never COMPLETE, the complete session stays published")
def k20() -> Verdict:
    p = Project("k20")
    with FakeModelServer(SlowOracle()) as srv:
        p.models(model_toml("m", srv.openai_url) + "pricing = { input_per_mtok = 1000.0, output_per_mtok = 1000.0 }\n")
        _, first = complete_first(p, srv, "-n", "2")
        before = set(sessions(p))
        r = p.pytest(*ALL, "-n", "2", "--max-cost", "0.05")
    c = Checks()
    sane(c, r)
    killed_checks(c, p, first, sorted(set(sessions(p)) - before))
    c.note(str(r.outcomes))
    return c.verdict()
