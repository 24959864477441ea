"""The deterministic tool sandbox."""

from .schemas import TOOL_SCHEMAS, menu, validate_arguments
from .tools import Sandbox

__all__ = ["TOOL_SCHEMAS", "Sandbox", "menu", "validate_arguments"]
