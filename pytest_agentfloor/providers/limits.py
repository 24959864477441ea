"""Per-endpoint limits shared by every episode of a process: `max_connections` and `rpm`.

With --agentfloor-concurrency many episodes share one provider; a model's `max_connections` caps the
requests in flight to its endpoint and `rpm` spaces their starts, for all episodes together.
Time spent waiting here is not request latency (the wrapped provider measures its own) and not
the episode's: it is the episode's `queue_s` and moves its deadline (endpoints.note_queued).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from .base import Provider, Reply
from .endpoints import note_queued

if TYPE_CHECKING:
    from ..config import ModelConfig


class LimitedProvider:
    """A provider whose requests pass a shared gate: a semaphore and a start-time schedule."""

    def __init__(self, inner: Provider, *, max_connections: int | None, rpm: float | None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.inner = inner
        self.config = inner.config
        self._slots = threading.BoundedSemaphore(max_connections) if max_connections else None
        self._interval = 60.0 / rpm if rpm else 0.0
        self._next_start = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def _wait_turn(self) -> None:
        if not self._interval:
            return
        with self._lock:  # reserve the next start time, then wait for it outside the lock
            now = self._clock()
            start = max(now, self._next_start)
            self._next_start = start + self._interval
        if start > now:
            self._sleep(start - now)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any = None,
                 **kwargs: Any) -> Reply:  # kwargs: the judge's json_reply
        start = self._clock()
        if self._slots is not None:
            self._slots.acquire()
        try:
            self._wait_turn()
            note_queued(self._clock() - start)
            return self.inner.complete(messages, tools, case=case, **kwargs)
        finally:
            if self._slots is not None:
                self._slots.release()

    def __getattr__(self, name: str) -> Any:  # endpoint, base_url, ... of the wrapped provider
        return getattr(self.inner, name)

    def close(self) -> None:
        self.inner.close()


def limited(provider: Provider, config: "ModelConfig") -> Provider:
    """`provider` behind the model's limits, or itself when it has none (or is a pool, whose
    replicas each have their own: providers/pool.py)."""
    if not (config.max_connections or config.rpm) or config.is_pool:
        return provider
    return LimitedProvider(provider, max_connections=config.max_connections, rpm=config.rpm)  # type: ignore[return-value]
