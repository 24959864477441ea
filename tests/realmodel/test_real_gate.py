"""The gate of docs/ci-gating.md against the embedded model: the documented commands, run against
one shared llama-server (so the test pays for one server start, not three)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.realmodel

REPO = Path(__file__).resolve().parents[2]


def real_recipe() -> list[tuple[list[str], int | None]]:
    """(pytest arguments, documented exit status) of the block under "Against a real model"."""
    text = (REPO / "docs" / "ci-gating.md").read_text(encoding="utf-8")
    block = text.split("## Against a real model", 1)[1].split("```", 2)[1]
    out = []
    for line in block.strip().splitlines():
        cmd, _, comment = line.partition("#")
        words = shlex.split(cmd)
        m = re.match(r"\s*exit (\d+)", comment)
        out.append((words[1:], int(m.group(1)) if m else None))
    return out


def test_the_embedded_model_gated_against_itself_and_a_degraded_prompt(pytester: pytest.Pytester,
                                                                          qwen_server) -> None:
    (pytester.path / "cases" / "tier_A0").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A0" / "A01.toml", pytester.path / "cases" / "tier_A0")
    # the documented models.toml entry, pointed at the shared server
    pytester.makefile(".toml", models=f'[models.local]\nprovider = "local"\nbase_url = "{qwen_server.openai_url}"\n'
                                      'max_tokens = 512\ntimeout_s = 120\n')
    (record, _), (same, same_exit), (structured, structured_exit) = real_recipe()
    assert "--agentfloor-system-prompt" in structured and "structured" in structured
    base = pytester.runpytest(*record, "-p", "no:cacheprovider")
    assert base.ret == pytest.ExitCode.OK, base.stdout.str()[-1500:]
    runs = [json.loads(x) for x in (pytester.path / "baseline" / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 10 and not any(r["infra_error"] for r in runs)

    for args, code in ((same, same_exit), (structured, structured_exit)):
        result = pytester.runpytest(*args, "-p", "no:cacheprovider")
        gate = json.loads((pytester.path / "reports" / "latest" / "gate.json").read_text())
        assert result.ret == code == gate["exit_status"], result.stdout.str()[-1500:]
        (tier,) = gate["tiers"]
        assert tier["tier"] == "A0" and tier["pairs"] == 10 and tier["min_pairs"] == 9
        # greedy decoding: as measured, no pair is discordant, so the interval is Tango's ±z²/(n + z²)
        assert tier["outcome"] == "certified" and tier["delta_pp"] == 0.0
        assert tier["ci95_pp"] == pytest.approx([-27.75, 27.75], abs=0.01)
        result.stdout.fnmatch_lines(["gate tier A0: PASS: Δ +0.0 pp ?95% CI -27.8, +27.8?, n=10 pairs*",
                                     "*agentfloor gate: PASSED*"])
