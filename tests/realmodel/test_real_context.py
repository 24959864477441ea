"""The embedded server with a deliberately small context: the prompt cannot fit, and the episode
ends as a context-limit termination (an error of the setup with its record), not a crash, not
an infrastructure error and not a model failure."""

from __future__ import annotations

from typing import Iterator

import pytest

from pytest_agentfloor.local.model_files import QWEN_05B
from pytest_agentfloor.local.server import LocalServer
from pytest_agentfloor.local.session import server_for
from tests.realmodel.conftest import need
from tests.realmodel.helpers import bench_dir, records, run

pytestmark = pytest.mark.realmodel

SMALL = 512  # tokens: less than the system prompt, the tier-E tool menu and the task together


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    need(QWEN_05B)
    log = tmp_path_factory.mktemp("small-ctx") / "local-server.log"
    # server_for does not apply the start-up check (start_local_servers does): this is the
    # "user started their own server too small" case
    with server_for(QWEN_05B, log_path=log, ctx_per_slot=SMALL) as server:
        yield server


def test_a_prompt_over_the_context_is_the_context_limit_termination(pytester: pytest.Pytester,
                                                                    small_server: LocalServer) -> None:
    bench_dir(pytester, small_server.openai_url, cases=("tier_E/E1",), context_window=SMALL)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "context limit (local)" in out and "Traceback" not in out
    assert "--ctx-size" in out  # the message names what to raise
    (rec,) = records(pytester)
    assert rec["termination"] == "context_limit" and rec["terminal_flag"] == "context_limit"
    assert not rec["infra_error"] and rec["failure_mode"] is None and not rec["passed"]
    assert rec["trajectory"]["context_window"] == SMALL
