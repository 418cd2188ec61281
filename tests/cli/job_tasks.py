"""The functions the CLI tests' job files run; copied beside each test's job file as tasks.py."""

from __future__ import annotations

import logging
import os
import time

from actors import current_run

logger = logging.getLogger("tasks")

VALUE = 3  # not callable: a job naming it is refused


def tick(*args: object, **kwargs: object) -> None:
    """Do nothing, on time."""


def say(word: str) -> None:
    """Say ``word`` on the log, which the tests read."""
    logger.warning("said %s", word)


def flaky() -> None:
    """Fail on every even run."""
    run = current_run().run
    if run % 2 == 0:
        raise RuntimeError(f"flaked on run {run}")


def slow(seconds: float) -> None:
    """Take ``seconds``, saying when it starts and ends (on the log, which the tests read)."""
    logger.warning("slow started")
    time.sleep(seconds)
    logger.warning("slow finished")


def fails_once() -> None:
    """Fail on the second run only: the runs after it succeed."""
    run = current_run().run
    if run == 2:
        raise RuntimeError(f"failed once, on run {run}")


def fails_twice() -> None:
    """Fail the first two attempts of each run with ConnectionError, then succeed; log each attempt."""
    run = current_run()
    attempt = run.attempt
    logger.warning("%s: attempt %d of run %d", run.task_id, attempt, run.run)
    if attempt <= 2:
        raise ConnectionError(f"attempt {attempt} could not connect")


def record_pid(path: str) -> None:
    """Write the id of the process running it to ``path`` (a process job's proof of where it ran)."""
    with open(path, "w") as file:
        file.write(str(os.getpid()))


def answer(value: int) -> dict[str, int]:
    """Return ``{"answer": value}``: JSON data a ``keep_result`` job keeps with its run."""
    return {"answer": value}
