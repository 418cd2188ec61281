"""The scheduler's subscriptions, and which event kinds any of them wants (part of the pure core).

The core builds only the events someone listens to (``Timetable.wanted``). That set is kept
by counting, per kind, the subscriptions that want it: a subscribe or an unsubscribe changes
a count per kind it names, never going over the other subscriptions (10k subscriptions, one
union each, made subscribing O(N²) on the scheduler thread and a task due meanwhile late).
"""

from __future__ import annotations

from collections.abc import Iterator

from messages import EventKind, Subscribe

__all__ = ["Subscriptions"]


class Subscriptions:
    """The live subscriptions by id, in the order they came, and how many want each kind."""

    __slots__ = ("_by_id", "_counts")

    def __init__(self) -> None:
        self._by_id: dict[int, Subscribe] = {}
        self._counts: dict[EventKind, int] = {}  # only kinds with a count above zero

    def __iter__(self) -> Iterator[Subscribe]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    @property
    def wanted(self) -> frozenset[EventKind]:
        """The kinds at least one subscription wants."""
        return frozenset(self._counts)

    def counts(self) -> dict[EventKind, int]:
        """How many subscriptions want each kind (kinds nobody wants are left out)."""
        return dict(self._counts)

    def add(self, subscription: Subscribe) -> bool:
        """Keep ``subscription`` (it replaces one with its id); whether the wanted kinds changed."""
        changed = self.remove(subscription.subscription_id)
        self._by_id[subscription.subscription_id] = subscription
        counts = self._counts
        for kind in subscription.kinds:
            count = counts.get(kind, 0)
            counts[kind] = count + 1
            changed = changed or not count
        return changed

    def remove(self, subscription_id: int) -> bool:
        """Forget a subscription (unknown ids are ignored); whether the wanted kinds changed."""
        subscription = self._by_id.pop(subscription_id, None)
        if subscription is None:
            return False
        changed = False
        counts = self._counts
        for kind in subscription.kinds:
            count = counts[kind] - 1
            if count:
                counts[kind] = count
            else:
                del counts[kind]
                changed = True
        return changed
