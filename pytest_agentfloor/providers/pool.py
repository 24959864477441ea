"""Endpoint pools: one model served by several replicas (`base_url = [URL, URL, ...]` in models.toml).

Each request goes to the replica with the fewest requests outstanding from this process (ties
in turn, round-robin). A replica that fails EVICT_AFTER times in a row (connection refused or
dropped, timeouts, HTTP 5xx; not 429, which is rate limiting and holds the endpoint instead) is
taken out for a cool-down (COOL_DOWN_S, doubled after each failed trial up to COOL_DOWN_MAX_S);
after it, one trial request (half-open) puts it back on success. When every replica is out,
the least recently failed one is tried rather than failing the request outright.

A failed request moves at once to another replica in service that it has not tried yet,
without counting as a retry; once none is left, the model's `retries` apply as for one endpoint.
`max_connections` and `rpm` hold per replica: each replica is its own server with its own
slots, so a pool of two serves twice the requests of one.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ..config import redact_url
from .base import ProviderError, Reply, counts_against, with_retries
from .endpoints import EVICT_AFTER, Endpoint
from .endpoints import endpoint as shared_endpoint

if TYPE_CHECKING:
    from ..config import ModelConfig
    from .base import Provider


def _backoff_sleep(seconds: float) -> None:
    time.sleep(seconds)  # looked up at call time, so tests can monkeypatch time.sleep


class Member:
    """One replica: its provider (single attempt, behind its own limits) and its shared state."""

    def __init__(self, url: str, provider: "Provider", state: Endpoint):
        self.url, self.provider, self.state = url, provider, state
        self.endpoint = redact_url(url)


class PooledProvider:
    """A provider over several replicas of one model; see the module docstring."""

    def __init__(self, config: "ModelConfig", members: list[Member], *,
                 clock: Callable[[], float] = time.monotonic, evict_after: int = EVICT_AFTER):
        self.config = config
        self.members = members
        self.endpoint = "pool of " + ", ".join(m.endpoint for m in members)
        self._lock = threading.Lock()
        self._rr = 0
        self._clock = clock
        self.evict_after = evict_after

    # -- choosing a replica -------------------------------------------------------------------
    def choose(self, tried: set[int] = frozenset()) -> int:  # type: ignore[assignment]
        """The index of the replica for the next attempt, counted as outstanding (see `done`)."""
        now = self._clock()
        with self._lock:
            n = len(self.members)
            order = [(self._rr + k) % n for k in range(n)]
            self._rr = (self._rr + 1) % n
            states = [self.members[i].state for i in order]
            usable = [i for i, st in zip(order, states) if st.in_service(now) or st.trial_due(now)]
            fresh = [i for i in usable if i not in tried]
            if fresh or usable:
                pool = fresh or usable
                trial = [i for i in pool if self.members[i].state.trial_due(now)]
                # a replica due for its trial takes this request; otherwise not held by a Retry-After,
                # then least outstanding, ties in round-robin order
                pick = trial[0] if trial else min(pool, key=lambda i: (
                    self.members[i].state.held_for() > 0, self.members[i].state.outstanding, order.index(i)))
            else:  # every replica is out: the least recently failed one rather than no answer at all
                pick = min(order, key=lambda i: self.members[i].state.last_failure)
            st = self.members[pick].state
            with st.lock:
                if st.evicted_until is not None:
                    st.trial = True
                st.outstanding += 1
            return pick

    def _can_fail_over(self, tried: set[int]) -> bool:
        now = self._clock()
        return any(i not in tried and (m.state.in_service(now) or m.state.trial_due(now))
                   for i, m in enumerate(self.members))

    def _attempt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], case: Any,
                 tried: set[int], kwargs: dict[str, Any]) -> Reply:
        i = self.choose(tried)
        tried.add(i)
        member = self.members[i]
        try:
            reply = member.provider.complete(messages, tools, case=case, **kwargs)
        except ProviderError as exc:
            if counts_against(exc):
                member.state.failed_once(self._clock(), evict_after=self.evict_after)
            else:
                with member.state.lock:
                    member.state.trial = False  # the trial says nothing either way: due again
            raise
        except Exception:  # a malformed reply: the replica answered, the model failed
            member.state.succeeded()
            raise
        finally:
            with member.state.lock:
                member.state.outstanding -= 1
        member.state.succeeded()
        return reply

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: Any = None, **kwargs: Any) -> Reply:
        tried: set[int] = set()
        return with_retries(lambda: self._attempt(messages, tools, case, tried, kwargs),
                            retries=self.config.retries, endpoint=self.endpoint, sleep=_backoff_sleep,
                            failover=lambda exc: self._can_fail_over(tried))

    # -- what the rest of the plugin reads from a provider ------------------------------------
    @property
    def context_window(self) -> int | None:
        return getattr(self.members[0].provider, "context_window", None)

    @property
    def context_source(self) -> str:
        return getattr(self.members[0].provider, "context_source", "")

    @property
    def context_hint(self) -> str:
        return getattr(self.members[0].provider, "context_hint", "")

    def close(self) -> None:
        for m in self.members:
            try:
                m.provider.close()
            except Exception:
                pass


def make_pool(config: "ModelConfig", make: Callable[["ModelConfig"], "Provider"]) -> PooledProvider:
    """A pool over `config.base_urls`; `make(replica_config)` builds each replica's provider, which
    makes one attempt per request (the pool retries, across replicas)."""
    from .limits import limited

    members = []
    for url in config.base_urls:
        replica = config.replica(url).model_copy(update={"retries": 0})
        provider = make(replica)
        if hasattr(provider, "breaker"):
            provider.breaker = False  # the pool keeps each replica's health (one count, its own eviction)
        members.append(Member(url, limited(provider, replica), shared_endpoint(url)))
    return PooledProvider(config, members)
