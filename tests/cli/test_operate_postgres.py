"""``pause``, ``resume``, ``run-now`` and ``history`` on a PostgreSQL store, beside a real ``run``.

The command commits the change in the database (the store's own ``pause``...), and the node
holding the task obeys within its poll interval; ``history`` reads the ledger of every node.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest

from actors.store import PostgresStore
from tests.cli.helpers import Service, cli
from tests.cli.test_postgres_store import TICK, jobfile_on, url

__all__ = ["url"]  # the fixture, imported for these tests

needs_operations = pytest.mark.skipif(
    not hasattr(PostgresStore, "pause"), reason="this PostgresStore cannot pause a task yet"
)


def test_history_reads_a_shared_store_with_or_without_a_run(tmp_path: Path, url: str) -> None:
    jobfile_on(url, tmp_path, TICK)
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"task=tick event=completed run=3 ")
        beside = cli("history", "jobs.toml", "tick", "--json", "--limit", "2", cwd=tmp_path)
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    assert beside.returncode == 0, beside.stderr
    runs = json.loads(beside.stdout)
    assert len(runs) == 2
    assert runs[0]["run"] == runs[1]["run"] + 1
    assert runs[0]["node"]  # a shared store names the node that ran it
    after = cli("history", "jobs.toml", "tick", "--limit", "1", cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    assert after.stdout.startswith("jobs.toml: job 'tick': 1 run(s) in postgresql://")


@needs_operations
def test_pause_and_resume_commit_in_the_store_and_the_running_node_obeys(tmp_path: Path, url: str) -> None:
    jobfile_on(url, tmp_path, TICK)
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"task=tick event=completed run=2 ")
        paused = cli("pause", "jobs.toml", "tick", cwd=tmp_path)
        assert (paused.returncode, paused.stdout) == (0, "jobs.toml: job 'tick': paused\n"), paused.stderr
        again = cli("pause", "jobs.toml", "tick", cwd=tmp_path)
        assert (again.returncode, again.stdout) == (0, "jobs.toml: job 'tick': it is paused already\n")
        status = cli("status", "jobs.toml", cwd=tmp_path)
        assert re.search(r"tick\s+every 100ms\s+paused", status.stdout), status.stdout
        resumed = cli("resume", "jobs.toml", "tick", cwd=tmp_path)
        assert (resumed.returncode, resumed.stdout) == (0, "jobs.toml: job 'tick': resumed\n")
        service.expect(r"task=tick event=completed run=\d+ ")
        service.send(signal.SIGTERM)
        assert service.wait() == 0
