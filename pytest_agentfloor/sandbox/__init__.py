"""The deterministic tool sandbox."""

from .schemas import TOOL_SCHEMAS, HostileArguments, menu, parse_arguments, validate_arguments
from .tools import Sandbox

__all__ = ["TOOL_SCHEMAS", "HostileArguments", "Sandbox", "menu", "parse_arguments", "validate_arguments"]
