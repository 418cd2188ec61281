"""Pause, resume and run now of a memory task, decided on the caller's thread by the task's token.

The races these close: a pause, or a ``run_now``, made on one thread while the scheduler makes
a run come due on another (the FakeClock advanced at the same moment). Each round lines the two
threads up on a barrier; the outcome must be one a sequential history gives, whichever won.
No sleeps: every wait is a barrier, a join or a ``settle``, each with a timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from actors import Scheduler, current_run
from actors.sync.clock import FakeClock
from messages import EventKind, Pause, Resume, RunNow, TaskStatus
from tests.conftest import EventRecorder

INTERVAL = 10.0
ROUNDS = 30
TIMEOUT = 10.0

RUNS: list[tuple[str, int, bool, bool]] = []  # (task id, run number, manual, saw the pause returned)
RUNS_LOCK = threading.Lock()  # guards RUNS: the workers append
PAUSE_RETURNED = threading.Event()  # set by the pausing thread once pause() has returned True


def note() -> None:
    run = current_run()
    with RUNS_LOCK:
        RUNS.append((run.task_id, run.run, run.manual, PAUSE_RETURNED.is_set()))


def runs_of(task_id: str) -> list[tuple[int, bool, bool]]:
    with RUNS_LOCK:
        return [(number, manual, saw) for tid, number, manual, saw in RUNS if tid == task_id]


@pytest.fixture
def recorder() -> EventRecorder:
    return EventRecorder()


@pytest.fixture
def scheduler(recorder: EventRecorder) -> Iterator[Scheduler]:
    with RUNS_LOCK:
        RUNS.clear()
    PAUSE_RETURNED.clear()
    s = Scheduler(workers=2, clock=FakeClock(start=1000.0), listeners=[recorder])
    yield s
    s.shutdown(timeout=10)


def race(first: Callable[[], object], second: Callable[[], object]) -> list[object]:
    """Run ``first`` here and ``second`` on another thread, released together; both results."""
    barrier = threading.Barrier(2, timeout=TIMEOUT)
    results: list[object] = [None, None]

    def other() -> None:
        barrier.wait()
        results[1] = second()

    thread = threading.Thread(target=other, name="test-racer")
    thread.start()
    barrier.wait()
    results[0] = first()
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    return results


def test_run_now_racing_a_scheduled_start_gives_one_extra_run_exactly_when_it_says_so(
    scheduler: Scheduler,
) -> None:
    s = scheduler
    s.schedule_at_fixed_rate(note, INTERVAL, INTERVAL, task_id="op")  # overlap "skip"
    seen = 0
    answers = set()
    for _ in range(ROUNDS):
        _, answer = race(lambda: s.advance(INTERVAL), lambda: s.run_now("op"))
        s.settle()
        runs = runs_of("op")[seen:]
        seen += len(runs)
        manual = [m for _, m, _ in runs]
        answers.add(answer)
        if answer is True:  # one manual run and the slot's own (the run_now came before it or after)
            assert sorted(manual) == [False, True], manual
        else:  # a run was about to start or going: "skip" queues nothing
            assert answer is False
            assert manual == [False], manual
    info = s.info("op")
    assert info.run_count == seen
    assert info.status is TaskStatus.SCHEDULED
    assert [record.manual for record in s.history("op", limit=1000)][::-1] == [m for _, m, _ in runs_of("op")]


def test_a_pause_racing_runs_coming_due_lets_no_run_start_after_it(
    scheduler: Scheduler, recorder: EventRecorder
) -> None:
    s = scheduler
    for index in range(ROUNDS):
        task_id = f"op-{index}"
        PAUSE_RETURNED.clear()
        s.schedule_at_fixed_rate(note, INTERVAL, INTERVAL, task_id=task_id)

        def pause(task_id: str = task_id) -> bool:
            paused = s.pause(task_id)
            PAUSE_RETURNED.set()
            return paused

        _, paused = race(lambda: s.advance(INTERVAL), pause)
        assert paused is True
        for _ in range(5):  # five more slots come due: none of them runs
            s.advance(INTERVAL)
        s.settle()
        before = runs_of(task_id)
        assert len(before) <= 1  # the slot's run, if it started before the pause won
        assert sum(saw for _, _, saw in before) <= 1  # no run started after pause() returned
        info = s.info(task_id)
        assert info.status is TaskStatus.PAUSED
        assert info.run_count == len(before)
        s.advance(INTERVAL / 2)  # off its grid: what runs at the resume is the late run alone
        assert s.resume(task_id) is True
        s.settle()  # "latest": one late run for the slots it missed, at once
        assert len(runs_of(task_id)) == len(before) + 1
        kinds = recorder.kinds(task_id)
        assert kinds.count(EventKind.PAUSED) == 1
        assert kinds.count(EventKind.RESUMED) == 1
        assert EventKind.CANCELLED not in kinds
        assert s.cancel(task_id) is True


def test_pause_and_resume_racing_each_other_end_as_the_last_one_won(scheduler: Scheduler) -> None:
    s = scheduler
    s.schedule_at_fixed_rate(note, INTERVAL, INTERVAL, task_id="op")
    for _ in range(ROUNDS):
        assert s.pause("op") is True
        resumed, paused = race(lambda: s.resume("op"), lambda: s.pause("op"))
        # Sequentially: resume then pause (both True), or pause (False: already) then resume.
        assert (resumed, paused) in ((True, True), (True, False))
        held = s.info("op").status is TaskStatus.PAUSED
        assert held is (paused is True)
        if held:
            assert s.resume("op") is True
        assert s.info("op").status is TaskStatus.SCHEDULED


def test_the_actor_side_messages_answer_as_the_facade_and_agree_with_it(scheduler: Scheduler) -> None:
    s = scheduler
    s.schedule_at_fixed_rate(note, 100 * INTERVAL, 100 * INTERVAL, task_id="op")
    assert s.ref.ask(Pause("op"), timeout=TIMEOUT) is True
    assert s.pause("op") is False  # the actor's move held the same token
    assert s.info("op").status is TaskStatus.PAUSED
    assert s.ref.ask(Pause("op"), timeout=TIMEOUT) is False
    assert s.resume("op") is True
    assert s.ref.ask(Resume("op"), timeout=TIMEOUT) is False
    assert s.ref.ask(RunNow("op"), timeout=TIMEOUT) is True
    s.settle()
    assert runs_of("op") == [(1, True, False)]
    assert s.ref.ask(RunNow("nobody"), timeout=TIMEOUT) is False


def test_racing_run_nows_of_a_paused_task_each_answer_true_only_for_a_run_of_its_own(
    scheduler: Scheduler,
) -> None:
    s = scheduler
    s.schedule_at_fixed_rate(note, 100 * INTERVAL, 100 * INTERVAL, task_id="op")
    assert s.pause("op") is True
    promised = 0
    for _ in range(ROUNDS):
        answers = race(lambda: s.run_now("op"), lambda: s.run_now("op"))
        # Both True only if the first's run had started (and so ended: "skip") before the second.
        assert True in answers
        promised += answers.count(True)
        s.settle()
        assert [manual for _, manual, _ in runs_of("op")] == [True] * promised
    info = s.info("op")
    assert info.status is TaskStatus.PAUSED  # each got its run and it stays paused
    assert info.run_count == promised


def test_after_shutdown_every_operation_answers_false(scheduler: Scheduler) -> None:
    s = scheduler
    s.schedule_at_fixed_rate(note, INTERVAL, INTERVAL, task_id="op")
    assert s.pause("op") is True
    s.shutdown(timeout=10)
    assert s.pause("op") is False
    assert s.resume("op") is False
    assert s.run_now("op") is False


def test_a_task_paused_by_its_token_then_given_other_options_is_not_left_held(scheduler: Scheduler) -> None:
    s = scheduler
    s.schedule_at_fixed_rate(note, INTERVAL, INTERVAL, task_id="op")
    assert s.pause("op") is True  # decided on the token (overlap "skip")
    s.schedule_at_fixed_rate(
        note, INTERVAL, INTERVAL, task_id="op", if_exists="replace", overlap="allow", max_instances=2
    )
    assert s.resume("op") is True  # now the scheduler's to decide ("allow")
    s.schedule_at_fixed_rate(note, INTERVAL, INTERVAL, task_id="op", if_exists="replace")  # "skip" again
    s.advance(INTERVAL)
    s.settle()
    assert len(runs_of("op")) >= 1  # its runs start: the token does not hold them back
    assert s.info("op").status is TaskStatus.SCHEDULED
    assert s.pause("op") is True
    assert s.resume("op") is True
