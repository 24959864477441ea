"""Values computed once per object, for the per-item path (a case's tables, a config's public view).

Keyed by the object's identity (cases, fixtures and configs are pydantic models: unhashable, and
equal ones may be distinct objects); the object is kept beside its value so its id is never reused
while the entry lives. Bounded: kinds that make objects per item never grow it without end.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")


class PerObject(Generic[T, V]):
    """`make(obj)`, made once per object; `state(obj)` (optional) says when the value is stale: an entry
    made when it returned something else is made anew."""

    def __init__(self, make: Callable[[T], V], *, state: Callable[[T], Any] | None = None, limit: int = 512):
        self._make, self._state, self._limit = make, state, limit
        self._entries: dict[int, tuple[T, Any, V]] = {}

    def __call__(self, obj: T) -> V:
        state = self._state(obj) if self._state is not None else None
        found = self._entries.get(id(obj))
        if found is not None and found[0] is obj and found[1] == state:
            return found[2]
        value = self._make(obj)
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[id(obj)] = (obj, state, value)
        return value
