"""The functions examples/jobs.toml runs: a heartbeat, a flaky poller, a cron report, a one-time job.

The job file names them ``"tasks:<function>"``; ``run`` puts the job file's folder first on
``sys.path``, so this module is found beside it. Each runs on a worker thread of the scheduler.
"""

from __future__ import annotations

import logging
import random

from actors import current_run

logger = logging.getLogger("tasks")


def heartbeat(service: str) -> str:
    """Say the service is alive (every second): nothing to do but be on time."""
    logger.debug("%s is alive (%s)", service, current_run().key)
    return "ok"


def poll_queue(queue: str, fail_rate: float = 0.3) -> int:
    """Take what waits in ``queue``; now and then the queue does not answer, and the run fails."""
    if random.random() < fail_rate:
        raise ConnectionError(f"queue {queue!r} did not answer")
    taken = random.randint(0, 5)
    logger.debug("took %d message(s) from %s", taken, queue)
    return taken


def report(title: str) -> None:
    """Write the report (a cron job: every minute in the example, to be seen soon)."""
    logger.info("%s: report %s", title, current_run().key)


def welcome() -> None:
    """Run once: the job file's ``at`` is in the past, so at the first start, and never again."""
    logger.info("welcome: the first start of the example schedule")
