"""One small adapter per scheduler, all with the same interface.

Every adapter offers ``start()``, ``schedule_once(fn, delay) -> token``,
``schedule_at_fixed_rate(fn, interval) -> token`` (first run after one
``interval``), ``cancel(token) -> bool``, ``absorb(timeout)`` (return once
everything scheduled so far is held by the scheduler) and
``shutdown(timeout)``. Completion is observed with :class:`Completions`,
which the task function itself bumps, so nobody sleeps to wait for work.

Optional peers import their dependency lazily; :meth:`Adapter.unavailable`
tells why a peer cannot run on this machine.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import importlib
import itertools
import math
import sched
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from benchmarks.results import Skip
from benchmarks.textbook import TextbookScheduler, shutdown_executor

__all__ = [
    "ADAPTERS",
    "Adapter",
    "ApschedulerAdapter",
    "Completions",
    "OursAdapter",
    "SchedAdapter",
    "TextbookAdapter",
    "TimerAdapter",
]

Task = Callable[[], object]
WORKERS = 4
#: The checkout this harness lives in; ``actors`` is imported from here if it
#: is not installed.
REPO_ROOT = Path(__file__).resolve().parent.parent


def import_ours() -> ModuleType:
    """Import the library under test (``actors``), from the checkout if needed."""
    try:
        return importlib.import_module("actors")
    except ModuleNotFoundError as exc:
        if exc.name != "actors" or str(REPO_ROOT) in sys.path:
            raise
        sys.path.append(str(REPO_ROOT))
        return importlib.import_module("actors")


class Completions:
    """Counts task runs and signals when ``target`` of them happened.

    ``hit`` is meant to be called from inside the task function; it is
    lock-free (``next`` on :class:`itertools.count` is atomic in CPython).
    """

    def __init__(self, target: int) -> None:
        self.target = target
        self._counter = itertools.count(1)
        self._done = threading.Event()
        self._last = 0

    def hit(self) -> None:
        """Record one completion."""
        n = next(self._counter)
        self._last = n
        if n >= self.target:
            self._done.set()

    def wait(self, timeout: float) -> bool:
        """Block until ``target`` completions happened or ``timeout`` s passed."""
        return self._done.wait(timeout)

    @property
    def count(self) -> int:
        """Completions seen so far (approximate while tasks still run)."""
        return self._last


class Adapter(ABC):
    """Common interface of every scheduler under test."""

    #: Short name used in tables and JSON.
    name: ClassVar[str]
    #: Largest number of simultaneously pending tasks that is sane, or None.
    max_pending: ClassVar[int | None] = None
    #: Why larger sizes are skipped (shown as "n/a (reason)").
    max_pending_reason: ClassVar[str] = ""

    @classmethod
    def unavailable(cls) -> str | None:
        """Reason this peer cannot run here (missing dependency), or None."""
        return None

    @classmethod
    def unsupported(cls, pending: int) -> str | None:
        """Reason to skip a case with ``pending`` simultaneous tasks, or None."""
        if cls.max_pending is not None and pending > cls.max_pending:
            return cls.max_pending_reason or f"skipped above {cls.max_pending:,} tasks"
        return None

    @abstractmethod
    def start(self) -> None:
        """Create and start the scheduler."""

    @abstractmethod
    def schedule_once(self, fn: Task, delay: float) -> Any:
        """Run ``fn`` once after ``delay`` seconds; return a cancel token."""

    @abstractmethod
    def schedule_at_fixed_rate(self, fn: Task, interval: float) -> Any:
        """Run ``fn`` at ``t0 + k*interval`` for k = 1, 2, ...; return a token."""

    @abstractmethod
    def cancel(self, token: Any) -> bool:
        """Cancel the task behind ``token``; True if it was still pending."""

    def schedule_cpu_bound(
        self, reference: str, args: tuple[Any, ...], delay: float, *, in_process: bool
    ) -> Any:
        """Run the function ``reference`` names (``"module:function"``) with ``args`` after ``delay``.

        ``in_process`` asks for it to run in a worker process; a peer without one raises ``Skip``.
        """
        if in_process:
            raise Skip(f"{self.name} has no worker processes")
        module, _, name = reference.partition(":")
        fn = getattr(importlib.import_module(module), name)
        return self.schedule_once(functools.partial(fn, *args), delay)

    #: Whether the peer can cancel by a task id (a string or number the caller kept).
    cancels_by_id: ClassVar[bool] = False

    def cancel_by_id(self, token: Any) -> bool:
        """Cancel the task behind ``token`` by its id (only if ``cancels_by_id``)."""
        raise NotImplementedError(f"{self.name} cannot cancel by id")

    def absorb(self, timeout: float) -> None:  # noqa: B027 - optional hook, no-op by default
        """Return once the scheduler holds every task scheduled so far.

        Peers that insert synchronously need nothing; ours drains its inbox.
        """

    @abstractmethod
    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop the scheduler and its threads, waiting at most ``timeout`` s."""


# ---------------------------------------------------------------------------
# textbook yardstick


class TextbookAdapter(Adapter):
    """The heap + condition + ThreadPoolExecutor(4) yardstick."""

    name = "textbook"

    def __init__(self, workers: int = WORKERS) -> None:
        self._s = TextbookScheduler(workers=workers)

    def start(self) -> None:
        self._s.start()

    def schedule_once(self, fn: Task, delay: float) -> int:
        return self._s.schedule(fn, delay)

    def schedule_at_fixed_rate(self, fn: Task, interval: float) -> int:
        return self._s.schedule(fn, interval, interval)

    def cancel(self, token: int) -> bool:
        return self._s.cancel(token)

    cancels_by_id = True
    cancel_by_id = cancel  # its token is the id

    def shutdown(self, timeout: float = 10.0) -> None:
        self._s.shutdown(wait=True, timeout=timeout)


# ---------------------------------------------------------------------------
# stdlib sched driven by one thread, actions handed to a pool


class _Periodic:
    """Cancel token of a fixed-rate task on :class:`SchedAdapter`."""

    __slots__ = ("cancelled", "event")

    def __init__(self) -> None:
        self.cancelled = False
        self.event: sched.Event | None = None


class SchedAdapter(Adapter):
    """``sched.scheduler`` run by one driver thread; due actions go to a pool.

    The driver calls ``run(blocking=False)`` (runs what is due, returns the
    delay to the next event) and then waits on a condition; ``schedule_*``
    notify it only when the new event is earlier than the one it waits for.
    Note ``sched.cancel`` is ``list.remove`` + ``heapify``: O(n).
    """

    name = "sched"

    def __init__(self, workers: int = WORKERS) -> None:
        self._sched = sched.scheduler(time.monotonic)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="sched-worker")
        self._cond = threading.Condition()
        self._wake_at = math.inf  # deadline the driver sleeps towards
        self._woken = False
        self._stopped = False
        self._driver = threading.Thread(target=self._drive, name="sched-driver", daemon=True)

    def start(self) -> None:
        self._driver.start()

    def _drive(self) -> None:
        while True:
            delay = self._sched.run(blocking=False)
            with self._cond:
                if self._stopped:
                    return
                if self._woken:
                    self._woken = False
                    continue
                wait = 60.0 if delay is None else min(delay, 60.0)
                self._wake_at = time.monotonic() + wait
                self._cond.wait(wait)
                self._wake_at = math.inf
                self._woken = False

    def _enter(self, at: float, action: Callable[..., object], *args: object) -> sched.Event:
        event = self._sched.enterabs(at, 0, action, args)
        with self._cond:
            if at < self._wake_at:
                self._woken = True
                self._cond.notify()
        return event

    def _dispatch(self, fn: Task) -> None:
        with contextlib.suppress(RuntimeError):  # pool already shut down
            self._pool.submit(fn)

    def schedule_once(self, fn: Task, delay: float) -> sched.Event:
        return self._enter(time.monotonic() + delay, self._dispatch, fn)

    def schedule_at_fixed_rate(self, fn: Task, interval: float) -> _Periodic:
        token = _Periodic()
        first = time.monotonic() + interval
        token.event = self._enter(first, self._periodic, token, fn, interval, first)
        return token

    def _periodic(self, token: _Periodic, fn: Task, interval: float, at: float) -> None:
        if token.cancelled:
            return
        self._dispatch(fn)
        nxt = at + interval
        token.event = self._enter(nxt, self._periodic, token, fn, interval, nxt)

    def cancel(self, token: sched.Event | _Periodic) -> bool:
        if isinstance(token, _Periodic):
            was = not token.cancelled
            token.cancelled = True
            event = token.event
            if event is not None:
                with contextlib.suppress(ValueError):
                    self._sched.cancel(event)
            return was
        try:
            self._sched.cancel(token)
        except ValueError:
            return False
        return True

    def shutdown(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._driver.ident is not None:
            self._driver.join(timeout)
        shutdown_executor(self._pool, max(0.0, deadline - time.monotonic()))


# ---------------------------------------------------------------------------
# APScheduler 3.x


class ApschedulerAdapter(Adapter):
    """APScheduler 3.x ``BackgroundScheduler`` with a ThreadPoolExecutor(4).

    Jobs never misfire (``misfire_grace_time=None``) so late jobs still run and
    completions can be counted. APScheduler works in wall-clock datetimes; a
    delay is converted at call time.
    """

    name = "apscheduler"
    max_pending = 100_000
    max_pending_reason = "add_job ~60 µs + O(n) list insert: 1M fill too slow"

    @classmethod
    def unavailable(cls) -> str | None:
        try:
            mod = importlib.import_module("apscheduler")
        except ImportError:
            return "apscheduler not installed (pip install '.[bench]')"
        version = getattr(mod, "__version__", "3")
        if not str(version).startswith("3"):
            return f"apscheduler {version} installed; adapter needs 3.x"
        return None

    def __init__(self, workers: int = WORKERS) -> None:
        from apscheduler.executors.pool import ThreadPoolExecutor as ApsPool  # type: ignore[import-untyped]
        from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

        self._s = BackgroundScheduler(
            executors={"default": ApsPool(workers)},
            job_defaults={
                "misfire_grace_time": None,
                "coalesce": False,
                "max_instances": 1,
            },
            timezone=dt.UTC,
        )

    def start(self) -> None:
        self._s.start()

    @staticmethod
    def _at(delay: float) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=delay)

    def schedule_once(self, fn: Task, delay: float) -> str:
        return str(self._s.add_job(fn, "date", run_date=self._at(delay)).id)

    def schedule_at_fixed_rate(self, fn: Task, interval: float) -> str:
        return str(self._s.add_job(fn, "interval", seconds=interval, start_date=dt.datetime.now(dt.UTC)).id)

    cancels_by_id = True

    def cancel_by_id(self, token: str) -> bool:
        return self.cancel(token)  # its token is the job id

    def cancel(self, token: str) -> bool:
        from apscheduler.jobstores.base import JobLookupError  # type: ignore[import-untyped]

        try:
            self._s.remove_job(token)
        except JobLookupError:
            return False
        return True

    def shutdown(self, timeout: float = 10.0) -> None:
        helper = threading.Thread(
            target=self._s.shutdown,
            kwargs={"wait": True},
            name="aps-shutdown",
            daemon=True,
        )
        helper.start()
        helper.join(timeout)


# ---------------------------------------------------------------------------
# threading.Timer, one thread per task


class _Rearming:
    """Cancel token of a fixed-rate task built from a chain of Timers."""

    __slots__ = ("cancelled", "timer")

    def __init__(self) -> None:
        self.cancelled = False
        self.timer: threading.Timer | None = None


class TimerAdapter(Adapter):
    """One :class:`threading.Timer` (one OS thread) per pending task."""

    name = "threading.Timer"
    max_pending = 2_000
    max_pending_reason = "one OS thread per task; skipped above 2,000"

    def __init__(self, workers: int = WORKERS) -> None:
        self._lock = threading.Lock()
        self._timers: set[threading.Timer] = set()
        self._stopped = False

    def start(self) -> None:
        pass

    def _arm(self, delay: float, fn: Task) -> threading.Timer:
        holder: list[threading.Timer] = []

        def run() -> None:
            try:
                fn()
            finally:
                with self._lock:
                    self._timers.discard(holder[0])

        timer = threading.Timer(delay, run)
        timer.daemon = True
        holder.append(timer)
        with self._lock:  # started under the lock: every timer in the set is joinable
            if self._stopped:
                raise RuntimeError("adapter is shut down")
            self._timers.add(timer)
            timer.start()
        return timer

    def schedule_once(self, fn: Task, delay: float) -> threading.Timer:
        return self._arm(delay, fn)

    def schedule_at_fixed_rate(self, fn: Task, interval: float) -> _Rearming:
        token = _Rearming()
        first = time.monotonic() + interval

        def fire(at: float) -> None:
            if token.cancelled:
                return
            nxt = at + interval
            try:
                token.timer = self._arm(max(0.0, nxt - time.monotonic()), lambda: fire(nxt))
            except RuntimeError:  # shut down meanwhile
                return
            fn()

        token.timer = self._arm(interval, lambda: fire(first))
        return token

    def cancel(self, token: threading.Timer | _Rearming) -> bool:
        if isinstance(token, _Rearming):
            was = not token.cancelled
            token.cancelled = True
            if token.timer is not None:
                token.timer.cancel()
            return was
        pending = not token.finished.is_set()
        token.cancel()
        return pending

    def shutdown(self, timeout: float = 10.0) -> None:
        with self._lock:
            self._stopped = True
            timers = list(self._timers)
        for timer in timers:
            timer.cancel()
        deadline = time.monotonic() + timeout
        for timer in timers:
            if timer is not threading.current_thread():
                timer.join(max(0.0, deadline - time.monotonic()))


# ---------------------------------------------------------------------------
# ours


class OursAdapter(Adapter):
    """The library's facade: ``actors.Scheduler(workers=4)``."""

    name = "ours"

    @classmethod
    def unavailable(cls) -> str | None:
        try:
            import_ours().Scheduler  # noqa: B018 - presence check
        except Exception as exc:  # any import failure disqualifies
            return f"actors.Scheduler not importable: {type(exc).__name__}: {exc}"
        return None

    def __init__(self, workers: int = WORKERS, processes: int = 0) -> None:
        self._s: Any = None
        self._workers = workers
        self._processes = processes

    def start(self) -> None:
        self._s = import_ours().Scheduler(workers=self._workers, processes=self._processes)

    def schedule_cpu_bound(
        self, reference: str, args: tuple[Any, ...], delay: float, *, in_process: bool
    ) -> Any:
        executor = "process" if in_process else "thread"
        return self._s.schedule_once(reference, delay=delay, args=args, executor=executor)

    def schedule_once(self, fn: Task, delay: float) -> Any:
        return self._s.schedule_once(fn, delay=delay)

    def schedule_at_fixed_rate(self, fn: Task, interval: float) -> Any:
        return self._s.schedule_at_fixed_rate(fn, interval, initial_delay=interval)

    def cancel(self, token: Any) -> bool:
        return bool(token.cancel())

    cancels_by_id = True

    def cancel_by_id(self, token: Any) -> bool:
        return bool(self._s.cancel(token.task_id))

    def absorb(self, timeout: float) -> None:
        settle = getattr(self._s, "settle", None)
        if settle is not None:
            settle(timeout=timeout)

    def shutdown(self, timeout: float = 10.0) -> None:
        if self._s is not None:
            self._s.shutdown(wait=True, timeout=timeout)


#: Every peer, in table column order.
ADAPTERS: dict[str, type[Adapter]] = {
    cls.name: cls
    for cls in (
        OursAdapter,
        TextbookAdapter,
        SchedAdapter,
        ApschedulerAdapter,
        TimerAdapter,
    )
}
