"""The scheduler's subscriptions: which event kinds someone wants, kept by a count per kind."""

from __future__ import annotations

import random

from actors.core.subscriptions import Subscriptions
from messages import EventKind, Subscribe


def _subscribe(subscription_id: int, *kinds: EventKind) -> Subscribe:
    return Subscribe(subscription_id, print, frozenset(kinds))


def test_wanted_kinds_follow_subscribe_and_unsubscribe() -> None:
    subscriptions = Subscriptions()
    assert subscriptions.wanted == frozenset()
    assert subscriptions.add(_subscribe(1, EventKind.FAILED, EventKind.DUE))
    assert not subscriptions.add(_subscribe(2, EventKind.FAILED))  # FAILED was wanted already
    assert subscriptions.wanted == {EventKind.FAILED, EventKind.DUE}
    assert subscriptions.counts() == {EventKind.FAILED: 2, EventKind.DUE: 1}
    assert subscriptions.remove(1)  # nobody wants DUE any more
    assert subscriptions.wanted == {EventKind.FAILED}
    assert not subscriptions.remove(1)  # twice, or an unknown id: nothing changes
    assert not subscriptions.remove(99)
    assert subscriptions.remove(2)
    assert subscriptions.wanted == frozenset()
    assert subscriptions.counts() == {}
    assert len(subscriptions) == 0


def test_a_subscription_sent_again_with_its_id_replaces_its_kinds() -> None:
    subscriptions = Subscriptions()
    subscriptions.add(_subscribe(1, EventKind.FAILED))
    subscriptions.add(_subscribe(1, EventKind.COMPLETED))
    assert subscriptions.counts() == {EventKind.COMPLETED: 1}
    assert [each.subscription_id for each in subscriptions] == [1]


def test_wanted_kinds_match_the_union_of_the_live_subscriptions_in_any_order() -> None:
    chooser = random.Random(21)
    kinds = list(EventKind)
    subscriptions = Subscriptions()
    live: dict[int, frozenset[EventKind]] = {}
    for step in range(3000):
        if live and chooser.random() < 0.45:
            subscription_id = chooser.choice(list(live))
            del live[subscription_id]
            subscriptions.remove(subscription_id)
        else:
            wanted = frozenset(chooser.sample(kinds, chooser.randint(1, len(kinds))))
            live[step] = wanted
            subscriptions.add(Subscribe(step, print, wanted))
        union = frozenset().union(*live.values())
        assert subscriptions.wanted == union
        assert subscriptions.counts() == {kind: sum(kind in each for each in live.values()) for kind in union}
