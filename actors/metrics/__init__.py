"""Prometheus metrics of a running scheduler (the ``[metrics]`` extra: ``prometheus_client``).

``register(scheduler)`` adds the scheduler's metrics to a registry; ``tally_of(scheduler)`` is
the ``RunTally`` behind them (the web page reads its lateness percentiles). ``docs/web.md``
lists the metrics.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

from actors.metrics.tally import OTHER, RunTally, TallySnapshot
from messages import EventKind

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

    from actors.api.facade import Scheduler
    from actors.metrics.collector import SchedulerCollector
    from actors.store import SharedStore

__all__ = ["OTHER", "RunTally", "TallySnapshot", "register", "tally_of"]

# Guards _TALLIES: two threads registering one scheduler get one tally (one subscription).
_lock = threading.Lock()
_TALLIES: weakref.WeakKeyDictionary[Scheduler, RunTally] = weakref.WeakKeyDictionary()


def tally_of(scheduler: Scheduler, max_tasks: int = 1000) -> RunTally:
    """The scheduler's ``RunTally``, subscribed to its events the first time it is asked for (any thread).

    ``max_tasks`` applies when the tally is made; a later call gets the same tally as it is.

    Raises:
        TypeError, ValueError: a ``max_tasks`` that is not an int >= 0.
        SchedulerShutdownError: the scheduler has stopped (and had no tally).
    """
    with _lock:
        tally = _TALLIES.get(scheduler)
        if tally is None:
            tally = RunTally(scheduler, max_tasks)
            scheduler.subscribe(tally.on_event, kinds=[EventKind.MISSED])
            tally.totals()  # the core counts from now on
            _TALLIES[scheduler] = tally
        return tally


def register(
    scheduler: Scheduler,
    registry: CollectorRegistry | None = None,
    *,
    max_tasks: int = 1000,
    store: SharedStore | None = None,
) -> SchedulerCollector:
    """Add ``scheduler``'s metrics to ``registry`` (prometheus_client's default one if ``None``).

    Counts start when this is called (the first time for this scheduler: the metrics of a
    scheduler are one tally, however many registries show it). Tasks beyond the first
    ``max_tasks`` ids seen are counted under ``task="other"``. Returns the collector (pass it
    to ``registry.unregister`` to take the metrics off). ``store``: the scheduler's shared
    (PostgreSQL) store, if any, for ``taskscheduler_leases_held`` (one read of it per scrape).
    Any thread.

    Raises:
        ImportError: prometheus_client is not installed (``pip install 'pykka-taskscheduler[metrics]'``).
        TypeError, ValueError: a bad ``max_tasks``.
        SchedulerShutdownError: the scheduler has stopped.
    """
    from prometheus_client import REGISTRY  # noqa: PLC0415 - an extra: imported when used

    from actors.metrics.collector import SchedulerCollector  # noqa: PLC0415 - needs prometheus_client

    collector = SchedulerCollector(scheduler, tally_of(scheduler, max_tasks), store)
    (REGISTRY if registry is None else registry).register(collector)
    return collector
