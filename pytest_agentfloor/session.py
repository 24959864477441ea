"""The controller's view of a session: records from reports, session-start services, reports.

Registered only on the controller (not on xdist workers), it gathers records from each report
(the records travel on it through xdist), so totals are identical with and without xdist.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from . import __version__
from .corpus import completed_records
from .options import Options
from .render import safe_text
from .reportdir import SESSION_FILE, ReportDirBusy, ReportDirLock, new_session_id, publish, resume_source, session_dir
from .results import PROPERTY_FIELDS
from .runinfo import narrowing, selection, stop_reason
from .runstate import RunState
from .scope import targets_cases

_PROBE_SKIP = re.compile(r"model '(?P<model>.+?)' probed as (?P<cls>text_leaked|no_tools): (?P<detail>.*) \(--run-non")
_PROBE_ERROR = "the probe at session start failed"


def queue_line(records: list[dict[str, Any]]) -> str:
    """What this session's episodes spent queued (queue_s: a place, a connection, a hold), '' if nothing:
    reported apart because it is never the model's time nor counted against its deadline."""
    waits = [float(r.get("queue_s") or 0) for r in records]
    total = sum(w for w in waits if w > 0)
    if total < 0.05:
        return ""
    return (f"{sum(1 for w in waits if w > 0)} episode(s) queued {total:.1f}s in all (longest {max(waits):.1f}s) "
            "for a place, a connection or a Retry-After hold; not part of their time (queue_s)")


# -- controller-side aggregation ----------------------------------------------------------
class AgentFloorSession:
    """Controller-only: gathers records from reports and reports at session end."""

    def __init__(self, config: pytest.Config, options: Options, state: RunState):
        self.config = config
        self.options = options
        self.state = state
        self.records: list[dict[str, Any]] = []
        self.previous: dict[str, dict[str, Any]] = {}
        self.resumed: set[str] = set()
        self.problems: list[str] = []
        self.other_failures = 0
        self.gate_result: Any = None
        self.gate_error: str | None = None
        self.session_id = new_session_id()
        self.started = time.time()
        self.keep_sessions = keep_sessions(config)
        self.pruned: list[str] = []
        state.session_dir = session_dir(options.report_dir, self.session_id)
        self.collection_errors = 0
        self.deselected = 0
        self.outcomes: set[str] = set()  # node ids of the items that reached an outcome
        self.probe_skips: Counter[tuple[str, str, str]] = Counter()
        self.probe_errors: Counter[str] = Counter()
        self.cost_skips = 0  # items skipped by --max-cost
        self.plan_lines: list[str] = []
        self.run: dict[str, Any] | None = None  # session.json, once the session has finished
        self.summary: Any = None
        self.report_error: str | None = None
        self.exported: list[Path] = []  # files of --agentfloor-routing-out (report.sections exports)
        self.export_problems: list[str] = []
        self.published: tuple[bool, str | None] | None = None
        self.lock: ReportDirLock | None = None
        self.contexts: dict[str, tuple[int | None, str]] = {}  # model -> context window from the probe
        if options.resume and options.active:
            self.previous, self.problems = completed_records(resume_source(options.report_dir))
            from .judge.assess import judged_alike

            judge = state.judge_for()
            stale = [k for k, r in self.previous.items() if not judged_alike(r, judge.fingerprint if judge else None)]
            for k in stale:
                del self.previous[k]
            if stale:
                self.problems.append(f"--resume: {len(stale)} item(s) whose semantic checks were decided otherwise "
                                     f"than by this session's {'judge' if judge else 'keyword stand-in'} run again")
            state.resume_keys = set(self.previous)
        if options.replay:  # name every unusable cassette line once, not once per item
            from .corpus import CASSETTE_FILE, read_cassette

            self.problems += read_cassette(options.report_dir / CASSETTE_FILE)[1]
        if targets_cases(config) and not config.option.collectonly:
            self._take_report_dir()

    def _take_report_dir(self) -> None:
        """Hold the report dir for this session: a second session there gets a clear error."""
        lock = ReportDirLock(self.options.report_dir, self.session_id)
        try:
            lock.acquire()
        except ReportDirBusy as exc:
            raise pytest.UsageError(f"--agentfloor-report-dir: {exc}") from None
        except OSError as exc:
            raise pytest.UsageError(f"--agentfloor-report-dir: cannot write to {self.options.report_dir} ({exc})") from None
        self.lock = lock
        from .reportdir import point_latest

        st, state = self.options, self.state
        assert state.session_dir is not None
        state.session_dir.mkdir(parents=True, exist_ok=True)
        point_latest(st.report_dir, self.session_id)  # an interrupted session is found (and resumed) there
        # a resumed session continues the earlier one: its runs.jsonl alone must hold every result
        for record in self.previous.values():
            state.log().append(record)
        runs = state.session_dir / "runs.jsonl"
        state.cost_start = runs.stat().st_size if runs.exists() else 0  # --max-cost counts this session's runs only

    def close(self) -> None:
        if self.lock is not None:
            from .reportdir import discard_if_empty

            discard_if_empty(self.options.report_dir, self.session_id)
            self.lock.release()
            self.lock = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Start embedded model servers and probe each model, before xdist starts its workers."""
        st, state = self.options, self.state
        if self.config.option.collectonly or not st.active:  # not a benchmark run: no probe, no servers
            return
        served = [*st.selected, *([st.judge] if st.judge and st.judge.name not in {m.name for m in st.selected} else [])]
        if not st.replay:
            from .providers.base import key_problem

            keyed = [(m.name, m.api_key_env) for m in [*st.selected, st.judge] if m is not None and m.api_key_env]
            bad = {name: (var, why) for name, var in keyed if (why := key_problem(os.environ.get(var)))}
            if bad:
                raise pytest.UsageError("; ".join(f"models.{name}.api_key_env: environment variable {var} {why}"
                                                  for name, (var, why) in bad.items()))
        recorded = [m for m in st.selected if m.provider == "recorded"]
        if recorded:  # a bad line is a usage error at the start, naming file:line and field
            from .providers.recorded import RecordedOutputsError

            for m in recorded:
                try:
                    state.provider(m)
                except RecordedOutputsError as exc:
                    raise pytest.UsageError(f"models.{m.name}.path: {exc}") from None
        # the local package (model files, the server's machinery) loads only for a local model
        if any(m.provider == "local" for m in served) and _needs_server(served):  # the judge's embedded model too (--judge local)
            from .local.model_files import ModelFileError
            from .local.server import LocalServerError
            from .local.session import start_local_servers

            try:
                from .context import session_turns

                state.local_servers = start_local_servers(served, st.report_dir, turns=session_turns(st.protocol))
            except (ModelFileError, LocalServerError) as exc:
                raise pytest.UsageError(f"local model server: {exc}") from None
        if st.probe and not st.replay:
            self._probe_models()

    def _probe_models(self) -> None:
        from .probe import combine, context_window, pool_of, probe

        st, state = self.options, self.state
        endpoints: dict[str, dict[str, dict[str, str]]] = {}
        for model in st.selected:
            if model.provider in ("scripted", "recorded"):  # no endpoint: nothing to probe
                continue
            provider = state.provider(model)
            pool = pool_of(provider)
            if pool is None:
                result = probe(provider)
            else:  # every replica is probed; a dead one is a warning while another answers
                each = [(m.endpoint, probe(m.provider)) for m in pool.members]
                result, dead = combine(each)
                out = [i for i, (_, got) in enumerate(each) if not got.admitted]
                if len(out) < len(each):  # with none working, every replica stays in for its items to try
                    state.pool_out[model.name] = out
                    for i in out:
                        pool.members[i].state.take_out(time.monotonic())
                endpoints[model.name] = {url: {"classification": r.classification, "detail": r.detail}
                                         for url, r in each}
                self.problems += [f"WARNING model {model.name}: endpoint {line}; it is out of the pool, "
                                  "tried again after its cool-down" for line in dead]
            # the probe's reply is the model's output: a key or password it echoes is masked here, before
            # its detail reaches probe.json, the skip reasons in the terminal and the workers
            from .masking import mask, mask_text

            secrets = state.model_secrets()
            state.probes[model.name] = (result.classification, mask_text(result.detail, secrets))
            if model.name in endpoints:
                endpoints[model.name] = mask(endpoints[model.name], secrets)
            self.problems = [mask_text(p, secrets) for p in self.problems]
            if result.classification != "error":  # a probe that reached no server measured no context window
                self.contexts[model.name] = context_window(provider)
        if state.probes:
            probe_dir = state.session_dir or st.report_dir
            probe_dir.mkdir(parents=True, exist_ok=True)
            data = {k: {"classification": c, "detail": d,
                        "context_window": self.contexts.get(k, (None, ""))[0],
                        "context": self.contexts.get(k, (None, ""))[1],
                        **({"endpoints": endpoints[k]} if k in endpoints else {})}
                    for k, (c, d) in sorted(state.probes.items())}
            (probe_dir / "probe.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    def all_records(self) -> list[dict[str, Any]]:
        """This session's records plus those of the items it resumed."""
        resumed = [{k: self.previous[key].get(k) for k in PROPERTY_FIELDS} for key in sorted(self.resumed)]
        return resumed + self.records

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        records = getattr(report, "agentfloor_records", None) or []  # set by plugin.pytest_runtest_makereport
        self.records.extend(records)
        if report.failed and not (records and getattr(report, "agentfloor_measured", False)):
            self.other_failures += 1
        is_case = ".toml::" in report.nodeid
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes.add(report.nodeid)
        if is_case and report.when == "setup" and report.skipped and isinstance(report.longrepr, tuple):
            m = _PROBE_SKIP.search(str(report.longrepr[2]))
            if m:
                self.probe_skips[(m["model"], m["cls"], m["detail"])] += 1
        if is_case and report.when == "setup" and report.skipped and "--max-cost" in str(report.longrepr):
            self.cost_skips += 1
        if is_case and report.when == "setup" and report.failed:
            # the item's own message (items.InfrastructureError), not any text a traceback happens to quote
            m = re.match(r"model '(.+?)' not run: " + re.escape(_PROBE_ERROR), str(report.longrepr))
            if m:
                self.probe_errors[m.group(1)] += 1

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Deselected by any plugin or conftest (seen here without xdist); resumed items do not count."""
        # only the items resume itself took out (marked by plugin.pytest_collection_modifyitems): an item
        # -m or -k dropped counts as deselected even when runs.jsonl holds a result for it
        self.deselected += sum(1 for i in items if not getattr(i, "agentfloor_resumed", False))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.other_failures += 1
            self.collection_errors += 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """--agentfloor-plan (and --co): what the collected items would cost; the plan lists no items."""
        if not self.config.option.collectonly:
            return
        from .items import CaseItem
        from .plan import build_plan, render_plan

        cases = [i for i in session.items if isinstance(i, CaseItem)]
        if not cases:
            return
        rows, n_sessions = build_plan(cases, self.options.report_dir)
        workers = self.config.getoption("numprocesses", None)
        workers = workers if isinstance(workers, int) else 1
        pricing = {m.name: ", ".join(f"{k}={v:g}" for k, v in m.public().get("pricing", {}).items() if v is not None)
                   or "none" for m in self.options.selected}
        self.plan_lines = render_plan(rows, n_sessions, workers, pricing)
        spec = self.options.gate
        if spec is not None and spec.baseline is not None:
            self.plan_lines += self._gate_plan(cases, spec)
        if self.options.plan:
            session.items = []  # the plan replaces pytest's list of the collected items

    @staticmethod
    def _gate_plan(cases: list[Any], spec: Any) -> list[str]:
        from .gate import GateError, load_baseline
        from .plan import gate_plan, render_gate_plan
        from .stats.paired import decision_tail

        try:
            runs, _ = load_baseline(spec.baseline)
        except GateError as exc:
            return [f"gate plan: {exc}"]
        if spec.baseline_model is not None:
            runs = [r for r in runs if r["model"] == spec.baseline_model]
        bound = "two-sided 95% CI lower bound" if spec.decision == "two-sided" else "one-sided 95% bound"
        rows = gate_plan(cases, runs, margin_pp=spec.margin_pp, tail=decision_tail(0.05, spec.decision),
                         tiers=spec.tiers)
        return render_gate_plan(rows, spec.baseline.name, spec.margin_pp, bound)

    # -- session end: what ran, the gate, the report files ----------------------------------
    def _run_info(self, session: pytest.Session, exitstatus: int) -> dict[str, Any]:
        """session.json: the session id, its selection and COMPLETE or PARTIAL with the reasons."""
        sel = selection(self.config, self.options)
        reasons = narrowing(sel, Path(self.config.invocation_params.dir).resolve())
        stopped = stop_reason(session, exitstatus)
        if stopped:
            reasons.append(stopped)
        if self.collection_errors:
            reasons.append(f"{self.collection_errors} collection error(s)")
        if self.deselected:
            reasons.append(f"{self.deselected} item(s) deselected")
        for model, n in sorted(self.probe_errors.items()):
            reasons.append(f"model {model}: endpoint failed the probe, {n} item(s) not run")
        for (model, cls, _), n in sorted(self.probe_skips.items()):
            reasons.append(f"model {model}: probed as {cls}, {n} item(s) skipped (--run-non-capable runs them)")
        if self.cost_skips and self.options.max_cost is not None:
            reasons.append(f"stopped at --max-cost {self.options.max_cost:g} USD: {self.cost_skips} item(s) skipped")
        expected = int(getattr(session, "testscollected", 0) or 0)
        ran = len(self.outcomes)
        if not stopped and expected > ran and ran:
            reasons.append(f"{expected - ran} of {expected} collected item(s) did not run")
        return {
            "session_id": self.session_id,
            "plugin_version": __version__,
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
            "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "complete": not reasons,
            "partial_reasons": reasons,
            "selection": sel,
            "resumed_items": len(self.resumed),
            "protocol": self.options.protocol.params(),
            # the context window each probed model was served with (None: unknown to the plugin)
            "context_windows": {name: window for name, (window, _) in sorted(self.contexts.items())},
            "exit_status": int(exitstatus),
        }

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Settle what ran (before the gate, which refuses partial runs), gate, write and publish."""
        if not self.config.option.collectonly:
            self.run = self._run_info(session, exitstatus)
        self._gate(session, exitstatus)
        if self.run is not None and (self.lock is not None or self.records or self.resumed):
            self._finish_files()

    def _gate(self, session: pytest.Session, exitstatus: int) -> None:
        """With a gate, the exit status is its verdict (item failures are measurements): 0 passed,
        1 failed, 75 infrastructure trouble prevented a verdict (gate.EXIT_INFRA); gate.json says why."""
        spec = self.options.gate
        if spec is None or self.config.option.collectonly or exitstatus not in (pytest.ExitCode.OK,
                                                                                pytest.ExitCode.TESTS_FAILED):
            return
        from .gate import EXIT_FAIL, GateError, evaluate, load_baseline, write_gate_json

        partial, infra = self._stopped_reasons()
        try:
            baseline = None
            if spec.baseline is not None:
                baseline, problems = load_baseline(spec.baseline)
                self.problems += problems
            self.gate_result = evaluate(self.all_records(), baseline, margin_pp=spec.margin_pp, tiers=spec.tiers,
                                        floors=spec.floors, baseline_model=spec.baseline_model,
                                        decision=spec.decision, min_pairs=spec.min_pairs, partial=partial,
                                        infra_partial=infra, floor_bound=spec.floor_bound,
                                        selection=self._selection_text(),
                                        allow_changed_cases=spec.allow_changed_cases)
        except (GateError, KeyError, ValueError) as exc:
            self.gate_error = str(exc)
        status = self.gate_result.exit_status if self.gate_result is not None else EXIT_FAIL
        if self.other_failures and status == 0:
            status = EXIT_FAIL
        session.exitstatus = status
        out = self.state.session_dir
        if out is not None and out.is_dir():
            try:
                write_gate_json(self.gate_result, out / "gate.json", self.gate_error)
            except (OSError, ValueError) as exc:
                self.problems.append(f"could not write gate.json ({exc})")

    def _stopped_reasons(self) -> tuple[list[str], list[str]]:
        """The PARTIAL reasons of this run that the gate must hear, as (other, infrastructure).

        A narrowed selection (paths, -k, -m, --variants, deselected items) is not among them: the
        gate judges it against the baseline itself, so only baseline runs of the gated tiers that
        the candidate did not run make it partial. What is left: -x/--maxfail/interrupt, collection
        errors, --max-cost, items that did not run, and (infrastructure) models that failed the probe."""
        if self.run is None:
            return [], []
        narrowed = set(narrowing(self.run["selection"], Path(self.config.invocation_params.dir).resolve()))
        left = [r for r in self.run.get("partial_reasons", []) if r not in narrowed
                and not re.fullmatch(r"\d+ item\(s\) deselected", r)]
        infra = [r for r in left if re.match(r"model .+: endpoint failed the probe", r)]
        return [r for r in left if r not in infra], infra

    def _selection_text(self) -> str:
        """Which selection the gate compared, as the user gave it."""
        if self.run is None:
            return ""
        from .runinfo import selection_text

        return selection_text(self.run["selection"], Path(self.config.invocation_params.dir).resolve())

    def _finish_files(self) -> None:
        """Complete this session's directory (resumed records, session.json, reports) and publish it.

        The session's runs.jsonl then holds every record its reports count, so it stands alone
        (a later --agentfloor-resume or ``report`` rebuild needs nothing else). A failure in the statistics
        loses no record: runs.jsonl and session.json are written first.
        """
        from .reportdir import point_latest

        st, state, run = self.options, self.state, self.run
        assert run is not None and state.session_dir is not None
        if self.lock is None:  # a run that did not look like a benchmark run at the start, but wrote records
            try:
                self._take_report_dir()
            except pytest.UsageError as exc:
                self.report_error = str(exc)
                return
        state.session_dir.mkdir(parents=True, exist_ok=True)
        if state.run_log is not None:
            state.run_log.close()
        unused = set(self.previous) - self.resumed
        if unused:  # earlier records of items this session did not select: not part of its result
            self._drop_records(state.session_dir / "runs.jsonl", unused)
        (state.session_dir / SESSION_FILE).write_text(json.dumps(run, indent=2, sort_keys=True) + "\n")
        records = self.all_records()
        if st.report_mode != "none" and records:
            from .report import build_summary, write_reports

            meta = {m.name: m.public() for m in st.models.values()}
            opts: dict[str, Any] = dict(reference=st.reference, margin_pp=st.margin_pp, infra_as_failure=st.infra_as_failure,
                        cluster=st.cluster, interval_method=st.interval_method, decision=st.decision_bound,
                        infra_threshold=st.infra_threshold)
            try:
                if st.report_mode == "all":
                    probe = {name: cls for name, (cls, _) in state.probes.items()}
                    from .runinfo import deviations

                    dev = deviations({"model": m.name, "config": m.public()} for m in self.options.selected)
                    self.summary = write_reports(records, meta, state.session_dir, probe=probe, run=run,
                                                 section_options=self.section_options(), deviation=dev, **opts)
                else:
                    self.summary = build_summary(records, meta, **opts)[0]
            except (ValueError, OSError) as exc:
                self.report_error = f"could not build the reports ({exc}); runs.jsonl is intact"
            if st.report_mode == "all" and self.report_error is None:
                from .report.viewer import VIEWER_FILE, write_viewer

                try:
                    write_viewer([state.session_dir / "runs.jsonl"], state.session_dir / VIEWER_FILE)
                except (ValueError, OSError) as exc:
                    self.report_error = f"could not write {VIEWER_FILE} ({exc}); runs.jsonl is intact"
        if records:
            self._write_exports(records)
        try:
            self.published = publish(st.report_dir, self.session_id, bool(run["complete"]))
        except OSError as exc:
            point_latest(st.report_dir, self.session_id)
            self.report_error = f"could not publish the session's files to {st.report_dir} ({exc})"
        if self.lock is not None:  # only while this session holds the report dir: no other session runs there
            from .reportdir import prune_sessions

            self.pruned = prune_sessions(st.report_dir, self.keep_sessions, self.session_id)

    def _write_exports(self, records: list[dict[str, Any]]) -> None:
        """Files the options ask for outside the report dir (--agentfloor-routing-out), on the controller
        only and whatever the report mode: a deployment reads them, so each is replaced atomically."""
        st = self.options
        options = {**self.section_options(), "run": self.run}
        if not any(options.get(k) for k in ("routing_out",)):
            return
        from .report.files import atomic_write, prepare_records
        from .report.sections import export_files

        meta = {m.name: m.public() for m in st.models.values()}
        try:
            files, self.export_problems = export_files(prepare_records(records)[0], meta, reference=st.reference,
                                                       options=options)
            for path, text in files.items():
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(path, text)
                self.exported.append(path)
        except (ValueError, OSError) as exc:
            self.export_problems.append(f"could not write {st.routing_out} ({exc})")

    @staticmethod
    def _drop_records(path: Path, keys: set[str]) -> None:
        from .corpus import record_key
        from .reportdir import atomic_write

        kept = []
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            try:
                r = json.loads(line)
                key = record_key(r)
            except (ValueError, KeyError, TypeError):
                key = None
            if key not in keys:
                kept.append(line)
        atomic_write(path, "".join(kept))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = _SafeLines(terminalreporter)  # paths, model names and server messages may hold control characters
        for line in self.plan_lines:
            tr.write_line(line)
        if self.cost_skips and self.options.max_cost is not None:
            tr.write_line(f"agentfloor: --max-cost {self.options.max_cost:g} USD reached: {self.cost_skips} item(s) "
                          "skipped, the run is PARTIAL", yellow=True, bold=True)
        for problem in self.problems:
            tr.write_line(f"agentfloor: {problem}", yellow=True)
        for name, (cls, detail) in sorted(self.state.probes.items()):
            tr.write_line(f"agentfloor: probe {name}: {cls}" + ("" if cls == "tool_capable" else
                                                                 f" ({detail}); call-site items run regardless"),
                          green=cls == "tool_capable", yellow=cls in ("text_leaked", "no_tools"), red=cls == "error")
            if name in self.contexts:  # right under the tool-calling class it was measured with
                tr.write_line(f"agentfloor: probe {name}: {self.contexts[name][1]}")
        for (model, cls, detail), n in sorted(self.probe_skips.items()):
            tr.write_line(f"agentfloor: WARNING {n} item(s) of model {model} skipped: the probe classed it "
                          f"{cls} ({detail}); --run-non-capable runs them", yellow=True, bold=True)
        if self.resumed:
            tr.write_line(f"agentfloor: resumed {len(self.resumed)} item(s) from runs.jsonl")
        if self.all_records():
            tr.write_line(f"agentfloor protocol {self.options.protocol.describe()}")
            from .runinfo import deviations

            for line in deviations({"model": m.name, "config": m.public()} for m in self.options.selected):
                tr.write_line(f"agentfloor: deviation from the protocol: {line}", yellow=True)
        queued = queue_line(self.records)
        if queued:
            tr.write_line(f"agentfloor: {queued}")
        if self.report_error:
            tr.write_line(f"agentfloor: {self.report_error}", red=True)
        if self.pruned:
            tr.write_line(f"agentfloor: removed {len(self.pruned)} old session(s) from "
                          f"{self.options.report_dir / 'sessions'} (--agentfloor-keep-sessions {self.keep_sessions})")
        records = self.all_records()
        if self.options.report_mode != "none" and records and self.summary is not None:
            from .report import render_summary

            render_summary(terminalreporter, records, self.summary, mode=self.options.report_mode,
                           models_meta={m.name: m.public() for m in self.options.models.values()},
                           section_options=self.section_options(),
                           out_dir=self.files_dir() if self.options.report_mode == "all" else None)
            viewer = self.files_dir() / "viewer.html"
            if self.options.report_mode == "all" and viewer.is_file():
                tr.write_line(f"agentfloor transcripts: {viewer}")
        for path in self.exported:
            tr.write_line(f"agentfloor routing: {path}")
        for problem in self.export_problems:
            tr.write_line(f"agentfloor routing: {problem}", red=True, bold=True)
        if self.run is not None and (records or self.published is not None):
            complete = bool(self.run["complete"])
            tr.write_line(f"agentfloor: {self.run_text()}", green=complete, yellow=not complete, bold=not complete)
        if self.published is not None:
            tr.write_line(f"agentfloor: {self.where_text()}")
        if self.options.gate is not None and not self.config.option.collectonly:  # --co: nothing ran to gate
            self._report_gate(tr)

    def section_options(self) -> dict[str, Any]:
        """Options of the kinds' report sections (report/sections.py)."""
        return {"callsite_weights": self.options.callsite_weights, "callsite_verdict": self.options.callsite_verdict,
                "margin_pp": self.options.margin_pp, "routing_out": self.options.routing_out}

    def run_text(self) -> str:
        from .runinfo import run_line

        return run_line(self.run) or f"session {self.session_id}"

    def files_dir(self) -> Path:
        st, state = self.options, self.state
        return st.report_dir if self.published and self.published[0] else (state.session_dir or st.report_dir)

    def where_text(self) -> str:
        st, state = self.options, self.state
        assert self.published is not None and state.session_dir is not None
        published, kept = self.published
        if published:
            return f"session {self.session_id}: files in {state.session_dir}, published to {st.report_dir}"
        return (f"session {self.session_id} is PARTIAL: its files are in {state.session_dir} ({st.report_dir / 'latest'}); "
                f"{st.report_dir} still shows the COMPLETE session {kept}")

    def _report_gate(self, tr: Any) -> None:
        spec, result = self.options.gate, self.gate_result
        assert spec is not None
        if result is None:
            tr.write_sep("=", "agentfloor gate: FAILED", red=True, bold=True)
            tr.write_line(f"gate: cannot evaluate: {self.gate_error or 'the run did not complete'}")
            return
        against = f"{result.baseline} ({spec.baseline.name})" if spec.baseline is not None else "absolute floors"
        tr.write_sep("=", f"agentfloor gate: {result.candidate} vs {against}", bold=True)
        tr.write_line(result.header())
        if result.selection:
            tr.write_line(result.selection_line())
        for blocker in result.blockers + result.infra_blockers:
            tr.write_line(f"gate: {blocker}", red=True)
        for v in result.verdicts:
            tr.write_line(v.line(result.margin_pp, result.floor_bound), green=v.passed, red=not v.passed)
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
            why = result.reason() or f"{self.other_failures} failure(s) outside the benchmark items"
            head = "NO VERDICT" if result.exit_status == 75 and not self.other_failures else "FAILED"
            tr.write_sep("=", f"agentfloor gate: {head} ({', '.join(failed) or 'see above'})", red=True, bold=True)
            tr.write_line(f"gate: {head}: {why} (exit status {result.exit_status if not self.other_failures else 1})",
                          red=True)


class _SafeLines:
    """The terminal reporter, with every line the session writes made safe (render.safe_text): a
    report dir, model name or server message holding ESC or a bidi override prints its escape."""

    def __init__(self, tr: Any):
        self._tr = tr

    def write_line(self, line: str, **markup: bool) -> None:
        self._tr.write_line(safe_text(line, multiline=False), **markup)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tr, name)


def _needs_server(served: list[Any]) -> list[Any]:
    from .local.session import needs_server

    return needs_server(served)


def keep_sessions(config: pytest.Config) -> int:
    """--agentfloor-keep-sessions N (ini agentfloor_keep_sessions): session directories kept; 0 keeps all."""
    from .options import _int_opt, _opt, name_the_source
    from .reportdir import DEFAULT_KEEP_SESSIONS

    if not str(_opt(config, "agentfloor_keep_sessions") or "").strip():
        return DEFAULT_KEEP_SESSIONS
    try:
        return _int_opt(config, "agentfloor_keep_sessions", "--agentfloor-keep-sessions", 0, 1_000_000)
    except pytest.UsageError as exc:  # set in the ini file: the error names its key and the file
        raise name_the_source(config, exc) from None
