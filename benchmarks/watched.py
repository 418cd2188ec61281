"""The plain path while watched: ``python -m benchmarks.watched [--tasks N] [--repeats R]``.

Issue 25's speed targets, measured (not timed tests):

- ``throughput``: ``--tasks`` no-op one-time tasks all due now on ``Scheduler(workers=4)``,
  tasks/s from the first ``schedule_once`` to the last run and the process CPU time per task,
  in four modes taken in turn each repeat (each repeat starting one mode further on):
  ``plain`` (nothing registered), ``metrics`` (``actors.metrics.register``, never scraped: the
  core counts each run from the registration), ``scraped`` (``actors.web.app`` on a real port,
  ``/metrics`` scraped every second) and ``served`` (the same, and the page open: what its
  script fetches, every 2 s); the median of each and of its per-repeat ratio to ``plain``
  (target: >= 0.95 for ``served``). Each measurement is a fresh process (no mode inherits
  another's heap, garbage or threads), and the watchers are a process of their own, as a
  browser and Prometheus are: the figures are what the scheduler's process pays for being
  watched, not what its clients pay for watching. The server is up and each watched path
  answered once before the clock starts: the page was open before the tasks came;
- ``scrape``: with 10,000 live tasks, the time of one ``/metrics`` scrape, of one full
  ``/api/tasks`` and of what the page fetches (``PAGE_POLL``) over HTTP (medians of 10;
  target: <= 100 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from actors import Scheduler
from actors.web.page import PAGE_ROWS

ROOT = Path(__file__).resolve().parent.parent
"""The checkout the measuring processes run from."""

PAGE_POLL = (f"/api/tasks?offset=0&limit={PAGE_ROWS}", "/api/nodes")
"""What the open page fetches each refresh (``actors/web/page.py``'s script: the first rows only)."""

WATCHERS = {
    "scraped": (("/metrics", 1.0),),
    "served": (("/metrics", 1.0), *((path, 2.0) for path in PAGE_POLL)),
}
"""Per watched mode: the paths fetched and how often (seconds)."""

MODES = ("plain", "metrics", "scraped", "served")


def noop() -> None:
    pass


def throughput(n: int, mode: str) -> tuple[float, float]:
    """Tasks/s and CPU microseconds per task of ``n`` no-op tasks in ``mode``, in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.watched", "--one", mode, "--tasks", str(n)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    rate, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return float(rate), float(cpu)


def measure_here(n: int, mode: str) -> tuple[float, float]:
    """``throughput`` of this process (``--one``): the scheduler, and in a watched mode its server."""
    left = [n]
    lock = threading.Lock()  # guards left: every worker counts down
    finished = threading.Event()

    def hit() -> None:
        with lock:
            left[0] -= 1
            if not left[0]:
                finished.set()

    s = Scheduler(workers=4)
    server = None
    watchers: subprocess.Popen[str] | None = None
    try:
        if mode == "metrics":
            from prometheus_client import CollectorRegistry

            from actors.metrics import register

            register(s, CollectorRegistry())
        elif mode in WATCHERS:
            from actors.web import app
            from actors.web.server import WebServer

            server = WebServer(app(s))
            server.start()
            watchers = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.watched", "--watch", mode, "--url", server.url],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert watchers.stdout is not None
            if watchers.stdout.readline().strip() != "watching":  # the page was open before the tasks came
                raise RuntimeError("the watchers did not start")
        cpu, start = time.process_time(), time.perf_counter()
        for _ in range(n):
            s.schedule_once(hit, delay=0)
        if not finished.wait(600):
            raise TimeoutError("the tasks did not all run within 600 s")
        return n / (time.perf_counter() - start), (time.process_time() - cpu) / n * 1e6
    finally:
        if watchers is not None:
            watchers.communicate(timeout=30)  # closing its stdin stops it
        if server is not None:
            server.stop()
        s.shutdown()


def watch(mode: str, url: str) -> None:
    """``--watch``: fetch each of ``mode``'s paths once, say so, then poll them until stdin closes."""
    stop = threading.Event()
    pollers = []
    for path, every in WATCHERS[mode]:
        _get(url + path)
        pollers.append(threading.Thread(target=_poll, args=(url + path, every, stop)))
    for poller in pollers:
        poller.start()
    print("watching", flush=True)
    sys.stdin.read()
    stop.set()
    for poller in pollers:
        poller.join()


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as reply:
        body: bytes = reply.read()
        return body


def _poll(url: str, every: float, stop: threading.Event) -> None:
    while not stop.wait(every):
        _get(url)


def scrape(tasks: int) -> dict[str, float]:
    """Seconds of one GET of ``/metrics``, the full ``/api/tasks`` and the page's poll, ``tasks`` live."""
    from actors.web import app
    from actors.web.server import WebServer

    s = Scheduler(workers=4)
    server = WebServer(app(s))
    try:
        server.start()
        for n in range(tasks):
            s.schedule_at_fixed_rate(noop, 3600, 3600, task_id=f"t{n}")
        return {path: _median_get(server.url + path) for path in ("/metrics", "/api/tasks", *PAGE_POLL)}
    finally:
        server.stop()
        s.shutdown()


def _median_get(url: str, times: int = 10) -> float:
    def once() -> float:
        start = time.perf_counter()
        _get(url)
        return time.perf_counter() - start

    once()  # warm
    return statistics.median(once() for _ in range(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scrape-tasks", type=int, default=10_000)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, plain first")
    parser.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)  # a measuring process
    parser.add_argument("--watch", choices=tuple(WATCHERS), help=argparse.SUPPRESS)  # its watchers
    parser.add_argument("--url", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        print(json.dumps(measure_here(options.tasks, options.one)))
        return
    if options.watch:
        watch(options.watch, options.url)
        return
    modes = options.modes.split(",")
    rates: dict[str, list[float]] = {mode: [] for mode in modes}
    cpus: dict[str, list[float]] = {mode: [] for mode in modes}
    ratios: dict[str, list[float]] = {mode: [] for mode in modes}
    cpu_ratios: dict[str, list[float]] = {mode: [] for mode in modes}
    for repeat in range(options.repeats):
        # Each repeat starts one mode further on: no mode always runs first (on a fresh heap)
        # or always after another's shutdown, which alone moved a mode's ratio by ~5%.
        turn = repeat % len(modes)
        measured: dict[str, tuple[float, float]] = {}
        for mode in modes[turn:] + modes[:turn]:
            measured[mode] = throughput(options.tasks, mode)
        base_rate, base_cpu = measured[modes[0]]
        for mode, (rate, cpu) in measured.items():
            rates[mode].append(rate)
            cpus[mode].append(cpu)
            ratios[mode].append(rate / base_rate)
            cpu_ratios[mode].append(cpu / base_cpu)
    show: Callable[[str], None] = print
    if options.repeats:
        _show_rates(show, options.tasks, options.repeats, modes, (rates, ratios, cpus, cpu_ratios))
    if options.scrape_tasks:
        times = scrape(options.scrape_tasks)
        scraped = ", ".join(f"{path} {seconds * 1000:.1f} ms" for path, seconds in times.items())
        show(f"with {options.scrape_tasks:,} tasks: {scraped}")


def _show_rates(
    show: Callable[[str], None],
    tasks: int,
    repeats: int,
    modes: list[str],
    figures: tuple[dict[str, list[float]], ...],
) -> None:
    rates, ratios, cpus, cpu_ratios = figures
    show(
        f"throughput, {tasks:,} tasks, {repeats} repeats "
        f"(medians: tasks/s, its ratio to {modes[0]}; CPU us per task, its ratio)"
    )
    for mode in modes:
        show(
            f"  {mode:8} {statistics.median(rates[mode]):>10,.0f}  {statistics.median(ratios[mode]):.3f}"
            f"   {statistics.median(cpus[mode]):6.1f} us  {statistics.median(cpu_ratios[mode]):.3f}"
        )


if __name__ == "__main__":
    main()
