"""``check JOBFILE``: validate a job file without running anything, and show when each job runs.

It parses, imports every ``fn`` and checks that it is callable and takes the job's arguments,
checks every trigger (all in one pass: every problem is reported), then prints each job with
its next three run times in its zone and in UTC. Threads: the caller's.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, tzinfo

from actors.cli import exits
from actors.cli.jobfile import JobFile, JobSpec, check_jobfile, describe_next_runs
from actors.cli.rows import describe_spec, format_duration
from actors.cli.stores import shown_store
from actors.core.zones import resolve_zone
from actors.errors import JobFileError

__all__ = ["check"]

NEXT_RUNS = 3


def check(path: str, now: datetime | None = None) -> int:
    """Check the job file at ``path``; print its jobs (stdout) or its problems (stderr).

    Returns:
        The exit code: 0 if the file is valid, 2 if not.
    """
    now = now or datetime.now(UTC)
    try:
        jobfile = check_jobfile(path, now)
    except JobFileError as error:
        print("\n".join(error.problems), file=sys.stderr)
        return exits.BAD_INPUT
    lines = [line for spec in jobfile.jobs for line in _describe(spec, jobfile, now)]
    store = ":memory: (nothing kept)" if jobfile.store is None else shown_store(jobfile.store)
    print(f"{path}: valid: {len(jobfile.jobs)} job(s), {jobfile.workers} workers, store {store}")
    print("\n".join(lines))
    return exits.OK


def _describe(spec: JobSpec, jobfile: JobFile, now: datetime) -> list[str]:
    zone = _zone(spec, jobfile)
    header = f"{spec.job_id}: {describe_spec(spec)}"
    if spec.initial_delay:
        header += f", first after {format_duration(spec.initial_delay)}"
    header += "".join(f", {option}" for option in _options(spec))
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


def _options(spec: JobSpec) -> list[str]:
    """The options a job sets beside its trigger, in words (``timeout 30s``, ``in a process``...)."""
    options = []
    if spec.timeout is not None:
        options.append(f"timeout {format_duration(spec.timeout)}")
    if spec.retry is not None:
        retry = spec.retry
        on = ", ".join(reference.removeprefix("builtins:") for reference in retry.on)
        options.append(
            f"retry: {retry.attempts} attempts, {format_duration(retry.delay)} then x{retry.backoff:g} "
            f"(at most {format_duration(retry.max_delay)}, jitter {retry.jitter:g}), on {on}"
        )
    if spec.executor == "process":
        options.append("in a process")
    if spec.durable is False:
        options.append("memory only")
    if spec.overlap is not None and spec.overlap != "skip":
        options.append(
            f"overlap {spec.overlap}" + (f" (at most {spec.max_instances})" if spec.max_instances else "")
        )
    if spec.catch_up is not None and spec.catch_up != "latest":
        options.append(
            f"catch up {spec.catch_up}" + (f" (at most {spec.max_catch_up})" if spec.max_catch_up else "")
        )
    if spec.jitter:
        options.append(f"jitter {format_duration(spec.jitter)}")
    if spec.keep_result:
        options.append("keeps results")
    if spec.paused is not None:
        options.append("paused" if spec.paused else "resumed at each start")
    return options


def _zone(spec: JobSpec, jobfile: JobFile) -> tzinfo:
    if spec.at is not None:
        assert spec.at.tzinfo is not None
        return spec.at.tzinfo
    return resolve_zone(spec.tz or jobfile.tz)


def _zone_label(spec: JobSpec, zone: tzinfo) -> str:
    return str(zone) if spec.at is None else "as written"
