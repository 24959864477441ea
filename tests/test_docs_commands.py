"""Every command shown in README.md and docs/*.md is executed, so the documentation cannot rot.

Commands come from fenced shell blocks (no language, bash, sh), the `run:` steps of YAML blocks and
inline code that starts with `pytest ` or `python -m pytest_agentfloor`. Blocks marked `text` are
output or synopses. Each command is classified:

- runs for real (scripted models, offline commands) in a scratch copy of the project: exit 0,
  or 1 when items fail (a measurement);
- needs a model server (any other --model): run with `--co -q` against inert endpoints, which
  checks every option, path and quote without a request; `-n N` becomes `-n 0` there;
- installs (pip) or the test suite itself (bare `pytest`): not run here; .ci/run runs both;
- other tools' commands (docs/testing.md's mutation runs): not run here.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agentfloor.config import builtin_models, load_models

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL = ("", "bash", "sh", "shell")


def _fenced(path: Path) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    lang: str | None = None
    buf, start, folded_indent = "", 0, -1
    for n, line in enumerate(path.read_text().splitlines(), 1):
        fence = re.match(r"^\s*```(\w*)", line)
        if fence:
            lang = None if lang is not None else fence.group(1)
            continue
        if lang in SHELL:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if not buf:
                start = n
            buf = f"{buf} {text}".strip()
            if buf.endswith("\\"):
                buf = buf[:-1].rstrip()
                continue
            out.append((start, re.sub(r"\s+#.*$", "", buf)))
            buf = ""
        elif lang == "yaml":
            indent = len(line) - len(line.lstrip())
            if folded_indent >= 0 and (indent > folded_indent and line.strip()):
                buf = f"{buf} {line.strip()}".strip()
                continue
            if folded_indent >= 0:
                out.append((start, buf))
                buf, folded_indent = "", -1
            run = re.match(r"^(\s*)(?:- )?run: *(.*)$", line)
            if run and run.group(2).strip() in (">", "|", ">-"):
                folded_indent, start = len(run.group(1)), n
            elif run:
                out.append((n, run.group(2).strip()))
    return out


def _inline(path: Path) -> list[tuple[int, str]]:
    out = []
    in_fence = False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for span in re.findall(r"`([^`]+)`", line):
            if re.match(r"(pytest |python -m pytest_agentfloor )", span) and not re.search(r"\b[A-Z]{2,}\b|\.\.\.|\[", span):
                out.append((n, span))
    return out


def commands() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for n, cmd in _fenced(path) + _inline(path):
            for part in cmd.split("&&"):
                found.append((f"{path.name}:{n}", part.strip()))
    return found


def classify(cmd: str) -> str:
    words = shlex.split(cmd)
    while words and re.match(r"^[A-Z_]+=", words[0]):
        words = words[1:]
    if not words or words[0] in ("set", "#!/usr/bin/env"):
        return "shell"
    if words[0] == "pip":
        return "install"
    if words[0] == "pytest" and not any(w.startswith("cases") for w in words[1:]) and "--model" not in words:
        return "suite"  # `pytest`, `pytest -n auto`, `pytest tests/...`: the plugin's own suite
    if words[0] == "pytest":
        builtin = set(builtin_models())
        models = {m for i, w in enumerate(words) if w == "--model" for m in words[i + 1].split(",")}
        return "run" if models <= builtin else "collect"
    if " ".join(words[:3]) == "python -m pytest_agentfloor":  # the docs' spelling; run() puts sys.executable first on PATH
        # `python -m pytest_agentfloor report` in prose names the command; it needs its runs.jsonl
        return "name" if words[3:] in (["report"], ["regrade"]) else "run"
    return "external"  # other tools (mutation testing, apt, cd into their output): not the plugin's commands


COMMANDS = commands()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch copy of the project with inert endpoints for every documented model and seeded reports."""
    root = tmp_path_factory.mktemp("docs")
    shutil.copytree(REPO / "cases", root / "cases")
    shutil.copytree(REPO / "docs", root / "docs")
    text = (REPO / "models.toml").read_text()
    known = set(load_models(REPO / "models.toml"))
    names = {m for _, cmd in COMMANDS if cmd.startswith("pytest")
             for i, w in enumerate(shlex.split(cmd)) if w == "--model" for m in shlex.split(cmd)[i + 1].split(",")}
    for name in sorted(names - known):
        text += f'\n[models."{name}"]\nprovider = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
    (root / "models.toml").write_text(text)
    for report_dir in ("reports", "baseline"):
        run(f"pytest cases/tier_A0 --model oracle -p no:cacheprovider --agentfloor-report-dir {report_dir}", root)
    return root


def run(cmd: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # the commands import this checkout (PYTHONPATH), not whatever copy of the package the venv installed
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


#: (project, where) of the commands this process already ran in that scratch project
RAN: set[tuple[Path, str]] = set()


def _run_producers(project: Path, where: str, cmd: str) -> None:
    """Run the doc's earlier benchmark runs first when `cmd` reads records they write (`report
    runs-1/runs.jsonl ...`): under xdist the earlier command may have run on another worker."""
    reads = [w for w in shlex.split(cmd)[3:] if w.endswith(".jsonl") and not w.startswith("-")]
    if all(next(project.glob(w), None) for w in reads):
        return
    doc, line = where.rsplit(":", 1)
    for w, c in COMMANDS:
        d, n = w.rsplit(":", 1)
        if d == doc and int(n) < int(line) and c.startswith("pytest") and classify(c) == "run" \
                and (project, w) not in RAN:
            run(c, project)
            RAN.add((project, w))


def test_the_docs_show_commands_of_every_kind() -> None:
    kinds = {classify(cmd) for _, cmd in COMMANDS}
    assert {"run", "collect", "install", "suite"} <= kinds
    assert any("regrade" in cmd for _, cmd in COMMANDS) and any("--gate-floor" in cmd for _, cmd in COMMANDS)


@pytest.mark.slow
@pytest.mark.parametrize("where,cmd", COMMANDS, ids=[f"{w}:{c[:40]}" for w, c in COMMANDS])
def test_documented_command(project: Path, where: str, cmd: str) -> None:
    kind = classify(cmd)
    if kind in ("shell", "install", "suite", "name", "external"):
        pytest.skip(f"{kind}: not run here (.ci/run installs and runs the suite)")
    if kind == "collect":
        cmd = re.sub(r"(^|\s)-n\s+\d+", r"\1-n 0", cmd) + " --co -q -p no:cacheprovider"
    if kind == "run" and cmd.startswith("python"):
        _run_producers(project, where, cmd)
    result = run(cmd, project)
    RAN.add((project, where))
    # `compare` exits with the gate's verdict (1: the gate said no), like a pytest run whose model failed
    gated = "pytest_agentfloor compare" in cmd
    allowed = (0,) if kind == "collect" or (cmd.startswith("python") and not gated) else (0, 1)
    assert result.returncode in allowed, f"{where}: {cmd}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    assert not list(project.glob("=*")), "a '>=' was read by the shell as a redirection"
