"""Episodes in flight: play the process's upcoming items' episodes in threads, report in order.

Model latency, not the harness, bounds a sweep: one process can keep many requests waiting on an
endpoint at once. Before each item runs, the episodes of the next ``window`` upcoming case items
of this process are handed to a pool of ``concurrency`` threads; an item's setup then takes its
episode's trajectory instead of playing it. Grading, records, reports, JUnit and ``--lf`` stay
in the main thread, one item at a time, in pytest's order, so they are identical to a serial run.

Upcoming items are the rest of ``session.items`` without xdist, and under xdist the worker's own
queue of scheduled indices (never another worker's items). After ``-x``/``--maxfail`` stops the
session no new episode starts; queued ones are cancelled, running ones finish and are discarded
(their items never ran, so no record is written for them). Only ``window`` trajectories are ever
held, so memory does not grow with the session.

The embedded model's server serves ``slots`` episodes at once (llama-server --parallel); more
would queue inside the server with their clocks running. So episodes of such a model pass an
`OrderedGate` of that many places (split among xdist workers, at least one each) before they
start: waiting there is not part of the episode, and the earliest item goes first. A model
with ``max_connections`` passes a gate of that many places per endpoint (the limit is per
process, as in providers/limits.py): more episodes in flight than the endpoint takes at once
would only wait for a connection in turn after turn. The wait at a gate is the episode's
``queue_s``, never its time.
"""

from __future__ import annotations

import heapq
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout  # not the builtin one before Python 3.11
from typing import Any, Callable

import pytest

from .progress import episode_watch_key  # who hears of each episode as it starts and finishes

#: this process's Prefetcher (absent with --agentfloor-concurrency 1)
prefetcher_key = pytest.StashKey["Prefetcher"]()


#: seconds between the main thread's looks at the progress display while it waits for an episode
WAIT_TICK_S = 0.1

#: providers whose items play inline: scripted ones answer in-process (threads only add overhead)
INLINE_PROVIDERS = frozenset({"scripted"})


class OrderedGate:
    """At most `places` jobs run at once; waiting jobs start in ticket order (pytest's item order)."""

    def __init__(self, places: int, stopped: Callable[[], bool] = lambda: False):
        self.places = places
        self.busy = 0
        self._waiting: list[int] = []
        self._cond = threading.Condition()
        self._stopped = stopped

    def run(self, ticket: int, job: Callable[[], Any]) -> Any:
        with self._cond:
            heapq.heappush(self._waiting, ticket)
            while self.busy >= self.places or self._waiting[0] != ticket:
                self._cond.wait()
            heapq.heappop(self._waiting)
            self.busy += 1
            self._cond.notify_all()  # the next ticket may take another free place
        try:
            if self._stopped():
                return None  # -x / --maxfail while this episode waited: it never starts, nobody takes it
            return job()
        finally:
            with self._cond:
                self.busy -= 1
                self._cond.notify_all()


def episode_places(item: pytest.Item) -> int | None:
    """Episodes of `item`'s model this process may play at once: the embedded server's slots over the
    xdist workers (at least one), else `max_connections` per endpoint, or None (no gate)."""
    model = getattr(item, "model", None)
    if model is None:
        return None
    if model.provider != "local" or model.base_url:
        if not model.max_connections:
            return None
        return model.max_connections * (len(model.base_urls) if model.is_pool else 1)
    from .local.session import DEFAULT_SLOTS

    places = model.slots or DEFAULT_SLOTS
    if model.max_connections:
        places = min(places, model.max_connections)
    workers = getattr(item.config, "workerinput", {}).get("workercount", 1)
    return max(1, places // max(1, int(workers)))


class Prefetcher:
    """The pool and the window of submitted episodes (keyed by item identity)."""

    def __init__(self, session: pytest.Session, concurrency: int, window: int | None = None):
        self.session = session
        self.concurrency = concurrency
        self.window = window or 2 * concurrency
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[int, Future] = {}
        #: items found to play inline (a scripted model, a skip, no case): not asked again each time
        #: the window slides over them, which cost O(window) per item
        self._inline: set[int] = set()
        self._positions: dict[int, int] | None = None
        self._stopped = False
        self._lock = threading.Lock()
        self._gates: dict[str, OrderedGate] = {}
        self._tickets = 0

    # -- which items come next ----------------------------------------------------------------
    def upcoming(self, item: pytest.Item) -> list[pytest.Item]:
        """This process's items from `item` on, at most `window` of them."""
        items = self.session.items
        queue = _xdist_queue(self.session.config)
        if queue is not None:
            current, pending = queue
            return [items[i] for i in [current, *pending][: self.window] if isinstance(i, int) and i < len(items)]
        if self._positions is None:
            self._positions = {id(it): n for n, it in enumerate(items)}
        start = self._positions.get(id(item))
        if start is None:
            return [item]
        return items[start: start + self.window]

    # -- submission ----------------------------------------------------------------------------
    def advance(self, item: pytest.Item, play_for: Callable[[pytest.Item], Callable[[], Any] | None]) -> None:
        """Submit the episodes of the window starting at `item` that are not yet in flight."""
        if self._stopped or self.session.shouldstop or self.session.shouldfail:
            self.stop()
            return
        for nxt in self.upcoming(item):
            key = id(nxt)
            if key in self._futures or key in self._inline:
                continue
            job = play_for(nxt)
            if job is None:
                self._inline.add(key)
                continue
            watch = self.session.config.stash.get(episode_watch_key, None)
            if watch is not None:
                job = _watched(watch, nxt.nodeid, nxt.model.name, job)  # type: ignore[attr-defined]
            places = episode_places(nxt)
            if places is not None:
                job = self._gated(nxt.model.name, places, job)  # type: ignore[attr-defined]
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="agentfloor-episode")
            self._futures[key] = self._pool.submit(job)

    def _gated(self, model: str, places: int, job: Callable[[], Any]) -> Callable[[], Any]:
        gate = self._gates.get(model)
        if gate is None:
            gate = self._gates[model] = OrderedGate(places, stopped=lambda: self._stopped)
        self._tickets += 1
        ticket = self._tickets

        def gated() -> Any:
            asked = time.monotonic()

            def queued_then_play() -> Any:
                waited = time.monotonic() - asked
                out = job()
                if out is not None and hasattr(out, "queue_s"):  # the wait for a place is queue time
                    out.queue_s = round(out.queue_s + waited, 6)
                return out

            return gate.run(ticket, queued_then_play)

        return gated

    def take(self, item: pytest.Item) -> Future | None:
        """The submitted episode of `item` (removed from the window), or None to play it inline."""
        return self._futures.pop(id(item), None)

    def stop(self) -> None:
        """No new episodes; queued ones are cancelled, running ones finish unrecorded."""
        self._stopped = True
        for fut in self._futures.values():
            fut.cancel()
        self._futures.clear()

    def close(self) -> None:
        self.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    @property
    def in_window(self) -> int:
        return len(self._futures)


def _watched(watch: Any, nodeid: str, model: str, job: Callable[[], Any]) -> Callable[[], Any]:
    """`job`, telling `watch` when it starts playing (past any gate) and when it is done."""

    def watched() -> Any:
        watch.episode_started(nodeid, model)
        out = None
        try:
            out = job()
            return out
        finally:
            watch.episode_finished(nodeid, model, out)

    return watched


def wait_for(config: pytest.Config, future: Future) -> Any:
    """The episode's trajectory, from the main thread: while it plays, the progress display is kept
    up to date with the episodes that finish meanwhile (out of pytest's order)."""
    watch = config.stash.get(episode_watch_key, None)
    if watch is None:
        return future.result()
    began = time.monotonic()
    try:
        while True:
            try:
                return future.result(timeout=WAIT_TICK_S)
            except FutureTimeout:
                watch.tick()
    finally:
        watch.waited_for(time.monotonic() - began)


def play_now(config: pytest.Config, job: Callable[[], Any], provider: str) -> Any:
    """An item's episode played in its own turn (no look-ahead), and its trajectory.

    Where the progress display is a live region (progress.Progress.ticks), the episode plays in a
    thread of its own while pytest's thread waits for it as for a look-ahead episode (`wait_for`),
    ticking the display: a long episode no longer leaves the line standing still. That thread only
    plays the episode: it never writes to the terminal (pytest's thread draws, with capture
    suspended) and it is done when the item has its trajectory. It is a daemon thread, so an
    interrupted wait (Ctrl-C) never holds the process up for the rest of its episode. Elsewhere
    (plain lines, no display, in-process providers) the episode plays right here, as before."""
    watch = config.stash.get(episode_watch_key, None)
    if watch is None or provider in INLINE_PROVIDERS or not watch.ticks():
        return job()
    future: Future = Future()

    def play() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(job())
            except BaseException as exc:  # noqa: BLE001 (handed to pytest's thread, which raises it)
                future.set_exception(exc)

    threading.Thread(target=play, name="agentfloor-episode-now", daemon=True).start()
    return wait_for(config, future)


def _xdist_queue(config: pytest.Config) -> tuple[Any, list[Any]] | None:
    """Under xdist: (next index to run, the worker's pending indices), read under the queue's lock."""
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        torun = getattr(plugin, "torun", None)
        if torun is not None and hasattr(torun, "lock") and hasattr(plugin, "item_index"):
            with torun.lock() as pending:
                return plugin.item_index, [plugin.nextitem_index, *pending]
    return None


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """On the xdist controller: `--dist load` that keeps every worker's queue as deep as its window.

    xdist's load scheduler tops a worker up only when its queue runs low, and not at all while
    items take 0.1 s or more and two are still queued. An item's time here is its wait for an
    episode already in flight, so under that rule a worker's look-ahead shrinks to two items and
    `-n 2 --agentfloor-concurrency 64` plays about two episodes per worker at a time. None (xdist's own
    choice) for other --dist modes and without concurrency.
    """
    from .options import options_key

    options = config.stash.get(options_key, None)
    concurrency = getattr(options, "concurrency", 1)
    if concurrency <= 1 or config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScheduling

    class WindowedLoadScheduling(LoadScheduling):  # type: ignore[misc,valid-type]
        depth = 2 * concurrency + 2  # the worker's window, the item running and the one xdist holds back

        def schedule(self) -> None:
            super().schedule()
            for node in self.nodes:
                self._top_up(node)

        def check_schedule(self, node: Any, duration: float = 0) -> None:
            super().check_schedule(node, 0.0)  # duration is time spent waiting for the episode, not work
            self._top_up(node)

        def _top_up(self, node: Any) -> None:
            if node.shutting_down or not self.pending:
                return
            queued = len(self.node2pending[node])
            if queued < self.depth:  # refill to twice the depth: one message per `depth` items, not per item
                self._send_tests(node, 2 * self.depth - queued)
            if not self.pending:  # everything is handed out: workers may finish their last items
                for other in self.nodes:
                    if not other.shutting_down:
                        other.shutdown()

    return WindowedLoadScheduling(config, log)


def job_for(item: pytest.Item) -> Callable[[], Any] | None:
    """The episode of a case item worth playing ahead, or None (other tests, skips, in-process providers)."""
    job = getattr(item, "episode_job", None)
    model = getattr(item, "model", None)
    if job is None or model is None or model.provider in INLINE_PROVIDERS:
        return None
    if model.provider == "local" and model.base_url:
        return None  # a llama-server you run, its slots unknown: inline, as before
    if item.get_closest_marker("skip") or item.get_closest_marker("skipif"):
        return None  # played inline if it runs at all: a skipped item must not cost a request
    return job()


def before_item(item: pytest.Item) -> None:
    prefetcher = item.config.stash.get(prefetcher_key, None)
    if prefetcher is None:
        return
    from .options import options_key
    from .runstate import state_key

    max_cost = item.config.stash[options_key].max_cost
    if max_cost is not None and item.config.stash[state_key].spent() >= max_cost:
        prefetcher.stop()  # --max-cost reached: the remaining items are skipped, so play nothing ahead
        return
    prefetcher.advance(item, job_for)


def after_item(item: pytest.Item) -> None:
    prefetcher = item.config.stash.get(prefetcher_key, None)
    if prefetcher is not None and (item.session.shouldstop or item.session.shouldfail):
        prefetcher.stop()  # -x / --maxfail: no episode starts after the stop


def start(session: pytest.Session, concurrency: int) -> None:
    if concurrency > 1:
        session.config.stash[prefetcher_key] = Prefetcher(session, concurrency)


def finish(config: pytest.Config) -> None:
    prefetcher = config.stash.get(prefetcher_key, None)
    if prefetcher is not None:
        prefetcher.close()
        del config.stash[prefetcher_key]
