"""JSON text with sorted keys, from one encoder made once.

``json.dumps(x, sort_keys=True)`` builds a new JSONEncoder on every call; the episode loop and
the graders write such text several times per tool call, so they share this one (same output).
"""

from __future__ import annotations

import json

#: json.dumps(value, sort_keys=True), without a new encoder per call
sorted_json = json.JSONEncoder(sort_keys=True).encode
