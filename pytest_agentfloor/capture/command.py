"""``python -m pytest_agentfloor capture``: run the recording proxy, or (``capture cases``) write cases.

    python -m pytest_agentfloor capture --upstream URL [--listen 127.0.0.1:PORT] [--out cases/captured/]
    python -m pytest_agentfloor capture cases --from cases/captured/ [--config capture.toml] [--out DIR]
    python -m pytest_agentfloor capture review cases/captured/ [--accept-all SITE] [--export/--import SHEET.csv]
    python -m pytest_agentfloor capture replay --from cases/captured/ --to CANDIDATE_URL --out runs.jsonl
    python -m pytest_agentfloor capture --replay-to CANDIDATE_URL --from cases/captured/ ...  (the same)

``replay`` is a sub-verb like ``cases`` and ``review`` (each reads a capture folder and has options of
its own, none of the proxy's); ``--replay-to`` is kept as the issue's spelling of it.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

PROG = "python -m pytest_agentfloor capture"


def _proxy_main(args: list[str]) -> int:
    from .config import CaptureConfigError, load_config
    from .proxy import CaptureProxy, is_loopback, parse_listen, upstream_ok
    from .redact import Redactor
    from .store import FSYNC_POLICIES, CaptureStore
    from .upstream import tls_context

    p = argparse.ArgumentParser(prog=PROG, description="a recording proxy for OpenAI chat completions and Ollama "
                                "/api/chat: forwards every request unchanged, stores each request/reply pair "
                                "(docs/capture.md); `capture cases --help` turns captures into cases")
    p.add_argument("--upstream", required=True, metavar="URL",
                   help="the model server the agent used (e.g. https://api.openai.com or http://127.0.0.1:11434)")
    p.add_argument("--listen", default="127.0.0.1:8765", metavar="HOST:PORT",
                   help="where the agent connects (default 127.0.0.1:8765; port 0: any free port)")
    p.add_argument("--out", type=Path, default=Path("cases/captured"), metavar="DIR",
                   help="capture folder: one <site>.jsonl per call site (default cases/captured)")
    p.add_argument("--config", type=Path, default=None, metavar="TOML", help="site rules and redaction")
    p.add_argument("--fsync", choices=FSYNC_POLICIES, default="interval",
                   help="always: fsync each line before the reply is released; interval (default): every "
                   "--fsync-interval seconds; never: leave it to the OS. Every line reaches the OS before the reply")
    p.add_argument("--fsync-interval", type=float, default=1.0, metavar="S")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S", help="upstream read timeout (default 600)")
    p.add_argument("--ca-bundle", default=None, metavar="PEM",
                   help="verify an https upstream with these CA certificates instead of the system's")
    p.add_argument("--redact-plugin", action="append", default=[], metavar="MODULE",
                   help="a module implementing pytest_agentfloor_capture_redact (repeatable)")
    p.add_argument("--allow-remote", action="store_true",
                   help="listen on a non-loopback address (the proxy has no authentication of its own)")
    ns = p.parse_args(args)
    try:
        host, port = parse_listen(ns.listen)
        config = load_config(ns.config)
    except (ValueError, CaptureConfigError) as exc:
        p.error(str(exc))
    problem = upstream_ok(ns.upstream)
    if problem:
        p.error(problem)
    try:
        tls_context(ns.ca_bundle)  # an unusable bundle is an error now, not a 502 on the agent's first call
    except ValueError as exc:
        p.error(str(exc))
    if not is_loopback(host) and not ns.allow_remote:
        p.error(f"--listen {ns.listen}: not a loopback address; add --allow-remote to listen there")
    try:
        redactor = Redactor(config.patterns, config.replacement, config.plugins + tuple(ns.redact_plugin))
    except ImportError as exc:
        p.error(f"redaction plugin: {exc}")
    store = CaptureStore(ns.out, ns.fsync, ns.fsync_interval)
    proxy = CaptureProxy(ns.upstream, store, config, redactor=redactor, timeout_s=ns.timeout, ca_bundle=ns.ca_bundle)
    httpd = proxy.serve(host, port)
    bound_host, bound_port = str(httpd.server_address[0]), int(httpd.server_address[1])
    stop = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        if not stop.is_set():
            stop.set()
            threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    print(f"agentfloor capture: listening on http://{bound_host}:{bound_port} -> {ns.upstream}; "
          f"writing {ns.out}/<site>.jsonl (fsync {ns.fsync})", flush=True)
    try:
        httpd.serve_forever(poll_interval=0.2)
    finally:
        proxy.close()
        print(f"agentfloor capture: stopped; {proxy.captured} call(s) captured", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "cases":
        from .cases import main as cases_main

        return cases_main(args[1:])
    if args and args[0] == "replay":
        from .replay import main as replay_main

        return replay_main(args[1:])
    if any(a == "--replay-to" or a.startswith("--replay-to=") for a in args):
        from .replay import main as replay_main

        return replay_main([("--to" + a[len("--replay-to"):]) if a.startswith("--replay-to") else a for a in args])
    if args and args[0] == "review":
        from .review import main as review_main

        return review_main(args[1:])
    return _proxy_main(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
