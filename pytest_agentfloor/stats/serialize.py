"""Deterministic JSON conversion for statistics results.

Reports are diffed across runs and machines, so every float is rounded by one rule: 6 decimal
places, except that magnitudes below 1 keep 6 significant digits (so a $0.0000549 cost per run is
not flattened to 5.5e-05). ``-0.0`` is normalised to ``0.0``, non-finite values become ``None``
(JSON has no NaN), and every mapping is emitted with sorted keys.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

FLOAT_DECIMALS = 6


def clean_float(x: float | None, ndigits: int = FLOAT_DECIMALS) -> float | None:
    """Round ``x`` for output (see module doc); ``None``/NaN/inf map to ``None``."""
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x):
        return None
    if x != 0.0 and abs(x) < 1.0:
        return float(f"{x:.{ndigits}g}") + 0.0
    return round(x, ndigits) + 0.0


def to_jsonable(obj: Any, ndigits: int = FLOAT_DECIMALS) -> Any:
    """Recursively convert dataclasses, mappings, sequences and numpy scalars to plain JSON types."""
    if obj is None or isinstance(obj, (str, bool, np.bool_)):
        return bool(obj) if isinstance(obj, np.bool_) else obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return clean_float(float(obj), ndigits)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = sorted(f.name for f in dataclasses.fields(obj))
        return {n: to_jsonable(getattr(obj, n), ndigits) for n in names}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(obj[k], ndigits) for k in sorted(obj, key=str)}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [to_jsonable(v, ndigits) for v in obj]
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """Canonical JSON text: sorted keys, rounded floats, no NaN."""
    return json.dumps(to_jsonable(obj), sort_keys=True, indent=indent, allow_nan=False)
