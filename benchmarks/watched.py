"""The plain path while watched: ``python -m benchmarks.watched [--tasks N] [--repeats R]``.

Issue 25's speed targets, measured (not timed tests):

- ``throughput``: ``--tasks`` no-op one-time tasks all due now on ``Scheduler(workers=4)``,
  tasks/s from the first ``schedule_once`` to the last run, in three modes taken in turn each
  repeat: ``plain`` (nothing registered), ``metrics`` (``actors.metrics.register``: the run
  tally listens to the events) and ``served`` (``actors.web.app`` on a real port, ``/metrics``
  scraped every second and ``/api/tasks`` fetched every 2 s, as an open page does); the
  median of each and its ratio to ``plain`` (target: >= 0.95 for ``served``);
- ``scrape``: with 10,000 live tasks, the time of one ``/metrics`` scrape and of one
  ``/api/tasks`` over HTTP (medians of 10; target for the scrape: <= 100 ms).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable

from actors import Scheduler


def noop() -> None:
    pass


def throughput(n: int, mode: str) -> float:
    left = [n]
    lock = threading.Lock()
    finished = threading.Event()

    def hit() -> None:
        with lock:
            left[0] -= 1
            if not left[0]:
                finished.set()

    s = Scheduler(workers=4)
    stop = threading.Event()
    watchers: list[threading.Thread] = []
    server = None
    try:
        if mode != "plain":
            from prometheus_client import CollectorRegistry

            from actors.metrics import register

            register(s, CollectorRegistry())
        if mode == "served":
            from actors.web import app
            from actors.web.server import WebServer

            server = WebServer(app(s))
            server.start()
            for path, every in (("/metrics", 1.0), ("/api/tasks", 2.0)):
                watchers.append(threading.Thread(target=_poll, args=(server.url + path, every, stop)))
            for watcher in watchers:
                watcher.start()
        start = time.perf_counter()
        for _ in range(n):
            s.schedule_once(hit, delay=0)
        finished.wait(600)
        return n / (time.perf_counter() - start)
    finally:
        stop.set()
        for watcher in watchers:
            watcher.join()
        if server is not None:
            server.stop()
        s.shutdown()


def _poll(url: str, every: float, stop: threading.Event) -> None:
    while not stop.is_set():
        with urllib.request.urlopen(url, timeout=30) as reply:
            reply.read()
        stop.wait(every)


def scrape(tasks: int) -> tuple[float, float]:
    from actors.web import app
    from actors.web.server import WebServer

    s = Scheduler(workers=4)
    server = WebServer(app(s))
    try:
        server.start()
        for n in range(tasks):
            s.schedule_at_fixed_rate(noop, 3600, 3600, task_id=f"t{n}")
        return _median_get(server.url + "/metrics"), _median_get(server.url + "/api/tasks")
    finally:
        server.stop()
        s.shutdown()


def _median_get(url: str, times: int = 10) -> float:
    def once() -> float:
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as reply:
            reply.read()
        return time.perf_counter() - start

    once()  # warm
    return statistics.median(once() for _ in range(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scrape-tasks", type=int, default=10_000)
    options = parser.parse_args()
    modes: dict[str, list[float]] = {"plain": [], "metrics": [], "served": []}
    ratios: dict[str, list[float]] = {"metrics": [], "served": []}
    for _ in range(options.repeats):
        for mode, results in modes.items():
            results.append(throughput(options.tasks, mode))
        for mode, ratio_list in ratios.items():
            ratio_list.append(modes[mode][-1] / modes["plain"][-1])
    show: Callable[[str], None] = print
    show(f"throughput, {options.tasks:,} tasks, {options.repeats} repeats (median tasks/s; ratio to plain)")
    for mode, results in modes.items():
        ratio = "" if mode == "plain" else f"   ratio {statistics.median(ratios[mode]):.3f}"
        show(f"  {mode:8} {statistics.median(results):>10,.0f}{ratio}")
    metrics, tasks = scrape(options.scrape_tasks)
    scraped = f"/metrics {metrics * 1000:.1f} ms, /api/tasks {tasks * 1000:.1f} ms"
    show(f"with {options.scrape_tasks:,} tasks: {scraped}")


if __name__ == "__main__":
    main()
