"""pytest-agentfloor: an agent tool-use benchmark as ordinary pytest tests."""

__version__ = "0.1.0"
