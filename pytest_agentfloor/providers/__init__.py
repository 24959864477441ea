"""Model providers behind one protocol; each module is imported only when a model uses it."""

from .base import MalformedReply, Provider, ProviderError, Reply, ToolCallOut, with_retries
from .registry import make_provider

__all__ = ["MalformedReply", "Provider", "ProviderError", "Reply", "ToolCallOut", "make_provider", "with_retries"]
