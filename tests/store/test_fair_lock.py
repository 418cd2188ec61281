"""FairLock: mutual exclusion, and waiters served in the order they arrived."""

from __future__ import annotations

import threading
import time

from actors.store.fair_lock import FairLock


def wait_queued(lock: FairLock, count: int, timeout: float = 10.0) -> None:
    """Spin until ``count`` threads wait (a waiter blocks at once, so this is short)."""
    deadline = time.monotonic() + timeout
    while lock.queued < count:
        assert time.monotonic() < deadline, f"{count} waiters never queued"


def test_waiters_are_served_in_arrival_order() -> None:
    lock = FairLock()
    order: list[int] = []
    lock.acquire()

    def waiter(n: int) -> None:
        with lock:
            order.append(n)

    threads = []
    for n in range(5):
        thread = threading.Thread(target=waiter, args=(n,), name=f"waiter-{n}")
        thread.start()
        wait_queued(lock, n + 1)  # n + 1 queued: this one arrived after the ones before
        threads.append(thread)
    lock.release()
    for thread in threads:
        thread.join(timeout=10)

    assert order == [0, 1, 2, 3, 4]
    assert lock.queued == 0
    with lock:  # free again
        pass


def test_one_holder_at_a_time_under_contention() -> None:
    lock = FairLock()
    inside = 0
    overlaps = 0
    total = 0

    def worker() -> None:
        nonlocal inside, overlaps, total
        for _ in range(2000):
            with lock:
                inside += 1
                overlaps += inside != 1
                total += 1
                inside -= 1

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert (overlaps, total) == (0, 16_000)
