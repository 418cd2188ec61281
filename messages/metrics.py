"""The run totals the scheduler keeps for metrics once asked: ``QueryRunTotals`` -> ``RunTotals``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

__all__ = ["QueryRunTotals", "RunTotals", "StoreTotals"]


@final
@dataclass(frozen=True, slots=True)
class QueryRunTotals:
    """Query: the totals of the runs that ended (``RunTotals``). The first one starts the counting.

    ``max_tasks``: how many task ids get a label of their own (the rest count as ``"other"``);
    it applies when the counting starts. ``samples``: include each labelled task's latest
    start latenesses (for percentiles), which copying costs more.
    """

    max_tasks: int = 1000
    samples: bool = False


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StoreTotals:
    """Part of ``RunTotals``: what a scheduler with a store counted of its store, since it started.

    Attributes:
        commits: How long each commit of outcomes took, counts per bucket (not cumulative; the
            last is ``+Inf``) of ``actors.core.run_totals.COMMIT_BUCKETS``.
        commit_sum: Their sum, seconds.
        claims: Runs this node claimed from a shared store; ``None`` for a store not shared.
    """

    commits: tuple[int, ...]
    commit_sum: float
    claims: int | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunTotals:
    """Reply: counts of ended runs since the counting started, read on the scheduler's thread.

    Attributes:
        runs: ``(task label, outcome, count)``; outcome ``completed``, ``failed`` (an attempt
            that raised, retried or not) or ``cancelled`` (ended by its interrupt).
        lateness: Start lateness (due -> start) of every run, counts per bucket (not
            cumulative; the last is ``+Inf``) of ``actors.core.run_totals.LATENESS_BUCKETS``.
        lateness_sum: Their sum, seconds.
        duration: Start -> end of every run, per bucket of ``DURATION_BUCKETS``.
        duration_sum: Their sum, seconds.
        last: ``(task label, outcome)`` of each labelled task's last run.
        samples: ``(task label, latenesses)``: the last ones of each labelled task, if asked.
        store: The store's counts (``StoreTotals``); ``None`` for a scheduler without a store.
    """

    runs: tuple[tuple[str, str, int], ...]
    lateness: tuple[int, ...]
    lateness_sum: float
    duration: tuple[int, ...]
    duration_sum: float
    last: tuple[tuple[str, str], ...] = ()
    samples: tuple[tuple[str, tuple[float, ...]], ...] = ()
    store: StoreTotals | None = None
