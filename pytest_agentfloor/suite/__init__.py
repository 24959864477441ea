"""Case schema, loading and variant expansion."""

from .loader import CaseError, load_case, resolve
from .schema import TIERS, TOOL_NAMES, Case, ResolvedCase

__all__ = ["TIERS", "TOOL_NAMES", "Case", "CaseError", "ResolvedCase", "load_case", "resolve"]
