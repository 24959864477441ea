"""A capture proxy on loopback in a thread, in front of a fake upstream, for the capture tests."""

from __future__ import annotations

import threading
import time as _time
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from pytest_agentfloor.capture.config import CaptureConfig
from pytest_agentfloor.capture.proxy import CaptureProxy
from pytest_agentfloor.capture.redact import Redactor
from pytest_agentfloor.capture.store import CaptureStore, read_captures


@contextmanager
def running_proxy(upstream: str, out: Path, config: CaptureConfig | None = None, *,
                  redactor: Redactor | None = None, fsync: str = "never",
                  ca_bundle: str | None = None) -> Iterator[tuple[str, CaptureProxy]]:
    proxy = CaptureProxy(upstream, CaptureStore(out, fsync), config, redactor=redactor, timeout_s=30,
                         ca_bundle=ca_bundle)
    try:
        with serving(proxy.serve("127.0.0.1", 0)) as url:
            yield url, proxy
    finally:
        proxy.close()


@contextmanager
def serving(httpd: Any, scheme: str = "http") -> Iterator[str]:
    """Serve `httpd` (bound to 127.0.0.1) on a thread for the block; yields its origin URL."""
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        thread.join(timeout=5)
        httpd.server_close()


def client() -> httpx.Client:
    return httpx.Client(trust_env=False, timeout=30)


def records(out: Path) -> list[dict]:
    return [rec for _, _, rec in read_captures(out)]


def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake server's timestamps frozen, so two answers to one request are the same bytes."""
    from tests import fakeserver

    frozen = 1_700_000_000.0
    monkeypatch.setattr(fakeserver, "time", types.SimpleNamespace(
        time=lambda: frozen, gmtime=lambda *a: _time.gmtime(frozen), strftime=_time.strftime, sleep=_time.sleep,
        monotonic=_time.monotonic, perf_counter=_time.perf_counter))
