"""A plain, well-made timer-heap scheduler: the yardstick for the benchmarks.

This is *not* part of the library. It is the design every textbook shows,
written carefully so that it marks the practical limit for an in-process
Python scheduler with a worker pool:

* a binary heap of ``(run_at, task_id, fn, interval)`` entries;
* a dict ``task_id -> live entry`` for lazy cancellation: cancelling only
  drops the dict entry, and the timer thread discards heap entries that are
  no longer the live one; the heap is compacted when stale entries outnumber
  live ones, so memory stays bounded under cancel-heavy loads;
* one timer thread that sleeps on a :class:`threading.Condition` until the
  head is due (it is notified only when a new task becomes the head, so
  scheduling far-future work never wakes it);
* due tasks are popped in bounded batches under the lock and handed to a
  :class:`concurrent.futures.ThreadPoolExecutor` outside the lock.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["TextbookScheduler", "shutdown_executor"]

#: Heap entry: (run_at, task_id, fn, interval or None for one-time tasks).
_Entry = tuple[float, int, Callable[[], object], "float | None"]

#: Longest single wait of the timer thread; it re-checks the heap afterwards.
_MAX_WAIT_S = 60.0
#: Most due tasks popped per lock hold, so producers are never starved.
_BATCH = 1024


def shutdown_executor(pool: ThreadPoolExecutor, timeout: float) -> bool:
    """Shut ``pool`` down, cancelling queued work; wait at most ``timeout`` s.

    :meth:`ThreadPoolExecutor.shutdown` has no timeout, so the blocking call
    runs in a helper thread that is joined with one. Returns True when the
    pool's threads finished in time.
    """
    helper = threading.Thread(
        target=pool.shutdown,
        kwargs={"wait": True, "cancel_futures": True},
        name="executor-shutdown",
        daemon=True,
    )
    helper.start()
    helper.join(timeout)
    return not helper.is_alive()


class TextbookScheduler:
    """Heap + condition variable + thread pool scheduler (the yardstick).

    Times are seconds on ``clock`` (default :func:`time.monotonic`).
    """

    def __init__(
        self,
        workers: int = 4,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[_Entry] = []
        self._live: dict[int, _Entry] = {}
        self._ids = itertools.count(1)
        self._stopped = False
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="textbook-worker")
        self._thread = threading.Thread(target=self._run, name="textbook-timer", daemon=True)

    # -- public API ---------------------------------------------------------

    def start(self) -> None:
        """Start the timer thread."""
        self._thread.start()

    def schedule(
        self,
        fn: Callable[[], object],
        delay: float,
        interval: float | None = None,
    ) -> int:
        """Run ``fn`` after ``delay`` s, then every ``interval`` s if given.

        Repeats are at fixed rate: run ``k`` is due at ``first + k*interval``.
        Returns the task id for :meth:`cancel`.
        """
        run_at = self._clock() + delay
        with self._cond:
            if self._stopped:
                raise RuntimeError("scheduler is shut down")
            task_id = next(self._ids)
            entry: _Entry = (run_at, task_id, fn, interval)
            self._live[task_id] = entry
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:  # new head: the timer may sleep too long
                self._cond.notify()
        return task_id

    def cancel(self, task_id: int) -> bool:
        """Cancel a task; True if it was pending (a one-time task not yet run)."""
        with self._cond:
            if self._live.pop(task_id, None) is None:
                return False
            heap = self._heap
            if len(heap) > 64 and len(heap) > 2 * len(self._live):
                live = self._live
                heap[:] = [e for e in heap if live.get(e[1]) is e]
                heapq.heapify(heap)
            return True

    def pending(self) -> int:
        """Number of live (not yet run or cancelled) tasks."""
        with self._cond:
            return len(self._live)

    def shutdown(self, wait: bool = True, timeout: float | None = 10.0) -> bool:
        """Stop the timer, drop pending tasks and stop the workers.

        With ``wait`` the call waits up to ``timeout`` s (None: 10 s) for the
        timer and worker threads; returns True when they all finished.
        """
        with self._cond:
            self._stopped = True
            self._live.clear()
            self._heap.clear()
            self._cond.notify_all()
        if not wait:
            self._pool.shutdown(wait=False, cancel_futures=True)
            return False
        limit = 10.0 if timeout is None else timeout
        deadline = time.monotonic() + limit
        if self._thread.ident is not None:
            self._thread.join(limit)
        pool_done = shutdown_executor(self._pool, max(0.0, deadline - time.monotonic()))
        return pool_done and not self._thread.is_alive()

    # -- timer thread -------------------------------------------------------

    def _run(self) -> None:
        heap = self._heap
        live = self._live
        pop, push = heapq.heappop, heapq.heappush
        submit = self._pool.submit
        while True:
            due: list[Callable[[], object]] = []
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    while heap and live.get(heap[0][1]) is not heap[0]:
                        pop(heap)  # lazily cancelled
                    if not heap:
                        self._cond.wait(_MAX_WAIT_S)
                        continue
                    now = self._clock()
                    wait = heap[0][0] - now
                    if wait <= 0:
                        break
                    self._cond.wait(min(wait, _MAX_WAIT_S))
                while heap and heap[0][0] <= now and len(due) < _BATCH:
                    entry = pop(heap)
                    run_at, task_id, fn, interval = entry
                    if live.get(task_id) is not entry:
                        continue
                    if interval is None:
                        del live[task_id]
                    else:
                        nxt: _Entry = (run_at + interval, task_id, fn, interval)
                        live[task_id] = nxt
                        push(heap, nxt)
                    due.append(fn)
            try:
                for fn in due:
                    submit(fn)
            except RuntimeError:  # pool shut down underneath us
                return
