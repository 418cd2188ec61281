"""``SchedulerCollector``: a Prometheus collector that reads a scheduler when it is scraped.

Nothing is counted on a run's path for Prometheus: the counters and histograms come from the
scheduler's ``RunTally`` (a copy of the core's run totals), the gauges from the scheduler's
stats that come along in the same answer, and with a store the commit times and claims its
home keeps: one question to the scheduler thread per scrape. Threads: ``collect`` runs on the scraping
thread (the HTTP server's, or ``generate_latest``'s caller's).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from actors.api.facade import Scheduler
from actors.errors import StoreError
from actors.metrics.tally import Histogram, RunTally, TallySnapshot
from actors.store import SharedStore

__all__ = ["LABELLED", "PREFIX", "SchedulerCollector"]

PREFIX = "taskscheduler"

LABELLED: Final = (
    (f"{PREFIX}_runs", "Runs that ended, by task and outcome.", ("task", "outcome")),
    (f"{PREFIX}_missed", "Due times that got no run, by task and reason.", ("task", "reason")),
)
"""The counter families with a line per ``task`` label (and outcome or reason), in the order
``collect`` yields them first: name, documentation, label names (``TallySnapshot.runs`` and
``.missed`` keyed by those labels' values)."""

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
        for (name, documentation, labels), counts in zip(
            LABELLED, (snapshot.runs, snapshot.missed), strict=True
        ):
            family = CounterMetricFamily(name, documentation, labels=labels)
            for key, count in sorted(counts.items()):
                family.add_metric(key, count)
            yield family
        yield from self.unlabelled(snapshot)

    def unlabelled(
        self, snapshot: TallySnapshot
    ) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        """The families after the ``LABELLED`` ones, each a few lines: histograms, claims, gauges, leases."""
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
        stats = snapshot.stats  # asked in the same question as the counts
        if stats is None:
            return
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
