"""What a process knows about each endpoint (base URL), shared by every episode and provider of the process.

- **Retry-After hold**: a 429 or 503 carrying Retry-After (seconds or an HTTP date) from any
  request makes every request of the process to that endpoint wait until then (capped at
  RETRY_AFTER_CAP_S, and never past the waiting episode's deadline), not only the retries of the
  episode that got it: a rate-limited server is not hammered by the other episodes in flight.
- **Health** (read by providers/pool.py): consecutive failures, eviction with a cool-down, and
  the half-open trial that puts an endpoint back.
- **The episode's account** (`EpisodeNet`, a context variable set by the episode loop): which
  endpoint served the last request, how long the episode waited on endpoints' holds
  (`waited_s`) and how long it queued in all (`queued_s`: holds, connection slots, rpm spacing),
  for the run record. Queued time is not the episode's: its deadline moves by it (base.time_left).

Keyed by the configured URL (with any credentials; never written anywhere), so a judge and a
model on the same server share one hold.
"""

from __future__ import annotations

import contextvars
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

#: the longest Retry-After honoured; a server asking for more gets the error instead (the hold is capped here)
RETRY_AFTER_CAP_S = 60.0
#: statuses whose Retry-After holds the whole endpoint: rate limited, or overloaded / restarting
HOLD_STATUSES = frozenset({429, 503})
#: consecutive failures (connection errors, timeouts, 5xx) after which a pool takes an endpoint out
#: (a single endpoint: base.BREAK_AFTER)
EVICT_AFTER = 3
#: the first cool-down of an evicted endpoint; doubled by each failed trial, up to COOL_DOWN_MAX_S
COOL_DOWN_S = 10.0
COOL_DOWN_MAX_S = 300.0


@dataclass
class EpisodeNet:
    """One episode's account of its requests: the endpoint of the last answer, seconds held by
    Retry-After (`waited_s`), and seconds queued for any reason the harness or endpoint imposed
    (`queued_s`, holds included), which never count against the episode's deadline."""
    endpoint: str | None = None
    waited_s: float = 0.0
    queued_s: float = 0.0


_NET: contextvars.ContextVar[EpisodeNet | None] = contextvars.ContextVar("agentfloor_net", default=None)


class episode_net:  # noqa: N801 - used as a function: `with episode_net() as net:`
    """The account of the requests made inside the block (the episode loop opens one per episode).

    A class, not a contextlib generator: one is entered per item."""

    __slots__ = ("_token",)

    def __enter__(self) -> EpisodeNet:
        net = EpisodeNet()
        self._token = _NET.set(net)
        return net

    def __exit__(self, *exc: object) -> None:
        _NET.reset(self._token)


def note_served(endpoint: str) -> None:
    """The (redacted) endpoint that answered the current request."""
    net = _NET.get()
    if net is not None:
        net.endpoint = endpoint


def served_endpoint() -> str | None:
    """The endpoint noted for the current episode's last answer (None outside an episode)."""
    net = _NET.get()
    return None if net is None else net.endpoint


def current_net() -> EpisodeNet | None:
    """The account of the episode this thread is playing (None outside an episode)."""
    return _NET.get()


def note_waited(seconds: float) -> None:
    """A pause the endpoint asked for (Retry-After): held and queued time of the current episode."""
    net = _NET.get()
    if net is not None and seconds > 0:
        net.waited_s += seconds
        net.queued_s += seconds


def note_queued(seconds: float) -> None:
    """Time the current request waited before it was sent (a connection slot, rpm spacing)."""
    net = _NET.get()
    if net is not None and seconds > 0:
        net.queued_s += seconds


@dataclass
class Endpoint:
    """The shared state of one base URL in this process."""
    url: str
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: time.monotonic() before which no request may start (a Retry-After hold); 0: none
    not_before: float = 0.0
    #: requests handed to this endpoint and not yet answered (a pool's balance)
    outstanding: int = 0
    failures: int = 0  # consecutive
    evicted_until: float | None = None  # None: in service
    cool_down_s: float = COOL_DOWN_S
    last_failure: float = 0.0
    trial: bool = False  # the half-open trial request is in flight
    served: int = 0
    failed: int = 0
    last_cause: str = ""  # of the last failure that counted (for the message of a paused endpoint)

    # -- Retry-After ----------------------------------------------------------------------------
    def hold(self, retry_after: float, clock: Callable[[], float] = time.monotonic) -> float:
        """Hold every request to this endpoint for `retry_after` seconds (capped); returns the hold used."""
        seconds = min(max(0.0, retry_after), RETRY_AFTER_CAP_S)
        with self.lock:
            self.not_before = max(self.not_before, clock() + seconds)
        return seconds

    def held_for(self, clock: Callable[[], float] = time.monotonic) -> float:
        """Seconds until this endpoint takes requests again (0 when it is not held)."""
        return max(0.0, self.not_before - clock())

    def wait_turn(self, time_left: float | None, *, clock: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], None] | None = None,
                  rand: Callable[[], float] = random.random) -> float | None:
        """Wait out a hold (plus up to 10 % jitter, so held episodes do not all return in the same
        instant); returns the seconds waited, or None without waiting when the hold outlasts `time_left`.

        A hold this thread already paused for (its own retry after the 429: `waited_for`) is not waited twice.
        """
        waited = 0.0
        done = _covered().get(self.url, 0.0)
        while True:  # a hold may be extended while we wait (another 429)
            with self.lock:
                until = self.not_before
            left = until - clock()
            if left <= 0 or until <= done:
                return waited
            # the pause is queued time (it moves the episode's deadline), so only a hold that
            # would outlast the whole time left is refused
            if time_left is not None and left >= time_left:
                return None
            pause = left * (1.0 + rand() / 10)
            (sleep or time.sleep)(pause)
            note_waited(pause)
            waited += pause
            done = until

    def waited_for(self) -> None:
        """This thread has just paused for the endpoint's current hold (a retry's own Retry-After pause)."""
        with self.lock:
            _covered()[self.url] = self.not_before

    # -- health -----------------------------------------------------------------------------------
    def in_service(self, now: float) -> bool:
        return self.evicted_until is None

    def trial_due(self, now: float) -> bool:
        """Evicted, its cool-down over and no trial in flight: it may take one request."""
        return self.evicted_until is not None and now >= self.evicted_until and not self.trial

    def succeeded(self) -> None:
        with self.lock:
            self.failures = 0
            self.served += 1
            self.evicted_until = None
            self.cool_down_s = COOL_DOWN_S
            self.trial = False

    def take_out(self, now: float) -> None:
        """Out of service for a cool-down at once (it failed the session's probe)."""
        with self.lock:
            self.failures = max(self.failures, EVICT_AFTER)
            self.last_failure = now
            self.trial = False
            self.evicted_until = now + self.cool_down_s

    def failed_once(self, now: float, *, evict_after: int = EVICT_AFTER) -> bool:
        """Count a failure; returns True when this one took the endpoint out (or kept it out)."""
        with self.lock:
            self.failures += 1
            self.failed += 1
            self.last_failure = now
            if self.trial:  # the half-open trial failed: out again, for longer
                self.trial = False
                self.cool_down_s = min(self.cool_down_s * 2, COOL_DOWN_MAX_S)
                self.evicted_until = now + self.cool_down_s
                return True
            if self.evicted_until is None and self.failures >= evict_after:
                self.evicted_until = now + self.cool_down_s
                return True
            if self.evicted_until is not None:
                self.evicted_until = max(self.evicted_until, now + self.cool_down_s)
                return True
            return False


_COVERED = threading.local()


def _covered() -> dict[str, float]:
    """Per thread: the hold (not_before) of each endpoint this thread has already paused for."""
    got = getattr(_COVERED, "holds", None)
    if got is None:
        got = _COVERED.holds = {}
    return got


_REGISTRY: dict[str, Endpoint] = {}
_REGISTRY_LOCK = threading.Lock()


def endpoint(url: str) -> Endpoint:
    """This process's one Endpoint for `url`."""
    with _REGISTRY_LOCK:
        ep = _REGISTRY.get(url)
        if ep is None:
            ep = _REGISTRY[url] = Endpoint(url)
        return ep
