"""Module-level task functions for the operations matrix (durable tasks are stored by reference)."""

from __future__ import annotations

import threading

from actors import current_run

RUNS: list[tuple[str, bool]] = []  # (task id, whether the run was a run_now run), every node here
LOCK = threading.Lock()  # guards RUNS: workers of every node append


def note() -> None:
    """Record the run: its task and whether it is manual."""
    run = current_run()
    with LOCK:
        RUNS.append((run.task_id, run.manual))


def noop() -> None:
    return None


def runs(task_id: str) -> list[bool]:
    """The ``manual`` flags of the recorded runs of ``task_id``, in order."""
    with LOCK:
        return [manual for tid, manual in RUNS if tid == task_id]


def reset() -> None:
    with LOCK:
        RUNS.clear()
    RUNNING.clear()


HELD: list[int] = []  # run numbers of hold()'s runs that have started, in start order
HELD_CHANGED = threading.Condition(LOCK)  # notified as HELD grows
RELEASE = threading.Event()  # opened by the test: every held run returns


def hold() -> int:
    """Note the run's number, then wait until the test opens ``RELEASE``; return the number."""
    number = current_run().run
    with HELD_CHANGED:
        HELD.append(number)
        HELD_CHANGED.notify_all()
    RELEASE.wait(30)
    return number


def wait_held(count: int, timeout: float) -> list[int]:
    """Wait until ``count`` held runs have started; return their numbers."""
    with HELD_CHANGED:
        assert HELD_CHANGED.wait_for(lambda: len(HELD) >= count, timeout), HELD
        return list(HELD)


def reset_held() -> None:
    RELEASE.set()  # nothing may stay blocked after a test
    with LOCK:
        HELD.clear()
    RELEASE.clear()


RUNNING = threading.Event()  # a scheduled run of make_way is in progress


def make_way() -> None:
    """Record the run; a scheduled one then waits until asked to stop (raising ``RunCancelled``)."""
    note()
    run = current_run()
    if run.manual:
        return
    RUNNING.set()
    for _ in range(300):  # at most 30 s
        if run.cancel_requested:
            break
        threading.Event().wait(0.1)
    run.check()


def stall_first() -> int:
    """Run 1 waits until asked to stop (its timeout), then raises ``RunCancelled``; the others return."""
    run = current_run()
    if run.run == 1:
        RUNNING.set()
        for _ in range(300):  # at most 30 s
            if run.cancel_requested:
                break
            threading.Event().wait(0.1)
        run.check()
    return run.run


def fail_first() -> int:
    """Run 1's first attempt raises; every other attempt and run returns its run number."""
    run = current_run()
    if run.run == 1 and run.attempt == 1:
        raise RuntimeError("the first attempt of run 1")
    return run.run
