"""docs/options.md is generated from the option parser and cannot drift from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_agentfloor.__main__ import main as cli
from pytest_agentfloor.optionsdoc import Recorder, recorded, render

DOC = Path(__file__).resolve().parent.parent / "docs" / "options.md"


def test_docs_options_is_what_the_parser_generates() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/options.md is out of date: python -m pytest_agentfloor options-doc > docs/options.md")


def test_every_option_pytest_registers_is_on_the_page(pytester: pytest.Pytester) -> None:
    """The recorder sees what pytest's own parser sees: every --agentfloor-* name of `pytest --help`."""
    result = pytester.runpytest("--help")
    shown = set(re.findall(r"(--agentfloor-[a-z-]+|--model)\b", result.stdout.str()))
    documented = {n for o in recorded().options for n in o.names}
    assert shown and shown <= documented
    page = DOC.read_text(encoding="utf-8")
    assert all(f"`{n}" in page for n in documented)


def test_an_option_row_carries_its_alias_ini_default_and_meaning() -> None:
    row = next(line for line in render().splitlines() if line.startswith("| `--agentfloor-variants"))
    assert row == ("| `--agentfloor-variants LIST`, `--variants LIST` | `agentfloor_variants` | all | "
                   "prompt variants to run, e.g. v0,v2 or all |")
    flag = next(line for line in render().splitlines() if line.startswith("| `--agentfloor-resume"))
    assert flag.startswith("| `--agentfloor-resume` | `agentfloor_resume` | off | skip items already complete")


def test_an_option_without_its_default_in_the_help_is_refused() -> None:
    with pytest.raises(ValueError, match="option --x: its help does not end in"):
        Recorder().addoption("--x", help="no default here")


def test_check_names_a_stale_page_and_passes_a_fresh_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "options.md"
    page.write_text(render().replace("prompt variants", "prompt versions"))
    assert cli(["options-doc", "--check", str(page)]) == 1
    assert f"{page}: out of date; regenerate it with python -m pytest_agentfloor options-doc > {page}" in (
        capsys.readouterr().err)
    page.write_text(render())
    assert cli(["options-doc", "--check", str(page)]) == 0
    assert cli(["options-doc"]) == 0 and capsys.readouterr().out == render()
