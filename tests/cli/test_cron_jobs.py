"""Cron jobs through the command line: scheduled at the next matching minute, kept across a restart,
replaced when their zone changes; one really fires (a stress test: it may wait a minute)."""

from __future__ import annotations

import re
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from actors import Scheduler
from tests.cli.helpers import Service, cli, write_jobfile

pytestmark = pytest.mark.skipif(
    not hasattr(Scheduler, "schedule_cron"), reason="the scheduler does not take cron schedules yet"
)

CRON = '[jobs.report]\nfn = "tasks:say"\ncron = "0 9 * * *"\ntz = "{tz}"\nargs = ["report"]\n'


def next_nine(tz_offset_hours: int) -> datetime:
    """The next 09:00 in a fixed-offset zone, in UTC (what the scheduler must have stored)."""
    zone_now = datetime.now(UTC) + timedelta(hours=tz_offset_hours)
    nine = zone_now.replace(hour=9, minute=0, second=0, microsecond=0)
    if nine <= zone_now:
        nine += timedelta(days=1)
    return (nine - timedelta(hours=tz_offset_hours)).replace(tzinfo=UTC)


def stored_next_run(folder: Path) -> str:
    status = cli("status", "--store", "jobs.db", cwd=folder)
    assert status.returncode == 0, status.stderr
    row = re.search(
        r"^report +cron 0 9 \* \* \* \((\S+)\) +scheduled +(\S+ \S+|\S+) \(in ", status.stdout, re.M
    )
    assert row, status.stdout
    return f"{row.group(1)} {row.group(2)}"


def test_a_cron_job_is_kept_across_a_restart_and_replaced_when_its_zone_changes(tmp_path: Path) -> None:
    jobs = write_jobfile(tmp_path, '[scheduler]\ntz = "UTC"\n' + CRON.format(tz="UTC+05:00"))
    check = cli("check", "jobs.toml", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    first = next_nine(5)
    assert f"09:00:00 +0500 (UTC+05:00)  =  {first:%Y-%m-%d %H:%M:%S} UTC" in check.stdout
    with Service("jobs.toml", "--no-status", "--for", "0.3", cwd=tmp_path) as service:
        service.expect(r"INFO job report: added \(new job\)$")
        assert service.wait() == 0
    before = stored_next_run(tmp_path)
    with Service("jobs.toml", "--no-status", "--for", "0.3", cwd=tmp_path) as service:
        service.expect(r"INFO job report: kept \(unchanged\)$")
        assert service.wait() == 0
    assert stored_next_run(tmp_path) == before
    jobs.write_text('[scheduler]\ntz = "UTC"\n' + CRON.format(tz="UTC-07:00"))
    with Service("jobs.toml", "--no-status", "--for", "0.3", cwd=tmp_path) as service:
        service.expect(r"INFO job report: replaced \(definition changed\)$")
        assert service.wait() == 0
    assert "UTC-07:00" in stored_next_run(tmp_path)


@pytest.mark.stress
def test_a_cron_job_fires_at_the_top_of_the_minute(tmp_path: Path) -> None:
    write_jobfile(tmp_path, '[jobs.minutely]\nfn = "tasks:say"\ncron = "* * * * *"\nargs = ["minute"]\n')
    with Service("jobs.toml", "--no-status", "--store", ":memory:", cwd=tmp_path) as service:
        line = service.expect(r"^(\S+) WARNING said minute$", timeout=75)
        fired = datetime.fromisoformat(line.group(1))
        assert fired.astimezone(UTC).second < 2  # at the top of the minute, give or take the machine
        service.expect(r"task=minutely event=completed run=1 ")
        service.send(signal.SIGTERM)
        assert service.wait() == 0
