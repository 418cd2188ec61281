"""``SchedulerPort`` names exactly what the friends of the facade use of ``Scheduler``, and it has it.

The friends hold their scheduler as ``scheduler`` (a parameter) or ``self._scheduler`` (a
handle's field); every attribute they read of it must be a member of the port, and every member
of the port must be used by one of them (a member nobody uses is surface nobody needs).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from actors import Scheduler
from actors.api.port import SchedulerPort

ROOT = Path(__file__).resolve().parents[2]
FRIENDS = ("handles.py", "stepping.py", "shared_tasks.py", "shared_handles.py")


def is_the_scheduler(node: ast.expr) -> bool:
    """Whether ``node`` is how a friend names its scheduler: ``scheduler`` or ``self._scheduler``."""
    if isinstance(node, ast.Name):
        return node.id == "scheduler"
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "_scheduler"
        and isinstance(node.value, ast.Name)
        and node.value.id in {"self", "handle"}
    )


def used_by_friends() -> set[str]:
    used = set()
    for name in FRIENDS:
        tree = ast.parse((ROOT / "actors" / "api" / name).read_text())
        used |= {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and is_the_scheduler(node.value)
        }
    return used


def port_members() -> set[str]:
    body = ast.parse(inspect.getsource(SchedulerPort)).body[0]
    assert isinstance(body, ast.ClassDef)
    return {node.name for node in body.body if isinstance(node, ast.FunctionDef)}


def test_the_port_names_exactly_what_the_friends_use_of_the_scheduler() -> None:
    assert used_by_friends() == port_members()


def test_the_scheduler_has_every_member_of_its_port() -> None:
    missing = {member for member in port_members() if not hasattr(Scheduler, member)}
    assert not missing


def test_each_member_of_the_port_says_which_thread_calls_it_and_what_lock_it_takes() -> None:
    for member in port_members():
        doc = inspect.getdoc(getattr(SchedulerPort, member)) or ""
        assert "thread" in doc, member
        assert "lock" in doc, member
