"""Options apart from state: the resolved options are frozen, and a worker's run state is what the
controller hands it in workerinput (runstate.RunState.to_workerinput / from_workerinput)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_agentfloor.options import Options
from pytest_agentfloor.runstate import RunState


def options(tmp_path: Path) -> Options:
    return Options(models={}, selected=(), runs=1, variants=None, instances=None, report_mode="none",
                   report_dir=tmp_path, token_budget=None, episode_timeout=60.0)


def test_options_cannot_change_once_resolved(tmp_path: Path) -> None:
    opts = options(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.runs = 2  # type: ignore[misc]
    assert dataclasses.replace(opts, runs=2).runs == 2 and opts.runs == 1


def test_a_worker_starts_from_what_the_controller_hands_it(tmp_path: Path) -> None:
    controller = RunState(options(tmp_path), probes={"m": ("no_tools", "said so")}, pool_out={"p": [1]},
                          resume_keys={"k2", "k1"}, session_dir=tmp_path / "sessions" / "s1", cost_start=42)
    handed = json.loads(json.dumps(controller.to_workerinput()))  # workerinput travels as plain data
    worker = RunState.from_workerinput(options(tmp_path), handed)
    assert (worker.probes, worker.pool_out, worker.resume_keys, worker.session_dir, worker.cost_start) == (
        controller.probes, controller.pool_out, controller.resume_keys, controller.session_dir, 42)
    assert worker.providers == {} and worker.run_log is None  # made on first use in each process


def test_a_worker_without_a_session_dir_writes_to_the_report_dir(tmp_path: Path) -> None:
    worker = RunState.from_workerinput(options(tmp_path), RunState(options(tmp_path)).to_workerinput())
    assert worker.session_dir is None
    assert worker.log().path == tmp_path / "runs.jsonl"
    worker.close()
