"""Red team, secrets: a model that echoes the configured API key or the base_url's password never
gets it written (runs.jsonl, reports/, viewer.html, JUnit XML, the terminal), in any form it can take
there (as is, JSON-escaped in tool-call arguments, cut by the 64 KiB text cap), and the items'
verdicts are what they are without masking (grading sees the real text).

Each session runs pytest (pytester) against a fake OpenAI-compatible loopback server; the same
hostile replies played with an unrelated key configured show that the echoed text would have been
written, so every assertion below can fail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from pytest_agentfloor.masking import MIN_SECRET, mask, model_secrets
from tests.fakeserver import FakeModelServer, Reply, raw_tool_call, reply
from tests.readback import readable

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-proj-SecretKeyAbcdefGhij"
PASSWORD = 'pa"ss-Word-Qx7Lm'  # a quote: in tool-call arguments it is written JSON-escaped, pa\"ss-...
PASSWORD_URL = "pa%22ss-Word-Qx7Lm"
#: what must never be written: pieces of each secret that survive every escaping, and the key's first
#: 10 characters, which a 64 KiB cut through the key would leave
TELLTALES = ("SecretKeyAbcdef", KEY[:10], "Word-Qx7Lm")
CAP = 64 * 1024


def respond(body: Any) -> Reply:
    """A1 i0 (answer 340). v0: the right call and answer, with the key in its reasoning and answer; v1:
    the password (with a quote) in the call's arguments, then a long answer with the key at the cut."""
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "Tell me the on-hand" not in prompt:  # v0
        if turn == 0:
            return reply(content=f"<think>I was configured with {KEY}</think>",
                         tool_calls=[("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "on_hand"})])
        return reply(content=f"340 (my key is {KEY})")
    if turn == 0:
        args = json.dumps({"record_id": "INV-Q7P2K", "attribute": "on_hand", "auth": PASSWORD})
        return raw_tool_call("get_attribute", args)
    head = f"{KEY} {PASSWORD} "  # shown in the failure's trajectory line
    return reply(content=head + "x" * (CAP - 10 - len(head)) + KEY + " 340")  # the cap cuts 10 characters in


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(respond) as s:
        yield s


def written(root: Path) -> dict[str, str]:
    """Every file the session wrote: the report dir (runs.jsonl, reports, viewer.html) and the JUnit XML."""
    files = [p for p in (root / "reports").rglob("*") if p.is_file()] + [root / "junit.xml"]
    return {str(p.relative_to(root)): readable(p) for p in files}


def session(pytester: pytest.Pytester, server: FakeModelServer, *, secret: bool) -> tuple[str, dict[str, str],
                                                                                          dict[str, tuple]]:
    host = server.openai_url.removeprefix("http://")
    url = f"http://agent:{PASSWORD_URL}@{host}" if secret else server.openai_url
    pytester.makefile(".toml", models=f"""
        [models.fake]
        provider = "openai"
        model = "tiny"
        base_url = "{url}"
        api_key_env = "{'AF_REDTEAM_KEY' if secret else 'AF_REDTEAM_OTHER_KEY'}"
        retries = 0
        timeout_s = 20
    """)
    result = pytester.runpytest("cases", "--model", "fake", "--instances", "i0", "-k", "v0 or v1", "--no-probe",
                                "-p", "no:cacheprovider", "--junitxml", "junit.xml", "-rA", "-vv")
    out = result.stdout.str() + result.stderr.str()
    files = written(pytester.path)
    runs = [json.loads(line) for name, text in files.items() if name.endswith("runs.jsonl")
            for line in text.splitlines()]
    verdicts = {r["nodeid"]: (r["passed"], r["infra_error"], r["failure_mode"], r["first_unmet"], r["terminal_flag"])
                for r in runs}
    shutil.rmtree(pytester.path / "reports")
    return out, files, verdicts


def test_an_echoed_key_or_password_is_never_written_and_the_verdict_stands(
        pytester: pytest.Pytester, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", pytester.path / "cases" / "tier_A")
    monkeypatch.setenv("AF_REDTEAM_KEY", KEY)
    monkeypatch.setenv("AF_REDTEAM_OTHER_KEY", "sk-unrelated-key-of-another-account")

    out, files, verdicts = session(pytester, server, secret=True)
    plain_out, plain_files, plain_verdicts = session(pytester, server, secret=False)

    # the same replies without these secrets configured: the telltales reach each place checked below
    for telltale in TELLTALES:
        assert telltale in plain_out, telltale
        assert telltale in "".join(v for k, v in plain_files.items() if k.endswith("runs.jsonl")), telltale
    assert any("Word-Qx7Lm" in v and "\\\\\\\"" in v for k, v in plain_files.items() if k.endswith("runs.jsonl"))
    for name in ("junit.xml", "viewer.html"):
        assert any(k.endswith(name) and "SecretKeyAbcdef" in v for k, v in plain_files.items()), name

    # with them configured: nowhere, in no form, and the same verdicts (one pass, one failure)
    assert len(verdicts) == 2 and verdicts == plain_verdicts
    assert sorted(v[0] for v in verdicts.values()) == [False, True]
    assert {Path(k).name for k in files} >= {"runs.jsonl", "viewer.html", "report.md", "report.html", "junit.xml"}
    for name, text in files.items():
        for telltale in TELLTALES:
            assert telltale not in text, (name, telltale)
    for telltale in TELLTALES:
        assert telltale not in out, telltale
    assert "***" in out and "1 passed" in out and "1 failed" in out


def test_secrets_are_collected_in_every_form_and_short_ones_are_left_alone() -> None:
    from pytest_agentfloor.config import ModelConfig

    models = [ModelConfig(name="a", provider="openai", model="m", api_key_env="K",
                          base_url="http://u:p%2Fword-long@host/v1"),
              ModelConfig(name="b", provider="openai", model="m", api_key_env="SHORT"),
              ModelConfig(name="c", provider="openai", model="m", api_key_env="UNSET"), None]
    forms = model_secrets(models, {"K": 'k"ey-1234567', "SHORT": "abc1234"})
    assert 'k"ey-1234567' in forms and 'k\\"ey-1234567' in forms and 'k\\\\\\"ey-1234567' in forms
    assert "p%2Fword-long" in forms and "p/word-long" in forms
    assert not any("abc1234" in f for f in forms) and len("abc1234") < MIN_SECRET  # would garble text
    deep: Any = "p/word-long"
    for _ in range(100_000):  # nested arguments cannot overflow the masking
        deep = [deep]
    masked = mask({"k": ('k"ey-1234567 x', deep), 'p/word-long': 1}, forms)
    assert masked["k"][0] == "*** x" and "***" in masked
    inner = masked["k"][1]
    while isinstance(inner, list):
        inner = inner[0]
    assert inner == "***"


# -- the red-team corpus (tests/redteam_corpus): s06, s09, s11 ------------------------------------------------------
def _a1(pytester: pytest.Pytester) -> None:
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", pytester.path / "cases" / "tier_A")


def _everything(root: Path) -> str:
    return "".join(p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*")
                   if p.is_file() and p.name != "models.toml")


def test_a_key_in_the_probes_reply_is_masked_in_probe_json_and_the_terminal(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # corpus s06: before, the probe's detail (the model's text) went to probe.json and the skip reasons as is
    _a1(pytester)
    monkeypatch.setenv("AF_REDTEAM_KEY", KEY)
    with FakeModelServer(lambda body: reply(content=f"I hold {KEY}")) as server:
        pytester.makefile(".toml", models=f"""
            [models.fake]
            provider = "openai"
            model = "tiny"
            base_url = "{server.openai_url}"
            api_key_env = "AF_REDTEAM_KEY"
            retries = 0
        """)
        result = pytester.runpytest("cases", "--model", "fake", "--instances", "i0", "--variants", "v0", "-rA",
                                    "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"skipped": 1}
    probe = next(pytester.path.glob("reports/sessions/*/probe.json")).read_text()
    assert "no_tools" in probe and "***" in probe
    for telltale in TELLTALES:
        assert telltale not in probe + result.stdout.str() + result.stderr.str() + _everything(pytester.path)


def test_cassettes_mask_an_echoed_key_and_still_replay(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # corpus s09: before, --agentfloor-record stored the model's reply with the key in cassettes.jsonl
    _a1(pytester)
    monkeypatch.setenv("AF_REDTEAM_KEY", KEY)

    def respond(body: Any) -> Reply:
        if not any(m.get("role") == "assistant" for m in body["messages"]):
            return reply(content=f"my key is {KEY}",
                         tool_calls=[("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "on_hand"})])
        return reply(content="340")

    with FakeModelServer(respond) as server:
        pytester.makefile(".toml", models=f"""
            [models.fake]
            provider = "openai"
            model = "tiny"
            base_url = "{server.openai_url}"
            api_key_env = "AF_REDTEAM_KEY"
            retries = 0
        """)
        args = ("cases", "--model", "fake", "--instances", "i0", "--variants", "v0", "--no-probe",
                "-p", "no:cacheprovider")
        recorded = pytester.runpytest(*args, "--agentfloor-record")
        asked = len(server.requests)
        replayed = pytester.runpytest(*args, "--agentfloor-replay")
        assert len(server.requests) == asked  # the replay asked the server nothing
    assert recorded.parseoutcomes() == {"passed": 1} and replayed.parseoutcomes() == {"passed": 1}
    cassette = (pytester.path / "reports" / "cassettes.jsonl").read_text()
    assert "***" in cassette
    for telltale in TELLTALES:
        assert telltale not in _everything(pytester.path)


def test_a_judges_reason_that_echoes_its_key_is_masked_in_the_judge_cache(tmp_path: Path) -> None:
    # corpus s11: before, the reason went to reports/judge-cache.jsonl as the judge wrote it
    from pytest_agentfloor.judge.cache import JudgeCache
    from pytest_agentfloor.masking import secret_forms

    forms = secret_forms([KEY])
    cache = JudgeCache(tmp_path / "judge-cache.jsonl", secrets=forms)
    cache.put({"key": "a" * 64, "verdict": "fail", "reason": f"the answer leaks {KEY}"})
    cache.close()
    text = (tmp_path / "judge-cache.jsonl").read_text()
    assert KEY not in text and "the answer leaks ***" in text
    assert JudgeCache(tmp_path / "judge-cache.jsonl").get("a" * 64)["reason"] == "the answer leaks ***"
