"""Calls per task, thread by thread: ``python -m benchmarks.calls [--tasks N] [--peers ours,textbook]``.

The throughput workload (N no-op one-time tasks all due at once, 4 workers), with every call
counted: each Python function entered and each C function called, as ``sys.setprofile`` sees
them, on every thread of the run, from the first ``schedule_once`` to the last run. Unlike a
timing on a shared machine the count does not depend on the load, so it shows what a change
on the per-task path saved (or cost) even when the tasks/s figure is lost in the noise. It is
not a time: a C call such as a slot's setter costs a fraction of a Python call, and the
profiler slows the run down about tenfold, so run a few thousand tasks, not a million.
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
from types import FrameType
from typing import Any

from benchmarks.adapters import ADAPTERS
from benchmarks.completions import Completions


def count_calls(peer: str, tasks: int) -> dict[str, float]:
    """Calls per task on each kind of thread (by the thread name's first part) in one run of ``peer``."""
    counts: collections.Counter[str] = collections.Counter()
    counting = False

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if counting and event in {"call", "c_call"}:
            counts[threading.current_thread().name.split("-")[0]] += 1

    threading.setprofile(profile)  # the threads the peer starts from here on
    adapter = ADAPTERS[peer]()
    adapter.start()
    sys.setprofile(profile)  # this thread: the caller's
    done = Completions(tasks)
    try:
        counting = True
        for _ in range(tasks):
            adapter.schedule_once(done.hit, 0.0)
        if not done.wait(600):
            raise TimeoutError(f"only {done.count:,}/{tasks:,} tasks ran within 600 s")
        counting = False
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        adapter.shutdown()
    return {thread: count / tasks for thread, count in counts.most_common()}


def main() -> None:
    """Count and print, per peer: the calls per task in all, then thread by thread."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--peers", default="ours,textbook")
    options = parser.parse_args()
    print(f"calls per task, {options.tasks:,} no-op tasks due at once, 4 workers")
    for peer in options.peers.split(","):
        per_thread = count_calls(peer, options.tasks)
        threads = ", ".join(f"{name} {count:.1f}" for name, count in per_thread.items())
        print(f"  {peer:<10} {sum(per_thread.values()):6.1f}   ({threads})")


if __name__ == "__main__":
    main()
