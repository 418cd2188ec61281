"""Fixed rate beside fixed delay on the real clock (``python -m actors demo``).

Two tasks every 30 ms whose third run takes 50 ms: the fourth run shows the difference. Fixed
rate skips the slot at 90 ms (missed while the third run went on) and runs at the next slot,
120 ms; fixed delay runs 30 ms after the third run finished at 110 ms, at 140 ms.
"""

from __future__ import annotations

import threading
import time

from actors.api.facade import Scheduler

INTERVAL = 0.030
SLOW_RUN = 3
SLOW_RUN_TAKES = 0.050
RUNS = 5
EXPECTED_MS = {"fixed rate": [0.0, 30.0, 60.0, 120.0, 150.0], "fixed delay": [0.0, 30.0, 60.0, 140.0, 170.0]}


def measure_timeline(workers: int = 2, *, scale: float = 1.0) -> dict[str, list[float]]:
    """Run a fixed-rate and a fixed-delay task side by side; return their run start times (ms).

    Both share the first due time; the third run of each takes 50 ms (a real sleep on its
    worker), every other run takes almost no time. Blocks the caller for about 0.2 s.

    ``scale`` stretches the whole timeline (the interval, the slow run, the first delay) on
    the real clock; the times are returned in the unscaled timeline's ms, so they compare
    with ``EXPECTED_MS`` whatever the scale (a larger one is less sensitive to a loaded machine).
    """
    starts: dict[str, list[float]] = {kind: [] for kind in EXPECTED_MS}
    finished = {kind: threading.Event() for kind in EXPECTED_MS}
    with Scheduler(workers=workers) as scheduler:
        first_due = scheduler.clock.now() + 0.050 * scale

        def run(kind: str) -> None:
            times = starts[kind]
            times.append((scheduler.clock.now() - first_due) * 1000.0 / scale)
            if len(times) == SLOW_RUN:
                time.sleep(SLOW_RUN_TAKES * scale)
            if len(times) == RUNS:
                finished[kind].set()

        initial = first_due - scheduler.clock.now()
        interval = INTERVAL * scale
        rate = scheduler.schedule_at_fixed_rate(run, interval, initial, args=("fixed rate",))
        delay = scheduler.schedule_with_fixed_delay(run, interval, initial, args=("fixed delay",))
        for kind, handle in (("fixed rate", rate), ("fixed delay", delay)):
            finished[kind].wait(5.0 * scale)
            handle.cancel()
    return {kind: times[:RUNS] for kind, times in starts.items()}


def main() -> int:
    """Print the measured start times beside the expected ones, and why run 4 differs."""
    measured = measure_timeline()
    slow_ms = SLOW_RUN_TAKES * 1000
    interval_ms = INTERVAL * 1000
    print(f"Fixed rate vs fixed delay: every {interval_ms:.0f} ms, run {SLOW_RUN} takes {slow_ms:.0f} ms")
    print(f"{'run':>3}  {'rate expected':>13} {'measured':>9}  {'delay expected':>14} {'measured':>9}")
    for index in range(RUNS):
        row = [f"{index + 1:>3}"]
        for kind, width in (("fixed rate", 13), ("fixed delay", 14)):
            got = measured[kind]
            value = f"{got[index]:9.1f}" if index < len(got) else f"{'-':>9}"
            row.append(f"{EXPECTED_MS[kind][index]:>{width}.0f} {value}")
        print("  ".join(row))
    print("(times in ms after the first due time, real monotonic clock)")
    slow_start = EXPECTED_MS["fixed rate"][SLOW_RUN - 1]
    missed, finished = slow_start + interval_ms, slow_start + slow_ms
    print(
        f"Run {SLOW_RUN + 1}: fixed rate skips the slot at {missed:.0f} ms, missed while run {SLOW_RUN} "
        f"went on, and runs at the next slot, {EXPECTED_MS['fixed rate'][SLOW_RUN]:.0f} ms;\n"
        f"fixed delay runs {interval_ms:.0f} ms after run {SLOW_RUN} finished at {finished:.0f} ms, "
        f"at {EXPECTED_MS['fixed delay'][SLOW_RUN]:.0f} ms."
    )
    return 0
