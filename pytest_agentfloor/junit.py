"""JUnit XML for dashboards: a readable classname for benchmark items, and the family to use.

pytest derives the classname from the node id, which turns ``cases/tier_A/A1.toml`` into
``cases.tier_A.A1.toml`` (Jenkins shows package ``cases.tier_A.A1``, class ``toml``). Benchmark
items get ``cases.tier_A.A1`` instead. Their ``<property>`` elements (values ``true``/``false``,
empty for none) are valid only under ``junit_family=xunit1``; under pytest's default ``xunit2``
they are left out (results.py) and the terminal summary says how to get them.
Controller-only, like pytest's own LogXML; it reads LogXML through its stash key, present in
pytest 8 and 9, and does nothing when that is missing.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest


def classname(nodeid: str, prefix: str | None = None) -> str:
    """``cases/tier_A/A1.toml::A1[...]`` -> ``cases.tier_A.A1`` (with junit_prefix in front, if set)."""
    path = PurePosixPath(nodeid.split("::")[0])
    parts = [*path.parent.parts, path.stem] if str(path.parent) != "." else [path.stem]
    return ".".join(([prefix] if prefix else []) + parts)


class JUnitNames:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.measured = False

    def _xml(self) -> Any:
        try:
            from _pytest.junitxml import xml_key
        except ImportError:  # pragma: no cover - a pytest without it: keep pytest's names
            return None
        return self.config.stash.get(xml_key, None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "setup" or not getattr(report, "agentfloor_measured", False):
            return
        self.measured = True
        xml = self._xml()
        if xml is not None:  # before LogXML's own hook: it keeps attributes set earlier
            xml.node_reporter(report).add_attribute("classname", classname(report.nodeid, xml.prefix))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        xml = self._xml()
        if xml is not None and self.measured and xml.family == "xunit2":
            terminalreporter.write_line(
                "agentfloor: JUnit XML without per-test <property> elements (junit_family=xunit2, pytest's default, "
                "has none); for dashboards use -o junit_family=xunit1", yellow=True)
