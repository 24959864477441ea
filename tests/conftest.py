"""Test-suite setup.

pytester's in-process runs remove modules first imported during a run; numpy and scipy refuse to
be imported twice in one process, so they are imported here, before any inner run.
"""

import numpy  # noqa: F401
import scipy.stats  # noqa: F401
