"""The look-ahead window's bookkeeping, without pytest items (issue 29: per-item cost).

Sliding the window by one item must look at the one item it newly reaches, not at the whole window
again: with a window of 128 that was O(window) per item even when every item plays inline (a
scripted model, the default concurrency of 64).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_agentfloor.prefetch import Prefetcher


class _Config:
    def __init__(self) -> None:
        self.stash: dict[Any, Any] = {}


def _session(n: int) -> Any:
    return SimpleNamespace(items=[SimpleNamespace(name=f"i{k}", nodeid=f"i{k}") for k in range(n)],
                           shouldstop=False, shouldfail=False, config=_Config())


class _CountingSet(set):
    """The prefetcher's set of inline items, counting how often the window looks an item up."""

    lookups = 0

    def __contains__(self, key: object) -> bool:
        _CountingSet.lookups += 1
        return super().__contains__(key)


def test_each_item_is_looked_at_once_however_far_the_window_slides() -> None:
    session = _session(500)
    prefetcher = Prefetcher(session, concurrency=64)  # window 128
    prefetcher._inline = _CountingSet()
    _CountingSet.lookups = 0
    asked: list[str] = []

    def play_for(item: Any) -> None:
        asked.append(item.name)
        return None  # plays inline

    for item in session.items:
        prefetcher.advance(item, play_for)
    assert asked == [i.name for i in session.items]  # each once, in order
    assert _CountingSet.lookups == 500  # not 500 x 128: sliding by one item looks at the one it reaches
    assert prefetcher.upcoming(session.items[10]) == session.items[10:138]  # upcoming() still the whole window


def test_items_in_flight_are_not_submitted_twice_and_an_unknown_item_is_its_own_window() -> None:
    session = _session(10)
    prefetcher = Prefetcher(session, concurrency=2)  # window 4
    submitted: list[str] = []

    def play_for(item: Any) -> Any:
        submitted.append(item.name)
        return lambda: item.name

    try:
        prefetcher.advance(session.items[0], play_for)
        prefetcher.advance(session.items[1], play_for)
        assert submitted == ["i0", "i1", "i2", "i3", "i4"]
        stranger = SimpleNamespace(name="x", nodeid="x")
        assert prefetcher.upcoming(stranger) == [stranger]
        prefetcher.advance(session.items[6], play_for)  # a jump (deselected items): the new window only
        assert submitted == ["i0", "i1", "i2", "i3", "i4", "i6", "i7", "i8", "i9"]
        assert [prefetcher.take(i).result() for i in session.items[:2]] == ["i0", "i1"]  # type: ignore[union-attr]
    finally:
        prefetcher.close()
