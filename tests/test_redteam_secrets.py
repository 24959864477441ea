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
