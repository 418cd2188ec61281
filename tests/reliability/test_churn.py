"""Churn: schedule and cancel tasks in waves; the heap stays bounded and memory comes back.

Each wave schedules ``WAVE`` one-time tasks an hour ahead (so none runs) and cancels them all:
one in ten through ``Scheduler.cancel`` (an ask), the rest by telling ``Cancel`` to
``Scheduler.ref`` (public, and fast enough for a million). Half way through a wave, and at
its end, the heap must be small (stale entries are compacted once they outnumber live ones).
Traced memory (``tracemalloc``, from before the scheduler starts) must come back to the
baseline after every wave, up to the finished-task history (bounded by ``history``).
"""

from __future__ import annotations

import gc
import time
import tracemalloc

import pytest

from actors import Scheduler
from actors.core.due_heap import COMPACT_MIN_STALE
from messages import Cancel
from tests.reliability.helpers import peak_rss_mib, report, rss_mib

WAVE = 10_000
SLACK = 1024 * 1024  # bytes of traced memory allowed beyond what the history holds
HISTORY_BYTES_PER_TASK = 600  # a retired task record in the history, generously


def noop() -> None:
    return None


def churn(total: int, history: int) -> None:
    """Schedule and cancel ``total`` tasks in waves; check the heap and the traced memory."""
    assert total % WAVE == 0
    started = time.monotonic()
    gc.collect()
    tracemalloc.start()
    try:
        with Scheduler(workers=2, history=history) as s:
            gc.collect()
            baseline = tracemalloc.get_traced_memory()[0]
            samples: list[int] = []
            for _ in range(total // WAVE):
                wave(s)
                gc.collect()
                samples.append(tracemalloc.get_traced_memory()[0] - baseline)
            peak = tracemalloc.get_traced_memory()[1] - baseline
            final = s.stats()
            end_rss = rss_mib()
    finally:
        tracemalloc.stop()
    elapsed = time.monotonic() - started
    report(
        "churn",
        tasks=total,
        history=history,
        seconds=round(elapsed, 1),
        tasks_per_s=round(total / elapsed),
        heap_at_end=final.heap_size + final.stale_heap_entries,
        traced_kib_after_waves=[round(x / 1024) for x in samples[:: max(1, len(samples) // 10)]],
        traced_peak_mib=round(peak / 2**20, 1),
        rss_mib_at_end=round(end_rss),
        peak_rss_mib=round(peak_rss_mib()),
    )
    # What stays is the finished-task history (bounded by ``history``), nothing per wave.
    assert samples[-1] < HISTORY_BYTES_PER_TASK * history + SLACK, samples
    assert samples[-1] - samples[0] < SLACK, samples  # flat from the first wave on


def wave(s: Scheduler) -> None:
    ids = [s.schedule_once(noop, 3600.0 + i * 1e-3).task_id for i in range(WAVE)]
    for i, task_id in enumerate(ids):
        if i % 10 == 0:
            assert s.cancel(task_id) is True
        else:
            s.ref.tell(Cancel(task_id))
        if i == WAVE // 2:
            stats = s.stats()
            entries = stats.heap_size + stats.stale_heap_entries
            assert entries <= 2 * stats.live_tasks + COMPACT_MIN_STALE + 1, stats
    stats = s.stats()  # an ask: every Cancel told before it has been handled
    assert stats.live_tasks == 0, stats
    assert stats.heap_size + stats.stale_heap_entries <= COMPACT_MIN_STALE, stats


def test_churn_50k() -> None:
    churn(50_000, history=0)


@pytest.mark.stress
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("history", [0, 10_000])
def test_churn_1m(history: int) -> None:
    churn(1_000_000, history=history)
