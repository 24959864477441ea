"""Case kinds are plug-ins: the built-in ones and a third-party one register the same way.

The third-party kind (tests/kindplugin/wordcheck.py, the example of docs/kinds.md) is installed
the way pip leaves a package: the module and a ``*.dist-info`` with ``entry_points.txt`` on
sys.path. It is collected, played and graded with no change to the plugin.
"""

from __future__ import annotations

import json
import os
import sys
from importlib import metadata
from pathlib import Path

import pytest

from pytest_agentfloor import casefiles, kinds, scope
from pytest_agentfloor.kindspec import CaseKind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = Path(__file__).resolve().parent / "kindplugin" / "wordcheck.py"

WORDS = '''
kind = "wordcheck"

[[case]]
id = "capital-fr"
prompt = "The capital of France, in one word?"
answer = "Paris"

[[case]]
id = "colour-sky"
prompt = "The colour of a clear sky, in one word?"
answer = "blue"
'''


def install_example(site: Path, entry: str = "wordcheck = wordcheck_kind:WordCheckKind") -> Path:
    """What `pip install` of a package holding the example kind leaves on sys.path."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "wordcheck_kind.py").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    info = site / "wordcheck_kind-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wordcheck-kind\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[agentfloor.kinds]\n{entry}\n")
    return site


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry as in a new process (entry points not read yet), restored afterwards."""
    monkeypatch.setattr(kinds, "KINDS", {})
    monkeypatch.setattr(kinds, "_loaded", False)
    monkeypatch.setattr(kinds, "_found", None)  # the entry points, read again
    monkeypatch.setattr(casefiles, "_plugin_kinds", None)  # the kind names scope reads from the metadata
    monkeypatch.setattr(casefiles, "_entry_points", None)
    monkeypatch.delitem(sys.modules, "wordcheck_kind", raising=False)  # each test installs its own copy


def test_the_built_in_kinds_are_the_entry_points_pyproject_declares() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["agentfloor.kinds"]
    assert declared == kinds.BUILTIN_KINDS


def test_every_built_in_kind_implements_the_protocol() -> None:
    for kind in kinds.all_kinds():
        assert isinstance(kind, CaseKind), kind.name
    assert [k.name for k in kinds.all_kinds()][:4] == ["episode", "callsite", "installation", "pressure"]


def test_all_kinds_keeps_the_entry_points_order_whichever_kind_loaded_first(fresh_registry: None) -> None:
    """Built-in kinds load by need: a run that read a pressure file first still lists the built-ins in order."""
    kinds.kind_named("pressure")
    kinds.kind_named("episode")
    assert [k.name for k in kinds.all_kinds()][:4] == ["episode", "callsite", "installation", "pressure"]


def test_an_install_without_the_group_still_finds_the_built_ins(fresh_registry: None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An editable install made before the group existed has no entry for it: BUILTIN_KINDS stands in."""
    monkeypatch.setattr(metadata, "entry_points", lambda **_: [])
    assert [k.name for k in kinds.all_kinds()] == list(kinds.BUILTIN_KINDS)
    assert kinds.is_case_file(REPO / "cases" / "tier_A" / "A1.toml")
    assert kinds.is_case_file(REPO / "cases" / "callsite" / "intent.toml")
    assert not kinds.is_case_file(REPO / "cases" / "callsite" / "installations" / "site_a.toml")


def test_a_third_party_kind_on_sys_path_is_registered_and_its_files_recognised_by_content(
        tmp_path: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(install_example(tmp_path / "site")))
    names = [k.name for k in kinds.all_kinds()]
    assert names == [*kinds.BUILTIN_KINDS, "wordcheck"]  # the built-ins first, then the rest by name
    folder = tmp_path / "cases" / "wordcheck"
    folder.mkdir(parents=True)
    (folder / "words.toml").write_text(WORDS)
    (folder / "notes.toml").write_text('title = "not a case: no kind declared"\n')
    assert kinds.is_case_file(folder / "words.toml") and not kinds.is_case_file(folder / "notes.toml")
    assert scope.holds_case(tmp_path / "cases")
    kind, entries = kinds.load_file(folder / "words.toml")
    assert kind.name == "wordcheck" and [e.id for e in entries] == ["capital-fr", "colour-sky"]


@pytest.mark.parametrize(("entry", "message"), [
    ("wordcheck = wordcheck_kind:Missing",
     "agentfloor.kinds entry point wordcheck = 'wordcheck_kind:Missing' could not be loaded: AttributeError"),
    ("wordcheck = wordcheck_kind:WordCase",
     "agentfloor.kinds entry point wordcheck = 'wordcheck_kind:WordCase' could not be loaded: TypeError"),
    ("words = wordcheck_kind:WordCheckKind",
     "agentfloor.kinds entry point words = 'wordcheck_kind:WordCheckKind' makes a kind named 'wordcheck'; "
     "the entry point's name must be the kind's name"),
    ("wordcheck = wordcheck_kind:time",
     "agentfloor.kinds entry point wordcheck = 'wordcheck_kind:time' could not be loaded: TypeError"),
])
def test_a_broken_entry_point_names_itself(tmp_path: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch,
                                           entry: str, message: str) -> None:
    monkeypatch.syspath_prepend(str(install_example(tmp_path / "site", entry)))
    with pytest.raises(kinds.KindPluginError) as err:
        kinds.all_kinds()
    assert str(err.value).startswith(message)


def test_an_entry_point_that_is_not_a_kind_says_what_is_missing(tmp_path: Path, fresh_registry: None,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    site = install_example(tmp_path / "site", "wordcheck = wordcheck_kind:NotAKind")
    (site / "wordcheck_kind.py").write_text(EXAMPLE.read_text() + "\n\nclass NotAKind:\n    name = 'wordcheck'\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(kinds.KindPluginError, match=r"is not a case kind: no markers, entries, play, grade "
                                                    r"\(see docs/kinds.md\)"):
        kinds.all_kinds()


@pytest.fixture
def plugin_site(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = install_example(pytester.path / "site")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    (pytester.path / "cases" / "wordcheck").mkdir(parents=True)
    (pytester.path / "cases" / "wordcheck" / "words.toml").write_text(WORDS)
    return site


def test_a_third_party_kind_is_collected_played_graded_and_recorded(pytester: pytest.Pytester,
                                                                    plugin_site: Path) -> None:
    result = pytester.runpytest_subprocess("cases", "--model", "oracle,fault-resign", "-p", "no:cacheprovider",
                                           "-m", "wordcheck", "--strict-markers")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*wordcheck.answer*expected 'Paris'; observed 'no idea'*"])
    records = [json.loads(line) for line in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]
    assert sorted((r["model"], r["task"], r["passed"], r["kind"]) for r in records) == [
        ("fault-resign", "capital-fr", False, "wordcheck"), ("fault-resign", "colour-sky", False, "wordcheck"),
        ("oracle", "capital-fr", True, "wordcheck"), ("oracle", "colour-sky", True, "wordcheck")]
    assert {r["facets"]["answer"] for r in records} == {"Paris", "blue"}
    assert all(r["first_unmet"] == "wordcheck.answer" for r in records if not r["passed"])


def test_a_broken_third_party_kind_is_a_one_line_usage_error(pytester: pytest.Pytester, plugin_site: Path) -> None:
    (plugin_site / "wordcheck_kind-0.1.dist-info" / "entry_points.txt").write_text(
        "[agentfloor.kinds]\nwordcheck = wordcheck_kind:Missing\n")
    result = pytester.runpytest_subprocess("cases", "--model", "oracle", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: agentfloor.kinds entry point wordcheck = 'wordcheck_kind:Missing' "
                                 "could not be loaded: AttributeError*"])


def test_docs_kinds_shows_the_example_kind_verbatim() -> None:
    doc = (REPO / "docs" / "kinds.md").read_text(encoding="utf-8")
    assert EXAMPLE.read_text(encoding="utf-8") in doc
    assert '[project.entry-points."agentfloor.kinds"]\nwordcheck = "wordcheck_kind:WordCheckKind"' in doc
