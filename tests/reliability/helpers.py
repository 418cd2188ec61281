"""Helpers shared by the reliability tests: normalised views, thread accounting, figures."""

from __future__ import annotations

import resource
import sys
import threading
from collections.abc import Iterable

from messages import TaskEvent, TaskInfo

ErrorSig = tuple[type[BaseException], str] | None


def err_sig(error: BaseException | None) -> ErrorSig:
    """Compare exceptions by type and text (the objects are made on worker threads)."""
    return None if error is None else (type(error), str(error))


def norm_info(info: TaskInfo) -> tuple[object, ...]:
    return (
        info.task_id,
        info.name,
        info.trigger,
        info.status,
        info.run_count,
        info.failure_count,
        info.consecutive_failures,
        info.next_run_at,
        err_sig(info.last_error),
    )


def norm_event(event: TaskEvent) -> tuple[object, ...]:
    return (
        event.kind,
        event.task_id,
        event.name,
        event.at,
        event.run,
        event.due_at,
        err_sig(event.error),
    )


class Listener:
    """A listener that only appends (list.append is atomic; read it after settle/flush)."""

    def __init__(self) -> None:
        self.events: list[TaskEvent] = []

    def __call__(self, event: TaskEvent) -> None:
        self.events.append(event)


def new_threads(before: Iterable[threading.Thread]) -> list[threading.Thread]:
    """Threads alive now that were not in ``before``."""
    old = set(before)
    return [t for t in threading.enumerate() if t not in old and t.is_alive()]


def rss_mib() -> float:
    """Resident set size of this process now, in MiB (Linux; elsewhere the peak so far)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        return peak_rss_mib()
    return pages * resource.getpagesize() / 2**20


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def report(title: str, **figures: object) -> None:
    """Print a line of figures (shown with ``pytest -s``, and in the captured output on failure)."""
    print(f"[reliability] {title}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))
