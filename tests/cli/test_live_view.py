"""The live view through a real terminal (a pseudo-terminal driven by pexpect): it renders and updates."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from actors.cli.rows import COLUMNS
from tests.cli.helpers import environment, write_jobfile

pexpect = pytest.importorskip("pexpect")

JOBS = """
[scheduler]
store = ":memory:"

[jobs.tick]
fn = "tasks:tick"
every = "200ms"

[jobs.flaky]
fn = "tasks:flaky"
delay = "300ms"
"""
STYLED = r"(?:\s|\x1b\[[\d;]*m)*"  # blanks and colour codes around a cell's text
TICK_ROW = r"│ tick +│ every 200ms +│[^│]*│[^│]*│ +(\d+) │"


def spawn(folder: Path, *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "actors", "run", "jobs.toml", *args],
        cwd=str(folder),
        env=environment(),
        dimensions=(30, 160),
        encoding="utf-8",
        timeout=15,
    )


def test_the_live_view_renders_the_table_and_redraws_it_as_runs_happen(tmp_path: Path) -> None:
    write_jobfile(tmp_path, JOBS)
    child = spawn(tmp_path, "--for", "3")
    try:
        child.expect(r"INFO job tick: added \(new job\)")  # log lines print above the table
        child.expect(r"jobs\.toml · \d\d:\d\d:\d\d · Ctrl-C stops")
        # The header is bold: colour codes between the names.
        child.expect("┃".join(["", *(rf"[^┃]*{name}[^┃]*" for name in COLUMNS), ""]))
        counts = []
        while len(set(counts)) < 3:  # three different run counts: three redraws that showed progress
            child.expect(TICK_ROW)
            counts.append(int(child.match.group(1)))
        assert counts == sorted(counts)
        # Failures are shown (in red, so with codes around): a non-zero count and the error.
        child.expect(
            rf"│ flaky +│ delay 300ms +│[^│]*│[^│]*│ +\d+ │{STYLED}[1-9]\d*{STYLED}│[^│]*"
            r"│ RuntimeError: flaked on run"
        )
        child.expect(r"INFO ran for 3(\.0)? s; stopping")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_ctrl_c_in_the_live_view_stops_cleanly_and_shows_the_cursor_again(tmp_path: Path) -> None:
    write_jobfile(tmp_path, JOBS)
    child = spawn(tmp_path)
    try:
        child.expect(TICK_ROW)
        child.sendintr()
        child.expect(r"INFO stopping: running runs get up to 30(\.0)? s to finish")
        child.expect_exact("\x1b[?25h")  # rich hid the cursor while drawing
        child.expect(r"INFO stopped")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
