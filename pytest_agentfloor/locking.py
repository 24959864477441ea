"""Cross-process locks on the files that several pytest processes share, through ``filelock``.

runs.jsonl, the judge cache, the cassettes, the report directory and the embedded model's file
cache are written by every xdist worker and by concurrent sessions. ``filelock`` locks with
flock on POSIX and with the Windows API on Windows, so no POSIX-only module is imported here or
anywhere at module level. A lock is a separate, hidden file beside the data (``.NAME.lock``):
filelock opens its lock file for itself, so the data file is never the lock.
"""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock, Timeout

__all__ = ["FileLock", "Timeout", "lock_for", "lock_path"]


def lock_path(path: Path) -> Path:
    """The lock file that guards `path`: hidden, in the same directory."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def lock_for(path: Path) -> FileLock:
    """An exclusive lock guarding `path` against other processes (threads share it: callers hold a
    threading.Lock of their own, so one process takes it once at a time)."""
    return FileLock(str(lock_path(path)), thread_local=False)
