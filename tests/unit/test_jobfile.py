"""The job file (actors.cli.jobfile): its keys, its rules, and the problems it reports."""

from __future__ import annotations

import dataclasses
import re
import sys
import typing
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from actors.cli.jobfile import (
    JOB_KEYS,
    SCHEDULER_KEYS,
    JobFile,
    JobSpec,
    check_jobfile,
    describe_next_runs,
    import_problems,
    load_jobfile,
    parse_duration,
    parse_jobfile,
)
from actors.cli.jobkeys import TRIGGERS, Kind, RetrySpec
from actors.core.retry import Retry
from actors.errors import JobFileError, SchedulerError

ROOT = Path(__file__).resolve().parents[2]

COMPLETE = """\
[scheduler]
workers = 8
store = "state/jobs.db"
tz = "Europe/Berlin"

[jobs.heartbeat]
fn = "tasks:heartbeat"
every = "10s"
initial_delay = "5s"
args = [1, 2]
kwargs = { region = "eu" }
max_consecutive_failures = 5
misfire_grace = "1m"

[jobs.cleanup]
fn = "tasks:cleanup"
delay = 30
initial_delay = 0.5

[jobs.report]
fn = "reports.daily:send"
cron = "0 9 * * MON-FRI"

[jobs.nightly]
fn = "tasks:nightly"
cron = "@daily"
tz = "UTC"

[jobs.party]
fn = "tasks:party"
at = 2026-12-24T18:00:00+01:00
misfire_grace = 3600
"""


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in tmp_path, so that messages name the file as the user typed it: 'jobs.toml'."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(folder: Path, text: str, name: str = "jobs.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def problems_of(text: str) -> list[str]:
    with pytest.raises(JobFileError) as caught:
        parse_jobfile(text, "jobs.toml")
    assert str(caught.value) == "\n".join(caught.value.problems)
    return caught.value.problems


# -- a valid file ----------------------------------------------------------------------------------


def test_a_complete_file_reads_into_plain_data(in_tmp: Path) -> None:
    write(in_tmp, COMPLETE)
    jobfile = load_jobfile("jobs.toml")
    assert jobfile == JobFile(
        path=in_tmp / "jobs.toml",
        workers=8,
        store=in_tmp / "state" / "jobs.db",
        tz="Europe/Berlin",
        jobs=(
            JobSpec(
                job_id="heartbeat",
                fn="tasks:heartbeat",
                kind="every",
                every=10.0,
                initial_delay=5.0,
                args=(1, 2),
                kwargs={"region": "eu"},
                max_consecutive_failures=5,
                misfire_grace=60.0,
            ),
            JobSpec(job_id="cleanup", fn="tasks:cleanup", kind="delay", delay=30.0, initial_delay=0.5),
            JobSpec(
                job_id="report",
                fn="reports.daily:send",
                kind="cron",
                cron="0 9 * * MON-FRI",
                tz="Europe/Berlin",
            ),
            JobSpec(job_id="nightly", fn="tasks:nightly", kind="cron", cron="@daily", tz="UTC"),
            JobSpec(
                job_id="party",
                fn="tasks:party",
                kind="at",
                at=datetime(2026, 12, 24, 18, tzinfo=timezone(timedelta(hours=1))),
                misfire_grace=3600.0,
            ),
        ),
    )
    heartbeat = jobfile.jobs[0]
    assert type(heartbeat.every) is float
    assert type(heartbeat.args) is tuple
    with pytest.raises(TypeError):
        heartbeat.kwargs["region"] = "us"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        heartbeat.every = 1.0  # type: ignore[misc]
    assert jobfile.folder == in_tmp


def test_defaults(in_tmp: Path) -> None:
    write(in_tmp, '[jobs.a]\nfn = "t:f"\nevery = 1\n', name="night-shift.toml")
    jobfile = load_jobfile(in_tmp / "night-shift.toml")
    assert (jobfile.workers, jobfile.store, jobfile.tz) == (4, in_tmp / "night-shift.db", "UTC")
    spec = jobfile.jobs[0]
    assert (spec.initial_delay, spec.args, dict(spec.kwargs), spec.max_consecutive_failures) == (
        None,
        (),
        {},
        None,
    )
    assert (spec.misfire_grace, spec.tz, spec.delay, spec.cron, spec.at) == (None, None, None, None, None)


def test_store_memory_and_absolute(in_tmp: Path) -> None:
    memory = parse_jobfile('[scheduler]\nstore = ":memory:"\n[jobs.a]\nfn = "t:f"\nevery = 1\n', "jobs.toml")
    assert memory.store is None
    elsewhere = in_tmp / "elsewhere.db"
    absolute = parse_jobfile(
        f'[scheduler]\nstore = "{elsewhere}"\n[jobs.a]\nfn = "t:f"\nevery = 1\n', "j.toml"
    )
    assert absolute.store == elsewhere


def test_scheduler_zone_is_the_cron_default_and_names_are_normalised() -> None:
    text = '[scheduler]\ntz = "UTC+00:00"\n[jobs.a]\nfn = "t:f"\ncron = "@hourly"\n'
    jobfile = parse_jobfile(text, "jobs.toml")
    assert jobfile.tz == "UTC"
    assert jobfile.jobs[0].tz == "UTC"


@pytest.mark.parametrize(
    "url", ["postgresql://app@db.internal/jobs", "postgres://app:pw@db/jobs?sslmode=require"]
)
def test_a_postgresql_store_is_kept_as_its_url_not_as_a_path(in_tmp: Path, url: str) -> None:
    jobfile = parse_jobfile(f'[scheduler]\nstore = "{url}"\n[jobs.a]\nfn = "t:f"\nevery = 1\n', "jobs.toml")
    assert jobfile.store == url


def test_arguments_need_not_be_json_without_a_store() -> None:
    text = '[scheduler]\nstore = ":memory:"\n[jobs.a]\nfn = "t:f"\nevery = 1\nargs = [2026-01-01]\n'
    assert parse_jobfile(text, "jobs.toml").jobs[0].args == (datetime(2026, 1, 1).date(),)


def test_the_scheduling_options_read_into_plain_data() -> None:
    text = (
        '[scheduler]\nprocesses = 2\nhung_grace = "2s"\n'
        '[jobs.a]\nfn = "t:f"\nevery = 1\ntimeout = "30s"\nexecutor = "process"\ndurable = false\n'
        'retry = { attempts = 5, delay = "500ms", backoff = 3, max_delay = "1m", jitter = 0, '
        'on = ["ConnectionError", "mylib.errors:Flaky"] }\n'
        '[jobs.b]\nfn = "t:f"\nat = 2026-12-24T18:00:00Z\nretry = {}\ntimeout = 5\n'
    )
    jobfile = parse_jobfile(text, "jobs.toml")
    assert (jobfile.processes, jobfile.hung_grace) == (2, 2.0)
    a, b = jobfile.jobs
    assert (a.timeout, a.executor, a.durable) == (30.0, "process", False)
    assert a.retry == RetrySpec(5, 0.5, 3.0, 60.0, 0.0, ("builtins:ConnectionError", "mylib.errors:Flaky"))
    # A table left empty is the library's Retry(), with its defaults.
    default = Retry()
    assert b.retry == RetrySpec(
        default.attempts,
        default.delay,
        default.backoff,
        default.max_delay,
        default.jitter,
        ("builtins:Exception",),
    )
    assert b.retry.to_retry() == default
    assert (b.timeout, b.executor, b.durable) == (5.0, None, None)


def test_overlap_allow_and_max_instances_read_into_the_job() -> None:
    jobs = parse_jobfile(
        '[jobs.a]\nfn = "t:f"\nevery = "1s"\noverlap = "allow"\nmax_instances = 3\n'
        '[jobs.b]\nfn = "t:f"\ncron = "* * * * *"\noverlap = "allow"\n',
        "jobs.toml",
    ).jobs
    assert [(job.overlap, job.max_instances) for job in jobs] == [("allow", 3), ("allow", None)]


def test_overlap_allow_is_refused_where_the_library_refuses_it_and_takes_a_timeout_and_a_retry() -> None:
    assert problems_of(
        '[jobs.a]\nfn = "t:f"\ndelay = "1s"\noverlap = "allow"\n'
        '[jobs.b]\nfn = "t:f"\nevery = "1s"\noverlap = "allow"\ntimeout = "1s"\nretry = { attempts = 2 }\n'
        '[jobs.c]\nfn = "t:f"\nevery = "1s"\noverlap = "skip"\nmax_instances = 2\n'
    ) == [
        "jobs.toml: job 'a': key 'overlap': overlap=\"allow\" is for fixed-rate and cron tasks: "
        "a fixed-delay task counts its next run from the end of the last, so its runs never overlap",
        "jobs.toml: job 'c': key 'max_instances': max_instances=2 needs overlap=\"allow\" (with "
        "overlap='skip' at most one run of the task is going at a time)",
    ]


def test_a_memory_only_job_may_have_arguments_json_cannot_keep() -> None:
    text = '[jobs.a]\nfn = "t:f"\nevery = 1\ndurable = false\nargs = [2026-01-01]\n'
    assert parse_jobfile(text, "jobs.toml").jobs[0].args == (datetime(2026, 1, 1).date(),)


# Every key given a value of every TOML type: each is read or refused with a line naming the key,
# and nothing else is ever raised (no TypeError, OverflowError or RecursionError escapes).
EVERY_TYPE = [
    "true", "0", "-1", "9223372036854775807", "1.5", "inf", "nan", '"x"', '""', '"10s"', "[]", "[1, [2]]",
    "{}", '{ a = 1 }', "2026-01-01", "12:00:00", "2026-01-01T12:00:00", "2026-01-01T12:00:00Z",
]  # fmt: skip


@pytest.mark.parametrize("value", EVERY_TYPE)
def test_every_key_of_any_type_is_read_or_refused_naming_the_key(value: str) -> None:
    for key in [*JOB_KEYS, *SCHEDULER_KEYS]:
        table = "scheduler" if key in SCHEDULER_KEYS else "jobs.a"
        job = "" if key == "fn" else 'fn = "t:f"\n'
        trigger = "" if key in TRIGGERS else "every = 1\n"
        text = f"[{table}]\n{key} = {value}\n"
        if table == "scheduler":
            text += f"[jobs.a]\n{job}{trigger}"
        else:
            text = f"[jobs.a]\n{job}{trigger}{key} = {value}\n"
        problems = _problems_if_any(text)
        assert all(line.startswith("jobs.toml: ") for line in problems), problems
        assert not problems or any(f"key {key!r}" in line for line in problems), (key, value, problems)


@pytest.mark.parametrize("value", EVERY_TYPE)
def test_every_key_of_a_retry_table_of_any_type_is_read_or_refused_naming_it(value: str) -> None:
    for key in ("attempts", "delay", "backoff", "max_delay", "jitter", "on"):
        problems = _problems_if_any(f'[jobs.a]\nfn = "t:f"\nevery = 1\nretry = {{ {key} = {value} }}\n')
        assert all(line.startswith(f"jobs.toml: job 'a': key 'retry': {key}: ") for line in problems), (
            problems
        )


def _problems_if_any(text: str) -> list[str]:
    try:
        parse_jobfile(text, "jobs.toml")
    except JobFileError as error:
        return error.problems
    return []


# -- broken files: every problem names the file, the job and the key ------------------------------

BROKEN = {
    "syntax error": (
        '[jobs.a]\nfn = "t:f"\nevery = 10 parsecs\n',
        [
            "jobs.toml: line 3, column 12: not valid TOML: Expected newline or end of document after "
            "a statement (the line reads: every = 10 parsecs)"
        ],
    ),
    "unknown key": (
        '[jobs.a]\nfn = "t:f"\nevery = "10s"\nintial_delay = "5s"\n',
        ["jobs.toml: job 'a': key 'intial_delay': unknown key (did you mean 'initial_delay'?)"],
    ),
    "unknown key, nothing close": (
        '[jobs.a]\nfn = "t:f"\nevery = "10s"\ncolour = "red"\n',
        ["jobs.toml: job 'a': key 'colour': unknown key"],
    ),
    "two triggers": (
        '[jobs.a]\nfn = "t:f"\nevery = "10s"\ncron = "* * * * *"\n',
        ["jobs.toml: job 'a': key 'cron': a job has one trigger, and it has 'every' already"],
    ),
    "no trigger": (
        '[jobs.a]\nfn = "t:f"\n',
        ["jobs.toml: job 'a': no trigger: give one of the keys 'every', 'delay', 'cron' or 'at'"],
    ),
    "bad duration": (
        '[jobs.heartbeat]\nfn = "t:f"\nevery = "10 parsecs"\n',
        [
            "jobs.toml: job 'heartbeat': key 'every': \"10 parsecs\" is not a duration "
            "(use e.g. 500ms, 10s, 5m, 1h30m, 2d)"
        ],
    ),
    "zero interval": (
        '[jobs.a]\nfn = "t:f"\ndelay = "0s"\n',
        ["jobs.toml: job 'a': key 'delay': \"0s\" is no time at all; it must be longer than zero"],
    ),
    "bad cron": (
        '[jobs.a]\nfn = "t:f"\ncron = "0 25 * * *"\n',
        [
            "jobs.toml: job 'a': key 'cron': cron expression '0 25 * * *': bad hour field '25' "
            "(expected 0-23, as a value, list, range or step)"
        ],
    ),
    "unknown zone": (
        '[jobs.a]\nfn = "t:f"\ncron = "@daily"\ntz = "Europe/Berln"\n',
        [
            "jobs.toml: job 'a': key 'tz': unknown time zone 'Europe/Berln' (did you mean "
            "'Europe/Berlin'?); use an IANA name such as 'Europe/Berlin', 'UTC', or a fixed offset "
            "such as 'UTC+05:30'"
        ],
    ),
    "at without offset": (
        '[jobs.a]\nfn = "t:f"\nat = 2026-12-24T18:00:00\n',
        [
            "jobs.toml: job 'a': key 'at': 2026-12-24T18:00:00 has no UTC offset, so it means a "
            "different instant on every machine; add one, e.g. 2026-12-24T18:00:00+01:00 or "
            "2026-12-24T18:00:00Z"
        ],
    ),
    "at as a string": (
        '[jobs.a]\nfn = "t:f"\nat = "2026-12-24T18:00:00+01:00"\n',
        [
            "jobs.toml: job 'a': key 'at': expected an offset datetime such as "
            '2026-12-24T18:00:00+01:00 (unquoted), found a string "2026-12-24T18:00:00+01:00"'
        ],
    ),
    "initial_delay with cron": (
        '[jobs.a]\nfn = "t:f"\ncron = "@daily"\ninitial_delay = "5s"\n',
        ["jobs.toml: job 'a': key 'initial_delay': only with 'every' or 'delay', and this job has 'cron'"],
    ),
    "tz with every": (
        '[jobs.a]\nfn = "t:f"\nevery = "1m"\ntz = "UTC"\n',
        ["jobs.toml: job 'a': key 'tz': only with 'cron', and this job has 'every'"],
    ),
    "failure limit on a one-time job": (
        '[jobs.a]\nfn = "t:f"\nat = 2026-12-24T18:00:00Z\nmax_consecutive_failures = 3\n',
        [
            "jobs.toml: job 'a': key 'max_consecutive_failures': only with 'every', 'delay' or 'cron', "
            "and this job has 'at'"
        ],
    ),
    "bad args type": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nargs = "x"\n',
        ["jobs.toml: job 'a': key 'args': expected an array such as [1, 2], found a string \"x\""],
    ),
    "bad kwargs type": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nkwargs = [1]\n',
        ["jobs.toml: job 'a': key 'kwargs': expected a table such as { region = \"eu\" }, found an array"],
    ),
    "arguments a store cannot keep": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nkwargs = { when = 2026-01-01 }\n',
        [
            "jobs.toml: job 'a': key 'kwargs': kwargs['when'] is a date, which does not round-trip "
            "through JSON (use None, bool, int, float, str, lists and dicts with str keys); "
            'or use store = ":memory:"'
        ],
    ),
    "reserved id": (
        '[jobs.task-12]\nfn = "t:f"\nevery = 1\n',
        [
            "jobs.toml: job 'task-12': ids of the form 'task-<digits>' are the scheduler's own; "
            "rename the table"
        ],
    ),
    "empty id": (
        '[jobs.""]\nfn = "t:f"\nevery = 1\n',
        ["jobs.toml: job '': a job id must not be empty"],
    ),
    "workers 0": (
        '[scheduler]\nworkers = 0\n[jobs.a]\nfn = "t:f"\nevery = 1\n',
        ["jobs.toml: [scheduler]: key 'workers': expected an integer from 1 to 1024, found 0"],
    ),
    "workers as a string": (
        '[scheduler]\nworkers = "4"\n[jobs.a]\nfn = "t:f"\nevery = 1\n',
        ["jobs.toml: [scheduler]: key 'workers': expected an integer from 1 to 1024, found a string \"4\""],
    ),
    "fn missing": (
        "[jobs.a]\nevery = 1\n",
        ["jobs.toml: job 'a': key 'fn': missing; name the function to run, e.g. fn = \"tasks:heartbeat\""],
    ),
    "fn not a reference": (
        '[jobs.a]\nfn = "tasks.heartbeat"\nevery = 1\n',
        [
            "jobs.toml: job 'a': key 'fn': function reference 'tasks.heartbeat' is not of the form "
            '"package.module:function"'
        ],
    ),
    "max_consecutive_failures 0": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nmax_consecutive_failures = 0\n',
        ["jobs.toml: job 'a': key 'max_consecutive_failures': expected an integer of 1 or more, found 0"],
    ),
    "unknown table": (
        '[schedular]\nworkers = 2\n[jobs.a]\nfn = "t:f"\nevery = 1\n',
        [
            "jobs.toml: table 'schedular': unknown (did you mean 'scheduler'?); the tables are "
            "[scheduler] and [jobs.<id>]"
        ],
    ),
    "a scheduler key at the top": (
        'workers = 2\n[jobs.a]\nfn = "t:f"\nevery = 1\n',
        ["jobs.toml: key 'workers': unknown at the top level; it belongs in [scheduler]"],
    ),
    "no jobs": (
        "[scheduler]\nworkers = 2\n",
        ["jobs.toml: no jobs: add a table [jobs.<id>] with fn and a trigger"],
    ),
    "a job that is not a table": (
        "jobs.a = 5\n",
        ["jobs.toml: job 'a': expected a table ([jobs.a]), found an integer 5"],
    ),
    "timeout of zero": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\ntimeout = 0\n',
        ["jobs.toml: job 'a': key 'timeout': 0 is no time at all; it must be longer than zero"],
    ),
    "retry of the wrong type": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nretry = 3\n',
        [
            "jobs.toml: job 'a': key 'retry': expected a table such as { attempts = 5, delay = \"1s\", "
            'on = ["ConnectionError"] }, found an integer 3'
        ],
    ),
    "retry with bad values, every one reported": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\n'
        'retry = { attemps = 3, delay = "soon", backoff = 0.5, jitter = 2, on = [] }\n',
        [
            "jobs.toml: job 'a': key 'retry': attemps: unknown key (did you mean 'attempts'?); "
            'delay: "soon" is not a duration (use e.g. 500ms, 10s, 5m, 1h30m, 2d); '
            "backoff: expected a number of 1 or more, found 0.5; "
            "jitter: expected a number from 0 to 1, found 2; "
            "on: an empty array: name an exception class, or leave 'on' out (any Exception)"
        ],
    ),
    "retry on a malformed class reference": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nretry = { on = ["my errors:Oops"] }\n',
        [
            "jobs.toml: job 'a': key 'retry': on: function reference 'my errors:Oops' is not of the form "
            '"package.module:function"'
        ],
    ),
    "unknown executor": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nexecutor = "threads"\n',
        ['jobs.toml: job \'a\': key \'executor\': expected "thread" or "process", found a string "threads"'],
    ),
    "a process job without processes": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nexecutor = "process"\n',
        [
            "jobs.toml: job 'a': key 'executor': \"process\" needs worker processes: set processes = N "
            "in [scheduler]"
        ],
    ),
    "durable as a string": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\ndurable = "yes"\n',
        ["jobs.toml: job 'a': key 'durable': expected true or false, found a string \"yes\""],
    ),
    "durable without a store": (
        '[scheduler]\nstore = ":memory:"\n[jobs.a]\nfn = "t:f"\nevery = 1\ndurable = true\n',
        ["jobs.toml: job 'a': key 'durable': true needs a store, and [scheduler] store is \":memory:\""],
    ),
    "processes out of range": (
        '[scheduler]\nprocesses = 300\n[jobs.a]\nfn = "t:f"\nevery = 1\n',
        ["jobs.toml: [scheduler]: key 'processes': expected an integer from 0 to 256, found 300"],
    ),
    "hung_grace negative": (
        '[scheduler]\nhung_grace = -1\n[jobs.a]\nfn = "t:f"\nevery = 1\n',
        ["jobs.toml: [scheduler]: key 'hung_grace': -1 is negative; a duration is 0 seconds or more"],
    ),
    "arguments nested too deep": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nargs = ' + "[" * 40 + "]" * 40 + "\n",
        ["jobs.toml: job 'a': key 'args': arrays and tables nested more than 32 deep; flatten the value"],
    ),
    "an integer past 64 bits": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nkwargs = { n = [1, ' + "9" * 20 + "] }\n",
        [
            "jobs.toml: job 'a': key 'kwargs': the integer (at ['n'][1]) has 20 digits: TOML integers "
            "are 64-bit, -2^63 to 2^63-1"
        ],
    ),
    "nested thousands deep, past what the TOML reader takes": (
        '[jobs.a]\nfn = "t:f"\nevery = 1\nargs = ["[", \'{\', """]]]""", ' + "[" * 3000 + "]" * 3000 + "]\n",
        [
            "jobs.toml: line 4, column 61: arrays or tables nested hundreds deep, too deep to read "
            "(a value may be nested 32 deep)"
        ],
    ),
    "an integer of thousands of digits": (
        '[jobs.a]\nfn = "t:f"\nevery = ' + "9" * 5000 + "\n",
        ["jobs.toml: line 3: an integer of thousands of digits: TOML integers are 64-bit, -2^63 to 2^63-1"],
    ),
    "a string a megabyte long": (
        '[jobs.a]\nfn = "t:f"\nevery = "' + "1" * 1_000_000 + '"\n',
        [
            f"jobs.toml: job 'a': key 'every': \"{'1' * 80}...\" (1000000 characters) is not a duration "
            "(use e.g. 500ms, 10s, 5m, 1h30m, 2d)"
        ],
    ),
}


@pytest.mark.parametrize(("text", "expected"), BROKEN.values(), ids=BROKEN.keys())
def test_broken_files_report_file_job_and_key(text: str, expected: list[str]) -> None:
    assert problems_of(text) == expected


def test_every_problem_is_reported_not_just_the_first(in_tmp: Path) -> None:
    write(
        in_tmp,
        '[scheduler]\nworkers = 0\n\n[jobs.a]\nfn = "t:f"\nevery = "soon"\n\n'
        '[jobs.b]\nfn = "t:g"\ncron = "* * *"\nevry = 5\n',
    )
    with pytest.raises(JobFileError) as caught:
        load_jobfile("jobs.toml")
    assert caught.value.problems == [
        "jobs.toml: [scheduler]: key 'workers': expected an integer from 1 to 1024, found 0",
        "jobs.toml: job 'a': key 'every': \"soon\" is not a duration (use e.g. 500ms, 10s, 5m, 1h30m, 2d)",
        "jobs.toml: job 'b': key 'cron': cron expression '* * *' has 3 fields; expected 5 (minute hour "
        "day-of-month month day-of-week) or an alias such as @daily",
        "jobs.toml: job 'b': key 'evry': unknown key (did you mean 'every'?)",
    ]
    assert isinstance(caught.value, SchedulerError)
    assert isinstance(caught.value, ValueError)


def test_a_missing_or_unreadable_file_is_a_job_file_error(in_tmp: Path) -> None:
    with pytest.raises(
        JobFileError, match=r"^nowhere\.toml: cannot read the job file: No such file or directory$"
    ):
        load_jobfile("nowhere.toml")
    (in_tmp / "folder.toml").mkdir()
    with pytest.raises(JobFileError, match=r"^folder\.toml: cannot read the job file: Is a directory$"):
        load_jobfile("folder.toml")
    (in_tmp / "latin1.toml").write_bytes(b'[jobs.caf\xe9]\nfn = "t:f"\nevery = 1\n')
    with pytest.raises(
        JobFileError, match=r"^latin1\.toml: not UTF-8 text \(at byte offset 9\), as TOML must be$"
    ):
        load_jobfile("latin1.toml")


def test_a_syntax_error_at_the_end_of_the_file() -> None:
    assert problems_of('[jobs.a]\nfn = "t:f"\nevery = ') == [
        "jobs.toml: at the end: not valid TOML: Invalid value"
    ]


# -- durations -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("10s", 10.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("2d", 172800.0),
        ("1.5h", 5400.0),
        ("1d2h3m4s5ms", 93784.005),
        ("0s", 0.0),
        (" 10s ", 10.0),
        (0, 0.0),
        (10, 10.0),
        (2.5, 2.5),
    ],
)
def test_durations(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, abs=1e-9)
    assert type(parse_duration(text)) is float


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10 parsecs", '"10 parsecs" is not a duration (use e.g. 500ms, 10s, 5m, 1h30m, 2d)'),
        ("", '"" is not a duration'),
        ("10", '"10" is not a duration'),
        ("5m1h", '"5m1h" is not a duration'),
        ("1h1h", '"1h1h" is not a duration'),
        ("-5s", '"-5s" is not a duration'),
        ("10S", '"10S" is not a duration'),
        ("1h 30m", '"1h 30m" is not a duration'),
        (".5s", '".5s" is not a duration'),
        (-1, "-1 is negative; a duration is 0 seconds or more"),
        (float("nan"), "nan is not a finite number of seconds"),
        (float("inf"), "inf is not a finite number of seconds"),
        (10**400, "is not a finite number of seconds"),
        (1e300, "1e+300 is longer than 100 years (36525d), the longest duration taken"),
        ("36526d", '"36526d" is longer than 100 years'),
        ("9" * 400 + "d", "is longer than 100 years"),
    ],
)
def test_bad_durations(text: str | float, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_duration(text)


@pytest.mark.parametrize("value", [True, None, [1], {"s": 1}])
def test_durations_of_the_wrong_type(value: object) -> None:
    with pytest.raises(TypeError, match="a duration is a number of seconds or a string"):
        parse_duration(value)  # type: ignore[arg-type]


# -- importing the functions -----------------------------------------------------------------------


def test_import_problems_names_each_job_whose_fn_does_not_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"tasks_{uuid.uuid4().hex}"
    broken = f"broken_{uuid.uuid4().hex}"
    for name in (module, broken):
        monkeypatch.delitem(sys.modules, name, raising=False)  # removed again after the test
    (tmp_path / f"{module}.py").write_text("def heartbeat():\n    return 1\n\nlimit = 5\n")
    (tmp_path / f"{broken}.py").write_text("raise RuntimeError('no database')\n")
    path = write(
        tmp_path,
        f'[jobs.good]\nfn = "{module}:heartbeat"\nevery = 1\n'
        f'[jobs.typo]\nfn = "{module}:hartbeat"\nevery = 1\n'
        f'[jobs.constant]\nfn = "{module}:limit"\nevery = 1\n'
        f'[jobs.nowhere]\nfn = "no_such_module_{uuid.uuid4().hex}:f"\nevery = 1\n'
        f'[jobs.raises]\nfn = "{broken}:f"\nevery = 1\n',
    )
    jobfile = load_jobfile(path)
    path_before = list(sys.path)
    problems = import_problems(jobfile)
    assert sys.path == path_before
    assert problems == [
        f"jobs.toml: job 'typo': key 'fn': cannot use '{module}:hartbeat': ImportError: cannot import "
        f"'{module}:hartbeat': module '{module}' has no attribute 'hartbeat'",
        f"jobs.toml: job 'constant': key 'fn': cannot use '{module}:limit': TypeError: "
        f"'{module}:limit' names int object, not a function",
        f"jobs.toml: job 'nowhere': key 'fn': cannot use '{jobfile.jobs[3].fn}': ModuleNotFoundError: "
        f"No module named '{jobfile.jobs[3].fn.split(':')[0]}'",
        f"jobs.toml: job 'raises': key 'fn': cannot use '{broken}:f': RuntimeError: no database",
    ]


def test_check_jobfile_reports_rules_code_and_arguments_in_one_pass(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"tasks_{uuid.uuid4().hex}"
    monkeypatch.delitem(sys.modules, module, raising=False)  # removed again after the test
    (in_tmp / f"{module}.py").write_text("def one(word):\n    return word\n")
    write(
        in_tmp,
        '[jobs.malformed]\nfn = "not a reference"\nevery = 1\n'
        f'[jobs.missing]\nfn = "{module}:two"\nevery = 1\n'
        f'[jobs.gone]\nfn = "gone_{uuid.uuid4().hex}:f"\nevery = 1\n'
        f'[jobs.many]\nfn = "{module}:one"\nevery = 1\nargs = ["a", "b", "c"]\n'
        f'[jobs.keyword]\nfn = "{module}:one"\nevery = 1\nkwargs = {{ word = "w", extra = 1 }}\n'
        f'[jobs.unknown_error]\nfn = "{module}:one"\nevery = 1\nargs = [1]\n'
        f'retry = {{ on = "{module}:Oops" }}\n'
        f'[jobs.not_an_error]\nfn = "{module}:one"\nevery = 1\nargs = [1]\nretry = {{ on = "len" }}\n'
        f'[jobs.never]\nfn = "{module}:one"\nargs = [1]\ncron = "0 0 31 2 *"\n'
        '[jobs.no_signature]\nfn = "builtins:max"\nevery = 1\n'
        f'[jobs.fine]\nfn = "{module}:one"\nevery = 1\nkwargs = {{ word = "w" }}\n',
    )
    with pytest.raises(JobFileError) as caught:
        check_jobfile("jobs.toml", datetime(2026, 1, 1, tzinfo=UTC))
    problems = [re.sub(r"gone_\w+", "gone_", line) for line in caught.value.problems]
    assert problems == [
        "jobs.toml: job 'malformed': key 'fn': function reference 'not a reference' is not of the form "
        '"package.module:function"',
        "jobs.toml: job 'never': key 'cron': cron expression '0 0 31 2 *': day-of-month '31' never occurs "
        "in month '2', so it would never fire",
        # The file's rules first, then the code of every job that kept them.
        f"jobs.toml: job 'missing': key 'fn': cannot use '{module}:two': ImportError: cannot import "
        f"'{module}:two': module '{module}' has no attribute 'two'",
        "jobs.toml: job 'gone': key 'fn': cannot use 'gone_:f': ModuleNotFoundError: No module named 'gone_'",
        f"jobs.toml: job 'many': key 'args': {module}:one(word) cannot take these arguments: "
        "too many positional arguments",
        f"jobs.toml: job 'keyword': key 'kwargs': {module}:one(word) cannot take these arguments: "
        "got an unexpected keyword argument 'extra'",
        f"jobs.toml: job 'unknown_error': key 'retry': on: ImportError: cannot import '{module}:Oops': "
        f"module '{module}' has no attribute 'Oops'",
        "jobs.toml: job 'not_an_error': key 'retry': on: TypeError: 'builtins:len' names "
        "builtin_function_or_method object, not an exception class",
    ]


def test_import_problems_is_empty_when_everything_imports(tmp_path: Path) -> None:
    jobfile = parse_jobfile(
        '[jobs.a]\nfn = "os.path:join"\nevery = 1\nargs = ["a"]\n', tmp_path / "jobs.toml"
    )
    assert import_problems(jobfile) == []


# -- fingerprints ----------------------------------------------------------------------------------


def spec_of(job: str) -> JobSpec:
    return parse_jobfile(f"[scheduler]\nstore = ':memory:'\n[jobs.a]\n{job}", "jobs.toml").jobs[0]


def test_a_job_without_the_newer_keys_keeps_the_fingerprint_earlier_versions_recorded() -> None:
    # Digests recorded by the version before timeout, retry, executor and durable were keys: an
    # upgrade must not see every job as changed (an ended one-time job would run again).
    text = (
        '[scheduler]\nstore = "jobs.db"\n'
        '[jobs.a]\nfn = "tasks:tick"\nevery = "10s"\nargs = [1, "two"]\nkwargs = { region = "eu" }\n'
        "misfire_grace = 5\n"
        '[jobs.b]\nfn = "tasks:tick"\nat = 2026-12-24T18:00:00+01:00\n'
    )
    a, b = parse_jobfile(text, "jobs.toml").jobs
    assert a.fingerprint() == "770bdbc8ebe632ee51c57a5d021532f4add6986694b4f9b5460e7bd7d5299931"
    assert b.fingerprint() == "f22d0225394696b0bb5303a277ff1930e189e8f01647c401ed4eb38d1566fef4"


def test_durable_true_with_a_store_is_the_default_written_out() -> None:
    stored = '[jobs.a]\nfn = "t:f"\nevery = 1\n'
    assert parse_jobfile(stored + "durable = true\n", "jobs.toml") == parse_jobfile(stored, "jobs.toml")
    assert parse_jobfile(stored + "durable = false\n", "jobs.toml") != parse_jobfile(stored, "jobs.toml")


def test_an_unchanged_job_has_the_same_fingerprint() -> None:
    first, second = (parse_jobfile(COMPLETE, "jobs.toml") for _ in range(2))
    assert [s.fingerprint() for s in first.jobs] == [s.fingerprint() for s in second.jobs]
    assert first == second
    assert len({s.fingerprint() for s in first.jobs}) == len(first.jobs)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('fn = "t:f"\nevery = "10s"\n', 'fn = "t:f"\nevery = 10\n'),
        ('fn = "t:f"\ncron = "0  9 * * *"\n', 'fn = "t:f"\ncron = "0 9 * * *"\n'),
        ('fn = "t:f"\nat = 2026-12-24T18:00:00+01:00\n', 'fn = "t:f"\nat = 2026-12-24T17:00:00Z\n'),
        (
            'fn = "t:f"\nevery = 1\nkwargs = { a = 1, b = 2 }\n',
            'fn = "t:f"\nevery = 1\nkwargs = { b = 2, a = 1 }\n',
        ),
        ('fn = "t:f"\nevery = 1\n', 'fn = "t:f"\nevery = 1\nexecutor = "thread"\n'),
        (
            'fn = "t:f"\nevery = 1\nretry = {}\n',
            'fn = "t:f"\nevery = 1\nretry = { attempts = 3, delay = "1s" }\n',
        ),
        (
            'fn = "t:f"\nevery = 1\nretry = { on = "OSError" }\n',
            'fn = "t:f"\nevery = 1\nretry = { on = ["builtins:OSError"] }\n',
        ),
    ],
)
def test_spelling_that_changes_nothing_keeps_the_fingerprint(before: str, after: str) -> None:
    assert spec_of(before).fingerprint() == spec_of(after).fingerprint()
    assert spec_of(before) == spec_of(after)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('fn = "t:f"\nevery = 10\n', 'fn = "t:f"\nevery = 11\n'),
        ('fn = "t:f"\nevery = 10\n', 'fn = "t:f"\ndelay = 10\n'),
        ('fn = "t:f"\nevery = 10\n', 'fn = "t:g"\nevery = 10\n'),
        ('fn = "t:f"\nevery = 1\nargs = [1]\n', 'fn = "t:f"\nevery = 1\nargs = [true]\n'),
        ('fn = "t:f"\nevery = 1\nargs = [1]\n', 'fn = "t:f"\nevery = 1\nargs = [1.0]\n'),
        ('fn = "t:f"\nevery = 1\nargs = [2026-01-01]\n', 'fn = "t:f"\nevery = 1\nargs = ["2026-01-01"]\n'),
        ('fn = "t:f"\ncron = "@daily"\n', 'fn = "t:f"\ncron = "@daily"\ntz = "Europe/Berlin"\n'),
        ('fn = "t:f"\nevery = 1\n', 'fn = "t:f"\nevery = 1\ninitial_delay = 0\n'),
        ('fn = "t:f"\nevery = 1\n', 'fn = "t:f"\nevery = 1\nmisfire_grace = "1m"\n'),
        ('fn = "t:f"\nevery = 1\n', 'fn = "t:f"\nevery = 1\ntimeout = "1m"\n'),
        ('fn = "t:f"\nevery = 1\n', 'fn = "t:f"\nevery = 1\nretry = {}\n'),
        ('fn = "t:f"\nevery = 1\nretry = {}\n', 'fn = "t:f"\nevery = 1\nretry = { attempts = 4 }\n'),
        ('fn = "t:f"\nevery = 1\nretry = {}\n', 'fn = "t:f"\nevery = 1\nretry = { on = "OSError" }\n'),
    ],
)
def test_a_changed_definition_changes_the_fingerprint(before: str, after: str) -> None:
    assert spec_of(before).fingerprint() != spec_of(after).fingerprint()
    assert spec_of(before) != spec_of(after)


def test_the_id_is_not_part_of_the_fingerprint_but_of_equality() -> None:
    one = spec_of('fn = "t:f"\nevery = 1\n')
    other = dataclasses.replace(one, job_id="b")
    assert one.fingerprint() == other.fingerprint()
    assert one != other
    assert len({one, other, spec_of('fn = "t:f"\nevery = 1\n')}) == 2


# -- next runs, for the check command --------------------------------------------------------------

NOW = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)


def test_next_runs_of_interval_jobs() -> None:
    for trigger in ('every = "10s"', 'delay = "10s"'):
        spec = spec_of(f'fn = "t:f"\n{trigger}\ninitial_delay = "5s"\n')
        assert describe_next_runs(spec, NOW) == [NOW + timedelta(seconds=s) for s in (5, 15, 25)]
    assert describe_next_runs(spec_of('fn = "t:f"\nevery = 60\n'), NOW, count=2) == [
        NOW,
        NOW + timedelta(minutes=1),
    ]


def test_next_runs_of_a_one_time_job() -> None:
    future = spec_of('fn = "t:f"\nat = 2026-12-24T18:00:00+01:00\n')
    assert describe_next_runs(future, NOW) == [datetime(2026, 12, 24, 17, tzinfo=UTC)]
    assert describe_next_runs(future, NOW, count=0) == []
    past = spec_of('fn = "t:f"\nat = 2026-01-01T00:00:00Z\n')
    assert describe_next_runs(past, NOW) == []


def test_next_runs_of_a_cron_job_are_in_its_zone() -> None:
    spec = spec_of('fn = "t:f"\ncron = "30 2 * * *"\ntz = "Europe/Berlin"\n')
    runs = describe_next_runs(spec, NOW)
    berlin = ZoneInfo("Europe/Berlin")
    assert runs == [
        datetime(2026, 3, 29, 3, 0, tzinfo=berlin),  # 02:30 does not exist that night
        datetime(2026, 3, 30, 2, 30, tzinfo=berlin),
        datetime(2026, 3, 31, 2, 30, tzinfo=berlin),
    ]
    assert all(run.tzinfo is berlin for run in runs)


def test_next_runs_need_an_aware_now() -> None:
    with pytest.raises(ValueError, match="aware"):
        describe_next_runs(spec_of('fn = "t:f"\nevery = 1\n'), datetime(2026, 1, 1))


# -- the key tables --------------------------------------------------------------------------------


def test_every_job_key_is_a_spec_field_and_back() -> None:
    spec_fields = {f.name for f in dataclasses.fields(JobSpec)} - {"job_id", "kind"}
    assert set(JOB_KEYS) == spec_fields
    assert set(TRIGGERS) == set(typing.get_args(Kind))


def test_every_key_is_documented() -> None:
    docs = (ROOT / "docs" / "cli.md").read_text()
    for key in [*SCHEDULER_KEYS, *JOB_KEYS]:
        assert f"`{key}`" in docs, key


def test_the_documented_example_is_a_valid_job_file() -> None:
    docs = (ROOT / "docs" / "cli.md").read_text()
    example = re.search(r"```toml\n(.*?)```", docs, re.DOTALL)
    assert example is not None
    jobfile = parse_jobfile(example.group(1), ROOT / "docs" / "jobs.toml")
    assert [spec.job_id for spec in jobfile.jobs] == ["heartbeat", "cleanup", "report", "nightly", "party"]
    assert [spec.kind for spec in jobfile.jobs] == ["every", "delay", "cron", "cron", "at"]
