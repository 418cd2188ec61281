"""``check JOBFILE``: validate a job file without running anything, and show when each job runs.

It parses, imports every ``fn`` and checks that it is callable, checks every trigger, then
prints each job with its next three run times in its zone and in UTC. Threads: the caller's.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, tzinfo

from actors.cli import exits
from actors.cli.jobfile import JobFile, JobSpec, describe_next_runs, import_problems, load_jobfile
from actors.cli.rows import describe_spec, format_duration
from actors.cli.stores import shown_store, store_problem
from actors.errors import JobFileError
from actors.zones import resolve_zone

__all__ = ["check", "store_problems", "trigger_problems"]

NEXT_RUNS = 3


def check(path: str, now: datetime | None = None) -> int:
    """Check the job file at ``path``; print its jobs (stdout) or its problems (stderr).

    Returns:
        The exit code: 0 if the file is valid, 2 if not.
    """
    now = now or datetime.now(UTC)
    try:
        jobfile = load_jobfile(path)
        problems = store_problems(jobfile) + import_problems(jobfile) + trigger_problems(jobfile, now)
        lines = [] if problems else [line for spec in jobfile.jobs for line in _describe(spec, jobfile, now)]
    except JobFileError as error:
        problems = error.problems
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return exits.BAD_INPUT
    store = ":memory: (nothing kept)" if jobfile.store is None else shown_store(jobfile.store)
    print(f"{path}: valid: {len(jobfile.jobs)} job(s), {jobfile.workers} workers, store {store}")
    print("\n".join(lines))
    return exits.OK


def store_problems(jobfile: JobFile) -> list[str]:
    """Return one line if the store cannot be used as written (a PostgreSQL URL: psycopg, its form)."""
    problem = store_problem(jobfile.store)
    return [] if problem is None else [f"{jobfile.path.name}: [scheduler] key 'store': {problem}"]


def trigger_problems(jobfile: JobFile, now: datetime) -> list[str]:
    """Return one line per job whose trigger gives no next run at all (a cron that never fires)."""
    problems = []
    for spec in jobfile.jobs:
        try:
            describe_next_runs(spec, now, 1)
        except ValueError as error:
            problems.append(f"{jobfile.path.name}: job {spec.job_id!r}: key {spec.kind!r}: {error}")
    return problems


def _describe(spec: JobSpec, jobfile: JobFile, now: datetime) -> list[str]:
    zone = _zone(spec, jobfile)
    header = f"{spec.job_id}: {describe_spec(spec)}"
    if spec.initial_delay:
        header += f", first after {format_duration(spec.initial_delay)}"
    lines = [f"{header}: {spec.fn}"]
    runs = describe_next_runs(spec, now, NEXT_RUNS)
    if not runs:
        lines.append("  no more runs: its time has passed (it runs once, at once, if it never ran)")
    for instant in runs:
        local, utc = instant.astimezone(zone), instant.astimezone(UTC)
        lines.append(
            f"  {local:%Y-%m-%d %H:%M:%S %z} ({_zone_label(spec, zone)})  =  {utc:%Y-%m-%d %H:%M:%S} UTC"
        )
    return lines


def _zone(spec: JobSpec, jobfile: JobFile) -> tzinfo:
    if spec.at is not None:
        assert spec.at.tzinfo is not None
        return spec.at.tzinfo
    return resolve_zone(spec.tz or jobfile.tz)


def _zone_label(spec: JobSpec, zone: tzinfo) -> str:
    return str(zone) if spec.at is None else "as written"
