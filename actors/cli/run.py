"""``run JOBFILE``: run a job file's jobs as a long-lived process until it is stopped.

The main thread loads the file, starts a ``Scheduler`` on the file's store, makes the schedule
follow the file (``JobService.apply``), then waits for a signal, the ``--for`` deadline or the
next redraw of the live view:

- ``SIGHUP``: load the file again; if it validates, apply it; if not, log every problem and
  leave the schedule as it was.
- ``SIGINT``/``SIGTERM``: stop taking new runs, give running ones ``--grace`` seconds, shut
  down, exit 0. A second ``SIGINT`` exits at once with 130.

Signal handlers only put a word in a queue (``SimpleQueue.put`` is safe there); the main
loop does the work. Threads: the main thread only (events arrive on the scheduler's bus thread
and go to the board and the log).
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Final, Literal

from actors.api.facade import Scheduler
from actors.cli import exits, logs
from actors.cli.board import Board
from actors.cli.control import POLL, Answer, Mailbox, Op
from actors.cli.fingerprints import Stamps
from actors.cli.holdback import HoldBackStore
from actors.cli.jobfile import JobFile, check_jobfile, store_problems, stored_argument_problems
from actors.cli.operate import answer_request
from actors.cli.service import JobService, event_listener, to_hold_back
from actors.cli.stores import StoreName, shown_store, store_name
from actors.errors import JobFileError, SchedulerError, SchedulerStartError, StoreError, StoreLockedError
from messages import EventKind, TaskEvent

if TYPE_CHECKING:
    from actors.cli.shared_store import SharedJobStore

__all__ = ["RunOptions", "run"]

logger = logging.getLogger("actors.cli")
event_logger = logging.getLogger("actors.cli.events")

REDRAW_EVERY: Final = 1.0
"""Seconds between redraws of the live view."""

SIGNAL_LATENCY: Final = 0.5
"""The longest a signal may wait before the main loop handles it, in seconds."""

Command = Literal["stop", "reload"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The ``run`` command's arguments.

    Attributes:
        jobfile: The job file, as given.
        store: ``--store``: overrides the file's store (a path, a PostgreSQL URL, or
            ``":memory:"``); ``None``: the file's.
        workers: ``--workers``: overrides the file's; ``None``: the file's.
        duration: ``--for``: seconds to run before stopping; ``None``: until stopped.
        grace: ``--grace``: seconds running runs get to finish at a stop.
        live_view: ``--status``/``--no-status``; ``None``: the live view on a terminal, logs otherwise.
        log_level: ``--log-level``.
        http: ``--http``: serve the status page there (``HOST:PORT`` or ``PORT``); ``None``: not.
        http_token: ``--http-token``: the control token (else the environment's, else none).
        show_args: ``--show-args``: the page and API show the jobs' arguments.
    """

    jobfile: str
    store: str | None = None
    workers: int | None = None
    duration: float | None = None
    grace: float = 30.0
    live_view: bool | None = None
    log_level: str = "info"
    http: str | None = None
    http_token: str | None = None
    show_args: bool = False


def run(options: RunOptions) -> int:
    """Run the job file until a signal or ``--for``; return the exit code."""
    signals = _Signals()
    signals.install()
    try:
        view = _choose_view(options.live_view)
    except ImportError:
        _print_problems(["--status: the live view needs rich: pip install 'pykka-taskscheduler[cli]'"])
        return exits.BAD_INPUT
    logs.configure(options.log_level, None if view is None else view.handler())
    try:
        jobfile = _load(options)
    except JobFileError as error:
        _print_problems(error.problems)
        return exits.BAD_INPUT
    sys.path.insert(0, str(jobfile.folder))  # fn = "tasks:..." is found beside the file, now and later
    events = _EventLog()
    board = Board()
    listener = event_listener(board, None if view is not None else events.log)
    started = _start(options, jobfile, listener)
    if isinstance(started, int):
        return started
    store, scheduler = started
    try:
        service = JobService(scheduler, jobfile, board, store)
        if options.http is None:
            return _serve(scheduler, service, options, signals, view)
        from actors.cli.web_serve import serve_http  # noqa: PLC0415 - the web extra, only if asked

        shared = None if isinstance(store, HoldBackStore) else store  # PostgreSQL: the nodes too
        web = serve_http(scheduler, service, options.http, options.http_token, options.show_args, shared)
        if isinstance(web, int):
            return web
        try:
            return _serve(scheduler, service, options, signals, view)
        finally:
            web.stop()  # before the scheduler: no request finds it gone
    finally:
        events.stopping = True
        _stop(scheduler, options.grace)


def _start(
    options: RunOptions, jobfile: JobFile, listener: Callable[[TaskEvent], None]
) -> tuple[HoldBackStore | SharedJobStore | None, Scheduler] | int:
    """Open the store and start the scheduler; or say why it cannot (stderr) and return the exit code."""
    try:
        store = _open_store(jobfile)
        scheduler = Scheduler(
            jobfile.workers,
            processes=jobfile.processes,
            store=store,
            hung_grace=jobfile.hung_grace,
            listeners=[listener],
        )
    except ImportError as error:
        _print_problems([f"{options.jobfile}: a PostgreSQL store needs psycopg ({error}): "
                         "pip install 'pykka-taskscheduler[postgres]'"])  # fmt: skip
        return exits.FAILURE
    except StoreLockedError as error:
        _print_problems([f"{options.jobfile}: {error}; stop it first, or give another --store"])
        return exits.STORE_LOCKED
    except (StoreError, SchedulerStartError) as error:
        _print_problems([f"{options.jobfile}: {error}"])
        return exits.FAILURE
    except Exception as error:  # a store's row the library could not read: say so, with the file
        logger.debug("the start failed", exc_info=True)
        where = "memory only" if jobfile.store is None else f"the store {shown_store(jobfile.store)}"
        _print_problems([f"{options.jobfile}: cannot start on {where}: {type(error).__name__}: {error}"])
        return exits.FAILURE
    return store, scheduler


def _serve(
    scheduler: Scheduler,
    service: JobService,
    options: RunOptions,
    signals: _Signals,
    view: _View | None,
) -> int:
    jobfile = service.jobfile
    try:
        service.apply(jobfile)
    except (SchedulerError, TypeError, ValueError, OSError) as error:
        _print_problems([f"{options.jobfile}: cannot schedule the jobs: {error}"])
        return exits.FAILURE
    store = "memory only" if jobfile.store is None else f"store {shown_store(jobfile.store)}"
    logger.info(
        "running %d job(s) from %s (%s, %d workers); SIGHUP reloads, SIGINT or SIGTERM stops",
        len(jobfile.jobs), options.jobfile, store, jobfile.workers,
    )  # fmt: skip
    deadline = None if options.duration is None else time.monotonic() + options.duration
    # An SQLite store's mailbox: the pause, resume and run-now commands' requests (control.py).
    mailbox = _open_mailbox(jobfile.store)
    try:
        with view.showing() if view is not None else nullcontext():
            _loop(scheduler, service, options, signals, view, deadline, mailbox)
    finally:
        if mailbox is not None:
            mailbox.close()
    return exits.OK


def _loop(
    scheduler: Scheduler,
    service: JobService,
    options: RunOptions,
    signals: _Signals,
    view: _View | None,
    deadline: float | None,
    mailbox: Mailbox | None,
) -> None:
    """Wait for signals, ``--for``, the mailbox's requests and the redraws, and handle each."""
    next_draw = time.monotonic()
    while True:
        if view is not None and time.monotonic() >= next_draw:
            view.draw(service, options.jobfile)
            next_draw = time.monotonic() + REDRAW_EVERY
        wakes = [next_draw - time.monotonic()] if view is not None else []
        wakes += [POLL] if mailbox is not None else []
        wait = _until(deadline, min(wakes) if wakes else None)
        if deadline is not None and time.monotonic() >= deadline:
            logger.info("ran for %s s; stopping", options.duration)
            return
        command = signals.next(None if wait is None else max(0.0, wait))
        if command == "stop":
            logger.info("stopping: running runs get up to %s s to finish", options.grace)
            return
        if command == "reload":
            _reload(service, options)
        if mailbox is not None and _serve_mailbox(scheduler, mailbox):
            next_draw = time.monotonic()  # show the change at once


def _open_mailbox(store: StoreName | None) -> Mailbox | None:
    """The mailbox of an SQLite store (``None`` for another store, or one that cannot be made: logged)."""
    if not isinstance(store, Path):
        return None
    try:
        return Mailbox(store)
    except sqlite3.Error as error:
        logger.warning("pause, resume and run-now cannot reach this run: its mailbox: %s", error)
        return None


def _serve_mailbox(scheduler: Scheduler, mailbox: Mailbox) -> int:
    """Carry out the mailbox's requests; how many (an error of the mailbox is logged, not fatal)."""
    try:
        return mailbox.serve(lambda op, job: _answer(scheduler, op, job))
    except sqlite3.Error as error:
        logger.warning("the mailbox of pause, resume and run-now failed: %s", error)
        return 0


def _answer(scheduler: Scheduler, op: Op, job: str) -> Answer:
    """Carry out one request of the mailbox, and log what it did."""
    answer = answer_request(scheduler, op, job)
    logger.info("job %s: %s: %s (asked by the %s command)", job, op, answer.message, op)
    return answer


def _reload(service: JobService, options: RunOptions) -> None:
    logger.info("reloading %s", options.jobfile)
    try:
        jobfile = _load(options)
    except JobFileError as error:
        for problem in error.problems:
            logger.error("%s", problem)
        logger.error("reload rejected: the schedule is left as it was")
        return
    before = service.jobfile
    as_started = replace(
        jobfile,
        store=before.store,
        workers=before.workers,
        processes=before.processes,
        hung_grace=before.hung_grace,
    )
    if as_started != jobfile:
        logger.warning(
            "[scheduler] store, workers, processes and hung_grace take effect at the next start, "
            "not on a reload"
        )
        jobfile = as_started
    try:
        service.apply(jobfile)
    except (SchedulerError, TypeError, ValueError, OSError) as error:
        logger.error("reload failed part way: %s", error)
        return
    logger.info("reloaded %s: %d job(s)", options.jobfile, len(jobfile.jobs))


def _load(options: RunOptions) -> JobFile:
    """Load and check the job file as ``check`` does (its code too), then apply ``--store``/``--workers``."""
    jobfile = check_jobfile(options.jobfile, datetime.now(UTC))
    if options.store is not None:
        jobfile = replace(jobfile, store=store_name(options.store, Path.cwd()))
        problems = store_problems(jobfile, options.jobfile) + stored_argument_problems(
            jobfile, options.jobfile
        )
        if problems:
            raise JobFileError(problems)
    if options.workers is not None:
        jobfile = replace(jobfile, workers=options.workers)
    return jobfile


def _open_store(jobfile: JobFile) -> HoldBackStore | SharedJobStore | None:
    """The runner's store: a file that holds back what the reconcile will change, or a shared database.

    Raises:
        ImportError: a PostgreSQL store without psycopg installed.
    """
    if jobfile.store is None:
        return None
    if isinstance(jobfile.store, Path):
        return HoldBackStore(jobfile.store, to_hold_back(jobfile), Stamps())
    from actors.cli.shared_store import SharedJobStore  # noqa: PLC0415 - psycopg is optional

    return SharedJobStore(jobfile.store, Stamps())


def _stop(scheduler: Scheduler, grace: float) -> None:
    running = scheduler.stats().running
    scheduler.shutdown(wait=True, timeout=grace)
    logger.info("stopped (%d run(s) were going at the stop)", running)


class _EventLog:
    """Logs one line per event (bus thread); a failed run's traceback too, at DEBUG."""

    def __init__(self) -> None:
        # Set by the main thread as the shutdown starts, read on the bus thread: a plain flag
        # is enough, a late read only logs one line at another level.
        self.stopping = False

    def log(self, event: TaskEvent, duration: float | None) -> None:
        level = logs.event_level(event)
        if self.stopping and event.kind is EventKind.CANCELLED:
            level = logging.DEBUG  # every task of a memory-only run ends so at a stop: no news
        event_logger.log(level, "%s", logs.event_line(event, duration))
        if event.traceback is not None and event_logger.isEnabledFor(logging.DEBUG):
            event_logger.debug(
                "task=%s run=%s traceback:\n%s", event.task_id, event.run, event.traceback.rstrip()
            )


def _print_problems(problems: list[str]) -> None:
    for problem in problems:
        print(problem, file=sys.stderr)
    sys.stderr.flush()


def _until(deadline: float | None, redraw: float | None) -> float | None:
    if deadline is None:
        return redraw
    left = deadline - time.monotonic()
    return left if redraw is None else min(left, redraw)


class _Signals:
    """Turns signals into commands for the main loop (handlers run on the main thread)."""

    def __init__(self) -> None:
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._interrupts = 0

    def install(self) -> None:
        signal.signal(signal.SIGINT, self._interrupt)
        signal.signal(signal.SIGTERM, lambda *_: self._commands.put("stop"))
        signal.signal(signal.SIGHUP, lambda *_: self._commands.put("reload"))

    def next(self, timeout: float | None) -> Command | None:
        """Wait up to ``timeout`` seconds (``None``: for ever) for the next command."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            # Python runs a handler between bytecodes: a signal that lands just as this thread
            # goes to sleep in the queue's lock is handled only when it wakes. So it never
            # sleeps longer than SIGNAL_LATENCY (a plain get() lost a Ctrl-C now and then).
            left = SIGNAL_LATENCY if deadline is None else min(SIGNAL_LATENCY, deadline - time.monotonic())
            try:
                return self._commands.get(timeout=max(0.0, left))
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    return None

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        self._interrupts += 1
        if self._interrupts == 1:
            self._commands.put("stop")
            return
        # The second Ctrl-C: out at once, whatever is running. Show the cursor the live view hid.
        for handler in logging.getLogger().handlers:
            handler.flush()
        if sys.stdout.isatty():
            os.write(sys.stdout.fileno(), b"\x1b[?25h\n")
        os._exit(exits.INTERRUPTED)


class _View:
    """The live view and its log handler (``rich`` is imported only when there is a view)."""

    def __init__(self) -> None:
        from actors.cli.live_view import ConsoleHandler, LiveView  # noqa: PLC0415 - rich is an extra

        self._live = LiveView()
        self._handler = ConsoleHandler(self._live.console)

    def handler(self) -> logging.Handler:
        return self._handler

    def showing(self) -> AbstractContextManager[object]:
        return self._live

    def draw(self, service: JobService, jobfile: str) -> None:
        now = datetime.now().astimezone()
        title = f"{jobfile} · {now:%H:%M:%S} · Ctrl-C stops"
        self._live.update(service.rows(), now, title)


def _choose_view(requested: bool | None) -> _View | None:
    """The live view if asked for (``--status``), or by default on a terminal; else ``None`` (logs)."""
    if requested is False or (requested is None and not sys.stdout.isatty()):
        return None
    try:
        return _View()
    except ImportError:
        if requested:
            raise
        print(
            "the live view needs rich: pip install 'pykka-taskscheduler[cli]'; logging instead",
            file=sys.stderr,
        )
        return None
