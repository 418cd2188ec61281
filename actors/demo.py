"""The seed design's 30 ms scenario on the real clock (``python -m actors demo``)."""

from __future__ import annotations

import threading
import time

from actors.facade import Scheduler

INTERVAL = 0.030
SLOW_RUN = 3
SLOW_RUN_TAKES = 0.050
RUNS = 5
EXPECTED_MS = {"fixed rate": [0.0, 30.0, 60.0, 120.0, 150.0], "fixed delay": [0.0, 30.0, 60.0, 140.0, 170.0]}


def measure_seed_timeline(workers: int = 2) -> dict[str, list[float]]:
    """Run a fixed-rate and a fixed-delay task side by side; return their run start times (ms).

    Both share the first due time; the third run of each takes 50 ms (a real sleep on its
    worker), every other run takes almost no time. Blocks the caller for about 0.2 s.
    """
    starts: dict[str, list[float]] = {kind: [] for kind in EXPECTED_MS}
    finished = {kind: threading.Event() for kind in EXPECTED_MS}
    with Scheduler(workers=workers) as scheduler:
        first_due = scheduler.clock.now() + 0.050

        def run(kind: str) -> None:
            times = starts[kind]
            times.append((scheduler.clock.now() - first_due) * 1000.0)
            if len(times) == SLOW_RUN:
                time.sleep(SLOW_RUN_TAKES)
            if len(times) == RUNS:
                finished[kind].set()

        initial = first_due - scheduler.clock.now()
        rate = scheduler.schedule_at_fixed_rate(run, INTERVAL, initial, args=("fixed rate",))
        delay = scheduler.schedule_with_fixed_delay(run, INTERVAL, initial, args=("fixed delay",))
        for kind, handle in (("fixed rate", rate), ("fixed delay", delay)):
            finished[kind].wait(5.0)
            handle.cancel()
    return {kind: times[:RUNS] for kind, times in starts.items()}


def main() -> int:
    """Print measured start times beside the seed's expected ones."""
    measured = measure_seed_timeline()
    slow_ms = SLOW_RUN_TAKES * 1000
    print(f"Seed scenario: {INTERVAL * 1000:.0f} ms interval, run {SLOW_RUN} takes {slow_ms:.0f} ms")
    print(f"{'run':>3}  {'rate expected':>13} {'measured':>9}  {'delay expected':>14} {'measured':>9}")
    for index in range(RUNS):
        row = [f"{index + 1:>3}"]
        for kind, width in (("fixed rate", 13), ("fixed delay", 14)):
            got = measured[kind]
            value = f"{got[index]:9.1f}" if index < len(got) else f"{'-':>9}"
            row.append(f"{EXPECTED_MS[kind][index]:>{width}.0f} {value}")
        print("  ".join(row))
    print("(times in ms after the first due time, real monotonic clock)")
    return 0
