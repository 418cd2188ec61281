"""One small adapter per scheduler, all with the same interface.

Every adapter offers ``start()``, ``schedule_once(fn, delay) -> token``,
``schedule_at_fixed_rate(fn, interval) -> token`` (first run after one
``interval``), ``cancel(token) -> bool``, ``absorb(timeout)`` (return once
everything scheduled so far is held by the scheduler) and
``shutdown(timeout)``. Completion is observed with :class:`Completions`,
which the task function itself bumps, so nobody sleeps to wait for work.

Optional peers import their dependency lazily; :meth:`Adapter.unavailable`
tells why a peer cannot run on this machine.

Durable peers (``durable=True``: ours on its SQLite store, APScheduler 3 on its
SQLAlchemy job store on SQLite) also offer the durable methods of
:class:`Adapter` (``schedule_durable``, ``schedule_held``/``release``,
``committed``, ``stored_live``, ``fill_store``/``open_store``/``close_store``).
Each such run keeps its files in a fresh temporary directory, removed by
``shutdown``. Peers without that setting are skipped for durable cases.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import importlib
import math
import pickle
import sched
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from benchmarks import durable_tasks
from benchmarks.completions import Completions
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
#: Held durable tasks (``schedule_held``) are due this far ahead on a fake clock
#: until ``release`` moves the clock there.
HOLD_S = 60.0


def import_ours() -> ModuleType:
    """Import the library under test (``actors``), from the checkout if needed."""
    try:
        return importlib.import_module("actors")
    except ModuleNotFoundError as exc:
        if exc.name != "actors" or str(REPO_ROOT) in sys.path:
            raise
        sys.path.append(str(REPO_ROOT))
        return importlib.import_module("actors")


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
    def unsupported(cls, pending: int, settings: Mapping[str, object] | None = None) -> str | None:
        """Reason to skip a case with ``pending`` simultaneous tasks and these adapter settings, or None."""
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

    def schedule_many(self, fn: Task, delays: list[float]) -> None:
        """Run ``fn`` once after each of ``delays`` seconds: the peer's bulk call, if it has one.

        Peers without one call ``schedule_once`` for each (their bulk rate is their per-call rate).
        """
        schedule = self.schedule_once
        for delay in delays:
            schedule(fn, delay)

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

    # -- durable tasks (peers with a ``durable`` setting override these) ----------------

    def schedule_durable(self, delay: float) -> Any:
        """Schedule :func:`benchmarks.durable_tasks.hit` as a durable one-time task after ``delay`` s.

        Returns once the task is committed to the store.
        """
        raise Skip(f"{self.name} has no durable tasks")

    def schedule_held(self) -> Any:
        """Schedule a durable ``hit`` that becomes due only at :meth:`release` (``held=True``)."""
        raise Skip(f"{self.name} cannot hold tasks")

    def release(self) -> None:
        """Make every held task due at once."""
        raise Skip(f"{self.name} cannot hold tasks")

    def committed(self, timeout: float) -> None:  # noqa: B027 - optional hook, no-op by default
        """Return once the outcome of every run so far is committed to the store."""

    def stored_live(self) -> int:
        """Live (not yet run, not cancelled) tasks in the store, read from the file itself."""
        raise Skip(f"{self.name} has no durable tasks")

    def scratch_path(self, name: str) -> Path:
        """A path for a file in this run's temporary directory (removed at shutdown)."""
        raise Skip(f"{self.name} has no durable tasks")

    def fill_store(self, path: Path, n: int, due_in_s: float) -> None:
        """Write a store of this peer's at ``path`` holding ``n`` durable one-time ``hit`` tasks.

        One of them is already due (the restart's "ready" marker); the others are due
        ``due_in_s`` seconds ahead and later. Done in bulk, outside any timed region.
        """
        raise Skip(f"{self.name} has no durable tasks")

    def open_store(self, path: Path) -> Any:
        """Start a second scheduler of this peer on the store at ``path`` (a restart); return it."""
        raise Skip(f"{self.name} has no durable tasks")

    def close_store(self, opened: Any) -> None:
        """Shut down what :meth:`open_store` started (its durable tasks stay in the file)."""
        raise Skip(f"{self.name} has no durable tasks")


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

    ``durable=True`` puts the jobs in its ``SQLAlchemyJobStore`` on an SQLite
    file (``sqlite:///...``, SQLAlchemy's defaults: a rollback journal and
    ``synchronous=FULL``), with jobs given by textual reference; ``held=True``
    starts the scheduler paused, and ``release`` resumes it.
    """

    name = "apscheduler"
    max_pending = 100_000
    max_pending_reason = "add_job ~60 µs + O(n) list insert: 1M fill too slow"
    #: Durable cases that add more jobs than this through ``add_job`` are skipped.
    max_durable_added = 10_000
    max_durable_reason = (
        "SQLAlchemy job store on SQLite: one fsynced commit per add_job (~1.8 ms) and per "
        "run (the job's DELETE): 100k would take ~5 min; measured at 10k instead"
    )

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

    @classmethod
    def unsupported(cls, pending: int, settings: Mapping[str, object] | None = None) -> str | None:
        if not (settings or {}).get("durable"):
            return super().unsupported(pending, settings)
        try:
            importlib.import_module("sqlalchemy")
        except ImportError:
            return "sqlalchemy not installed (pip install '.[bench]')"
        # Durable jobs live in the file, not in memory: only jobs added one by one cost time.
        if (settings or {}).get("held") and pending > cls.max_durable_added:
            return cls.max_durable_reason
        return None

    def __init__(self, workers: int = WORKERS, durable: bool = False, held: bool = False) -> None:
        self._workers = workers
        self._held = held
        self._dir = Path(tempfile.mkdtemp(prefix="bench-apscheduler-")) if durable else None
        self._s = self._new(None if self._dir is None else self._dir / "jobs.db")
        # Held jobs added, and removed from the store (a date job's row is deleted once the
        # job is handed to the executor): ``committed`` waits for the two to match.
        self._removals = threading.Condition()
        self._held_added = 0
        self._removed = 0
        if durable and held:
            from apscheduler.events import EVENT_JOB_REMOVED  # type: ignore[import-untyped]

            self._s.add_listener(self._on_removed, EVENT_JOB_REMOVED)

    def _on_removed(self, _event: object) -> None:
        with self._removals:
            self._removed += 1
            self._removals.notify_all()

    def _new(self, path: Path | None) -> Any:
        from apscheduler.executors.pool import ThreadPoolExecutor as ApsPool  # type: ignore[import-untyped]
        from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

        return BackgroundScheduler(
            jobstores={} if path is None else {"default": self._jobstore(path)},
            executors={"default": ApsPool(self._workers)},
            job_defaults={
                "misfire_grace_time": None,
                "coalesce": False,
                "max_instances": 1,
            },
            timezone=dt.UTC,
        )

    @staticmethod
    def _jobstore(path: Path) -> Any:
        from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore  # type: ignore[import-untyped]

        return SQLAlchemyJobStore(url=f"sqlite:///{path}")

    def start(self) -> None:
        self._s.start(paused=self._held)

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

    # -- durable ---------------------------------------------------------------

    def _durable_dir(self) -> Path:
        if self._dir is None:
            raise Skip("apscheduler runs without a job store here (no durable=True)")
        return self._dir

    def schedule_durable(self, delay: float) -> str:
        self._durable_dir()
        return str(self._s.add_job(durable_tasks.REFERENCE, "date", run_date=self._at(delay)).id)

    def schedule_held(self) -> str:
        self._durable_dir()
        job = self._s.add_job(durable_tasks.REFERENCE, "date", run_date=self._at(0.0))
        self._held_added += 1
        return str(job.id)

    def release(self) -> None:
        self._s.resume()

    def committed(self, timeout: float) -> None:
        # APScheduler 3 keeps no outcome: the last write of a date job is its row's DELETE.
        with self._removals:
            if not self._removals.wait_for(lambda: self._removed >= self._held_added, timeout):
                raise TimeoutError(f"{self._held_added - self._removed:,} held jobs were never removed")

    def stored_live(self) -> int:
        # A date job's row is deleted when the job is handed to the executor (before it
        # runs); the rows left are the jobs not yet handed over.
        return _count_rows(self._durable_dir() / "jobs.db", "apscheduler_jobs")

    def scratch_path(self, name: str) -> Path:
        return self._durable_dir() / name

    def fill_store(self, path: Path, n: int, due_in_s: float) -> None:
        from apscheduler.job import Job  # type: ignore[import-untyped]
        from apscheduler.triggers.date import DateTrigger  # type: ignore[import-untyped]
        from apscheduler.util import datetime_to_utc_timestamp  # type: ignore[import-untyped]

        store = self._jobstore(path)
        store.jobs_t.create(store.engine, checkfirst=True)  # the table as the job store makes it
        table = store.jobs_t.name
        store.shutdown()
        now = dt.datetime.now(dt.UTC)
        # A job made as add_job makes it; each row is its pickled state with its own id and
        # due time, exactly what SQLAlchemyJobStore.add_job writes.
        template = Job(
            self._s,
            id="template",
            func=durable_tasks.REFERENCE,
            trigger=DateTrigger(now, timezone=dt.UTC),
            executor="default",
            args=(),
            kwargs={},
            name="hit",
            misfire_grace_time=None,
            coalesce=False,
            max_instances=1,
            next_run_time=now,
        ).__getstate__()

        def rows() -> Any:
            for i in range(n):
                ahead = -1.0 if i == 0 else due_in_s + i * 1e-3  # the first one is due already
                due = now + dt.timedelta(seconds=ahead)
                trigger = DateTrigger(due, timezone=dt.UTC)
                state = dict(template, id=f"job-{i}", trigger=trigger, next_run_time=due)
                blob = pickle.dumps(state, pickle.HIGHEST_PROTOCOL)
                yield state["id"], datetime_to_utc_timestamp(due), blob

        db = sqlite3.connect(path, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            db.executemany(f"INSERT INTO {table} (id, next_run_time, job_state) VALUES (?, ?, ?)", rows())
            db.execute("COMMIT")
        finally:
            db.close()

    def open_store(self, path: Path) -> Any:
        scheduler = self._new(path)
        scheduler.start()
        return scheduler

    def close_store(self, opened: Any) -> None:
        _shutdown_aps(opened, 10.0)

    def shutdown(self, timeout: float = 10.0) -> None:
        _shutdown_aps(self._s, timeout)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


def _shutdown_aps(scheduler: Any, timeout: float) -> None:
    """APScheduler's ``shutdown(wait=True)`` has no timeout: run it in a helper thread."""
    helper = threading.Thread(
        target=scheduler.shutdown,
        kwargs={"wait": True},
        name="aps-shutdown",
        daemon=True,
    )
    helper.start()
    helper.join(timeout)


def _count_rows(path: Path, table: str) -> int:
    """Rows in ``table`` of the SQLite file ``path``, read through a read-only connection."""
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        count: int = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        db.close()
    return count


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
    """The library's facade: ``actors.Scheduler(workers=4)``.

    ``durable=True`` gives it a store, ``Scheduler(store=<file>)`` (its tasks are then
    durable by default); ``held=True`` gives it a ``FakeClock``, so that held tasks become
    due only when ``release`` advances that clock.
    """

    name = "ours"

    @classmethod
    def unavailable(cls) -> str | None:
        try:
            import_ours().Scheduler  # noqa: B018 - presence check
        except Exception as exc:  # any import failure disqualifies
            return f"actors.Scheduler not importable: {type(exc).__name__}: {exc}"
        return None

    def __init__(
        self,
        workers: int = WORKERS,
        processes: int = 0,
        durable: bool = False,
        held: bool = False,
        executor: str = "thread",
        engine_processes: int = 4,
    ) -> None:
        self._s: Any = None
        self._executor = executor  # the executors workload's: its engine starts with the scheduler
        self._engine = contextlib.ExitStack()
        self._engine_processes = engine_processes
        self._workers = workers
        self._processes = processes
        self._held = held
        self._clock: Any = None
        self._dir = Path(tempfile.mkdtemp(prefix="bench-ours-")) if durable else None

    def start(self) -> None:
        ours = import_ours()
        self._clock = ours.FakeClock() if self._held else None
        from benchmarks.executors import engine  # here: only the executors workload needs it

        executors = self._engine.enter_context(
            engine(self._executor, in_flight=16, processes=self._engine_processes)
        )
        self._s = ours.Scheduler(
            workers=self._workers,
            processes=self._processes,
            clock=self._clock,
            store=None if self._dir is None else self._dir / "tasks.db",
            **({"executors": executors} if executors else {}),
        )

    def schedule_cpu_bound(
        self, reference: str, args: tuple[Any, ...], delay: float, *, in_process: bool
    ) -> Any:
        executor = "process" if in_process else "thread"
        return self._s.schedule_once(reference, delay=delay, args=args, executor=executor)

    def schedule_once(self, fn: Task, delay: float) -> Any:
        return self._s.schedule_once(fn, delay=delay)

    def schedule_many(self, fn: Task, delays: list[float]) -> None:
        self._s.schedule_many(fn, delays)

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
        self._engine.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    # -- durable ---------------------------------------------------------------

    def _durable_dir(self) -> Path:
        if self._dir is None:
            raise Skip("ours runs without a store here (no durable=True)")
        return self._dir

    def schedule_durable(self, delay: float) -> Any:
        self._durable_dir()
        return self._s.schedule_once(durable_tasks.hit, delay=delay)

    def schedule_held(self) -> Any:
        if self._clock is None:
            raise Skip("ours holds tasks only on a FakeClock (held=True)")
        return self.schedule_durable(HOLD_S)

    def release(self) -> None:
        self._clock.advance(HOLD_S)

    def committed(self, timeout: float) -> None:
        # settle() returns once nothing due is unfinished; the scheduler saves each batch of
        # outcomes before it reports the batch done, so every outcome is committed by then.
        self._s.settle(timeout=timeout)

    def stored_live(self) -> int:
        with import_ours().SQLiteStore.inspect(self._durable_dir() / "tasks.db") as reader:
            return len(reader.load())

    def scratch_path(self, name: str) -> Path:
        return self._durable_dir() / name

    def fill_store(self, path: Path, n: int, due_in_s: float) -> None:
        # One task made through the facade is the template: every other row is a copy of it
        # (made by SQLite itself, in one transaction) with its own id and due time, so the
        # file holds exactly what n schedule_once calls would have written.
        with import_ours().Scheduler(workers=1, store=path) as maker:
            maker.schedule_once(durable_tasks.hit, delay=due_in_s)
        db = sqlite3.connect(path, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            seq, due = db.execute("SELECT seq, next_due FROM task").fetchone()
            db.execute(
                """WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                   INSERT INTO task (task_id, fn_ref, args_json, kwargs_json, trigger_json,
                                     options_json, status, next_due, updated_at)
                   SELECT 'task-' || n.i, fn_ref, args_json, kwargs_json, trigger_json,
                          options_json, status, next_due + n.i * 1e-3, updated_at
                     FROM task, n WHERE task.seq = ?""",
                (n, seq),
            )
            # Minted ids must stay above the copies' ids; the template is the due marker.
            db.execute("UPDATE store_meta SET minted_high_water = max(minted_high_water, ?)", (n,))
            db.execute("UPDATE task SET next_due = ? WHERE seq = ?", (due - due_in_s - 1.0, seq))
            db.execute("COMMIT")
        finally:
            db.close()

    def open_store(self, path: Path) -> Any:
        return import_ours().Scheduler(workers=self._workers, store=path)

    def close_store(self, opened: Any) -> None:
        opened.shutdown(wait=True, timeout=10.0)


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
