"""The report directory's layout: one directory per session, a lock, and what the top level shows.

    reports/
      sessions/<session id>/   runs.jsonl, session.json, probe.json, summary.json, tcr.csv, report.*
      latest -> sessions/<id>  the most recent session (symlink)
      runs.jsonl, summary.json, report.html, ...   the published session (see :func:`publish`)
      .agentfloor.lock         held (locking.py) by the session that is running; .agentfloor.holder names it

A session writes only inside its own directory while it runs, so nothing live is ever moved or
overwritten. At the end its files are *published* to the top level as one set (every published
name is replaced or removed, so runs.jsonl and the report files always belong to the same
session), except that a PARTIAL session never replaces a COMPLETE one's files: it stays in its
own directory, and ``latest`` points at it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

SESSIONS = "sessions"
LATEST = "latest"
LOCK = ".agentfloor.lock"
HOLDER = ".agentfloor.holder"
SESSION_FILE = "session.json"
#: the files one session leaves behind; the top level holds one session's set of them
PUBLISHED: tuple[str, ...] = ("runs.jsonl", SESSION_FILE, "probe.json", "summary.json", "tcr.csv", "report.md",
                              "report.html", "viewer.html", "gate.json")


class ReportDirBusy(Exception):
    """Another session holds the report directory."""


def new_session_id() -> str:
    """Sortable and unique: UTC start time to the millisecond plus four random hex digits."""
    now = time.time()
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}.{int(now * 1000) % 1000:03d}-{secrets.token_hex(2)}"


def session_dir(report_dir: Path, session_id: str) -> Path:
    return Path(report_dir) / SESSIONS / session_id


class ReportDirLock:
    """An exclusive lock on ``<report dir>/.agentfloor.lock`` for the whole session (filelock).

    A second session conflicts even in the same process (pytester): each lock object opens the
    file for itself. Neither file is deleted (deleting a lock file races with its next taker);
    ``.agentfloor.holder`` names the current holder's session id and pid for the error message
    (a separate file: a lock file is opened, and emptied, by every taker that tries it).
    """

    def __init__(self, report_dir: Path, session_id: str):
        self.path = Path(report_dir) / LOCK
        self.holder = Path(report_dir) / HOLDER
        self.session_id = session_id
        self._lock: Any = None

    def acquire(self) -> None:
        from filelock import Timeout

        from .locking import held_lock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = held_lock(self.path)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            try:
                holder = self.holder.read_text(errors="replace").strip()
            except OSError:
                holder = ""
            raise ReportDirBusy(
                f"report dir {self.path.parent} is in use by {holder or 'another session'}; wait for it to finish, "
                "or give this run its own directory with --agentfloor-report-dir DIR") from None
        self._lock = lock
        try:
            self.holder.write_text(f"session {self.session_id} (pid {os.getpid()})\n")
        except OSError:
            pass  # the message then says "another session"

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def read_session(directory: Path) -> dict[str, Any] | None:
    """The session.json in ``directory``, or None (missing or unreadable)."""
    try:
        data = json.loads((Path(directory) / SESSION_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def resume_source(report_dir: Path) -> Path:
    """The runs.jsonl that --agentfloor-resume continues: the newest session's that has one, else the top level's."""
    sessions = Path(report_dir) / SESSIONS
    if sessions.is_dir():
        for d in sorted(sessions.iterdir(), reverse=True):
            if (d / "runs.jsonl").is_file() and (d / "runs.jsonl").stat().st_size:
                return d / "runs.jsonl"
    return Path(report_dir) / "runs.jsonl"


def discard_if_empty(report_dir: Path, session_id: str) -> None:
    """Remove a session directory that got no file (the session failed at its start); repoint latest."""
    sdir = session_dir(report_dir, session_id)
    try:
        sdir.rmdir()
    except OSError:  # not empty, or gone
        return
    sessions = sorted(d.name for d in (Path(report_dir) / SESSIONS).iterdir() if d.is_dir())
    link = Path(report_dir) / LATEST
    if sessions:
        point_latest(report_dir, sessions[-1])
    elif link.is_symlink():
        link.unlink()


def _place(src: Path, dst: Path) -> None:
    """Put a copy of ``src`` at ``dst`` atomically (a hard link when possible: no bytes copied)."""
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    try:
        tmp.unlink(missing_ok=True)
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


def _adopt_legacy(report_dir: Path) -> Path | None:
    """Top-level files written before sessions existed move into a session directory of their own."""
    top = Path(report_dir)
    if read_session(top) is not None or not (top / "runs.jsonl").exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime((top / "runs.jsonl").stat().st_mtime))
    target = session_dir(top, f"{stamp}-legacy")
    target.mkdir(parents=True, exist_ok=True)
    for name in PUBLISHED:
        if (top / name).exists():
            os.replace(top / name, target / name)
    return target


def point_latest(report_dir: Path, session_id: str) -> None:
    """``<report dir>/latest`` -> ``sessions/<id>`` (replaced atomically; skipped where symlinks fail)."""
    link = Path(report_dir) / LATEST
    tmp = link.with_name(f".{LATEST}.{os.getpid()}.tmp")
    try:
        tmp.unlink(missing_ok=True)
        os.symlink(Path(SESSIONS) / session_id, tmp)
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)


def publish(report_dir: Path, session_id: str, complete: bool) -> tuple[bool, str | None]:
    """Make the top level show this session's files, unless that would hide a COMPLETE run.

    Returns (published, id of the complete session kept at the top level when not published).
    Must be called with the report dir lock held.
    """
    top = Path(report_dir)
    sdir = session_dir(top, session_id)
    point_latest(top, session_id)
    current = read_session(top)
    if not complete and current is not None and current.get("complete") and current.get("session_id") != session_id:
        return False, str(current.get("session_id"))
    _adopt_legacy(top)
    # session.json last in, first out: a reader that sees it sees the rest of the same set
    (top / SESSION_FILE).unlink(missing_ok=True)
    for name in PUBLISHED:
        if name != SESSION_FILE:
            if (sdir / name).exists():
                _place(sdir / name, top / name)
            else:
                (top / name).unlink(missing_ok=True)
    if (sdir / SESSION_FILE).exists():
        _place(sdir / SESSION_FILE, top / SESSION_FILE)
    return True, None


#: sessions kept under sessions/ by default (--agentfloor-keep-sessions; 0 keeps every one)
DEFAULT_KEEP_SESSIONS = 20


def prune_sessions(report_dir: Path, keep: int, current: str) -> list[str]:
    """Remove all but the ``keep`` newest session directories; the ids removed, oldest first.

    Never removed: the ``current`` session, the newest complete one (what the top level shows
    when a partial session follows it) and the one ``latest`` points at. Must be called with the
    report directory's lock held (:class:`ReportDirLock`): no other session of this report
    directory is running then, so none it holds can go. ``keep`` 0 keeps everything."""
    root = Path(report_dir) / SESSIONS
    if keep <= 0 or not root.is_dir():
        return []
    ids = sorted(d.name for d in root.iterdir() if d.is_dir() and not d.is_symlink())
    protected = {current}
    for sid in reversed(ids):
        if (read_session(root / sid) or {}).get("complete"):
            protected.add(sid)
            break
    link = Path(report_dir) / LATEST
    if link.is_symlink():
        protected.add(Path(os.readlink(link)).name)
    removed = []
    for sid in ids[:max(0, len(ids) - keep)]:
        if sid in protected:
            continue
        try:
            shutil.rmtree(root / sid)
        except OSError:
            continue  # in use on a platform that refuses, or already gone: left for the next session
        removed.append(sid)
    return removed


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` newlines) to a temp file beside ``path``, then ``os.replace``.

    A lone surrogate from a model's output (UTF-8 cannot hold one) is written as its escape,
    so one bad character never costs the whole report.
    """
    from .render import escape_surrogates

    text = escape_surrogates(text)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
