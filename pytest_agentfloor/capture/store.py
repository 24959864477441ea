"""Append-only JSONL per call site: one line per request/reply pair, written before the reply is acknowledged.

``<out>/<site>.jsonl``. Each line is one ``os.write`` on a file opened ``O_APPEND``, under a lock
per file, so lines of concurrent requests never interleave and a reader sees whole lines (a
reader must ignore a last line without its newline: :func:`read_captures` does). The proxy
writes a pair's line *before* the bytes that complete the reply reach the agent, so a reply the
agent has received is already in the file: a killed proxy (SIGKILL) loses nothing acknowledged.

fsync policy (``--fsync``):

- ``always``: ``fsync`` each line before the reply is released (survives a power cut; costs a
  disk flush per request);
- ``interval`` (default): written to the OS at once (survives the proxy's death), ``fsync``'d
  every ``--fsync-interval`` seconds (1.0) by a background thread: a machine crash may lose the
  last interval;
- ``never``: the OS decides when to write back.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterator

FSYNC_POLICIES = ("always", "interval", "never")
SCHEMA = 1


class CaptureStore:
    def __init__(self, out: Path, fsync: str = "interval", interval_s: float = 1.0):
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy {fsync!r}: one of {', '.join(FSYNC_POLICIES)}")
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self._fds: dict[str, int] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._dirty: set[str] = set()
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._syncer: threading.Thread | None = None
        if fsync == "interval":
            self._syncer = threading.Thread(target=self._sync_loop, args=(interval_s,), name="capture-fsync",
                                            daemon=True)
            self._syncer.start()

    def path(self, site: str) -> Path:
        return self.out / f"{site}.jsonl"

    def _fd(self, site: str) -> tuple[int, threading.Lock]:
        with self._guard:
            if site not in self._fds:
                self._fds[site] = os.open(self.path(site), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                self._locks[site] = threading.Lock()
            return self._fds[site], self._locks[site]

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line (returns once the OS has it; with fsync=always, the disk)."""
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        fd, lock = self._fd(record["site"])
        with lock:
            view = memoryview(line)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if self.fsync == "always":
                os.fsync(fd)
            else:
                self._dirty.add(record["site"])

    def _sync_loop(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            self.sync()

    def sync(self) -> None:
        with self._guard:
            sites, self._dirty = set(self._dirty), set()
            fds = [(self._fds[s], self._locks[s]) for s in sites if s in self._fds]
        for fd, lock in fds:
            with lock:
                os.fsync(fd)

    def close(self) -> None:
        self._stop.set()
        if self._syncer is not None:
            self._syncer.join(timeout=5)
        if self.fsync != "never":
            self.sync()
        with self._guard:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


def read_captures(folder: Path) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """(file, line number, record) of every whole line of every ``*.jsonl`` in folder, in file order.

    A last line without its newline (being written) is skipped; a line that is not JSON raises
    ValueError naming file:line.
    """
    for path in sorted(Path(folder).glob("*.jsonl")):
        data = path.read_bytes()
        lines = data.split(b"\n")
        for n, raw in enumerate(lines[:-1], 1):  # the piece after the last newline is incomplete
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not a JSON line ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{path}:{n}: not a JSON object")
            yield path, n, rec


def call_mix(folder: Path) -> dict[str, int]:
    """{site: how many calls the agent made to it}: every stored line, errors included (an errored call
    is still traffic the site's model must serve). The routing weights the sites by this, not by
    how many distinct requests (cases) each has."""
    mix: dict[str, int] = {}
    for _path, _n, rec in read_captures(folder):
        site = str(rec.get("site") or "unassigned")
        mix[site] = mix.get(site, 0) + 1
    return mix
