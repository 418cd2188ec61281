"""A task's options: defined once (``TaskOptions``), and what the fast path derives from them."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from actors import Retry, Scheduler
from actors.api.validation import KEYWORD_TAIL, PLAIN_TAIL, TaskOptions

SCHEDULE_METHODS = sorted(name for name in dir(Scheduler) if name.startswith(("schedule_", "tell_")))
NON_DEFAULT = {
    "failure_limit": 3,
    "executor": "process",
    "misfire_grace": 0.0,
    "if_exists": "keep",
    "durable": False,
    "timeout": 1.0,
    "retry": Retry(),
    "overlap": "queue",
    "max_instances": 2,
    "catch_up": "all",
    "max_catch_up": 5,
    "jitter": 1.0,
    "keep_result": True,
}


@pytest.mark.parametrize("method", SCHEDULE_METHODS)
def test_every_schedule_method_takes_the_options_in_one_order_with_their_defaults(method: str) -> None:
    parameters = inspect.signature(getattr(Scheduler, method)).parameters
    taken = [name for name in parameters if name in KEYWORD_TAIL]
    assert taken == [name for name in KEYWORD_TAIL if name in taken]
    defaults = TaskOptions()
    for name in taken:
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert parameters[name].default == getattr(defaults, name)


def test_the_keyword_tail_at_its_defaults_is_what_schedule_once_compares_with() -> None:
    parameters = inspect.signature(Scheduler.schedule_once).parameters
    assert tuple(parameters[name].default for name in KEYWORD_TAIL) == PLAIN_TAIL


def _packed(method: str) -> list[list[str]]:
    """The names each ``tail = (...)`` of a method packs, a ``*name`` of an earlier tuple spelled out."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(Scheduler, method))))
    tuples: dict[str, list[str]] = {}
    packed: list[list[str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)):
            continue
        names: list[str] = []
        for item in node.value.elts:
            if isinstance(item, ast.Starred) and isinstance(item.value, ast.Name):
                names.extend(tuples[item.value.id])
            elif isinstance(item, ast.Name):
                names.append(item.id)
        target = node.targets[0]
        if isinstance(target, ast.Name):
            tuples[target.id] = names
            if target.id == "tail":
                packed.append(names)
    return packed


@pytest.mark.parametrize("method", SCHEDULE_METHODS)
def test_a_method_that_packs_its_keyword_tail_packs_it_in_the_options_order(method: str) -> None:
    assert _packed(method) in ([], [list(KEYWORD_TAIL)])


@pytest.mark.parametrize("option", sorted(NON_DEFAULT))
def test_any_option_off_its_default_makes_the_options_not_plain(option: str) -> None:
    assert TaskOptions(name="named").plain
    assert not TaskOptions(**{option: NON_DEFAULT[option]}).plain  # type: ignore[arg-type]


def test_non_default_values_cover_every_option_but_the_name() -> None:
    assert set(NON_DEFAULT) == set(TaskOptions._fields) - {"name"}


def test_a_derived_spec_keeps_every_option_of_its_spec() -> None:
    from actors.core.task_record import SPEC_FIELDS, TaskSpec

    assert tuple(inspect.signature(TaskSpec.__init__).parameters)[1:] == SPEC_FIELDS
    spec = TaskSpec(None, 3, misfire_grace=1.0, timeout=2.0, delay=4.0, keep_result=True)
    derived = spec.replace(delay=5.0)
    assert [getattr(derived, name) for name in SPEC_FIELDS if name != "delay"] == [
        getattr(spec, name) for name in SPEC_FIELDS if name != "delay"
    ]
    assert derived.delay == 5.0
