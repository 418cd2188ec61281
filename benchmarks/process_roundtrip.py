"""Round trip of a no-op call through a ``ProcessSlot``: ``python -m benchmarks.process_roundtrip``.

Prints the median, p90 and p99 of ``--calls`` no-op calls (after one warm-up call that starts
the child), and how long starting a child plus its first call takes.
"""

from __future__ import annotations

import argparse
import statistics
import time

from actors.process.slot import ProcessSlot

NOOP = "builtins:len"  # a C function: the time measured is the slot's, not the task's


def main() -> None:
    """Measure and print (runs on the main thread)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=1000)
    options = parser.parse_args()
    with ProcessSlot(name="benchmark") as slot:
        started = time.perf_counter()
        slot.call(NOOP, ((),), {})
        first = time.perf_counter() - started
        samples = []
        for _ in range(options.calls):
            started_ns = time.perf_counter_ns()
            slot.call(NOOP, ((),), {})
            samples.append((time.perf_counter_ns() - started_ns) / 1000)
    samples.sort()
    print(f"start + first call: {first * 1000:.1f} ms")
    print(
        f"no-op round trip over {len(samples)} calls: median {statistics.median(samples):.1f} µs, "
        f"p90 {samples[len(samples) * 9 // 10]:.1f} µs, p99 {samples[len(samples) * 99 // 100]:.1f} µs"
    )


if __name__ == "__main__":
    main()
