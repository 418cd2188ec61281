"""The file is the truth: what to do with each job and each stored task, as data.

``reconcile`` compares the jobs of a job file with the tasks the scheduler holds (live or
ended) and the fingerprints recorded when each job was last scheduled, and returns one
``Decision`` per job and per task to cancel. The runner carries them out and logs each; at
start and on every ``SIGHUP`` reload it is the same function.

The rules, by job id:

=====================  ==================  =============================  ==========
in the file            held by scheduler   recorded fingerprint           decision
=====================  ==================  =============================  ==========
yes                    no                  (any)                          ``add``
yes                    live, damaged row   (any)                          ``replace``
yes                    live                equal to the file's            ``keep``
yes                    live                different, or none recorded    ``replace``
yes                    ended               equal to the file's            ``ended``
yes                    ended               different, or none recorded    ``add``
yes                    cancelled           (any)                          ``add``
no                     live                (any)                          ``cancel``
no                     ended               (any)                          (nothing)
=====================  ==================  =============================  ==========

``keep`` leaves the task alone: its counters and its next slot carry on. ``replace`` gives the
live task the new definition and keeps its counters; a live task whose stored row is damaged
(it loaded as a stand-in whose runs fail: ``actors/runtime/durable.py``) is replaced too,
whatever its fingerprint, since the file says what it should be; and if its counters are
what is damaged, it is cancelled first, so that the job starts afresh. ``ended`` leaves a job that ended
(a one-time job that ran, a job stopped by ``max_consecutive_failures``) ended, so that a
restart does not run it again; change its definition to schedule it afresh. A cancelled
task is one the runner cancelled when its job left the file (the command line cancels
nothing else): back in the file, it is scheduled afresh, whatever its fingerprint. Nothing
here imports threads, clocks or the scheduler.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, final

if TYPE_CHECKING:  # only named: the job file checks more than a pure module may import
    from actors.cli.jobfile import JobSpec


__all__ = ["Action", "Decision", "Held", "fingerprints_of", "reconcile"]

Action = Literal["add", "replace", "keep", "ended", "cancel"]


@final
@dataclass(frozen=True, slots=True)
class Held:
    """A task as the scheduler holds it, for the diff: its id, and whether it is still live.

    Attributes:
        task_id: The task's id.
        live: Scheduled or running (not completed, failed or cancelled).
        status: Its status in words (``"scheduled"``, ``"completed"``, ...), for the log.
        damage: For a live stored task whose row does not decode: why (``RowDamage.reason``).
        counters_decode: Whether that damaged row's counters decode (and carry on).
    """

    task_id: str
    live: bool
    status: str
    damage: str | None = None
    counters_decode: bool = True


@final
@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one job or task, and why (the why is logged).

    Attributes:
        action: ``add``, ``replace``, ``keep``, ``ended`` or ``cancel``.
        task_id: The job's (task's) id.
        spec: The job to schedule (``add``, ``replace``) or left alone (``keep``, ``ended``);
            ``None`` for ``cancel``.
        reason: Why, in words.
        afresh: For a ``replace``: cancel the task first, so that the job is added with fresh
            counters (its stored row's do not decode).
    """

    action: Action
    task_id: str
    spec: JobSpec | None
    reason: str
    afresh: bool = False


def reconcile(jobs: Sequence[JobSpec], held: Iterable[Held], recorded: Mapping[str, str]) -> list[Decision]:
    """Return what to do so that the scheduler runs exactly the jobs of the file.

    Args:
        jobs: The job file's jobs, in its order.
        held: Every task the scheduler holds: its live tasks, and the ended ones it still knows.
        recorded: The fingerprint of each job as it was last scheduled, by id.

    Returns:
        One decision per job, in the file's order, then one ``cancel`` per live task not in
        the file, in the order ``held`` gave them.
    """
    by_id = {task.task_id: task for task in held}
    decisions = [_decide(spec, by_id.get(spec.job_id), recorded.get(spec.job_id)) for spec in jobs]
    in_file = {spec.job_id for spec in jobs}
    decisions.extend(
        Decision("cancel", task.task_id, None, "not in the job file any more")
        for task in by_id.values()
        if task.live and task.task_id not in in_file
    )
    return decisions


def fingerprints_of(jobs: Iterable[JobSpec]) -> dict[str, str]:
    """Return each job's fingerprint by id: what to record once the decisions are carried out."""
    return {spec.job_id: spec.fingerprint() for spec in jobs}


def _decide(spec: JobSpec, task: Held | None, recorded: str | None) -> Decision:
    job_id = spec.job_id
    if task is None:
        return Decision("add", job_id, spec, "new job")
    unchanged = recorded == spec.fingerprint()
    if task.live:
        return _decide_live(spec, task, unchanged, recorded)
    if task.status == "cancelled":
        return Decision("add", job_id, spec, "it was cancelled, and it is in the job file again")
    if unchanged:
        return Decision(
            "ended", job_id, spec, f"unchanged, and it ended {task.status}; change it to schedule it again"
        )
    why = "its definition changed" if recorded is not None else "there is no record of its definition"
    return Decision("add", job_id, spec, f"it ended {task.status}, and {why}")


def _decide_live(spec: JobSpec, task: Held, unchanged: bool, recorded: str | None) -> Decision:
    job_id = spec.job_id
    if task.damage is not None:  # the file says what it should be, whatever its fingerprint
        why = f"its stored row was damaged: {task.damage}"
        if task.counters_decode:
            return Decision("replace", job_id, spec, why)
        why = f"{why}; its counters did not decode, so they start at zero"
        return Decision("replace", job_id, spec, why, afresh=True)
    if unchanged:
        return Decision("keep", job_id, spec, "unchanged")
    why = "definition changed" if recorded is not None else "no record of its definition"
    return Decision("replace", job_id, spec, why)
