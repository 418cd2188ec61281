"""The pure core and the messages start no thread, read no clock, depend on no actor, and never
read the state other threads share (tokens and claims): they only make moves on it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_FILES = [
    ROOT / "actors" / "core" / "timetable.py",
    ROOT / "actors" / "core" / "run_endings.py",
    ROOT / "actors" / "core" / "dependencies.py",
    ROOT / "actors" / "core" / "wall_tasks.py",
    ROOT / "actors" / "core" / "subscriptions.py",
    ROOT / "actors" / "core" / "effects.py",
    ROOT / "actors" / "core" / "retry.py",
    ROOT / "actors" / "core" / "dealer.py",
    ROOT / "actors" / "core" / "due_heap.py",
    ROOT / "actors" / "core" / "task_record.py",
    ROOT / "actors" / "core" / "task_state.py",
    ROOT / "actors" / "sync" / "claim.py",
    ROOT / "actors" / "core" / "recurrence.py",
    ROOT / "actors" / "core" / "cron.py",
    ROOT / "actors" / "core" / "zones.py",
    ROOT / "actors" / "cli" / "jobfile.py",
    ROOT / "actors" / "cli" / "jobkeys.py",
    ROOT / "actors" / "shared" / "plan.py",
    ROOT / "actors" / "shared" / "view.py",
    ROOT / "actors" / "cli" / "reconcile.py",
    ROOT / "actors" / "cli" / "rows.py",
    *sorted((ROOT / "messages").glob("*.py")),
]
# actors/sync/token.py is not pure (it holds a lock): it is where the shared state lives.
MESSAGE_FILES = sorted((ROOT / "messages").glob("*.py"))
FORBIDDEN = {"threading", "time", "pykka", "concurrent", "_thread", "asyncio"}
CLOCK_READS = {"now", "utcnow", "today", "monotonic", "perf_counter", "time_ns", "monotonic_ns"}

SHARED_STATE_READS = {
    "token_state",
    "_token",
    "_outcome",
    "_free",
    "taken",
    "outcome",
    "wait_ended",
    "stop",
    "run_ended",
}
"""What shows the state of a token or a claim. The pure core may only make moves on them
(``try_start``, ``end_run``, ``revoke``, ``take``, ``finish``, ``request_stop``, ``stop_reasons``,
``abandon_run``) and act on each move's result: a read would be a decision made on state
another thread may be changing."""
OWN_STATE = {
    ROOT / "actors" / "sync" / "claim.py": {"_free", "stop", "run_ended"},
    ROOT / "actors" / "core" / "task_record.py": {"_token", "_outcome"},
}
"""A module may touch the state it implements: the claim's move is written on ``_free``, and a
new ``TaskRecord`` sets up its own token (before anyone else can see the record)."""


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add("." * node.level + (node.module or ""))
    return modules


def reads(node: ast.AST, forbidden: frozenset[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in forbidden
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
        and any(isinstance(arg, ast.Constant) and arg.value in forbidden for arg in node.args)
    )


def shared_state_reads(path: Path, allowed: frozenset[str] = frozenset()) -> list[str]:
    """Every access to a forbidden name, in file order: ``x.name``, ``getattr(x, "name")`` and the like."""
    forbidden = frozenset(SHARED_STATE_READS - allowed)
    found = sorted(
        (node.lineno, node.col_offset, ast.unparse(node))
        for node in ast.walk(parse(path))
        if isinstance(node, ast.expr) and reads(node, forbidden)
    )
    return [f"line {line}: {code}" for line, _, code in found]


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def test_files_found() -> None:
    assert all(path.is_file() for path in PURE_FILES)
    assert ROOT / "actors" / "sync" / "token.py" not in PURE_FILES
    assert len(MESSAGE_FILES) >= 5
    assert {p.name for p in MESSAGE_FILES} >= {
        "__init__.py",
        "commands.py",
        "events.py",
        "frozen.py",
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
        for node in ast.walk(parse(path))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLOCK_READS
    ]
    assert not calls, f"{path.name} reads a clock: {calls}"


@pytest.mark.parametrize("path", PURE_FILES, ids=ids(PURE_FILES))
def test_no_reads_of_shared_state(path: Path) -> None:
    found = shared_state_reads(path, frozenset(OWN_STATE.get(path, ())))
    assert not found, f"{path.name} reads the state of a token or a claim: {found}"


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


def test_checker_catches_reads_of_shared_state(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def decide(task, claim):\n"
        "    if task.token_state is RUNNING:\n"  # a read of the token
        "        return claim._free\n"  # a read of the claim
        "    state = getattr(task, 'outcome')\n"  # the same, spelt differently
        "    task.revoke()\n"
        "    return task.take() and claim.take() and task.try_start(True)\n"  # moves: fine
    )
    assert shared_state_reads(sample) == [
        "line 2: task.token_state",
        "line 3: claim._free",
        "line 4: getattr(task, 'outcome')",
    ]
    with pytest.raises(AssertionError, match="reads the state of a token or a claim"):
        test_no_reads_of_shared_state(sample)
    moves_only = tmp_path / "moves.py"
    moves_only.write_text("def end(task, outcome):\n    task.end_run()\n    task.finish(outcome)\n")
    test_no_reads_of_shared_state(moves_only)
