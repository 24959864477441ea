"""A real terminal for tests: run a command with a pseudo-terminal as its stdout, and replay what it
wrote on a small screen model (cursor moves, erases, carriage returns) to see what a user is left with."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

_TOKEN = re.compile(r"\x1b\[(?P<args>[0-?]*)(?P<cmd>[@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|[\r\n\b]|[^\x1b\r\n\b]+")
SGR = re.compile(r"\x1b\[[0-9;]*m")
#: variables that would change what a pytest run draws on a terminal (CI mode, colour, size)
TERMINAL_VARS = ("CI", "BUILD_NUMBER", "NO_COLOR", "PY_COLORS", "FORCE_COLOR", "COLUMNS", "LINES", "TERM")


def terminal_env(repo: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a pytest run on the pty: none of TERMINAL_VARS, an xterm, and
    `repo` (the checkout under test) first on the import path."""
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_VARS}
    env.update({"PYTHONPATH": str(repo), "TERM": "xterm-256color", **extra})
    return env


def run_in_pty(args: list[str], cwd: Path, env: dict[str, str], *, cols: int = 100, rows: int = 40,
               timeout: float = 300, timed: list[tuple[float, bytes]] | None = None) -> tuple[int, str]:
    """(exit status, everything written to the terminal, stdout and stderr alike); `timed` receives
    each read as (time.monotonic() when it arrived, bytes)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                proc.kill()
                raise TimeoutError(f"{args} did not finish in {timeout} s")
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
            if timed is not None:
                timed.append((time.monotonic(), data))
    finally:
        os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def screen(raw: str, cols: int) -> list[str]:
    """The lines a terminal `cols` wide shows (scrollback included) after replaying `raw`.

    The pty's line discipline already turned each \\n into \\r\\n; text wraps at the right edge."""
    rows: list[list[str]] = [[]]
    r = c = 0

    def put(ch: str) -> None:
        nonlocal r, c
        if c >= cols:
            r, c = r + 1, 0
        while len(rows) <= r:
            rows.append([])
        row = rows[r]
        row.extend(" " * (c + 1 - len(row)))
        row[c] = ch
        c += 1

    for m in _TOKEN.finditer(raw):
        tok = m.group(0)
        if tok == "\r":
            c = 0
        elif tok == "\n":
            r += 1
            while len(rows) <= r:
                rows.append([])
        elif tok == "\b":
            c = max(0, c - 1)
        elif m.group("cmd"):
            n = int(m.group("args") or 0) if m.group("args").isdigit() else 0
            cmd = m.group("cmd")
            if cmd == "A":
                r = max(0, r - max(n, 1))
            elif cmd == "B":
                r += max(n, 1)
            elif cmd == "C":
                c = min(cols - 1, c + max(n, 1))
            elif cmd == "D":
                c = max(0, c - max(n, 1))
            elif cmd == "G":
                c = max(n, 1) - 1
            elif cmd == "J" and n == 0:
                del rows[r][c:]
                del rows[r + 1:]
            elif cmd == "K" and n == 0:
                del rows[r][c:]
            # m (colours) and the rest leave the text alone
        elif tok.startswith("\x1b"):
            continue  # OSC (pytest's own terminal progress) and other escapes
        else:
            for ch in tok:
                put(ch)
    text = ["".join(row).rstrip() for row in rows]
    while text and not text[-1]:
        text.pop()
    return text
