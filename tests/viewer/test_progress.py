"""Live progress: one line per model on the controller, under xdist and without a terminal, never
glued to pytest's own output."""

from __future__ import annotations

import re
import shutil

import pytest

from pytest_agentfloor.progress import ModelProgress, model_of, progress_line
from tests.viewer.conftest import REPO

# the counts always; tokens, cost, req/s and the ETA only where the width leaves room (issue 34: the line
# drops those first rather than wrap) and once there is something to show
LINE = re.compile(r"^agentfloor progress (?P<model>\S+): (?P<done>\d+)/(?P<total>\d+) done, (?P<passed>\d+) passed, "
                  r"(?P<failed>\d+) failed, (?P<errors>\d+) errors(?: \| tokens [\d,]+ in / [\d,]+ out)?"
                  r"(?: \| (?:\$[\d.]+|cost unknown))?(?: \| [\d.]+ req/s)?(?: \| ETA \S+)?(?:, \S+ elapsed)?$")


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    return pytester


@pytest.mark.parametrize("extra", [["-n", "2"], ["-q"], ["-n", "2", "-q"]])
def test_progress_lines_per_model_without_a_terminal(bench: pytest.Pytester, extra: list[str]) -> None:
    result = bench.runpytest_subprocess("cases", "--model", "oracle,fault-exhaust", "--instances", "i0",
                                        "--agentfloor-progress-interval", "0", "--agentfloor-report", "none",
                                        "-p", "no:cacheprovider", *extra)
    lines = result.stdout.lines
    progress = [ln for ln in lines if "agentfloor progress" in ln]
    assert progress and all(LINE.match(ln) for ln in progress), progress[:5]  # each on a line of its own
    last = {}
    for ln in progress:
        m = LINE.match(ln)
        last[m["model"]] = m
    assert set(last) == {"oracle", "fault-exhaust"}
    assert last["oracle"]["done"] == last["oracle"]["total"] == last["oracle"]["passed"] == "25"
    assert last["fault-exhaust"]["done"] == "25" and last["fault-exhaust"]["failed"] == "25"
    result.assert_outcomes(passed=25, failed=25)
    assert any(re.fullmatch(r"=* ?25 failed, 25 passed in .*", ln) or re.fullmatch(r"25 failed, 25 passed in .*", ln)
               for ln in lines)


def test_progress_off_and_silent_under_qq(bench: pytest.Pytester) -> None:
    for flags in (["--agentfloor-progress", "off"], ["-qq"]):
        result = bench.runpytest_subprocess("cases", "--model", "oracle", "--instances", "i0",
                                            "--agentfloor-progress-interval", "0", "-p", "no:cacheprovider", *flags)
        assert "agentfloor progress" not in result.stdout.str()
    result = bench.runpytest("cases", "--agentfloor-progress", "fancy")
    result.stderr.fnmatch_lines(["*--agentfloor-progress: expected auto, live, lines or off (or color, plain), got 'fancy'*"])


def test_progress_line_and_model_of_node_ids() -> None:
    assert model_of("cases/tier_A/A1.toml::A1[v0-i0-r0-qwen3:8b]") == "qwen3:8b"
    assert model_of("cases/tier_A/A1.toml::A1[v10-i2-r3-a-b-c]") == "a-b-c"
    assert model_of("tests/test_x.py::test_y[v0-i0-r0-m]") is None
    p = ModelProgress(total=10, done=4, passed=3, failed=1, tokens_in=1200, tokens_out=30, requests=8, cost_usd=0.5)
    line = progress_line("m", p, elapsed=4.0)
    assert LINE.match(line) and "2.0 req/s" in line and "ETA 0m06s" in line  # 6 left at 1 item/s
