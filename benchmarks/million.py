"""The ``million`` workload (issue 16): one thread fills the schedule with a million tasks.

One thread schedules N one-time tasks due in 1-2 hours (one shared function, no arguments:
those are the user's), one call per task, or (case "bulk") with the peer's bulk call
(``Adapter.schedule_many``: ours is ``Scheduler.schedule_many``, the others have none and
call once per task), while a probe, a one-time task due every 10 ms that schedules the next
one when it runs, records how late it starts. Figures: the time until the scheduler holds
all N (ours: ``settle()`` returned), the objects the garbage collector tracks per pending
task and the resident memory per task once it does, one full collection then, and the
probe's lateness while filling (plotted over time). Each run is in a child process, so
that those figures count this run's objects alone.
"""

from __future__ import annotations

import collections
import functools
import gc
import random
import threading
import time

from benchmarks.adapters import Adapter
from benchmarks.cases import FAR_S, Case, Config, Measurement
from benchmarks.process_probes import CollectorWatch, rss_bytes
from benchmarks.results import percentile

__all__ = ["million_cases"]

#: A type is named in the note when it adds at least this many tracked objects per task.
NOTABLE_PER_TASK = 0.05


def _noop() -> None:
    """The task: only the scheduling matters."""


class ProbeChain:
    """One-time probe tasks due at ``base + k * interval``, each scheduled by the one before.

    A probe that starts late schedules the next one at its own due time, which may be past:
    then it runs at once, so a stop of ``x`` ms shows as probes late by ``x``, ``x - 10``, ...
    ms, the same on every peer.
    """

    def __init__(self, adapter: Adapter, interval: float) -> None:
        self._adapter = adapter
        self._interval = interval
        self._base = 0.0
        self._next_due = 0.0
        self._stopping = False
        self._stopped = threading.Event()
        self.at_s: list[float] = []  # when each probe started, seconds after the base
        self.late_ms: list[float] = []

    def start(self, base: float) -> None:
        self._base = base
        self._next_due = base + self._interval
        self._adapter.schedule_once(self.fire, self._next_due - time.monotonic())

    def fire(self) -> None:
        now = time.monotonic()
        self.at_s.append(now - self._base)
        self.late_ms.append((now - self._next_due) * 1000.0)
        if self._stopping:
            self._stopped.set()
            return
        self._next_due += self._interval
        self._adapter.schedule_once(self.fire, self._next_due - time.monotonic())

    def stop(self, timeout: float) -> bool:
        """Schedule no more probes; wait for the one in flight to run."""
        self._stopping = True
        return self._stopped.wait(timeout)


def _type_counts() -> collections.Counter[str]:
    return collections.Counter(type(o).__name__ for o in gc.get_objects())


def measure_million(
    adapter: Adapter, n: int, probe_interval: float, seed: int, timeout: float, *, bulk: bool = False
) -> Measurement:
    """Fill the schedule with N one-time tasks from one thread while a 10 ms probe runs.

    ``bulk``: in one call of the peer's bulk form instead of one call per task.
    """
    rng = random.Random(seed)
    delays = [FAR_S + rng.random() * FAR_S for _ in range(n)]
    schedule = adapter.schedule_once
    probe = ProbeChain(adapter, probe_interval)
    gc.collect()
    types_before = _type_counts()
    tracked_before = sum(types_before.values())
    rss_before = rss_bytes()
    with CollectorWatch() as collector:
        base = time.monotonic()
        probe.start(base)
        start = time.perf_counter()
        if bulk:
            adapter.schedule_many(_noop, delays)
        else:
            for delay in delays:
                schedule(_noop, delay)
        adapter.absorb(timeout)
        fill_s = time.perf_counter() - start
        filled_at = time.monotonic() - base
        stopped = probe.stop(timeout=10.0)
    del delays
    start = time.perf_counter()
    gc.collect()  # frees what is garbage; the next one only walks what lives
    first_gc_s = time.perf_counter() - start
    types_after = _type_counts()
    tracked = sum(types_after.values()) - tracked_before
    rss_after = rss_bytes()
    start = time.perf_counter()
    gc.collect()
    full_gc_s = time.perf_counter() - start
    added = types_after - types_before
    by_type = ", ".join(
        f"{name} {count / n:.2f}" for name, count in added.most_common() if count >= n * NOTABLE_PER_TASK
    )
    note = f"tracked objects per task by type: {by_type or 'none'}"
    if not stopped:
        note += "; the last probe had not run 10 s after the fill"
    pairs = [(at, late) for at, late in zip(probe.at_s, probe.late_ms, strict=True) if at <= filled_at]
    late = sorted(late for _, late in pairs) or [float("nan")]
    return Measurement(
        {
            "fill_s": fill_s,
            "tasks_per_s": n / fill_s,
            "gc_objects_per_task": tracked / n,
            "bytes_per_task": (rss_after - rss_before) / n,
            "full_gc_ms": full_gc_s * 1000.0,
            "first_gc_ms": first_gc_s * 1000.0,
            "p50_ms": percentile(late, 50),
            "p99_ms": percentile(late, 99),
            "max_ms": late[-1],
            "probes": float(len(pairs)),
            "full_collections": float(collector.full),
            "longest_collection_ms": collector.longest_s * 1000.0,
            "collections_s": collector.total_s,
        },
        extra={"probe_at_s": [at for at, _ in pairs], "probe_late_ms": [late for _, late in pairs]},
        note=note,
    )


def million_cases(cfg: Config) -> list[Case]:
    n = cfg.million_tasks
    return [
        Case(
            "million",
            f"n={n:,}{', bulk' if bulk else ''}",
            {"n": n, "probe_interval_s": cfg.probe_interval_s, "bulk": bulk},
            pending=n,
            repeats=cfg.repeats_for(n),
            units={
                "fill_s": "s",
                "tasks_per_s": "tasks/s",
                "gc_objects_per_task": "objects",
                "bytes_per_task": "B",
                "full_gc_ms": "ms",
                "first_gc_ms": "ms",
                "p50_ms": "ms",
                "p99_ms": "ms",
                "max_ms": "ms",
                "probes": "probes",
                "full_collections": "collections",
                "longest_collection_ms": "ms",
                "collections_s": "s",
            },
            measure=functools.partial(
                measure_million,
                n=n,
                probe_interval=cfg.probe_interval_s,
                seed=cfg.seed,
                timeout=max(120.0, n / 2_000),
                bulk=bulk,
            ),
            child_args=("--quick",) if cfg.quick else (),
        )
        for bulk in (False, True)
    ]
