"""Retries on the FakeClock: attempts, backoff, what counts as failed, and races with cancel."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from actors import FakeClock, Retry, Scheduler, current_run
from messages import EventKind, TaskStatus
from tests.conftest import EventRecorder

NO_JITTER = {"jitter": 0.0}


class Flaky:
    """Fails its first ``failures`` calls (``error``), then returns; records (time, attempt, key)."""

    def __init__(self, clock: FakeClock, failures: int, error: type[Exception] = ConnectionError) -> None:
        self.clock = clock
        self.failures = failures
        self.error = error
        self.calls: list[tuple[float, int, str]] = []

    def __call__(self) -> str:
        run = current_run()
        self.calls.append((self.clock.now(), run.attempt, run.key))
        if len(self.calls) <= self.failures:
            raise self.error(f"attempt {run.attempt}")
        return "ok"


def test_a_run_is_retried_with_backoff_until_it_succeeds(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    flaky = Flaky(clock, failures=2)
    handle = s.schedule_once(flaky, 0.0, retry=Retry(attempts=3, delay=1.0, backoff=2.0, **NO_JITTER))
    s.advance(10.0)
    assert handle.result(timeout=5) == "ok"
    assert [(t, a) for t, a, _ in flaky.calls] == [(1000.0, 1), (1001.0, 2), (1003.0, 3)]
    assert len({key for _, _, key in flaky.calls}) == 1  # one run, one key, in every attempt
    info = handle.info()
    assert (info.run_count, info.failure_count, info.status) == (1, 0, TaskStatus.COMPLETED)
    failed = [(e.attempt, e.retrying, e.final) for e in recorder.events if e.kind is EventKind.FAILED]
    assert failed == [(1, True, False), (2, True, False)]
    due = [e.attempt for e in recorder.events if e.kind is EventKind.DUE]
    assert due == [1, 2, 3]  # a DUE for each retry
    completed = [e for e in recorder.events if e.kind is EventKind.COMPLETED]
    assert [(e.attempt, e.final, e.run) for e in completed] == [(3, True, 1)]


def test_only_the_last_attempt_counts_as_failed(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.FAILED})
    flaky = Flaky(clock, failures=99)
    handle = s.schedule_once(flaky, 0.0, retry=Retry(attempts=3, delay=1.0, **NO_JITTER))
    s.advance(10.0)
    with pytest.raises(ConnectionError, match="attempt 3"):
        handle.result(timeout=5)
    info = handle.info()
    assert (info.run_count, info.failure_count, info.consecutive_failures) == (1, 1, 1)
    assert [(e.attempt, e.retrying, e.final) for e in recorder.events] == [
        (1, True, False),
        (2, True, False),
        (3, False, True),
    ]


def test_retry_on_limits_which_errors_are_retried(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    flaky = Flaky(clock, failures=1, error=ValueError)
    handle = s.schedule_once(flaky, 0.0, retry=Retry(attempts=3, on=(ConnectionError,)))
    s.advance(10.0)
    with pytest.raises(ValueError, match="attempt 1"):
        handle.result(timeout=5)
    assert len(flaky.calls) == 1


def test_a_recurring_tasks_next_slot_comes_after_its_final_attempt(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    flaky = Flaky(clock, failures=3)
    handle = s.schedule_at_fixed_rate(
        flaky, 10.0, retry=Retry(attempts=4, delay=4.0, backoff=1.0, **NO_JITTER), max_consecutive_failures=1
    )
    s.advance(25.0)
    # slot 1000: attempts at 1000, 1004, 1008, 1012 (the last succeeds); slot 1010 is skipped
    # (it would overlap); the next slot is 1020.
    assert [t for t, _, _ in flaky.calls] == [1000.0, 1004.0, 1008.0, 1012.0, 1020.0]
    info = handle.info()
    assert (info.run_count, info.failure_count, info.status) == (2, 0, TaskStatus.SCHEDULED)
    handle.cancel()


def test_a_cancel_between_attempts_wins(make_scheduler: Callable[..., Scheduler], clock: FakeClock) -> None:
    s = make_scheduler()
    flaky = Flaky(clock, failures=99)
    handle = s.schedule_once(flaky, 0.0, retry=Retry(attempts=5, delay=10.0, **NO_JITTER))
    s.settle()
    assert len(flaky.calls) == 1
    assert handle.cancel() is True
    s.advance(100.0)
    assert len(flaky.calls) == 1
    assert handle.info().status is TaskStatus.CANCELLED


def test_jitter_moves_the_delay_within_its_fraction_and_is_repeatable() -> None:
    retry = Retry(attempts=5, delay=10.0, backoff=2.0, max_delay=25.0, jitter=0.1)
    waits = [retry.delay_before(attempt, f"t:1:{attempt}") for attempt in (2, 3, 4, 5)]
    assert 9.0 <= waits[0] <= 11.0
    assert 18.0 <= waits[1] <= 22.0
    assert 22.5 <= waits[2] <= 27.5  # capped at max_delay, then jittered
    assert waits == [retry.delay_before(attempt, f"t:1:{attempt}") for attempt in (2, 3, 4, 5)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"attempts": 0},
        {"delay": -1.0},
        {"backoff": 0.5},
        {"jitter": 1.5},
        {"max_delay": float("inf")},
    ],
)
def test_bad_retry_values_are_value_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each names its own field
        Retry(**kwargs)  # type: ignore[arg-type]


def test_bad_retry_types_are_type_errors(make_scheduler: Callable[..., Scheduler]) -> None:
    with pytest.raises(TypeError):
        Retry(on="ConnectionError")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Retry(attempts=2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Retry"):
        make_scheduler().schedule_once(print, 1.0, retry=3)  # type: ignore[arg-type]


RETRY_TIMES = """
import json
from actors import FakeClock, Retry, Scheduler, current_run

clock = FakeClock()
times = {}

def flaky(name):
    times.setdefault(name, []).append(clock.now())
    if current_run().attempt < 4:
        raise ConnectionError(name)

with Scheduler(clock=clock, workers=1) as s:
    for name in ("alpha", "beta"):
        s.schedule_once(flaky, 0.0, task_id=name, args=[name], retry=Retry(attempts=4))
    s.advance(30)
print(json.dumps(times))
"""


# Regression (issue 22, point 9): Retry() has jitter=0.1 by default, and a FakeClock test must be
# able to rely on the times it gives. The jitter is seeded with the task, run and attempt
# (random.Random(str) hashes with SHA-512, not the salted hash()): the same in every process.
def test_the_default_jitter_is_the_same_for_a_task_and_attempt_in_every_process() -> None:
    runs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        child = subprocess.run(
            [sys.executable, "-c", RETRY_TIMES],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        runs.append(json.loads(child.stdout))
    assert runs[0] == runs[1]
    alpha, beta = runs[0]["alpha"], runs[0]["beta"]
    waits = [later - earlier for earlier, later in itertools.pairwise(alpha)]
    assert len(waits) == 3
    for wait, nominal in zip(waits, (1.0, 2.0, 4.0), strict=True):  # the defaults: delay 1, backoff 2
        assert wait != nominal  # jittered ...
        assert abs(wait - nominal) <= 0.1 * nominal + 1e-9  # ... by at most 10 %
    assert alpha != beta  # each task draws its own
    retry = Retry()
    assert waits == pytest.approx(
        [retry.delay_before(attempt, f"alpha:1:{attempt}") for attempt in (2, 3, 4)]
    )
