"""One path in the facade: its task calls go through a ``TaskDirectory``, and it stays small.

The facade builds its directory once (``Scheduler.__init__``: ``LocalTasks``, or ``SharedTasks``
in front of it on a shared store); no other method of the facade or of its parts looks at the
mode. Behaviour on each store is tested where it happens (``tests/actors``, ``tests/durable``,
``tests/shared``); this checks the shape that keeps it one path.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from actors.api.directory import TaskDirectory
from actors.api.local_tasks import LocalTasks
from actors.api.shared_handles import SharedTaskHandle, StoredTaskRef
from actors.api.shared_tasks import SharedTasks

API = Path(__file__).resolve().parents[2] / "actors" / "api"
PARTS = ("plumbing.py", "submitting.py", "scheduling.py", "messaging.py", "queries.py", "observing.py")
MODE_NAMES = {"SharedTasks", "SharedNode", "is_shared", "_shared_tasks", "is_memory_id"}
"""What a method would name to tell the modes apart."""


def names_in(node: ast.AST) -> set[str]:
    found = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            found.add(child.id)
        elif isinstance(child, ast.Attribute):
            found.add(child.attr)
    return found


@pytest.mark.parametrize("part", PARTS)
def test_no_part_of_the_facade_tells_the_modes_apart(part: str) -> None:
    assert not names_in(ast.parse((API / part).read_text())) & MODE_NAMES


def test_the_facade_looks_at_the_mode_only_where_it_starts() -> None:
    tree = ast.parse((API / "facade.py").read_text())
    methods = [
        node
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name == "Scheduler"
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name != "__init__"
    ]
    assert methods
    for method in methods:
        assert not names_in(method) & MODE_NAMES, method.name


def test_the_facade_is_under_600_lines_and_no_module_of_the_api_over_700() -> None:
    assert len((API / "facade.py").read_text().splitlines()) < 600
    for path in API.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 700, path.name


def protocol_members() -> set[str]:
    members = inspect.getmembers(TaskDirectory, inspect.isfunction)
    return {name for name, _ in members if not name.startswith("_")}


@pytest.mark.parametrize("directory", [LocalTasks, SharedTasks])
def test_each_directory_has_every_member_with_its_parameters(directory: type) -> None:
    assert protocol_members() == {"submit", "revoke", "cancel", "handle", "dependency", "info", "infos"}
    for name in protocol_members():
        wanted = list(inspect.signature(getattr(TaskDirectory, name)).parameters)
        assert list(inspect.signature(getattr(directory, name)).parameters) == wanted, name


def test_a_shared_handle_names_its_task_by_a_frozen_reference_not_a_record() -> None:
    ref = StoredTaskRef("job", "job", 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ref.seq = 4  # type: ignore[misc]
    assert not hasattr(ref, "__dict__")
    assert "_task" not in SharedTaskHandle.__slots__
    assert "_stored" in SharedTaskHandle.__slots__
