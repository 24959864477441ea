"""Test-suite setup.

pytester's in-process runs remove the modules first imported during a run. Libraries that keep
module-level state across imports break when imported twice in one process (numpy refuses; the
HTTP stacks under openai and ollama map exceptions by class and stop recognising re-imported
ones), so they are imported here, before any inner run.
"""

import importlib
import os
from typing import Iterator

import pytest

from tests.fakeserver import started_servers

# pytester's subprocess runs and the tests' own subprocesses must import this checkout's package, not
# the copy an editable install points at (a worktree's tests otherwise run main's code in every
# subprocess). Set before any test, so every child inherits it.
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_REPO, os.environ.get("PYTHONPATH", "")) if p)

for _name in (
    "numpy", "scipy.stats", "openai", "ollama", "h11", "httpcore",
    "httpcore2",  # loaded lazily by openai's HTTP stack on its first request (openai >= 3 uses httpx2)
    "pytest_agentfloor.providers.openai_chat", "pytest_agentfloor.providers.ollama_chat",
    "pytest_agentfloor.report.files", "pytest_agentfloor.report.terminal", "pytest_agentfloor.stats",
):
    try:
        importlib.import_module(_name)
    except ImportError:  # a stack that does not use this module cannot be confused by it either
        pass


# -- hermetic runs -------------------------------------------------------------------------------
#: AGENTFLOOR_TEST_HOSTILE_ENV=1 runs the suite as on a corporate machine with a stray shell
#: profile: proxies that point nowhere, and the official clients' own variables set to values that
#: must not be used. Loopback test servers must still be reached directly and the configured
#: endpoint must win over OPENAI_BASE_URL / OLLAMA_HOST. Set before any test or client runs, so
#: pytester subprocesses inherit it too.
HOSTILE_ENV = {
    "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "ALL_PROXY": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "all_proxy": "http://127.0.0.1:9",
    "OPENAI_API_KEY": "sk-from-the-environment-must-not-be-sent", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    "OPENAI_ORG_ID": "org-from-the-environment", "OPENAI_PROJECT_ID": "proj-from-the-environment",
    "OLLAMA_HOST": "127.0.0.1:9", "OLLAMA_API_KEY": "ollama-from-the-environment",
}
if os.environ.get("AGENTFLOOR_TEST_HOSTILE_ENV", "").strip() == "1":
    for _key, _value in HOSTILE_ENV.items():
        os.environ.setdefault(_key, _value)

#: The suite runs its llama.cpp servers on one thread (the product's default is every core): under
#: `-n auto` the other worker keeps the second core busy, and two spin-waiting server threads on a
#: busy core made the same request take 1.6-28 s (docs/local-model.md). Inherited by subprocesses.
os.environ.setdefault("AGENTFLOOR_LOCAL_THREADS", "1")

#: fixtures that start the embedded model; a test using one must carry the realmodel marker
LOCAL_EXTRA_FIXTURES = frozenset({"qwen_server", "smollm2_server"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [item.nodeid for item in items
                if LOCAL_EXTRA_FIXTURES & set(getattr(item, "fixturenames", ()))
                and item.get_closest_marker("realmodel") is None]
    if unmarked:
        raise pytest.UsageError("tests that need the [local] extra must be marked realmodel: " + ", ".join(unmarked))


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The HTTP providers' retry backoff, recorded instead of slept: for tests that need only the
    number of attempts (with_retries' own delays are tested in tests/providers/)."""
    from pytest_agentfloor.providers import ollama_chat, openai_chat

    delays: list[float] = []
    for module in (openai_chat, ollama_chat):
        monkeypatch.setattr(module, "_backoff_sleep", delays.append)
    return delays


@pytest.fixture(autouse=True)
def _fake_server_responder_errors() -> Iterator[None]:
    """A responder that raised turns into a 500 the code under test may well survive: fail the test."""
    before = {id(s): len(getattr(s, "errors", ())) for s in started_servers()}
    yield
    raised = [exc for s in started_servers() for exc in getattr(s, "errors", ())[before.get(id(s), 0):]]
    if raised:
        pytest.fail("fake server responder raised: " + "; ".join(f"{type(e).__name__}: {e}" for e in raised),
                    pytrace=False)


# tests/userproj is a user's project that tests/test_citizen.py copies and runs; not tests of ours
collect_ignore = ["userproj"]
