"""Test-suite setup.

pytester's in-process runs remove the modules first imported during a run. Libraries that keep
module-level state across imports break when imported twice in one process (numpy refuses; the
HTTP stacks under openai and ollama map exceptions by class and stop recognising re-imported
ones), so they are imported here, before any inner run.
"""

import importlib

for _name in (
    "numpy", "scipy.stats", "openai", "ollama", "h11", "httpcore",
    "httpcore2",  # loaded lazily by openai's HTTP stack on its first request (openai >= 3 uses httpx2)
    "pytest_agentfloor.providers.openai_chat", "pytest_agentfloor.providers.ollama_chat",
    "pytest_agentfloor.report", "pytest_agentfloor.stats",
):
    try:
        importlib.import_module(_name)
    except ImportError:  # a stack that does not use this module cannot be confused by it either
        pass
