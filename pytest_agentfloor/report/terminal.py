"""Session-end terminal tables (controller only), rendered with rich into pytest's reporter."""

from __future__ import annotations

import io
from collections import Counter, defaultdict
from typing import Any, Iterable

from rich.console import Console
from rich.table import Table

from ..grading.failure import FAILURE_MODES
from ..suite.schema import TIERS


def tier_table(records: Iterable[dict[str, Any]]) -> Table:
    """Runs, passes, TCR, infrastructure errors and failure modes per model and tier."""
    cells: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        cells[(r["model"], r["tier"])].append(r)
        cells[(r["model"], "all")].append(r)
    table = Table(title="AgentFloor: task completion by model and tier", title_justify="left")
    for col in ("model", "tier", "runs", "passed", "TCR", "infra"):
        table.add_column(col, justify="left" if col in ("model", "tier") else "right")
    for mode in FAILURE_MODES:
        table.add_column(mode, justify="right")
    order = {t: i for i, t in enumerate((*TIERS, "all"))}
    for model, tier in sorted(cells, key=lambda k: (k[0], order.get(k[1], 99))):
        rs = cells[(model, tier)]
        graded = [r for r in rs if not r["infra_error"]]
        passed = sum(1 for r in graded if r["passed"])
        modes = Counter(r["failure_mode"] for r in graded if not r["passed"])
        tcr = f"{100 * passed / len(graded):.1f}%" if graded else "-"
        table.add_row(model, tier, str(len(graded)), str(passed), tcr, str(len(rs) - len(graded)),
                      *[str(modes.get(m, 0) or "") for m in FAILURE_MODES],
                      end_section=tier == "all")
    return table


def render_summary(terminalreporter: Any, records: list[dict[str, Any]]) -> None:
    buf = io.StringIO()
    markup = terminalreporter.hasmarkup
    console = Console(file=buf, width=max(terminalreporter.config.get_terminal_writer().fullwidth, 100),
                      force_terminal=markup, color_system="standard" if markup else None, highlight=False)
    console.print(tier_table(records))
    terminalreporter.write_sep("=", "agentfloor")
    terminalreporter.write(buf.getvalue())
