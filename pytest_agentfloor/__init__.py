"""pytest-agentfloor: an agent tool-use benchmark as ordinary pytest tests.

PYTEST_DONT_REWRITE: the package's few asserts guard invariants, not tests; marking it spares
pytester runs (a user's conftest tests, ours) pytest's "already imported, cannot be rewritten"
warning, which an editable install otherwise triggers in every in-process run.
"""

__version__ = "0.1.0"
