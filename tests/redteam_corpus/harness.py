"""The red-team corpus's machinery: scratch projects, real pytest runs, and the checks every run must pass.

A scenario builds a scratch project (a copy of the cases it needs and a models.toml), points it at
tests/fakeserver.py on loopback (in this process, so each request can be scripted) and runs pytest
in a subprocess exactly as a user would (`python -m pytest`, this checkout first on the path); or it
runs a command (`python -m pytest_agentfloor ...`) on a file. It then says whether the outcome is
right under issue 27's rules and what it observed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "cases"
#: what no file or terminal line may ever hold: raw escape and bidi-override characters, lone surrogates
RAW_HOSTILE = re.compile("[\x1b\u202e\ud800-\udfff]")
#: output larger than this for a handful of items is a flood
MAX_OUTPUT = 400_000


@dataclass
class Scenario:
    sid: str
    point: str  # the point ("1".."14") or "hold" (the "What must hold" list) it tries
    area: str
    title: str
    how: str
    right: str
    fn: Callable[[], "Verdict"]


@dataclass
class Verdict:
    right: bool
    observed: str


SCENARIOS: list[Scenario] = []


def scenario(sid: str, point: str, area: str, title: str, how: str, right: str) -> Callable[[Callable[[], Verdict]],
                                                                                          Callable[[], Verdict]]:
    def deco(fn: Callable[[], Verdict]) -> Callable[[], Verdict]:
        if any(s.sid == sid for s in SCENARIOS):
            raise ValueError(f"scenario id {sid} given twice")
        SCENARIOS.append(Scenario(sid, point, area, title, how, right, fn))
        return fn
    return deco


class Checks:
    """Expectations of one scenario: every one that does not hold is named in the observation."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.notes: list[str] = []

    def expect(self, ok: Any, what: str) -> bool:
        if not ok:
            self.failed.append(what)
        return bool(ok)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def verdict(self) -> Verdict:
        text = "; ".join(self.notes)
        if self.failed:
            return Verdict(False, "NOT: " + " | ".join(self.failed) + (f" ({text})" if text else ""))
        return Verdict(True, text or "as expected")


# -- runs ------------------------------------------------------------------------------------------
#: the address space one run may take: a run that reads a device or a flood without bound is stopped here,
#: not by the machine's OOM killer (the machine is shared)
MEMORY_LIMIT = 6 * 1024 ** 3


def _limit_memory() -> None:
    """In the child before exec: the memory bound, and SIGINT back to its default (a corpus started in the
    background inherits it ignored, and pytest would then never see the Ctrl-C a scenario sends)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "OPENAI_", "OLLAMA_")) and k not in ("PYTHONPATH", "COVERAGE_PROCESS_START")}
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(k, None)
    # AGENTFLOOR_CORPUS_CODE: score another copy of the package (e.g. an export of main) with this corpus
    env["PYTHONPATH"] = os.environ.get("AGENTFLOOR_CORPUS_CODE") or str(REPO)
    env["AGENTFLOOR_LOCAL_THREADS"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["COLUMNS"] = "200"
    env["MALLOC_ARENA_MAX"] = "4"  # so the address-space limit measures the heap, not per-thread arenas
    env.update(extra or {})
    return env


@dataclass
class Run:
    root: Path
    argv: list[str]
    ret: int | None
    out: str
    err: str
    elapsed: float
    report_dir: str = "reports"

    @property
    def text(self) -> str:
        return self.out + "\n" + self.err

    @property
    def outcomes(self) -> dict[str, int]:
        """pytest's summary line as counts (passed, failed, errors, skipped, deselected, ...)."""
        lines = [ln for ln in self.out.splitlines() if re.search(r"\d+ (passed|failed|error|skipped|deselected|"
                                                                  r"no tests ran)", ln)]
        counts: dict[str, int] = {}
        if lines:
            for n, word in re.findall(r"(\d+) (\w+)", lines[-1]):
                word = {"error": "errors", "warning": "warnings"}.get(word, word)
                counts[word] = int(n)
        return counts

    def session_dirs(self) -> list[Path]:
        base = self.root / self.report_dir / "sessions"
        return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []

    def records(self) -> list[dict[str, Any]]:
        """Every record of every session this project ran (strict JSON: NaN or Infinity is a defect)."""
        out = []
        for d in self.session_dirs():
            f = d / "runs.jsonl"
            if f.exists():
                for line in f.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
                    if line.strip() and line.endswith("\n"):  # a torn last line is no record (readers skip it)
                        try:
                            out.append(json.loads(line, parse_constant=_no_constant))
                        except ValueError as exc:
                            out.append({"_bad_line": str(exc)[:200]})
        return out

    def last_records(self) -> list[dict[str, Any]]:
        dirs = self.session_dirs()
        if not dirs:
            return []
        newest = max(dirs, key=lambda d: d.stat().st_mtime)
        f = newest / "runs.jsonl"
        return [json.loads(x) for x in f.read_text().splitlines() if x.strip()] if f.exists() else []

    def session(self, published: bool = False) -> dict[str, Any] | None:
        if published:
            p = self.root / self.report_dir / "session.json"
            return json.loads(p.read_text()) if p.exists() else None
        dirs = [d for d in self.session_dirs() if (d / "session.json").exists()]
        if not dirs:
            return None
        newest = max(dirs, key=lambda d: (d / "session.json").stat().st_mtime)
        return json.loads((newest / "session.json").read_text())


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-JSON constant {name}")


_ROOT: Path | None = None


def scratch_root() -> Path:
    global _ROOT
    if _ROOT is None:
        _ROOT = Path(tempfile.mkdtemp(prefix="agentfloor-redteam-"))
    return _ROOT


class Project:
    """A scratch user project: the named case files (paths under cases/) and a models.toml."""

    def __init__(self, name: str, cases: Iterable[str] = ("tier_A/A1.toml",)):
        self.root = scratch_root() / re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        if self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True)
        for rel in cases:
            src = CASES / rel
            dst = self.root / "cases" / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                shutil.copy(src, dst)
                if rel.startswith("callsite/"):  # a site table needs its installations
                    inst = CASES / "callsite" / "installations"
                    if inst.exists() and not (self.root / "cases" / "callsite" / "installations").exists():
                        shutil.copytree(inst, self.root / "cases" / "callsite" / "installations")

    def write(self, rel: str, text: str | bytes) -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8", errors="surrogatepass")
        return p

    def models(self, text: str) -> None:
        self.write("models.toml", text)

    def pytest(self, *args: str, env: dict[str, str] | None = None, timeout: float = 240,
               report_dir: str = "reports") -> Run:
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
        return self._run(argv, env, timeout, report_dir)

    def cli(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Run:
        return self._run([sys.executable, "-m", "pytest_agentfloor", *args], env, timeout, "reports")

    def _run(self, argv: list[str], env: dict[str, str] | None, timeout: float, report_dir: str) -> Run:
        t0 = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=self.root, env=_env(env), capture_output=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL, preexec_fn=_limit_memory)
            ret, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            ret, out, err = None, exc.stdout or b"", (exc.stderr or b"") + b"\n[corpus: timed out]"
        return Run(self.root, argv, ret, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                   time.monotonic() - t0, report_dir)

    def popen(self, *args: str, env: dict[str, str] | None = None, **kw: Any) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
        return subprocess.Popen(argv, cwd=self.root, env=_env(env), stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=_limit_memory, **kw)

    def files_text(self) -> dict[str, str]:
        """Every file under the project but the cases (what the session wrote), as text."""
        out = {}
        for p in self.root.rglob("*"):
            if p.is_file() and "cases" not in p.relative_to(self.root).parts[:1]:
                out[str(p.relative_to(self.root))] = p.read_bytes().decode("utf-8", "replace")
        return out


def wait_for(cond: Callable[[], bool], timeout: float, every: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(every)
    return cond()


def count_lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_bytes().splitlines() if line.strip())
    except OSError:
        return 0


def kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


# -- models.toml -----------------------------------------------------------------------------------
def model_toml(name: str, url: str, provider: str = "openai", **extra: Any) -> str:
    lines = [f'[models."{name}"]', f'provider = "{provider}"', 'model = "tiny"', f"base_url = {json.dumps(url)}"]
    extra.setdefault("retries", 0)
    extra.setdefault("timeout_s", 20)
    for k, v in extra.items():
        if isinstance(v, str) and v.startswith("{") and v.endswith("}"):
            lines.append(f"{k} = {v}")  # an inline table, written as is
        else:
            lines.append(f"{k} = {json.dumps(v)}")
    return "\n".join(lines) + "\n"


def url_for(server: Any, provider: str) -> str:
    return server.openai_url if provider in ("openai", "local") else server.url


# -- invariants every benchmark run must keep ---------------------------------------------------------
def sane(c: Checks, run: Run, *, traceback_ok: bool = False, max_out: int = MAX_OUTPUT) -> None:
    """No traceback or INTERNALERROR, bounded output, no raw escape characters or lone surrogates in it,
    and strict JSON in every record (no NaN/Infinity, which browsers' JSON.parse refuses)."""
    if run.ret is None:
        c.expect(False, f"the run ended within its time limit ({run.elapsed:.0f}s)")
        return
    c.expect(run.ret >= 0, f"the process ended by itself (killed by signal {-run.ret})")
    text = run.text
    if not traceback_ok:
        c.expect("Traceback (most recent call last)" not in text, "no Python traceback in the output")
        c.expect("INTERNALERROR" not in text, "no INTERNALERROR")
    c.expect(len(text) <= max_out, f"terminal output bounded ({len(text):,} chars)")
    c.expect(not RAW_HOSTILE.search(text), "no raw ESC/RLO/surrogate in the output")
    bad = [r["_bad_line"] for r in run.records() if "_bad_line" in r]
    c.expect(not bad, f"every record is strict JSON ({bad[:1]})")


def one_record_per_item(c: Checks, run: Run) -> list[dict[str, Any]]:
    """Every item that ran (passed, failed or errored) has exactly one record in its session."""
    recs = run.last_records()
    o = run.outcomes
    ran = o.get("passed", 0) + o.get("failed", 0) + o.get("errors", 0)
    c.expect(len(recs) == ran, f"one record per item that ran ({len(recs)} records, {ran} items)")
    ids = [r.get("nodeid") for r in recs]
    c.expect(len(ids) == len(set(ids)), "no item recorded twice")
    return recs


def no_secret(c: Checks, project: Project, run: Run | None, *secrets: str) -> None:
    texts = project.files_text()
    if run is not None:
        texts["<terminal>"] = run.text
    leaked = sorted({name for name, t in texts.items() for s in secrets if s in t and name != "models.toml"})
    c.expect(not leaked, f"no secret written ({leaked[:4]})")


def usage_error(c: Checks, run: Run, *names: str, max_lines: int = 6) -> None:
    """A bad input: exit status 4 (or 2 for a command), a short message naming what was wrong, no traceback."""
    c.expect(run.ret in (2, 4), f"a usage error (exit {run.ret})")
    err = run.err.strip() or run.out.strip()
    lines = [ln for ln in run.err.splitlines() if ln.strip()]
    c.expect("Traceback" not in run.text, "no traceback")
    c.expect(len(lines) <= max_lines, f"a short error ({len(lines)} lines)")
    for n in names:
        c.expect(n in run.text, f"the error names {n!r}")
    c.note(err.splitlines()[-1][:160] if err else "(no message)")
