"""Cross-process locks on the files that several pytest processes share, portable to Windows.

runs.jsonl, the judge cache and the cassettes are appended to by every xdist worker and by
concurrent sessions; the report directory and the embedded model's file cache are held by one
session or process at a time. No POSIX-only module is imported at module level here or anywhere
in the package (tests/test_inert.py imports every module with fcntl unavailable).

- Held locks (the report directory, the model file cache) are ``filelock.FileLock``: flock on
  POSIX, the Windows API on Windows. filelock opens (and empties) its own lock file, so such a
  lock is a file of its own, never the data.
- The per-record append lock (:class:`AppendLock`) takes flock on the data file's own descriptor
  where the platform has it: filelock 4 costs about a hundred times as much per acquisition
  (a few hundred function calls, a mkdir and stats; benchmarks/bench_overhead.py measured it as
  most of the harness's per-item time), and a record is appended per item. Without flock
  (Windows) it falls back to a filelock on a hidden ``.NAME.lock`` beside the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["AppendLock", "held_lock", "lock_path"]


def lock_path(path: Path) -> Path:
    """The lock file that guards `path` where no flock is available: hidden, in the same directory."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def held_lock(path: Path) -> Any:
    """A filelock.FileLock on `path` itself (a dedicated lock file), shared by this process's threads."""
    from filelock import FileLock

    return FileLock(str(path), thread_local=False)


def _flock() -> Any:
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    return fcntl


class AppendLock:
    """Excludes other processes around one append to `fd`, the open descriptor of `path`.

    Threads of one process share the descriptor: callers order them with a threading.Lock first
    (flock would let two threads of the same open file in at once).
    """

    def __init__(self, path: Path, fd: int):
        self._fd = fd
        self._fcntl = _flock()
        self._fallback = None if self._fcntl is not None else held_lock(lock_path(path))

    def __enter__(self) -> "AppendLock":
        if self._fcntl is not None:
            self._fcntl.flock(self._fd, self._fcntl.LOCK_EX)
        else:
            assert self._fallback is not None  # made in __init__ wherever flock is missing
            self._fallback.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fcntl is not None:
            self._fcntl.flock(self._fd, self._fcntl.LOCK_UN)
        else:
            assert self._fallback is not None
            self._fallback.release()
