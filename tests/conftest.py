"""Shared fixtures: every test must leave no actor and no thread behind; how many processes run them."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator

import pykka
import pytest

from actors import FakeClock, Scheduler
from messages import EventKind, TaskEvent

THREAD_EXIT_GRACE = 5.0  # seconds a thread may take to finish exiting after shutdown returned
# Worker processes for ``-n auto`` (pyproject's addopts): two per CPU, since most tests spend
# their time waiting (on subprocesses, the database, a lease, a terminal) rather than computing:
# at one per CPU the two CPUs were half idle (117 s; two per CPU: 83 s). At most MAX_WORKERS:
# more would crowd the PostgreSQL server's connections and the real-clock tests more than they gain.
WORKERS_PER_CPU = 2
MAX_WORKERS = 4
STRESS_SELECTED = re.compile(r"(?<!not )\bstress\b")


# Modules whose tests take seconds each (model searches, fleets of processes, real leases) run
# first: the workers then end on short tests together, not one of them on a long one alone.
LONG_FIRST = (
    "tests/reliability/test_model.py",
    "tests/unit/test_lifecycle_model.py",
    "tests/unit/test_timetable_model.py",
    "tests/shared/test_fleet.py",
    "tests/cli/test_cron_jobs.py",
    "tests/unit/test_timetable.py",
    "tests/reliability/test_churn.py",
    "tests/store/test_model.py",
    "tests/store/test_postgres_shared.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of ``LONG_FIRST`` first (the same order on every worker, as xdist requires)."""
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in LONG_FIRST)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """Workers for ``-n auto``: two per CPU, at most ``MAX_WORKERS``; none (one process) for ``-s`` or stress.

    ``-s`` shows a test's output only without workers, and the stress tests measure one process
    (memory, pauses, rates) and print their figures. ``-n N`` is taken as given;
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` too (``None`` hands it to xdist).
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    if config.option.capture == "no" or STRESS_SELECTED.search(config.option.markexpr or ""):
        return 0
    return max(1, min(WORKERS_PER_CPU * len(os.sched_getaffinity(0)), MAX_WORKERS))


ENGINE_THREADS = ("Dask-Offload", "Dask-Callback-Thread")
"""Threads Dask starts once per process and keeps (its module-wide pools), not a test's leak."""


def engine_thread(thread: threading.Thread) -> bool:
    return thread.name.startswith(ENGINE_THREADS)


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves an actor or a thread running after it ends."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + THREAD_EXIT_GRACE
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not engine_thread(t)]
    for thread in leaked:
        thread.join(max(0.0, deadline - time.monotonic()))
    leaked = [t for t in leaked if t.is_alive()]
    actors = pykka.ActorRegistry.get_all()
    if actors:
        pykka.ActorRegistry.stop_all(timeout=5)
    assert not actors, f"actors left running: {actors}"
    assert not leaked, f"threads left running: {leaked}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1000.0)


@pytest.fixture
def make_scheduler(clock: FakeClock) -> Iterator[Callable[..., Scheduler]]:
    """Build schedulers (FakeClock by default) that are shut down after the test."""
    made: list[Scheduler] = []

    def make(workers: int = 2, **kwargs: object) -> Scheduler:
        kwargs.setdefault("clock", clock)
        scheduler = Scheduler(workers=workers, **kwargs)  # type: ignore[arg-type]
        made.append(scheduler)
        return scheduler

    yield make
    for scheduler in made:
        scheduler.shutdown(wait=True, timeout=10)


class EventRecorder:
    """A listener that keeps every event and lets a test wait for some (thread-safe)."""

    def __init__(self) -> None:
        self.events: list[TaskEvent] = []
        self._condition = threading.Condition()

    def __call__(self, event: TaskEvent) -> None:
        with self._condition:
            self.events.append(event)
            self._condition.notify_all()

    def wait_for(self, predicate: Callable[[list[TaskEvent]], bool], timeout: float = 5.0) -> None:
        with self._condition:
            if not self._condition.wait_for(lambda: predicate(self.events), timeout):
                raise TimeoutError(f"events never matched; got {self.kinds()}")

    def kinds(self, task_id: str | None = None) -> list[EventKind]:
        return [e.kind for e in self.events if task_id is None or e.task_id == task_id]


@pytest.fixture
def recorder() -> EventRecorder:
    return EventRecorder()


class Gate:
    """A task body that says when it has started, then blocks until the test opens it."""

    def __init__(self, result: object = None) -> None:
        self.started = threading.Event()
        self._opened = threading.Event()
        self._result = result

    def __call__(self) -> object:
        self.started.set()
        self._opened.wait(30)
        return self._result

    def wait_started(self, timeout: float = 5.0) -> None:
        assert self.started.wait(timeout), "the gated task never started"

    def open(self) -> None:
        self._opened.set()
