"""``actors.core.run_totals.RunCounts``: the core's totals of ended runs, for metrics."""

from __future__ import annotations

from actors.core.run_totals import DURATION_BUCKETS, LATENESS_BUCKETS, OTHER, SAMPLES, RunCounts
from messages import Completed, Failed, TaskId


def completed(started: float | None, finished: float) -> Completed:
    return Completed(0, TaskId("t"), 1, None, finished, True, started)


def test_counts_by_label_and_outcome_with_labels_bounded() -> None:
    counts = RunCounts(max_tasks=2)
    for task in ("a", "b", "c", "d", "a"):
        counts.ended(task, 10.0, completed(10.0, 10.5), "completed")
    counts.ended("b", 10.0, Failed(0, TaskId("b"), 1, ValueError(), "", 11.0, True, 10.0), "failed")

    totals = counts.snapshot()
    assert sorted(totals.runs) == [("a", "completed", 2), ("b", "completed", 1), ("b", "failed", 1),
                                   (OTHER, "completed", 2)]  # fmt: skip
    assert dict(totals.last) == {"a": "completed", "b": "failed"}
    assert totals.samples == ()


def test_lateness_and_duration_fall_in_their_buckets() -> None:
    counts = RunCounts()
    counts.ended("a", 10.0, completed(10.0, 10.0005), "completed")  # on time, 0.5 ms
    counts.ended("a", 10.0, completed(12.0, 14.0), "completed")  # 2 s late, took 2 s
    counts.ended("a", 10.0, completed(None, 14.0), "cancelled")  # never started: counted, not timed

    totals = counts.snapshot(samples=True)
    assert len(totals.lateness) == len(LATENESS_BUCKETS) + 1
    assert totals.lateness[0] == 1
    assert totals.lateness[LATENESS_BUCKETS.index(2.5)] == 1
    assert totals.lateness_sum == 2.0
    assert totals.duration[0] == 1
    assert totals.duration[DURATION_BUCKETS.index(5.0)] == 1
    assert sum(totals.duration) == 2
    assert dict(totals.samples) == {"a": (0.0, 2.0)}


def test_samples_keep_the_latest_only() -> None:
    counts = RunCounts()
    for n in range(SAMPLES + 5):
        counts.ended("a", 0.0, completed(float(n), float(n)), "completed")
    [(label, kept)] = counts.snapshot(samples=True).samples
    assert label == "a"
    assert len(kept) == SAMPLES
    assert kept[0] == 5.0
