"""The durable workloads (issue 10), for peers with a ``durable`` setting.

- ``durable_schedule``: the latency of one durable one-time schedule call, which returns only
  once the task is committed (due an hour ahead, so nothing runs meanwhile);
- ``durable_burst``: N durable one-time tasks held, then made due at once; the time until
  every one has run and its outcome is committed, checked by reading the file;
- ``restart``: a file holding N durable tasks (one already due); the time from starting a
  scheduler on it until that due task has run, the memory the loaded schedule holds, and the
  longest stop a 10 ms probe thread sees meanwhile. In a child process, so that the memory
  and the collector's figures are this run's alone.

Peers without a durable setting (textbook, sched, threading.Timer) are skipped.
"""

from __future__ import annotations

import functools
import gc
import math
import time
import tracemalloc

from benchmarks import durable_tasks
from benchmarks.adapters import Adapter
from benchmarks.cases import FAR_S, Case, Config, Measurement
from benchmarks.process_probes import CollectorWatch, PauseProbe, rss_bytes
from benchmarks.results import percentile
from benchmarks.runner import log

__all__ = ["durable_burst_cases", "durable_schedule_cases", "restart_cases"]

#: The restart's tasks are due this far ahead (and 1 ms apart), except the one already due.
RESTART_DUE_IN_S = FAR_S


def measure_durable_schedule(adapter: Adapter, calls: int, warmup: int) -> Measurement:
    """Time each durable ``schedule_once`` (committed when it returns), due an hour ahead (µs)."""
    times: list[float] = []
    clock = time.perf_counter_ns
    schedule = adapter.schedule_durable
    for i in range(warmup + calls):
        start = clock()
        schedule(FAR_S + i * 1e-3)
        times.append((clock() - start) / 1000.0)
    timed = sorted(times[warmup:])
    return Measurement(
        {
            "median_us": percentile(timed, 50),
            "p99_us": percentile(timed, 99),
            "max_us": timed[-1],
        },
        extra={"schedule_us": timed},
    )


def measure_durable_burst(adapter: Adapter, n: int, timeout: float) -> Measurement:
    """N held durable tasks made due at once: tasks/s until every run's outcome is committed.

    The clock starts at ``release`` and stops when the last run has reported and the store
    holds every outcome (ours: ``settle()`` returned). Then the file itself must hold no
    live task any more, or the run fails.
    """
    done = durable_tasks.expect(n)
    start = time.perf_counter()
    for _ in range(n):
        adapter.schedule_held()
    adapter.absorb(timeout)
    fill_s = time.perf_counter() - start
    held = adapter.stored_live()
    if held != n:
        raise RuntimeError(f"{held:,} of the {n:,} scheduled tasks are live in the store")
    start = time.perf_counter()
    adapter.release()
    if not done.wait(timeout):
        raise TimeoutError(f"only {done.count:,}/{n:,} durable tasks ran within {timeout:.0f} s")
    adapter.committed(timeout)
    elapsed = time.perf_counter() - start
    left = adapter.stored_live()
    if left:
        raise RuntimeError(f"{left:,} tasks are still live in the store after all {n:,} ran")
    return Measurement({"tasks_per_s": n / elapsed, "schedule_per_s": n / fill_s})


def measure_restart(adapter: Adapter, n: int, probe_interval: float, timeout: float) -> Measurement:
    """Start a second scheduler on a file of N durable tasks; time, memory and pauses until ready.

    Ready means the one task already due has run: everything is loaded and running. Memory
    is the resident set's growth from before the start until ready (after a collection),
    per task; then a second start on the same file, under ``tracemalloc``, gives the Python
    heap the loaded schedule holds. The probe thread asks to wake every ``probe_interval``
    while the first start runs; its latest wake-up is the longest stop every thread saw.
    """
    path = adapter.scratch_path("restart.db")
    start = time.perf_counter()
    adapter.fill_store(path, n, RESTART_DUE_IN_S)
    log(f"    filled a store with {n:,} tasks in {time.perf_counter() - start:.1f} s")
    done = durable_tasks.expect(1)
    gc.collect()
    rss_before = rss_bytes()
    with PauseProbe(probe_interval) as probe, CollectorWatch() as collector:
        start = time.perf_counter()
        opened = adapter.open_store(path)
        if not done.wait(timeout):
            adapter.close_store(opened)
            raise TimeoutError(f"the task already due did not run within {timeout:.0f} s of the start")
        ready_s = time.perf_counter() - start
    try:
        gc.collect()
        rss_after = rss_bytes()
        start = time.perf_counter()
        gc.collect()
        full_gc_s = time.perf_counter() - start
    finally:
        adapter.close_store(opened)
    del opened
    gc.collect()
    tracemalloc.start()
    try:
        traced_before = tracemalloc.get_traced_memory()[0]
        opened = adapter.open_store(path)
        try:
            gc.collect()
            traced = tracemalloc.get_traced_memory()[0] - traced_before
        finally:
            adapter.close_store(opened)
    finally:
        tracemalloc.stop()
    pauses = sorted(probe.late_ms) or [math.nan]  # none: ready before the probe's first wake-up
    return Measurement(
        {
            "ready_s": ready_s,
            "rss_bytes_per_task": (rss_after - rss_before) / n,
            "traced_bytes_per_task": traced / n,
            "longest_pause_ms": pauses[-1],
            "p99_pause_ms": percentile(pauses, 99),
            "full_collections": float(collector.full),
            "longest_collection_ms": collector.longest_s * 1000.0,
            "collections_s": collector.total_s,
            "full_gc_ms": full_gc_s * 1000.0,
        },
        extra={"pause_ms": pauses},
    )


# ---------------------------------------------------------------------------
# case lists


def durable_schedule_cases(cfg: Config) -> list[Case]:
    return [
        Case(
            "durable_schedule",
            f"{cfg.durable_calls:,} calls",
            {"calls": cfg.durable_calls, "warmup": cfg.durable_warmup_calls, "due_in_s": FAR_S},
            pending=cfg.durable_warmup_calls + cfg.durable_calls,
            repeats=cfg.repeats,
            units={"median_us": "µs", "p99_us": "µs", "max_us": "µs"},
            measure=functools.partial(
                measure_durable_schedule, calls=cfg.durable_calls, warmup=cfg.durable_warmup_calls
            ),
            adapter_kwargs={"durable": True},
        )
    ]


def durable_burst_cases(cfg: Config) -> list[Case]:
    return [
        Case(
            "durable_burst",
            f"n={n:,}",
            {"n": n},
            pending=n,
            repeats=cfg.repeats_for(n),
            units={"tasks_per_s": "tasks/s", "schedule_per_s": "schedules/s"},
            measure=functools.partial(measure_durable_burst, n=n, timeout=max(120.0, n / 100.0)),
            adapter_kwargs={"durable": True, "held": True},
        )
        for n in cfg.durable_burst_sizes
    ]


def restart_cases(cfg: Config) -> list[Case]:
    n = cfg.restart_tasks
    return [
        Case(
            "restart",
            f"n={n:,}",
            {"n": n, "probe_interval_s": cfg.probe_interval_s},
            pending=n,
            repeats=cfg.repeats_for(n),
            units={
                "ready_s": "s",
                "rss_bytes_per_task": "B",
                "traced_bytes_per_task": "B",
                "longest_pause_ms": "ms",
                "p99_pause_ms": "ms",
                "full_collections": "collections",
                "longest_collection_ms": "ms",
                "collections_s": "s",
                "full_gc_ms": "ms",
            },
            measure=functools.partial(
                measure_restart, n=n, probe_interval=cfg.probe_interval_s, timeout=max(120.0, n / 5_000)
            ),
            adapter_kwargs={"durable": True},
            child_args=("--quick",) if cfg.quick else (),
        )
    ]
