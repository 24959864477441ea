"""The suite's own rules: it runs this interpreter, reports broken fake-server scripts, and marks
the tests that need the [local] extra. Each rule is checked the way it could be broken."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
#: a program named "python"/"python3" as the first element of a command: whatever PATH finds
BARE_PYTHON = re.compile(r"""(\.run\(|\[|Popen\(|check_output\(|check_call\()\s*["']python3?["']""")


def test_no_test_runs_python_from_path() -> None:
    offenders = [f"{path.relative_to(TESTS)}:{n}" for path in sorted(TESTS.rglob("*.py")) if path != Path(__file__)
                 for n, line in enumerate(path.read_text().splitlines(), 1) if BARE_PYTHON.search(line)]
    assert offenders == [], "use sys.executable, not 'python' from PATH: " + ", ".join(offenders)


def test_the_bare_python_check_finds_what_it_is_for() -> None:
    assert BARE_PYTHON.search('bench.run("python", "-m", "x")')
    assert BARE_PYTHON.search("subprocess.run(['python3', '-c', code])")
    assert not BARE_PYTHON.search('bench.run(sys.executable, "-m", "x")')


INNER_CONFTEST = "from tests.conftest import _fake_server_responder_errors, pytest_collection_modifyitems\n"


def test_a_raising_responder_fails_the_test_that_caused_it(pytester: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner="""
        import json, urllib.request
        from tests.fakeserver import FakeModelServer

        def broken(body):
            raise KeyError("messages")

        def test_swallows_the_500():
            with FakeModelServer(broken) as server:
                req = urllib.request.Request(server.openai_url + "/chat/completions", data=b"{}",
                                             headers={"Content-Type": "application/json"})
                try:
                    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=5)
                except urllib.error.HTTPError as exc:
                    assert exc.code == 500  # the test itself is satisfied...

        def test_unaffected():
            with FakeModelServer() as server:
                pass
    """)
    # the inner conftest imports tests.conftest: the subprocess needs the repository on its path
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS.parent), os.environ.get("PYTHONPATH")])))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")  # its servers stay out of this process
    result.assert_outcomes(passed=2, errors=1)  # ...but its teardown reports the responder's exception
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_swallows_the_500*",
                                 "*fake server responder raised: KeyError: 'messages'*"])


def test_a_test_using_the_embedded_model_must_be_marked_realmodel(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(INNER_CONFTEST + """
import pytest

@pytest.fixture
def qwen_server():
    return None
""")
    pytester.makepyfile(test_inner="""
        import pytest

        def test_unmarked(qwen_server):
            pass

        @pytest.mark.realmodel
        def test_marked(qwen_server):
            pass
    """)
    pytester.makeini("[pytest]\nmarkers =\n    realmodel: x\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*must be marked realmodel: test_inner.py::test_unmarked"])
