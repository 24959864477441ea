"""capture review: the interactive flow (fed input), --accept-all, the review sheet, and what the
statistics count afterwards (only reviewed references; dropped cases are not collected)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import tomllib
from pathlib import Path
from typing import Iterator

import pytest

from pytest_agentfloor.capture.review import main as review_main

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "captured"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "captured"
    shutil.copytree(EXAMPLE, out)
    return out


def feed(*lines: str):
    it: Iterator[str] = iter(lines)

    def ask(prompt: str) -> str:
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None
    return ask


def table(path: Path) -> dict:
    return tomllib.loads(path.read_text())


def reviews(path: Path) -> list[str]:
    return [c["review"] for c in table(path)["case"]]


def test_interactive_accept_edit_drop_skip_and_end_of_input(folder: Path) -> None:
    out = io.StringIO()
    # router (intent): accept; edit to a label never seen (joins the labels); drop; skip
    # weather-2 (tool_calls): an edit the grader cannot accept is refused and asked again, then accepted
    answers = feed("a", "e", "billing", ".", "d", "s",
                   "e", "sunny", ".", "x", "a")
    assert review_main([str(folder)], ask=answers, out=out) == 0
    text = out.getvalue()
    assert "not applied: it does not pass the table's grader (tool_calls)" in text
    assert "(a, e, d, s or q)" in text
    router = table(folder / "router.toml")
    assert [c["review"] for c in router["case"]] == ["accepted", "edited", "dropped", "provisional"]
    edited = router["case"][1]
    assert edited["reference"] == "billing" and edited["label"] == "billing"
    assert edited["provenance"]["production_reply"] == "other"
    assert router["labels"] == ["billing", "other", "weather"]
    assert reviews(folder / "weather-2.toml") == ["accepted", "provisional", "provisional"]
    # everything else of the files is as capture cases wrote it
    before = table(EXAMPLE / "router.toml")
    assert router["system_prompt"] == before["system_prompt"] and router["site_calls"] == before["site_calls"] == 5
    assert [c["messages"] for c in router["case"]] == [c["messages"] for c in before["case"]]
    assert router["case"][0]["provenance"] == before["case"][0]["provenance"]
    assert "1 accepted" in text.splitlines()[-4] or "2 accepted" in text


def test_accept_all_and_an_unknown_site(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert review_main([str(folder), "--accept-all", "weather"]) == 0
    assert set(reviews(folder / "weather.toml")) == set(reviews(folder / "weather-2.toml")) == {"accepted"}
    assert set(reviews(folder / "router.toml")) == {"provisional"}
    assert "6 accepted" in capsys.readouterr().out
    assert review_main([str(folder), "--accept-all", "nosuch"]) == 2
    assert "--accept-all nosuch: no such site" in capsys.readouterr().err
    assert review_main([str(folder / "nothere")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_review_sheet_round_trip_and_its_errors(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sheet = folder.parent / "sheet.csv"
    assert review_main([str(folder), "--export", str(sheet)]) == 0
    rows = list(csv.DictReader(sheet.open()))
    assert len(rows) == 10 and set(rows[0]) == {"file", "id", "site", "calls", "review", "decision", "prompt",
                                                 "reference", "judge", "judge_reason"}
    router = [r for r in rows if r["file"] == "router.toml"]
    router[0]["decision"] = "accept"
    router[1]["decision"], router[1]["reference"] = "edit", "weather"
    router[2]["decision"] = "drop"

    def write(rs: list[dict]) -> None:
        with sheet.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rs)

    bad = [dict(r) for r in rows]
    bad[3] = {**bad[3], "decision": "accept", "reference": "other"}  # changed, but not an edit
    write(bad)
    assert review_main([str(folder), "--import", str(sheet)]) == 2
    assert "sheet.csv:5 (router-" in capsys.readouterr().err
    assert set(reviews(folder / "router.toml")) == {"provisional"}  # nothing applied from a sheet with an error
    write([{**rows[0], "id": "router-000000000000", "decision": "accept"}])
    assert review_main([str(folder), "--import", str(sheet)]) == 2
    assert "no case 'router-000000000000' in 'router.toml'" in capsys.readouterr().err
    write(rows)
    assert review_main([str(folder), "--import", str(sheet)]) == 0
    assert reviews(folder / "router.toml") == ["accepted", "edited", "dropped", "provisional"]
    assert table(folder / "router.toml")["case"][1]["label"] == "weather"


def test_only_reviewed_references_count_and_dropped_cases_are_not_collected(
        pytester: pytest.Pytester) -> None:
    dest = pytester.path / "cases" / "captured"
    shutil.copytree(EXAMPLE, dest)
    assert review_main([str(dest), "--accept-all", "weather"]) == 0
    assert review_main([str(dest), "--site", "router"], ask=feed("a", "d")) == 0  # then input ends
    result = pytester.runpytest("cases/captured", "--model", "oracle", "-p", "no:randomly")
    result.assert_outcomes(passed=9)  # 10 cases, 1 dropped
    cs = json.loads((pytester.path / "reports" / "summary.json").read_text())["callsite"]
    assert cs["provisional"] == 2  # the router's two unreviewed cases: run, but not counted
    acc = cs["accuracy"]
    assert acc["router"]["oracle"]["n_cases"] == 1 and acc["weather"]["oracle"]["n_cases"] == 6
    # the call mix weights the sites: router 5 calls, weather 8 (both tables), not 1 : 6 cases
    assert cs["weights_from"] == "captured call mix" and cs["site_calls"] == {"router": 5, "weather": 8}
    assert cs["weights"] == pytest.approx({"router": 5 / 13, "weather": 8 / 13}, abs=1e-6)
    result.stdout.fnmatch_lines(["*2 captured case(s) are provisional*not counted*"])


def judge_models(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "models.toml"
    path.write_text(f'[models.judge]\nprovider = "openai"\nmodel = "judge-x"\nbase_url = "{url}/v1"\n')
    return path


def verdicts(body: dict) -> object:
    """A loopback judge: fails the production reply 'It is snow there.', passes every other."""
    from tests.fakeserver import reply

    answer = body["messages"][-1]["content"].split("ANSWER TO CHECK:")[1]
    if "It is snow there." in answer:
        return reply(json.dumps({"reason": "Oslo's report says snow, the reply should say it snows.",
                                 "verdict": "fail"}))
    return reply(json.dumps({"reason": "It answers the turn as the system prompt asks.", "verdict": "pass"}))


def test_a_judge_pre_labels_provisional_references_without_reviewing_them(
        folder: Path, tmp_path: Path, pytester: pytest.Pytester) -> None:
    from tests.fakeserver import FakeModelServer

    with FakeModelServer(verdicts) as judge:
        args = ["--agentfloor-judge", "judge", "--models-file", str(judge_models(tmp_path, judge.url)),
                "--report-dir", str(tmp_path / "reports")]
        out = io.StringIO()
        assert review_main([str(folder), *args, "--list"], out=out) == 0
        asked = len(judge.requests)
        assert asked == 10
        text = out.getvalue()
        assert "judge judge: 9 pass, 1 fail (pre-labels only: these cases stay provisional until reviewed)" in text
        assert "4 provisional, 0 accepted, 0 edited, 0 dropped (of the provisional, the judge passed 4, failed 0)" in text
        # what the judge saw: the call's system prompt, its tools, the conversation, and the production reply
        seen = judge.requests[-1]["messages"][-1]["content"]
        assert "was given these instructions:" in seen and "The conversation it answered:" in seen
        snow = next(c for c in table(folder / "weather.toml")["case"] if c["reference"] == "It is snow there.")
        assert snow["review"] == "provisional"
        assert snow["judge"] == {"verdict": "fail", "reason": "Oslo's report says snow, the reply should say it snows.",
                                 "judge": "judge", "fingerprint": snow["judge"]["fingerprint"],
                                 "prompt": "judge-v1+prelabel-v1"}
        # a second pre-label asks nothing: each case is labelled already by this judge
        out = io.StringIO()
        assert review_main([str(folder), *args, "--list"], out=out) == 0
        assert len(judge.requests) == asked and "10 already labelled" in out.getvalue()
    # the reviewer sees the judge's failures first, marked as the judge's
    out = io.StringIO()
    assert review_main([str(folder)], ask=feed("s"), out=out) == 0
    first = out.getvalue().split("\n[")[1]
    assert first.startswith("weather]") and "judge judge (a pre-label, not a review): FAIL: Oslo" in first
    sheet = tmp_path / "sheet.csv"
    assert review_main([str(folder), "--export", str(sheet)]) == 0
    rows = list(csv.DictReader(sheet.open()))
    assert sorted(r["judge"] for r in rows) == ["fail"] + ["pass"] * 9
    # judged is not reviewed: the statistics still count none of them
    shutil.copytree(folder, pytester.path / "cases" / "captured")
    result = pytester.runpytest("cases/captured", "--model", "oracle", "-p", "no:randomly")
    result.assert_outcomes(passed=10)
    assert json.loads((pytester.path / "reports" / "summary.json").read_text())["callsite"]["provisional"] == 10


def test_a_judge_that_cannot_label_says_so_and_labels_nothing(folder: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fakeserver import FakeModelServer, reply

    with FakeModelServer(lambda body: reply("looks fine to me")) as judge:
        models = judge_models(tmp_path, judge.url)
        args = ["--agentfloor-judge", "judge", "--models-file", str(models), "--report-dir", str(tmp_path / "r")]
        assert review_main([str(folder), *args, "--list"]) == 1
    text = capsys.readouterr().out
    assert "10 could not be labelled (first: router.toml router-" in text and "unparseable reply" in text
    assert not any("judge" in c for c in table(folder / "router.toml")["case"])
    assert review_main([str(folder), "--agentfloor-judge", "nosuch", "--models-file", str(models), "--list"]) == 2
    assert "--agentfloor-judge: unknown model 'nosuch'" in capsys.readouterr().err
