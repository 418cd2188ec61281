"""The live view through a real terminal (a pseudo-terminal driven by pexpect): it renders and updates."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from actors.cli.rows import COLUMNS, NEEDED_COLUMNS
from tests.cli.helpers import cli, environment, write_jobfile

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


def spawn(folder: Path, *args: str, columns: int = 160) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "actors", "run", "jobs.toml", *args],
        cwd=str(folder),
        env=environment(),
        dimensions=(24 if columns < 160 else 30, columns),
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


ESCAPES = re.compile(r"\x1b\[[\d;?]*[A-Za-z]")
NEXT_RUN = re.compile(r"(\d\d:\d\d:\d\d|\d{4}-\d\d-\d\d \d\d:\d\d) \((in \d+[smhd]( \d+[mh])?|due now)\)|-")


def last_table(output: str) -> tuple[str, list[str], list[dict[str, str]]]:
    """The last table a run drew: its title, its column names, and its rows (column name to cell).

    Colour codes and cursor moves are taken out; a cell's (or a name's) lines are joined with
    a blank. Every line of the table is as wide as its top border.
    """
    lines = [ESCAPES.sub("", line).rstrip("\r") for line in output.split("\n")]
    top = max(index for index, line in enumerate(lines) if line.startswith("┏"))
    below = next(index for index in range(top, len(lines)) if lines[index].startswith("┡"))
    bottom = next(index for index in range(below, len(lines)) if lines[index].startswith("└"))
    title = lines[top - 1].strip()
    names = _joined([line.split("┃")[1:-1] for line in lines[top + 1 : below]])
    rows: list[list[list[str]]] = []
    for line in lines[below + 1 : bottom]:
        values = line.split("│")[1:-1]
        if values[0].strip() or not rows:
            rows.append([])
        rows[-1].append(values)
    assert {len(line) for line in lines[top:bottom]} == {len(lines[top])}, lines[top:bottom]
    assert len(lines[bottom]) >= len(lines[top])  # a log line may follow the bottom border
    return title, names, [dict(zip(names, _joined(row), strict=True)) for row in rows]


def _joined(lines: list[list[str]]) -> list[str]:
    return [" ".join(part.strip() for part in column if part.strip()) for column in zip(*lines, strict=True)]


WIDE_JOBS = """
[scheduler]
store = ":memory:"

[jobs.heartbeat]
fn = "tasks:tick"
every = "200ms"

[jobs.flaky-nightly-sync]
fn = "tasks:flaky"
every = "300ms"

[jobs.weekly-report]
fn = "tasks:tick"
every = "7d"
"""


@pytest.mark.parametrize("columns", [80, 160])
def test_the_live_view_keeps_id_next_run_runs_failures_and_outcome_whole_at_80_and_160_columns(
    tmp_path: Path, columns: int
) -> None:
    write_jobfile(tmp_path, WIDE_JOBS)
    child = spawn(tmp_path, "--for", "3", columns=columns)
    try:
        child.expect(r"INFO ran for 3(\.0)? s; stopping")
        child.expect(pexpect.EOF)
        output = child.before
    finally:
        child.close()
    assert child.exitstatus == 0
    title, names, rows = last_table(output)
    tops = [line for line in ESCAPES.sub("", output).splitlines() if line.startswith("┏")]
    assert tops
    assert max(len(line) for line in tops) <= columns  # every table drawn fits the terminal
    assert set(NEEDED_COLUMNS) <= set(names)
    assert [row["id"] for row in rows] == ["heartbeat", "flaky-nightly-sync", "weekly-report"]
    for row in rows:
        assert NEXT_RUN.fullmatch(row["next run"]), row
        assert row["runs"].isdigit(), row
        assert row["failures"].isdigit(), row
        assert row["last outcome"] in ("completed", "failed"), row
    flaky = rows[1]
    assert int(flaky["runs"]) >= 2
    assert int(flaky["failures"]) == int(flaky["runs"]) // 2  # every even run fails
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d \(in 6d 23h\)", rows[2]["next run"])
    if columns == 80:
        # The ids and a next run a week away take the room: the other columns are left out, and said so.
        assert names == list(NEEDED_COLUMNS)
        assert title.endswith("· hidden: trigger, status, last error")
    else:
        assert names == list(COLUMNS)
        assert "hidden" not in title
        assert [row["trigger"] for row in rows] == ["every 200ms", "every 300ms", "every 7d"]
        assert re.fullmatch(r"RuntimeError: flaked on run \d+", flaky["last error"])


def status_rows(folder: Path) -> tuple[str, dict[str, dict[str, str]]]:
    """Run ``status jobs.toml``; return its header lines and its rows (id to column name to cell)."""
    result = cli("status", "jobs.toml", cwd=folder)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(index for index, line in enumerate(lines) if line.startswith("id "))
    starts = [lines[header].index(name) for name in COLUMNS]
    rows = {}
    for line in lines[header + 1 :]:
        values = [line[start:end].strip() for start, end in zip(starts, [*starts[1:], None], strict=True)]
        rows[values[0]] = dict(zip(COLUMNS, values, strict=True))
    return "\n".join(lines[:header]), rows


def test_status_and_the_live_view_show_the_same_last_error_after_a_later_success(tmp_path: Path) -> None:
    write_jobfile(tmp_path, '[jobs.sync]\nfn = "tasks:fails_once"\nevery = "200ms"\n')
    failed = "RuntimeError: failed once, on run 2"
    seen = []
    for _ in ("first start", "restart"):  # the restart reads the failure from the store only
        child = spawn(tmp_path, "--for", "2")
        try:
            child.expect(r"INFO ran for 2(\.0)? s; stopping")
            child.expect(pexpect.EOF)
            output = child.before
        finally:
            child.close()
        assert child.exitstatus == 0
        view = last_table(output)[2][0]
        _, stored = status_rows(tmp_path)
        row = stored["sync"]
        assert int(row["runs"]) >= 3  # the run that failed, and a later one that did not
        assert (row["last outcome"], row["last error"]) == ("completed", failed)
        assert (view["last outcome"], view["last error"]) == ("completed", failed)
        seen.append(int(row["runs"]))
    assert seen[1] > seen[0]
