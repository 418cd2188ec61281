"""The job file's scheduling options (retry, timeout, executor, durable), through a real ``run``.

Each test waits for the log line that says what happened; none sleeps.
"""

from __future__ import annotations

import re
import signal
from datetime import datetime
from pathlib import Path

from tests.cli.helpers import Service, cli, write_jobfile


def stamp(line: str) -> datetime:
    """The local time a log line was written at (its first field)."""
    return datetime.fromisoformat(line.split(" ", 1)[0])


def test_a_flaky_job_is_retried_with_backoff_as_the_file_says(tmp_path: Path) -> None:
    write_jobfile(
        tmp_path,
        '[jobs.flaky]\nfn = "tasks:fails_twice"\nevery = "1h"\n'
        'retry = { attempts = 3, delay = "200ms", backoff = 2, jitter = 0, on = ["ConnectionError"] }\n'
        '[jobs.picky]\nfn = "tasks:fails_twice"\nevery = "1h"\n'
        'retry = { attempts = 3, delay = "100ms", on = ["ValueError"] }\n',
    )
    with Service("jobs.toml", "--no-status", "--store", ":memory:", cwd=tmp_path) as service:
        service.expect(r"task=picky event=failed run=1 .*ConnectionError: attempt 1", anywhere=True)
        first = service.expect(r"WARNING flaky: attempt 1 of run 1$", anywhere=True).string
        second = service.expect(r"WARNING flaky: attempt 2 of run 1$", anywhere=True).string
        third = service.expect(r"WARNING flaky: attempt 3 of run 1$", anywhere=True).string
        service.expect(r"INFO task=flaky event=completed run=1 ", anywhere=True)
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    # delay * backoff ** (n - 1) between attempts, with no jitter: 200 ms, then 400 ms.
    assert (stamp(second) - stamp(first)).total_seconds() >= 0.2
    assert (stamp(third) - stamp(second)).total_seconds() >= 0.4
    # Only the exceptions of `on` are retried: picky's ConnectionError failed its run at once.
    assert "picky: attempt 2" not in service.output()


def test_a_run_past_its_timeout_is_timed_out_then_failed_after_hung_grace(tmp_path: Path) -> None:
    write_jobfile(
        tmp_path,
        '[scheduler]\nhung_grace = "100ms"\n'
        '[jobs.stuck]\nfn = "tasks:slow"\nevery = "1h"\nargs = [3]\ntimeout = "200ms"\n',
    )
    options = ("--no-status", "--store", ":memory:", "--grace", "0.1")
    with Service("jobs.toml", *options, cwd=tmp_path) as service:
        service.expect(r"WARNING slow started$")
        service.expect(r"task=stuck event=timed_out run=1")
        service.expect(r'WARNING task=stuck event=failed run=1 .*error="TaskTimeoutError: ')
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    assert "slow finished" not in service.output()


def test_a_process_job_runs_in_a_worker_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid.txt"
    write_jobfile(
        tmp_path,
        f'[scheduler]\nprocesses = 1\n[jobs.apart]\nfn = "tasks:record_pid"\nevery = "1h"\n'
        f'executor = "process"\nargs = ["{pid_file}"]\n',
    )
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"INFO task=apart event=completed run=1 ", timeout=60)
        ran_in = int(pid_file.read_text())
        assert ran_in != service.process.pid
        service.send(signal.SIGTERM)
        assert service.wait() == 0


def test_a_memory_only_job_stays_out_of_the_store_and_a_reload_keeps_it(tmp_path: Path) -> None:
    write_jobfile(
        tmp_path,
        '[jobs.kept]\nfn = "tasks:tick"\nevery = "100ms"\n'
        '[jobs.fleeting]\nfn = "tasks:tick"\nevery = "100ms"\ndurable = false\nargs = [1979-05-27]\n',
    )
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"INFO job fleeting: added \(new job\)$", anywhere=True)
        service.expect(r"task=fleeting event=completed run=3 ")
        service.send(signal.SIGHUP)
        service.expect(r"INFO job fleeting: kept \(unchanged\)$")
        service.expect(r"task=fleeting event=completed run=4 ")  # its counters carried on
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    status = cli("status", "jobs.toml", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert re.search(r"^kept +every 100ms +scheduled ", status.stdout, re.M), status.stdout
    assert "fleeting" not in status.stdout


def test_check_shows_each_jobs_options(tmp_path: Path) -> None:
    write_jobfile(
        tmp_path,
        "[scheduler]\nprocesses = 2\n"
        '[jobs.flaky]\nfn = "tasks:tick"\nevery = "10s"\ntimeout = "30s"\nexecutor = "process"\n'
        'durable = false\nretry = { attempts = 5, delay = "1s", on = ["ConnectionError", "TimeoutError"] }\n',
    )
    result = cli("check", "jobs.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        "flaky: every 10s, timeout 30s, retry: 5 attempts, 1s then x2 (at most 1m, jitter 0.1), "
        "on ConnectionError, TimeoutError, in a process, memory only: tasks:tick"
    ) in result.stdout


def test_overlap_allow_runs_up_to_max_instances_of_a_job_at_once(tmp_path: Path) -> None:
    write_jobfile(
        tmp_path,
        '[jobs.wide]\nfn = "tasks:slow"\nevery = "200ms"\nargs = [1]\noverlap = "allow"\nmax_instances = 2\n',
    )
    with Service("jobs.toml", "--no-status", "--store", ":memory:", "--grace", "2", cwd=tmp_path) as service:
        service.expect(r"WARNING slow started$")
        service.expect(r"WARNING slow started$")  # a second run while the first goes on
        service.expect(r"WARNING task=wide event=missed run=3$")  # two go: the next slot is missed
        service.expect(r"INFO task=wide event=completed run=1 ")
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    output = service.output()
    assert output.index("event=missed run=3") < output.index("slow finished")
