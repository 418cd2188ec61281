"""What ``status`` and the live view print: durations, triggers, next runs, the plain table."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from actors.cli.fingerprints import FINGERPRINT_OPTION, Stamps, legacy_path, read_legacy
from actors.cli.jobfile import parse_duration, parse_jobfile
from actors.cli.rows import (
    COLUMNS,
    NEEDED_COLUMNS,
    JobRow,
    cells,
    describe_spec,
    describe_stored_trigger,
    fit_columns,
    format_duration,
    format_next_run,
    last_error,
    table_text,
    until,
)
from actors.cli.stores import shown_store
from actors.errors import RemoteRunError
from actors.store import TaskDefinition

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.5, "500ms"), (1.5, "1.5s"), (10, "10s"), (90, "1m30s"), (5400, "1h30m"), (172800, "2d")],
)
def test_durations_are_written_as_the_job_file_writes_them(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("after", "text"),
    [(0.2, "due now"), (-0.6, "due now"), (12, "in 12s"), (250, "in 4m"), (3 * 3600 + 300, "in 3h 5m"),
     (7200, "in 2h"), (2 * 86400 + 3600, "in 2d 1h"), (-30, "overdue by 30s"), (-200, "overdue by 3m"),
     (-2 * 86400, "overdue by 2d")],
)  # fmt: skip
def test_until_is_coarse(after: float, text: str) -> None:
    assert until(NOW + timedelta(seconds=after), NOW) == text


def test_a_past_due_time_of_a_store_a_scheduler_holds_is_due_ago_not_overdue() -> None:
    # Read from outside, the store does not say whether the run is under way.
    assert until(NOW - timedelta(seconds=200), NOW, maybe_running=True) == "due 3m ago"
    assert until(NOW - timedelta(seconds=0.5), NOW, maybe_running=True) == "due now"
    assert format_next_run(NOW - timedelta(seconds=200), NOW) == "11:56:40 (overdue by 3m)"


def test_next_run_shows_the_time_of_day_today_and_the_date_otherwise() -> None:
    assert format_next_run(NOW + timedelta(minutes=4), NOW) == "12:04:00 (in 4m)"
    assert format_next_run(NOW + timedelta(days=2), NOW) == "2026-05-03 12:00 (in 2d)"
    assert format_next_run(None, NOW) == "-"


def test_triggers_in_words_from_the_job_file_and_from_the_store() -> None:
    jobs = parse_jobfile(
        '[jobs.a]\nfn = "m:f"\nevery = "1h30m"\n[jobs.b]\nfn = "m:f"\ndelay = 0.25\n'
        '[jobs.c]\nfn = "m:f"\ncron = "@daily"\ntz = "Europe/Berlin"\n'
        '[jobs.d]\nfn = "m:f"\nat = 2026-12-24T18:00:00+01:00\n',
        "jobs.toml",
    ).jobs
    assert [describe_spec(spec) for spec in jobs] == [
        "every 1h30m",
        "delay 250ms",
        "cron @daily (Europe/Berlin)",
        "at 2026-12-24 18:00:00+01:00",
    ]
    assert describe_stored_trigger('{"rate": 10.0, "anchor": 1.0}') == "every 10s"
    assert describe_stored_trigger('{"delay": 30}') == "delay 30s"
    assert describe_stored_trigger('{"once": true}') == "once"
    assert describe_stored_trigger('{"cron": "0 9 * * *", "tz": "UTC"}') == "cron 0 9 * * * (UTC)"
    assert describe_stored_trigger('{"something": "new"}') == '{"something": "new"}'


def test_the_plain_table_pads_its_columns() -> None:
    rows = [
        JobRow("tick", "every 10s", "scheduled", NOW + timedelta(seconds=5), 12, 0, "completed", None),
        JobRow("poller", "delay 30s", "running", None, 3, 1, "failed", "ConnectionError: no"),
    ]
    assert table_text(rows, NOW).splitlines() == [
        "id      trigger    status     next run          runs  failures  last outcome  last error",
        "tick    every 10s  scheduled  12:00:05 (in 5s)  12    0         completed     -",
        "poller  delay 30s  running    -                 3     1         failed        ConnectionError: no",
    ]


def test_the_last_error_is_one_line_of_type_and_message_whether_from_the_exception_or_the_store() -> None:
    assert last_error(RuntimeError("no data")) == "RuntimeError: no data"
    assert last_error(text="RuntimeError: no data") == "RuntimeError: no data"
    assert last_error(text="Traceback (most recent call last):\n  ...\nRuntimeError: no data\n") == (
        "RuntimeError: no data"
    )
    assert last_error(RemoteRunError("ValueError: on node b")) == "ValueError: on node b"
    assert last_error(None, None) is None


def _row(task_id: str, next_run: datetime | None, error: str | None = None) -> JobRow:
    return JobRow(
        task_id, "cron 0 9 * * MON-FRI (Europe/Berlin)", "scheduled", next_run, 12, 3, "failed", error
    )


def test_a_narrow_table_keeps_the_needed_columns_whole_and_leaves_the_others_out_first() -> None:
    rows = [
        _row("nightly-report", NOW + timedelta(days=2), "ConnectionError: queue 'orders' did not answer"),
        _row("heartbeat", NOW + timedelta(seconds=5)),
    ]
    lines = [cells(row, NOW) for row in rows]
    narrow = fit_columns(lines, 80)
    assert tuple(narrow) == NEEDED_COLUMNS
    assert narrow["id"] == len("nightly-report")
    assert narrow["next run"] == len("2026-05-03 12:00 (in 2d)")
    assert narrow["last outcome"] == len("last outcome")
    assert 1 + sum(width + 3 for width in narrow.values()) <= 80
    # A little wider: the status whole, then the last error (wrapped in what is left).
    assert tuple(fit_columns(lines, 100)) == ("id", "status", "next run", "runs", "failures", "last outcome")
    medium = fit_columns(lines, 120)
    assert tuple(medium) == ("id", "status", "next run", "runs", "failures", "last outcome", "last error")
    assert 20 <= medium["last error"] < len(rows[0].last_error or "")
    wide = fit_columns(lines, 200)
    assert tuple(wide) == COLUMNS
    assert wide["last error"] == len(rows[0].last_error or "")
    assert 1 + sum(width + 3 for width in wide.values()) <= 200


def test_an_older_versions_fingerprints_file_is_read_and_a_damaged_one_counts_as_none(tmp_path: Path) -> None:
    path = legacy_path(tmp_path / "jobs.db")
    assert path.name == "jobs.db.jobs.json"
    assert read_legacy(path) == {}
    path.write_text('{"jobs": {"a": "1", "b": "2"}}')
    assert read_legacy(path) == {"a": "1", "b": "2"}
    path.write_text("{not json")
    assert read_legacy(path) == {}
    path.write_text('["a list"]')
    assert read_legacy(path) == {}


def test_the_scheduler_does_not_import_rich(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys, actors, actors.cli.run, actors.cli.status, actors.cli.check\n"
        "assert 'rich' not in sys.modules, sorted(m for m in sys.modules if m.startswith('rich'))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_event_lines() -> None:
    import logging

    from actors.cli.logs import event_level, event_line
    from messages import EventKind, TaskEvent

    failed = TaskEvent(
        kind=EventKind.FAILED, task_id="poll", name="poll", at=1.0, run=3, error=OSError('no\n"x"')
    )
    assert (
        event_line(failed, 0.25) == "task=poll event=failed run=3 duration=0.250s error=\"OSError: no 'x'\""
    )
    assert event_level(failed) == logging.WARNING
    done = TaskEvent(kind=EventKind.COMPLETED, task_id="once", name="once", at=1.0, run=1, final=True)
    assert (event_line(done, None), event_level(done)) == (
        "task=once event=completed run=1 final",
        logging.INFO,
    )
    due = TaskEvent(kind=EventKind.DUE, task_id="t", name="t", at=1.0, run=1)
    assert event_level(due) == logging.DEBUG
    jumped = TaskEvent(kind=EventKind.CLOCK_JUMPED, task_id="", name="", at=1.0, jump=-3600.0)
    assert (event_line(jumped, None), event_level(jumped)) == (
        "event=clock_jumped jump=-3600.000s",
        logging.WARNING,
    )


def test_stamps_write_a_jobs_fingerprint_into_its_definition_and_leave_others_alone() -> None:
    stamps = Stamps()
    task = TaskDefinition(
        task_id="a", fn_ref="t:f", args_json="[]", kwargs_json="{}", trigger_json='{"once": true}',
        options_json='{"name": "x"}', next_due=None,
    )  # fmt: skip
    assert stamps.stamp(task) is task  # nothing expected yet
    stamps.expect({"a": "digest-a"})
    stamped = stamps.stamp(task)
    assert json.loads(stamped.options_json) == {"name": "x", FINGERPRINT_OPTION: "digest-a"}
    assert stamps.stamp(dataclasses.replace(task, task_id="b")).options_json == '{"name": "x"}'


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:pw@h:5/db?password=x&sslmode=require", "postgresql://app@h:5/db?sslmode=require"),
        ("postgres://h/db", "postgres://h/db"),
        ("postgresql://app:pw@[bad/db", "postgresql://app@[bad/db"),  # malformed: shown all the same
    ],
)
def test_a_store_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert shown_store(url) == shown
