"""Model-controlled text reaches the terminal, JUnit XML and the reports only made safe (issue 16, item 5)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.render import safe_html, safe_markdown, safe_text
from tests.fakeserver import FakeModelServer, raw_tool_call, reply

REPO = Path(__file__).resolve().parents[1]
CLEAR, TITLE, BELL = "\x1b[2J\x1b[H", "\x1b]0;owned\x07", "\x07"
LINK = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
NASTY = f"{CLEAR}{TITLE}{LINK}\x1b[31mred\x00\x08\x7f\x9b2J\u202egnp.exe\u2028x"


@pytest.mark.parametrize("raw, shown", [
    ("\x1b[2J", "\\x1b[2J"),
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
    ("a\x00b\x08c\x7fd", "a\\x00b\\x08c\\x7fd"),
    ("\x9b31m", "\\x9b31m"),  # the one-byte C1 CSI
    ("\u202eevil\u202c", "\\u202eevil\\u202c"),  # bidi override
    ("zero\u200bwidth", "zero\\u200bwidth"),
    ("line\u2028sep", "line\\u2028sep"),
    ("ok\ttab\nnewline", "ok\ttab\nnewline"),
    ("plain é 中文 ✓", "plain é 中文 ✓"),
])
def test_safe_text_makes_every_control_visible(raw: str, shown: str) -> None:
    assert safe_text(raw) == shown


def test_single_line_forms_escape_newlines_and_markup() -> None:
    assert safe_text("a\nb\r", multiline=False) == "a\\x0ab\\x0d"
    assert safe_markdown("x|<img src=x onerror=alert(1)>\n") == "x\\|&lt;img src=x onerror=alert(1)>\\x0a"
    assert safe_markdown("p < 0.05") == "p < 0.05"
    assert safe_html('<b title="x">\x1b') == "&lt;b title=&quot;x&quot;&gt;\\x1b"


@pytest.fixture
def nasty_server():
    def respond(body: dict[str, Any]):
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if turn == 0:
            return raw_tool_call(f"lookup{TITLE}", f'{{"record_id": "{NASTY.encode("unicode_escape").decode()}"}}')
        return reply(content=f"the answer {NASTY}")

    with FakeModelServer(respond) as srv:
        yield srv


def test_failure_messages_and_junit_never_carry_escape_sequences(pytester: pytest.Pytester,
                                                                  nasty_server: FakeModelServer) -> None:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    pytester.makefile(".toml", models=f"""
        [models.fake]
        provider = "openai"
        model = "tiny"
        base_url = "{nasty_server.openai_url}"
        retries = 0
        timeout_s = 5
    """)
    result = pytester.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances", "i0",
                                "--no-probe", "--color=no", "-p", "no:cacheprovider", "--junitxml=out.xml")
    result.assert_outcomes(failed=1)
    out = result.stdout.str() + result.stderr.str()
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out and "\x9b" not in out
    assert "lookup\\x1b]0;owned\\x07" in out  # shown, visibly, not obeyed
    xml = (pytester.path / "out.xml").read_text("utf-8")
    assert "\x1b" not in xml and "\x07" not in xml and "\u202e" not in xml
    assert "lookup\\x1b]0;owned\\x07" in xml
    for name in ("report.md", "report.html"):
        text = (pytester.path / "reports" / name).read_text("utf-8")
        assert "\x1b" not in text and "\x07" not in text


def test_markdown_cells_escape_markup_from_names(tmp_path: Path) -> None:
    from pytest_agentfloor.report.format import TextTable
    from pytest_agentfloor.report.markdown import md_table

    table = TextTable(key="t", title="t", headers=["model", "TCR"], align="lr")
    table.add(["<script>x</script>|\x1b[2J", "1.0"])
    text = md_table(table)
    assert "<script>" not in text and "\x1b" not in text and "&lt;script>x&lt;/script>\\|\\x1b[2J" in text


def test_markdown_keeps_character_references_literal() -> None:
    assert safe_markdown("a &lt; b &#60; R&D") == "a &amp;lt; b &amp;#60; R&D"


def test_report_command_renders_hostile_names_from_a_stored_file(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A runs.jsonl from elsewhere may carry any text in its names: tables show it made safe."""
    import json

    from pytest_agentfloor.report.cli import main as report_main

    evil = "m\x1b]0;owned\x07\x1b[2J<script>"
    rows = [{"model": evil, "task": "A1", "tier": "A", "variant": "v0", "instance": "i0", "run": r,
             "passed": r % 2 == 0, "infra_error": False, "failure_mode": None if r % 2 == 0 else "F3",
             "first_unmet": None if r % 2 == 0 else "Q", "terminal_flag": None if r % 2 == 0 else "wrong_conclusion",
             "termination": "final_answer", "turns": 2, "calls": 1, "tokens_in": 10, "tokens_out": 5,
             "latency_s": 0.1, "wall_s": 0.1, "cost_usd": 0.0} for r in range(4)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert report_main([str(path), "--print", "--n-boot", "100"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "m\\x1b]0;owned\\x07" in out
    for name in ("report.md", "report.html"):
        text = (tmp_path / name).read_text("utf-8")
        assert "\x1b" not in text and "\x07" not in text and "<script>" not in text


def test_a_report_dir_name_with_control_characters_prints_their_escapes(pytester: pytest.Pytester) -> None:
    # before (red team): the session's "files in ..." and PARTIAL lines wrote the report dir raw
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    shutil.copytree(repo / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    result = pytester.runpytest("cases/tier_A0", "--model", "oracle", "--instances", "i0", "--variants", "v0",
                                "--agentfloor-report-dir", "rep\x1b[2Jort\u202e", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert result.ret == 0 and "\x1b[2J" not in out and "\u202e" not in out
    assert "rep\\x1b[2Jort\\u202e" in out
