"""The pure core and the messages start no thread, read no clock and depend on no actor."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_FILES = [
    ROOT / "actors" / "timetable.py",
    ROOT / "actors" / "dealer.py",
    ROOT / "actors" / "task_record.py",
    ROOT / "actors" / "recurrence.py",
    ROOT / "actors" / "cron.py",
    ROOT / "actors" / "zones.py",
    ROOT / "actors" / "cli" / "jobfile.py",
    ROOT / "actors" / "cli" / "jobkeys.py",
    *sorted((ROOT / "messages").glob("*.py")),
]
MESSAGE_FILES = sorted((ROOT / "messages").glob("*.py"))
FORBIDDEN = {"threading", "time", "pykka", "concurrent", "_thread", "asyncio"}
CLOCK_READS = {"now", "utcnow", "today", "monotonic", "perf_counter", "time_ns", "monotonic_ns"}


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add("." * node.level + (node.module or ""))
    return modules


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def test_files_found() -> None:
    assert len(MESSAGE_FILES) >= 5
    assert {p.name for p in MESSAGE_FILES} >= {
        "__init__.py",
        "commands.py",
        "events.py",
        "reports.py",
        "triggers.py",
    }


@pytest.mark.parametrize("path", PURE_FILES, ids=ids(PURE_FILES))
def test_no_threads_clocks_or_actors_imported(path: Path) -> None:
    bad = {m for m in imported_modules(path) if m.split(".")[0] in FORBIDDEN}
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", PURE_FILES, ids=ids(PURE_FILES))
def test_no_clock_reads(path: Path) -> None:
    calls = [
        ast.unparse(node.func)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLOCK_READS
    ]
    assert not calls, f"{path.name} reads a clock: {calls}"


@pytest.mark.parametrize("path", MESSAGE_FILES, ids=ids(MESSAGE_FILES))
def test_messages_import_nothing_from_actors(path: Path) -> None:
    bad = {m for m in imported_modules(path) if m.split(".")[0] == "actors" or m.startswith("..")}
    assert not bad, f"{path.name} imports {bad}"


def test_checker_catches_violations(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import threading\nfrom concurrent.futures import Future\nfrom actors.x import y\n"
        "import datetime\nx = datetime.datetime.now()\n"
    )
    assert imported_modules(sample) == {"threading", "concurrent.futures", "actors.x", "datetime"}
    with pytest.raises(AssertionError):
        test_no_clock_reads(sample)
    with pytest.raises(AssertionError):
        test_no_threads_clocks_or_actors_imported(sample)
