"""Cost of ``pause``, ``resume`` and ``run_now`` with many tasks pending (issue 24: <= 20 µs at 1M).

``python -m benchmarks.operations [--pending 1000000] [--calls 2000]``: fills a scheduler (memory,
real clock) with ``--pending`` one-time tasks due 1-2 h ahead (``schedule_many``, as the 1M-pending
cancel benchmark of ``benchmarks/workloads.py`` fills it), adds ``--calls`` recurring tasks far
ahead with ids of their own, then times each call on them: ``pause`` of each, ``resume`` of each,
``run_now`` of each (each run a no-op on the workers). Prints the median and p99 per call, in µs,
after those of a bare ``ask`` of the scheduler (``QueryNextDue``): the round trip each call makes.
A benchmark, not a timed test: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import functools
import gc
import random
import time
from collections.abc import Callable

from actors import Scheduler
from messages import QueryNextDue

FAR_S = 3600.0


def _noop() -> None:
    pass


def _timed(calls: list[Callable[[], object]]) -> tuple[list[float], int]:
    """Each call's time in µs, and how many returned something false."""
    times: list[float] = []
    falses = 0
    clock = time.perf_counter_ns
    for call in calls:
        start = clock()
        ok = call()
        times.append((clock() - start) / 1000.0)
        falses += not ok
    times.sort()
    return times, falses


def _pct(times: list[float], q: float) -> float:
    return times[min(len(times) - 1, int(q * len(times)))]


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print one line per operation."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args(argv)
    rng = random.Random(1)
    with Scheduler(workers=4) as s:
        start = time.perf_counter()
        s.schedule_many(_noop, [FAR_S + rng.random() * FAR_S for _ in range(args.pending)])
        ids = [f"op-{i}" for i in range(args.calls)]
        for task_id in ids:
            s.schedule_at_fixed_rate(_noop, FAR_S, FAR_S, task_id=task_id)
        s.settle(timeout=600)
        gc.collect()
        print(f"filled {args.pending:,} pending + {args.calls:,} in {time.perf_counter() - start:.1f} s")

        def round_trip(_task_id: str) -> bool:  # the floor: one ask of the scheduler, answered at once
            return s.ref.ask(QueryNextDue(), timeout=10) is not None

        operations = (("ask", round_trip), ("pause", s.pause), ("resume", s.resume), ("run_now", s.run_now))
        for name, op in operations:
            times, falses = _timed([functools.partial(op, task_id) for task_id in ids])
            print(
                f"{name:8} median {_pct(times, 0.5):7.1f} µs  p99 {_pct(times, 0.99):7.1f} µs"
                f"  ({len(times)} calls, {falses} False)"
            )
            s.settle(timeout=60)


if __name__ == "__main__":
    main()
