"""Number formats and the text table: the report's primitives, shared by every writer and kind.

At the bottom of `report/`: it imports none of the writers (files, markdown, html, terminal), so
a kind's tables (callsite/tables.py, pressure/tables.py) import it without importing them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


# -- number formats -------------------------------------------------------------------------
DASH = "—"


def pct(x: float | None, nd: int = 1) -> str:
    return DASH if x is None else f"{100.0 * x:.{nd}f}%"


def pct_num(x: float | None, nd: int = 1) -> str:
    return DASH if x is None else f"{100.0 * x:.{nd}f}"


def ci_pct(lo: float | None, hi: float | None, nd: int = 1) -> str:
    if lo is None or hi is None:
        return DASH
    return f"[{100.0 * lo:.{nd}f}, {100.0 * hi:.{nd}f}]"


def signed(x: float | None, nd: int = 1) -> str:
    if x is None:
        return DASH
    r = round(x, nd) + 0.0
    return f"{r:+.{nd}f}"


def ci_pp(lo: float | None, hi: float | None, nd: int = 1) -> str:
    if lo is None or hi is None:
        return DASH
    return f"[{signed(lo, nd)}, {signed(hi, nd)}]"


UNKNOWN = "unknown"


def usd(x: float | None, missing: str = DASH) -> str:
    """Dollars with two significant digits below $1 ($0.00046, $0.033), cents above; ``missing`` for None."""
    if x is None:
        return missing
    if x == 0:
        return "$0"
    if abs(x) >= 1:
        return f"${x:,.2f}"
    two_sig = float(f"{abs(x):.2g}")  # round first, so 0.000998 reads $0.0010, not $0.00100
    decimals = max(2, 1 - math.floor(math.log10(two_sig)))
    return f"${x:.{decimals}f}"


def secs(x: float | None) -> str:
    if x is None:
        return DASH
    if x < 10:
        return f"{x:.2f} s"
    if x < 90:
        return f"{x:.1f} s"
    return f"{x / 60:.1f} min"


def pval(p: float | None) -> str:
    if p is None:
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def params(pb: float | None) -> str:
    return DASH if pb is None else f"{pb:g} B"


def tokens(x: float | None) -> str:
    return DASH if x is None else f"{x:,.0f}"


def pricing_text(meta: Mapping[str, Any] | None) -> str:
    p = (meta or {}).get("pricing") or {}
    parts = []
    if "hourly_usd" in p:
        parts.append(f"${p['hourly_usd']:g}/h")
    if "input_per_mtok" in p or "output_per_mtok" in p:
        parts.append(f"${p.get('input_per_mtok', 0):g}/${p.get('output_per_mtok', 0):g} per Mtok in/out")
    return ", ".join(parts) or "none"


def tcr_class(x: float | None) -> str:
    if x is None:
        return "na"
    return "good" if x >= 0.8 else "mid" if x >= 0.5 else "bad"


def verdict(raw: bool, holm: bool, status: str = "no", too_few: bool = False) -> tuple[str, str]:
    """(text, class): ``yes`` holds after Holm, ``yes†`` only unadjusted, ``no`` refuted (the interval
    excludes the claim); insufficient evidence is ``too few`` below the pairs any certification needs,
    ``unclear`` above (the interval straddles the margin)."""
    if holm:
        return "yes", "yes"
    if raw:
        return "yes†", "raw"
    if status == "insufficient evidence":
        return ("too few" if too_few else "unclear"), "na"
    return "no", "no"


UNRELIABLE = "unreliable endpoint"


# -- the text table ----------------------------------------------------------------------------
@dataclass
class TextTable:
    """A table as text cells, with one style class per cell for HTML and terminal colouring."""

    key: str
    title: str
    headers: list[str]
    align: str  # one of "l"/"r"/"c" per column
    rows: list[list[str]] = field(default_factory=list)
    classes: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sections: list[int] = field(default_factory=list)  # row indexes after which a section ends

    def add(self, cells: list[str], classes: list[str] | None = None, *, end_section: bool = False) -> None:
        self.rows.append(cells)
        self.classes.append(classes or [""] * len(cells))
        if end_section:
            self.sections.append(len(self.rows) - 1)
