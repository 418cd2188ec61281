"""``actors.core.run_totals.RunCounts``: the core's totals of ended runs, for metrics."""

from __future__ import annotations

import random

from actors.core.run_log import RunEntry, recent_runs
from actors.core.run_totals import DURATION_BUCKETS, LATENESS_BUCKETS, OTHER, RunCounts
from messages import Completed, Failed, RecentRuns, TaskId


def completed(started: float | None, finished: float) -> Completed:
    return Completed(0, TaskId("t"), 1, None, finished, True, started)


def add_pending(counts: RunCounts, task_id: str, due: float, started: float | None, finished: float) -> None:
    """What ``Timetable.completed`` appends for a completed run (``actors/core/run_endings.py``)."""
    counts.pending += (task_id, due, started, finished)


def test_counts_by_label_and_outcome_with_labels_bounded() -> None:
    counts = RunCounts(max_tasks=2)
    for task in ("a", "b", "c", "d", "a"):
        counts.ended(task, 10.0, completed(10.0, 10.5), "completed")
    counts.ended("b", 10.0, Failed(0, TaskId("b"), 1, ValueError(), "", 11.0, True, 10.0), "failed")

    totals = counts.snapshot()
    assert sorted(totals.runs) == [("a", "completed", 2), ("b", "completed", 1), ("b", "failed", 1),
                                   (OTHER, "completed", 2)]  # fmt: skip


def test_pending_runs_take_labels_in_order_and_count_at_the_snapshot() -> None:
    counts = RunCounts(max_tasks=2)
    for task in ("a", "b", "c", "a", "d", "b"):
        add_pending(counts, task, 10.0, 10.0, 10.5)
    counts.ended("c", 10.0, completed(10.0, 10.5), "cancelled")  # beyond the labels already taken

    totals = counts.snapshot()
    assert not counts.pending
    assert sorted(totals.runs) == [("a", "completed", 2), ("b", "completed", 2), (OTHER, "cancelled", 1),
                                   (OTHER, "completed", 2)]  # fmt: skip
    assert sum(totals.lateness) == sum(totals.duration) == 7


def test_lateness_and_duration_fall_in_their_buckets() -> None:
    counts = RunCounts()
    counts.ended("a", 10.0, completed(10.0, 10.0005), "completed")  # on time, 0.5 ms
    counts.ended("a", 10.0, completed(12.0, 14.0), "completed")  # 2 s late, took 2 s
    counts.ended("a", 10.0, completed(None, 14.0), "cancelled")  # never started: counted, not timed

    totals = counts.snapshot()
    assert len(totals.lateness) == len(LATENESS_BUCKETS) + 1
    assert totals.lateness[0] == 1
    assert totals.lateness[LATENESS_BUCKETS.index(2.5)] == 1
    assert totals.lateness_sum == 2.0
    assert totals.duration[0] == 1
    assert totals.duration[DURATION_BUCKETS.index(5.0)] == 1
    assert sum(totals.duration) == 2


def test_counting_in_bulk_gives_what_counting_one_by_one_gives() -> None:
    """``fold`` (sorted values, bisected by bound) against ``ended`` (one bisect per run).

    Values on the bounds (a bucket's bound is in it: Prometheus' ``le``), below 0 (counted in
    the first bucket and as 0 in the sum), beyond the last bound, and reports without a start.
    """
    rng = random.Random(25)
    bounds = sorted({*LATENESS_BUCKETS, *DURATION_BUCKETS})
    one_by_one, in_bulk = RunCounts(max_tasks=30), RunCounts(max_tasks=30)
    for n in range(700):
        due = 1000.0 + n
        late = rng.choice([-0.002, 0.0, rng.choice(bounds), rng.uniform(0, 100), 500.0, rng.expovariate(20)])
        took = rng.choice([0.0, rng.choice(bounds), rng.uniform(0, 5000), rng.expovariate(50)])
        started = None if n % 97 == 0 else due + late
        finished = due + late + took
        task = f"t{rng.randrange(50)}"
        one_by_one.ended(task, due, Completed(0, task, 1, None, finished, True, started), "completed")
        add_pending(in_bulk, task, due, started, finished)
        if n % 64 == 63:  # a message's reports at a time, and a rest
            in_bulk.fold()
    expected, got = one_by_one.snapshot(), in_bulk.snapshot()
    assert got.lateness == expected.lateness
    assert got.duration == expected.duration
    assert abs(got.lateness_sum - expected.lateness_sum) < 1e-6
    assert abs(got.duration_sum - expected.duration_sum) < 1e-6
    assert sum(count for _, _, count in got.runs) == sum(count for _, _, count in expected.runs)
    assert len({name for name, _, _ in got.runs} - {OTHER}) == 30


def test_recent_runs_come_from_what_the_record_keeps() -> None:
    plain = Completed(0, TaskId("p"), 1, None, 12.5, True, 12.0)
    assert recent_runs("p", plain, 10.0, None) == RecentRuns("p", "completed", (2.0,))
    assert recent_runs("n", None, 10.0, None) is None  # never ran
    assert recent_runs("d", None, 10.0, "failed") == RecentRuns("d", "failed", ())  # a stored task's row
    kept = [
        RunEntry(1, 10.0, 10.0, 10.5, 11.0, "completed", None),
        RunEntry(2, 20.0, 20.0, 19.9, 21.0, "failed", "ValueError"),  # started early: 0
        RunEntry(3, 30.0, 30.0, None, 40.0, "missed", None),  # never started: no lateness
    ]
    assert recent_runs("r", kept, 30.0, None) == RecentRuns("r", "missed", (0.5, 0.0))
