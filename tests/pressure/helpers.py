"""Shared helpers for the pressure tests: the families, the oracle and episode runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.grading import grade
from pytest_agentfloor.kinds import load_file
from pytest_agentfloor.protocol import PROTOCOLS
from pytest_agentfloor.providers.scripted import ScriptedProvider

ROOT = Path(__file__).resolve().parents[2]
PRESSURE = ROOT / "cases" / "pressure"


FRONTIER = PRESSURE / "frontier.toml"


def entries(frontier: bool = False) -> list[Any]:
    """The capacity families' entries (frontier=True: the frontier families' instead)."""
    out = []
    for f in sorted(PRESSURE.glob("*.toml")):
        if (f == FRONTIER) == frontier:
            _, es = load_file(f)
            out += es
    return out


def families() -> dict[str, tuple[str, Any]]:
    """family id -> (intent, Family), the capacity families."""
    from pytest_agentfloor.pressure.family import FamilyFile
    from pytest_agentfloor.suite.loader import read_toml

    out = {}
    for f in sorted(PRESSURE.glob("*.toml")):
        if f == FRONTIER:
            continue
        data, _ = read_toml(f)
        data.pop("kind")
        doc = FamilyFile.model_validate(data)
        for fam in doc.families:
            out[fam.id] = (doc.intent, fam)
    return out


def frontier_families() -> dict[str, Any]:
    """family id -> FrontierFamily."""
    from pytest_agentfloor.pressure.frontier import FrontierFile
    from pytest_agentfloor.suite.loader import read_toml

    data, _ = read_toml(FRONTIER)
    data.pop("kind")
    return {f.id: f for f in FrontierFile.model_validate(data).frontier}


def oracle() -> ScriptedProvider:
    return ScriptedProvider(ModelConfig(name="oracle", provider="scripted", policy="oracle"))


def play(case: Any, provider: Any = None, protocol: str = "tbb") -> tuple[Any, Any]:
    traj = run_episode(case, provider or oracle(), model="m", protocol=PROTOCOLS[protocol])
    return traj, grade(case, traj)
