"""This checkout against an earlier commit, same run: ``python -m benchmarks.plain_path [--ref REF]``.

Does new work slow the plain path (a one-time no-op task on the thread pool, no options)? Each
repeat runs, in turn, a fresh process of this checkout and one of ``--ref`` (a temporary git
worktree, removed at the end), so both see the same machine at nearly the same moment:

- ``throughput``: ``--tasks`` no-op tasks all due now on ``Scheduler(workers=4)``, tasks/s from
  the first ``schedule_once`` to the last run, and the process CPU time per task;
- ``schedule`` and ``cancel``: the caller's cost of ``schedule_once(fn, delay=3600.0)`` and of
  ``TaskHandle.cancel()``, per call, with ``--tasks`` tasks pending.

It prints each figure's median per side and the median of the per-repeat ratios (this checkout
over the ref: above 1 is faster for throughput, below 1 is cheaper for costs). The default ref
is the commit before the task lifecycle (run context, interrupts, timeouts, retries,
dependencies, ``async def``) landed, whose target was "within 5% of before, same run".
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BEFORE_LIFECYCLE = "9be4952"
"""The last commit before the task lifecycle work."""

CHILD = r"""
import json, resource, sys, threading, time
sys.path.insert(0, ".")
from actors import Scheduler

n = int(sys.argv[1])

def noop():
    pass

def throughput():
    left = [n]
    lock = threading.Lock()
    finished = threading.Event()
    def hit():
        with lock:
            left[0] -= 1
            if not left[0]:
                finished.set()
    s = Scheduler(workers=4)
    try:
        cpu0, t0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            s.schedule_once(hit, delay=0.0)
        if not finished.wait(120):
            raise TimeoutError("the tasks did not all run within 120 s")
        return n / (time.perf_counter() - t0), (time.process_time() - cpu0) / n * 1e6
    finally:
        s.shutdown()

def costs():
    s = Scheduler(workers=4)
    try:
        t0 = time.perf_counter()
        handles = [s.schedule_once(noop, delay=3600.0) for _ in range(n)]
        t1 = time.perf_counter()
        for handle in handles:
            handle.cancel()
        t2 = time.perf_counter()
        return (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6
    finally:
        s.shutdown()

rate, cpu = throughput()
schedule, cancel = costs()
print(json.dumps({"throughput": rate, "cpu_us": cpu, "schedule_us": schedule, "cancel_us": cancel}))
"""

FIGURES = (
    ("throughput", "tasks/s", "{:,.0f}"),
    ("cpu_us", "µs CPU per task", "{:.2f}"),
    ("schedule_us", "µs per schedule_once", "{:.2f}"),
    ("cancel_us", "µs per cancel", "{:.2f}"),
)


def measure(checkout: Path, tasks: int) -> dict[str, float]:
    """One fresh process of ``checkout``: its figures."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tasks)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    """Run the comparison and print it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", default=BEFORE_LIFECYCLE, help="the commit to compare with")
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as scratch:
        before = Path(scratch) / "ref"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(before), options.ref], cwd=here, check=True
        )
        try:
            rows: list[tuple[dict[str, float], dict[str, float]]] = []
            for repeat in range(options.repeats):
                if repeat % 2:  # alternate which side goes first
                    theirs = measure(before, options.tasks)
                    rows.append((measure(here, options.tasks), theirs))
                else:
                    ours = measure(here, options.tasks)
                    rows.append((ours, measure(before, options.tasks)))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=here, check=True)
    print(f"this checkout against {options.ref}: {options.tasks:,} tasks, {options.repeats} paired repeats")
    for key, unit, form in FIGURES:
        ours = statistics.median(row[0][key] for row in rows)
        theirs = statistics.median(row[1][key] for row in rows)
        ratio = statistics.median(row[0][key] / row[1][key] for row in rows)
        here_text, ref_text = form.format(ours), form.format(theirs)
        print(f"  {unit:<22} here {here_text:>10}   ref {ref_text:>10}   ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
