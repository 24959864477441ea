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
#: bad lines named one by one in the notes; the rest are counted
MAX_NAMED_BAD_LINES = 5


class CacheError(Exception):
    """The cache file cannot be read or written (e.g. its path is a directory): the judge cannot work."""


def entry_problem(obj: Any) -> str | None:
    """Why `obj` is not a cache entry (None: it is one). A reason is what the judge's parser accepts."""
    from .prompt import MAX_REASON_CHARS

    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__}, not an object"
    if not (isinstance(obj.get("key"), str) and _KEY.fullmatch(obj["key"]) is not None):
        return "'key' is not a 64-digit hex digest"
    if obj.get("verdict") not in ("pass", "fail"):
        return "'verdict' is not \"pass\" or \"fail\""
    reason = obj.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return "'reason' is not a non-empty string"
    if len(reason) > MAX_REASON_CHARS:
        return f"'reason' is {len(reason):,} characters (a verdict's reason has at most {MAX_REASON_CHARS})"
    return None


def _entry_ok(obj: Any) -> bool:
    return entry_problem(obj) is None


class JudgeCache:
    """Verdicts by cache key; ``mode`` is one of CACHE_MODES."""

    def __init__(self, path: Path, mode: str = "readwrite", secrets: tuple[str, ...] = ()):
        if mode not in CACHE_MODES:
            raise ValueError(f"judge cache mode must be one of {', '.join(CACHE_MODES)}, got {mode!r}")
        self.path = path
        self.mode = mode
        #: the session's keys and passwords (masking.py): a judge that echoes one in its reason never gets it stored
        self.secrets = secrets
        self.reads, self.writes = CACHE_MODES[mode]
        self.entries: dict[str, dict[str, Any]] = {}
        self.bad_lines = 0
        self.problems: list[str] = []  # the first bad lines, by number and why
        self._offset = 0
        self._line = 0  # lines read so far (numbers the bad ones)
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
        if self.path.exists() and not self.path.is_file():  # a device reads without end, a FIFO blocks
            raise CacheError(f"judge cache {self.path}: cannot be read (not a regular file); move it away")
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            return
        except OSError as exc:  # a directory, no permission: no verdict can be read
            raise CacheError(f"judge cache {self.path}: cannot be read ({exc.strerror or exc})") from None
        with fh:
            # no lock: every entry is one O_APPEND write, and only lines ending in a newline are taken
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n")
        if end < 0:
            return
        for raw in data[:end].split(b"\n"):
            self._line += 1
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                self._bad(f"not JSON ({type(exc).__name__})")
                continue
            why = entry_problem(obj)
            if why is None:
                self.entries[obj["key"]] = obj  # a later entry (e.g. --judge-cache write) wins
            else:
                self._bad(why)
        self._offset += end + 1

    def _bad(self, why: str) -> None:
        self.bad_lines += 1
        if len(self.problems) < MAX_NAMED_BAD_LINES:
            self.problems.append(f"{self.path.name} line {self._line}: {why}; ignored")

    def notes(self) -> list[str]:
        """One line per bad line seen (the first few), then the count: nothing is skipped silently."""
        if not self.bad_lines:
            return []
        more = self.bad_lines - len(self.problems)
        return [*self.problems] + ([f"{self.path.name}: {self.bad_lines} bad line(s) ignored in all"] if more else [])

    # -- writing --------------------------------------------------------------------------
    def put(self, entry: dict[str, Any]) -> None:
        """Append `entry` (when the mode writes); one write under an exclusive lock."""
        if not _entry_ok(entry):
            raise ValueError(f"not a cache entry: {sorted(entry)}")
        if self.secrets:
            from ..masking import mask

            entry = mask(entry, self.secrets)
        if self.reads:
            self.entries[entry["key"]] = entry
        if not self.writes:
            return
        # ASCII escapes: a reason holding a lone surrogate still makes a valid UTF-8 line
        line = (json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode()
        try:
            self._log.append_line(line)
        except OSError as exc:
            raise CacheError(f"judge cache {self.path}: cannot be written ({exc.strerror or exc})") from None

    def close(self) -> None:
        self._log.close()
