"""Read back what a session wrote as a user would see it: viewer pages carry their transcripts gzip+base64
packed, so a check that a string is (or is not) in a file must look inside the packed blocks too."""

from __future__ import annotations

import base64
import gzip
import re
from pathlib import Path

_BLOCK = re.compile(r'(<script type="application/gzip" id="af-[a-z]+">)([A-Za-z0-9+/=]*)(</script>)')


def unpacked(text: str) -> str:
    """The text with every packed data block inflated in place (replacement characters for invalid UTF-8)."""
    return _BLOCK.sub(lambda m: m[1] + gzip.decompress(base64.b64decode(m[2])).decode("utf-8", "replace") + m[3],
                      text)


def readable(path: Path) -> str:
    """A written file's text, viewer blocks inflated."""
    return unpacked(path.read_text(encoding="utf-8", errors="replace"))
