"""The judge's verdict cache: an append-only JSONL file at the report dir's root.

It lives beside the per-session directories (``reports/judge-cache.jsonl``), so it persists
across sessions. Every entry is one line written with a single O_APPEND write under an
exclusive cross-process lock (locking.AppendLock), as runs.jsonl is, so xdist workers share it safely; a reader only takes
lines that end in a newline, so a write in progress or a line torn by a crash is never read
as an entry (a torn line is skipped and counted; the next write starts a fresh line). On a
miss the reader first picks up what other processes appended since it last looked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..results import RunLog

CACHE_FILE = "judge-cache.jsonl"
#: --judge-cache values: whether cached verdicts are used, and whether new ones are stored
CACHE_MODES: dict[str, tuple[bool, bool]] = {
    "readwrite": (True, True), "read": (True, False), "write": (False, True), "off": (False, False)}
_KEY = re.compile(r"[0-9a-f]{64}")


def _entry_ok(obj: Any) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("key"), str) and _KEY.fullmatch(obj["key"]) is not None
            and obj.get("verdict") in ("pass", "fail") and isinstance(obj.get("reason"), str))


class JudgeCache:
    """Verdicts by cache key; ``mode`` is one of CACHE_MODES."""

    def __init__(self, path: Path, mode: str = "readwrite"):
        if mode not in CACHE_MODES:
            raise ValueError(f"judge cache mode must be one of {', '.join(CACHE_MODES)}, got {mode!r}")
        self.path = path
        self.mode = mode
        self.reads, self.writes = CACHE_MODES[mode]
        self.entries: dict[str, dict[str, Any]] = {}
        self.bad_lines = 0
        self._offset = 0
        self._log = RunLog(self.path)  # the same locked, torn-line-safe appender as runs.jsonl

    # -- reading --------------------------------------------------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        """The cached entry for `key` (None on a miss, or when the mode does not read)."""
        if not self.reads:
            return None
        if key not in self.entries:
            self.refresh()
        return self.entries.get(key)

    def refresh(self) -> None:
        """Read the complete lines appended since the last look (by any process)."""
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            return
        with fh:
            # no lock: every entry is one O_APPEND write, and only lines ending in a newline are taken
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n")
        if end < 0:
            return
        for raw in data[:end].split(b"\n"):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                self.bad_lines += 1
                continue
            if _entry_ok(obj):
                self.entries[obj["key"]] = obj  # a later entry (e.g. --judge-cache write) wins
            else:
                self.bad_lines += 1
        self._offset += end + 1

    # -- writing --------------------------------------------------------------------------
    def put(self, entry: dict[str, Any]) -> None:
        """Append `entry` (when the mode writes); one write under an exclusive lock."""
        if not _entry_ok(entry):
            raise ValueError(f"not a cache entry: {sorted(entry)}")
        if self.reads:
            self.entries[entry["key"]] = entry
        if not self.writes:
            return
        line = (json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
        self._log.append_line(line)

    def close(self) -> None:
        self._log.close()
