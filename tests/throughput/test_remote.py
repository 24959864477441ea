"""pytest-xdist's own remote execution (issue 18): `--tx popen` and a `socket` gateway on
loopback run the items in execnet workers while the controller aggregates every record."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.throughput.test_concurrency import A1, a1, bench  # noqa: F401 - fixtures reused

execnet = pytest.importorskip("execnet")


def test_popen_gateways_with_concurrency(bench: pytest.Pytester) -> None:  # noqa: F811 - the imported fixture
    serial = bench.runpytest_subprocess(*A1, "--model", "fake", "--agentfloor-concurrency", "1", "-p", "no:xdist")
    result = bench.runpytest_subprocess(*A1, "--model", "fake", "--tx", "2*popen", "--dist", "load",
                                        "--agentfloor-concurrency", "4")
    want = {k: v for k, v in serial.parseoutcomes().items() if k in ("passed", "failed")}
    assert {k: v for k, v in result.parseoutcomes().items() if k in want} == want
    result.stdout.fnmatch_lines(["*created: 2/2 workers*"])
    files = sorted(bench.path.glob("reports/sessions/*/runs.jsonl"))
    assert len(files[-1].read_text().splitlines()) == sum(want.values())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_socket_gateway_on_loopback(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A worker behind execnet's socket server (the way to reach another machine), on 127.0.0.1."""
    repo = Path(__file__).resolve().parents[2]
    pytester.path.joinpath("cases").mkdir()
    import shutil

    shutil.copytree(repo / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    remote = tmp_path / "remote"
    remote.mkdir()
    port = _free_port()
    server_script = Path(execnet.__file__).parent / "script" / "socketserver.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    server = subprocess.Popen([sys.executable, "-u", str(server_script), f"127.0.0.1:{port}"], cwd=remote, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        for line in server.stdout:  # it says when it accepts connections
            if "Accept loop" in line:
                break
        else:
            pytest.fail("execnet socket server did not start")
        cases = str(pytester.path / "cases")
        result = pytester.runpytest_subprocess(
            cases, "--model", "oracle,fault-plan_only", "--tx", f"socket=127.0.0.1:{port}//chdir={remote}",
            "--rsyncdir", cases, "--dist", "load", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning")
    finally:
        server.kill()
        server.wait()
    assert result.parseoutcomes().get("passed") == 25 and result.parseoutcomes().get("failed") == 25
    result.stdout.fnmatch_lines(["*created: 1/1 worker*"])
    assert (remote / "cases" / "tier_A0").is_dir()  # the worker ran from the rsynced copy
    summary = json.loads((pytester.path / "reports" / "summary.json").read_text())
    assert "oracle" in json.dumps(summary) and "fault-plan_only" in json.dumps(summary)
