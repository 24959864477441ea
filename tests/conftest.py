"""Test-suite setup.

pytester's in-process runs remove the modules first imported during a run. Libraries that keep
module-level state across imports break when imported twice in one process (numpy refuses; the
HTTP stacks under openai and ollama map exceptions by class and stop recognising the re-imported
ones), so they are imported here, before any inner run.
"""

import h11  # noqa: F401
import httpcore  # noqa: F401
import httpcore2  # noqa: F401  (loaded lazily by openai's HTTP stack on its first request)
import numpy  # noqa: F401
import ollama  # noqa: F401
import openai  # noqa: F401
import scipy.stats  # noqa: F401

import pytest_agentfloor.providers.ollama_chat  # noqa: F401
import pytest_agentfloor.providers.openai_chat  # noqa: F401
import pytest_agentfloor.report  # noqa: F401
import pytest_agentfloor.stats  # noqa: F401
