"""Cron costs: ``python -m benchmarks.cron [--tasks N] [--window SECONDS]``.

- ``next run``: the time to compute one cron task's next run (``CronSchedule.next_fire``, what
  the scheduler does after each run), median and p99 over typical expressions, in UTC and in
  Europe/Berlin (target: at most 50 µs), and the same for APScheduler 3's ``CronTrigger``
  (``get_next_fire_time``) when it is installed, side by side;
- ``idle``: ``--tasks`` cron tasks (default 10,000, none due within the window) pending on a
  real-clock scheduler: the process CPU time and the timer's wake-ups over ``--window``
  seconds (default 5). The target is no idle cost beyond the timer's wall-clock check (one
  wake-up a minute at most while wall-clock tasks are pending).
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from actors import Scheduler
from actors.core.cron import CronSchedule

EXPRESSIONS = (
    "* * * * *",
    "*/15 * * * *",
    "@hourly",
    "@daily",
    "30 2 * * *",
    "0 9 * * MON-FRI",
    "*/7 9-17 * * MON-FRI",
    "0 0 1 * *",
    "0 0 1 1 *",
)
START = datetime(2026, 7, 1, 12, 0, tzinfo=UTC).timestamp()


def _quantiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e6, ordered[int(0.99 * (len(ordered) - 1))] * 1e6


def bench_next_run(repeats: int = 2_000) -> None:
    """Per-call cost of the next run, ours and (if installed) APScheduler's."""
    for zone in ("UTC", "Europe/Berlin"):
        samples: list[float] = []
        for expr in EXPRESSIONS:
            schedule = CronSchedule.parse(expr, zone)
            after = START
            for _ in range(repeats):
                began = time.perf_counter()
                after = schedule.next_fire(after)
                samples.append(time.perf_counter() - began)
        median, p99 = _quantiles(samples)
        print(f"next run, ours, {zone:<14} median {median:6.1f} µs   p99 {p99:6.1f} µs")
        _bench_apscheduler(zone, repeats)


def _bench_apscheduler(zone: str, repeats: int) -> None:
    try:
        from apscheduler.triggers.cron import CronTrigger
    except ImportError:
        print("next run, APScheduler: not installed (pip install -e '.[bench]')")
        return
    tz = ZoneInfo(zone)
    samples: list[float] = []
    aliases = {"@hourly": "0 * * * *", "@daily": "0 0 * * *"}  # APScheduler 3 has no aliases
    for expr in EXPRESSIONS:
        # (no numeric day-of-week here: APScheduler 3 counts them from Monday, cron from Sunday)
        trigger = CronTrigger.from_crontab(aliases.get(expr, expr), timezone=tz)
        previous = None
        now = datetime.fromtimestamp(START, tz)
        for _ in range(repeats):
            began = time.perf_counter()
            fire = trigger.get_next_fire_time(previous, now)
            samples.append(time.perf_counter() - began)
            assert fire is not None
            previous, now = fire, fire
    median, p99 = _quantiles(samples)
    print(f"next run, APScheduler 3, {zone:<7} median {median:6.1f} µs   p99 {p99:6.1f} µs")


def bench_idle(tasks: int, window: float) -> None:
    """CPU used by a scheduler holding ``tasks`` cron tasks, none due, over ``window`` seconds."""
    with Scheduler(workers=4) as scheduler:
        began = time.perf_counter()
        for index in range(tasks):
            scheduler.schedule_cron(print, f"{index % 60} {index % 24} 1 1 *", "Europe/Berlin")
        scheduler.settle(timeout=60)
        filled = time.perf_counter() - began
        wakeups = scheduler.stats().timer_wakeups
        cpu, wall = time.process_time(), time.perf_counter()
        time.sleep(window)  # the measurement: nothing happens, and it must cost nothing
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        wakeups = scheduler.stats().timer_wakeups - wakeups
    print(
        f"idle with {tasks:,} cron tasks: scheduled in {filled:.2f} s ({filled / tasks * 1e6:.0f} µs each); "
        f"over {wall:.1f} s: CPU {cpu * 1e3:.1f} ms ({cpu / wall * 100:.2f} %), timer wake-ups {wakeups}"
    )


def main() -> None:
    """Print each measurement on one line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cron", description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000, help="cron tasks pending while idle")
    parser.add_argument("--window", type=float, default=5.0, help="seconds of idle to measure")
    args = parser.parse_args()
    bench_next_run()
    bench_idle(args.tasks, args.window)


if __name__ == "__main__":
    main()
