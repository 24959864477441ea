"""The controller's view of a session: records from reports, session-start services, reports.

Registered only on the controller (not on xdist workers), it gathers records from each report's
user_properties, so totals are identical with and without xdist.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from .corpus import completed_records
from .options import Settings
from .results import PROPERTY_FIELDS


# -- controller-side aggregation ----------------------------------------------------------
def targets_cases(config: pytest.Config) -> bool:
    """Whether this invocation runs benchmark cases (so runs.jsonl starts afresh)."""
    base = Path(config.invocation_params.dir)
    for arg in config.args:
        p = (base / arg.split("::")[0]).resolve()
        if p.is_file():
            if p.suffix == ".toml" and p.parent.name.startswith("tier_"):
                return True
        elif p.is_dir():
            if p.name.startswith("tier_") or any(c.is_dir() and c.name.startswith("tier_") for c in p.iterdir()):
                return True
    return False


def archive(path: Path) -> Path:
    """Move an earlier session's runs.jsonl to history/, named by when it was last written."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(path.stat().st_mtime))
    history = path.parent / "history"
    history.mkdir(exist_ok=True)
    target = history / f"runs-{stamp}.jsonl"
    n = 1
    while target.exists():
        n += 1
        target = history / f"runs-{stamp}-{n}.jsonl"
    path.replace(target)
    return target


class AgentFloorSession:
    """Controller-only: gathers records from reports and reports at session end."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        self.settings = settings
        self.records: list[dict[str, Any]] = []
        self.previous: dict[str, dict[str, Any]] = {}
        self.resumed: set[str] = set()
        self.problems: list[str] = []
        self.other_failures = 0
        self.gate_result: Any = None
        self.gate_error: str | None = None
        path = settings.report_dir / "runs.jsonl"
        if settings.resume:
            self.previous, self.problems = completed_records(path)
            settings.resume_keys = set(self.previous)
        elif path.exists() and targets_cases(config) and not config.option.collectonly:
            archive(path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Start embedded model servers and probe each model, before xdist starts its workers."""
        st = self.settings
        if self.config.option.collectonly:
            return
        if not st.replay:
            unset = [(m.name, m.api_key_env) for m in st.selected if m.api_key_env and not os.environ.get(m.api_key_env)]
            if unset:
                raise pytest.UsageError("; ".join(
                    f"models.{name}.api_key_env: environment variable {var} is not set (it must hold the API key)"
                    for name, var in unset))
        from .local.session import needs_server

        if needs_server(st.selected):
            from .local.model_files import ModelFileError
            from .local.server import LocalServerError
            from .local.session import start_local_servers

            try:
                st.local_servers = start_local_servers(st.selected, st.report_dir)
            except (ModelFileError, LocalServerError) as exc:
                raise pytest.UsageError(f"local model server: {exc}") from None
        if st.probe and not st.replay:
            self._probe_models()

    def _probe_models(self) -> None:
        from .probe import probe

        st = self.settings
        for model in st.selected:
            if model.provider == "scripted":
                continue
            result = probe(st.provider(model))
            st.probes[model.name] = (result.classification, result.detail)
        if st.probes:
            st.report_dir.mkdir(parents=True, exist_ok=True)
            data = {k: {"classification": c, "detail": d} for k, (c, d) in sorted(st.probes.items())}
            (st.report_dir / "probe.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    def all_records(self) -> list[dict[str, Any]]:
        """This session's records plus those of the items it resumed."""
        resumed = [{k: self.previous[key][k] for k in PROPERTY_FIELDS} for key in sorted(self.resumed)]
        return resumed + self.records

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties) if report.when != "teardown" else {}
        if "task" in props and "passed" in props:
            self.records.append(props)
        elif report.failed:
            self.other_failures += 1

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.other_failures += 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """With --baseline, the exit status is the gate's verdict: item failures are measurements."""
        spec = self.settings.gate
        if spec is None or exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return
        from .gate import GateError, evaluate, load_baseline

        try:
            baseline, problems = load_baseline(spec.baseline)
            self.problems += problems
            self.gate_result = evaluate(self.all_records(), baseline, margin_pp=spec.margin_pp, tiers=spec.tiers,
                                        floors=spec.floors, baseline_model=spec.baseline_model)
        except (GateError, KeyError, ValueError) as exc:
            self.gate_error = str(exc)
        ok = self.gate_result is not None and self.gate_result.passed and self.other_failures == 0
        session.exitstatus = pytest.ExitCode.OK if ok else pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for problem in self.problems:
            terminalreporter.write_line(f"agentfloor: {problem}", yellow=True)
        for name, (cls, detail) in sorted(self.settings.probes.items()):
            terminalreporter.write_line(f"agentfloor: probe {name}: {cls}" + ("" if cls == "tool_capable" else f" ({detail})"),
                                        green=cls == "tool_capable", yellow=cls != "tool_capable")
        if self.resumed:
            terminalreporter.write_line(f"agentfloor: resumed {len(self.resumed)} item(s) from runs.jsonl")
        records = self.all_records()
        if self.settings.report_mode != "none" and records:
            self._report(terminalreporter, records)
        if self.settings.gate is not None:
            self._report_gate(terminalreporter)

    def _report(self, tr: Any, records: list[dict[str, Any]]) -> None:
        """Statistics, terminal tables and (mode all) report files; a failure here loses no record."""
        from .report import build_summary, render_summary, write_reports

        st = self.settings
        meta = {m.name: m.public() for m in st.models.values()}
        opts = dict(reference=st.reference, margin_pp=st.margin_pp, infra_as_failure=st.infra_as_failure,
                    cluster=st.cluster)
        try:
            if st.report_mode == "all":
                probe = {name: cls for name, (cls, _) in st.probes.items()}
                summary = write_reports(records, meta, st.report_dir, probe=probe, **opts)
            else:
                summary = build_summary(records, meta, **opts)[0]
        except (ValueError, OSError) as exc:
            tr.write_line(f"agentfloor: could not build the reports ({exc}); runs.jsonl is intact", red=True)
            return
        render_summary(tr, records, summary, mode=st.report_mode,
                       out_dir=st.report_dir if st.report_mode == "all" else None)

    def _report_gate(self, tr: Any) -> None:
        spec, result = self.settings.gate, self.gate_result
        assert spec is not None
        if result is None:
            tr.write_sep("=", "agentfloor gate: FAILED", red=True, bold=True)
            tr.write_line(f"gate: cannot evaluate: {self.gate_error or 'the run did not complete'}")
            return
        tr.write_sep("=", f"agentfloor gate: {result.candidate} vs {result.baseline} ({spec.baseline.name})",
                     bold=True)
        for v in result.verdicts:
            tr.write_line(v.line(spec.margin_pp), green=v.passed, red=not v.passed)
        if result.unpaired_candidate or result.unpaired_baseline:
            tr.write_line(f"gate: unpaired runs: {result.unpaired_candidate} candidate run(s) without a baseline "
                          f"counterpart, {result.unpaired_baseline} baseline run(s) not re-run")
        for note in result.notes:
            tr.write_line(f"gate: {note}")
        if self.other_failures:
            tr.write_line(f"gate: {self.other_failures} failure(s) outside the benchmark items", red=True)
        failed = [v.tier for v in result.verdicts if not v.passed]
        if result.passed and not self.other_failures:
            tr.write_sep("=", "agentfloor gate: PASSED", green=True, bold=True)
        else:
            tr.write_sep("=", f"agentfloor gate: FAILED ({', '.join(failed) or 'see above'})", red=True, bold=True)
