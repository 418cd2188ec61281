"""The outcome saver's group commit: what waits goes in one commit; failures are tried again."""

from __future__ import annotations

import threading

from actors.shared.outcome_saver import OutcomeSaver


def test_items_put_while_a_commit_is_in_flight_go_together_in_the_next() -> None:
    entered, release = threading.Event(), threading.Event()
    commits: list[list[int]] = []

    def commit(items: list[int]) -> bool:
        commits.append(list(items))
        entered.set()
        assert release.wait(5)
        return True

    saver: OutcomeSaver[int] = OutcomeSaver(commit, poll=1.0)
    saver.start()
    saver.put(1)
    assert entered.wait(5)
    assert saver.busy()
    for item in (2, 3, 4):
        saver.put(item)
    release.set()
    assert saver.stop(timeout=5) == []
    assert commits == [[1], [2, 3, 4]]
    assert not saver.busy()


def test_a_failed_commit_is_tried_again_and_does_not_count_as_busy() -> None:
    attempts: list[list[str]] = []
    retried = threading.Event()

    def commit(items: list[str]) -> bool:
        attempts.append(list(items))
        if len(attempts) == 1:
            return False  # the store failed
        retried.set()
        return True

    saver: OutcomeSaver[str] = OutcomeSaver(commit, poll=0.05)
    saver.start()
    saver.put("a")
    assert retried.wait(5)
    assert attempts == [["a"], ["a"]]
    assert saver.stop(timeout=5) == []


def test_stop_makes_one_last_attempt_and_returns_what_it_could_not_save() -> None:
    attempts: list[list[str]] = []
    failed = threading.Event()

    def commit(items: list[str]) -> bool:
        attempts.append(list(items))
        failed.set()
        return False

    saver: OutcomeSaver[str] = OutcomeSaver(commit, poll=60.0)  # no retry before the stop
    saver.start()
    saver.put("a")
    assert failed.wait(5)
    assert not saver.busy()  # a store that is down holds no shutdown up
    assert saver.unsaved() == 1
    assert saver.stop(timeout=5) == ["a"]
    assert attempts == [["a"], ["a"]]
