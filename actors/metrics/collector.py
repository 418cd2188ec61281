"""``SchedulerCollector``: a Prometheus collector that reads a scheduler when it is scraped.

Nothing is counted on a run's path for Prometheus: the gauges come from ``Scheduler.stats()``
(one question to the scheduler thread per scrape), the counters and histograms from the
scheduler's ``RunTally`` (a copy of its dicts; with a store, the commit times and claims its
home keeps come along in the same answer). Threads: ``collect`` runs on the scraping
thread (the HTTP server's, or ``generate_latest``'s caller's).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from actors.api.facade import Scheduler
from actors.errors import SchedulerShutdownError, StoreError
from actors.metrics.tally import Histogram, RunTally
from actors.store import SharedStore

__all__ = ["PREFIX", "SchedulerCollector"]

PREFIX = "taskscheduler"

logger = logging.getLogger(__name__)


class SchedulerCollector(Collector):
    """The metrics of one scheduler (``actors.metrics.register`` makes and registers one)."""

    def __init__(self, scheduler: Scheduler, tally: RunTally, store: SharedStore | None = None) -> None:
        self.scheduler = scheduler
        self.tally = tally
        self.store = store

    def describe(self) -> list[object]:
        """Nothing: the registry then calls ``collect`` to learn the names (prometheus_client's rule)."""
        return []

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        """Yield every metric family, read now (the scraping thread)."""
        snapshot = self.tally.snapshot()
        runs = CounterMetricFamily(
            f"{PREFIX}_runs", "Runs that ended, by task and outcome.", labels=("task", "outcome")
        )
        for (task, outcome), count in sorted(snapshot.runs.items()):
            runs.add_metric((task, outcome), count)
        yield runs
        missed = CounterMetricFamily(
            f"{PREFIX}_missed", "Due times that got no run, by task and reason.", labels=("task", "reason")
        )
        for (task, reason), count in sorted(snapshot.missed.items()):
            missed.add_metric((task, reason), count)
        yield missed
        duration = "How long runs took, start to end (all tasks)."
        yield _histogram(f"{PREFIX}_run_duration_seconds", duration, snapshot.duration)
        lateness = "How late runs started: due time to start (all tasks)."
        yield _histogram(f"{PREFIX}_start_lateness_seconds", lateness, snapshot.lateness)
        if snapshot.commits is not None:
            commits = "How long each commit of runs' outcomes to the store took."
            yield _histogram(f"{PREFIX}_store_commit_seconds", commits, snapshot.commits)
        if snapshot.claims is not None:
            claims = CounterMetricFamily(f"{PREFIX}_claims", "Runs this node claimed from the shared store.")
            claims.add_metric((), snapshot.claims)
            yield claims
        try:
            stats = self.scheduler.stats()
        except SchedulerShutdownError:
            return  # a stopped scheduler has no gauges; its counts stay
        pool = stats.workers + stats.processes
        pending = GaugeMetricFamily(
            f"{PREFIX}_pending_tasks", "Live tasks not running now (waiting for a due time or a worker)."
        )
        pending.add_metric((), max(0, stats.live_tasks - stats.running))
        yield pending
        running = GaugeMetricFamily(f"{PREFIX}_running_runs", "Runs started and not yet ended.")
        running.add_metric((), stats.running)
        yield running
        busy = GaugeMetricFamily(f"{PREFIX}_workers_busy", "Workers (threads and processes) running a run.")
        busy.add_metric((), min(stats.running, pool))
        yield busy
        workers = GaugeMetricFamily(f"{PREFIX}_workers", "Workers (threads and processes) in the pools.")
        workers.add_metric((), pool)
        yield workers
        if self.store is not None:
            yield self._leases(self.store)

    @staticmethod
    def _leases(store: SharedStore) -> GaugeMetricFamily:
        leases = GaugeMetricFamily(
            f"{PREFIX}_leases_held", "Runs this node holds a lease on in the shared store."
        )
        try:
            held = sum(run.owner == store.node for run in store.runs_in_flight())
        except StoreError:
            logger.warning("metrics: cannot read the leases held", exc_info=True)
            return leases  # no sample: better than a wrong one
        leases.add_metric((), held)
        return leases


def _histogram(name: str, documentation: str, histogram: Histogram) -> HistogramMetricFamily:
    buckets: list[tuple[str, float]] = []
    cumulative = 0
    for bound, count in zip((*histogram.bounds, float("inf")), histogram.counts, strict=True):
        cumulative += count
        buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
    return HistogramMetricFamily(name, documentation, buckets=buckets, sum_value=histogram.total)
