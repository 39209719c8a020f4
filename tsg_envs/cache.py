"""The one keyed cache: a small least-recently-used map for values expensive to recompute.

Window LPs, polytope sets and reference rollouts are pure functions of hashable keys (a game's
``key`` is its config and seed); this cache keeps the most recent ones. A ``None`` key means
"do not cache" (a hand-built game has no key).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["KeyedCache"]

V = TypeVar("V")


class KeyedCache(Generic[V]):
    """Least-recently-used cache of at most ``maxsize`` values.

    Args:
        maxsize: How many values to keep (the least recently used goes first).
    """

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        self.maxsize = int(maxsize)
        self._items: OrderedDict[Hashable, V] = OrderedDict()

    def get_or_make(self, key: Hashable | None, make: Callable[[], V]) -> V:
        """The cached value of ``key``, else ``make()`` (stored unless ``key`` is None)."""
        if key is None:
            return make()
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = make()
        self._items[key] = value
        if len(self._items) > self.maxsize:
            self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget every value."""
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items
