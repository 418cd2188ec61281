"""Function references and the argument checks for tasks that leave the process."""

from __future__ import annotations

import functools
import json
import math
import os.path
from datetime import UTC, datetime

import pytest

from actors.references import (
    LazyReference,
    check_json_arguments,
    check_picklable_arguments,
    parse_reference,
    reference_of,
    resolve,
)


def module_level(x: int) -> int:
    return x + 1


class Holder:
    @staticmethod
    def static(x: int) -> int:
        return x

    def method(self) -> None:
        return None


def test_module_level_function_round_trips() -> None:
    reference = reference_of(module_level)
    assert reference == f"{__name__}:module_level"
    assert resolve(reference) is module_level
    assert reference_of(Holder.static) == f"{__name__}:Holder.static"
    assert resolve("os.path:join") is os.path.join


def test_string_reference_is_checked_for_form_only() -> None:
    assert reference_of("nowhere.module:fn") == "nowhere.module:fn"
    for bad in ["no_colon", "a.b:", ":fn", "a b:c", "a:b:c"]:
        with pytest.raises(ValueError, match="not of the form"):
            reference_of(bad)


@pytest.mark.parametrize(
    ("fn", "why"),
    [
        (lambda: None, "lambda"),
        (functools.partial(module_level, 1), "no module-level name"),
        (Holder().method, "bound method"),
    ],
)
def test_unimportable_callables_are_refused_with_the_reason(fn: object, why: str) -> None:
    with pytest.raises(ValueError, match=why) as caught:
        reference_of(fn)
    assert "package.module:function" in str(caught.value)


def test_nested_function_is_refused() -> None:
    def nested() -> None:
        return None

    with pytest.raises(ValueError, match="inside a function"):
        reference_of(nested)


def test_redefined_name_is_refused() -> None:
    def impostor(x: int) -> int:
        return x

    impostor.__qualname__ = "module_level"
    with pytest.raises(ValueError, match="different object"):
        reference_of(impostor)


def test_resolve_errors() -> None:
    with pytest.raises(ModuleNotFoundError):
        resolve("no_such_module_xyz:fn")
    with pytest.raises(ImportError, match="no attribute"):
        resolve("os.path:no_such_function")
    with pytest.raises(TypeError, match="not a function"):
        resolve("os:sep")
    with pytest.raises(TypeError):
        parse_reference(42)  # type: ignore[arg-type]


def test_lazy_reference_imports_on_call() -> None:
    lazy = LazyReference(f"{__name__}:module_level")
    assert lazy(1) == 2
    broken = LazyReference("no_such_module_xyz:fn")
    with pytest.raises(ImportError):
        broken()


def test_json_arguments() -> None:
    check_json_arguments((1, "a", None, True, 1.5, [1, (2, 3)], {"k": {"n": [None]}}), {"x": 1})
    with pytest.raises(TypeError, match=r"args\[1\] is a datetime"):
        check_json_arguments((1, datetime.now(UTC)), {})
    with pytest.raises(TypeError, match=r"kwargs\['when'\]\['at'\] is a set"):
        check_json_arguments((), {"when": {"at": {1}}})
    with pytest.raises(TypeError, match="keys must be str"):
        check_json_arguments(({1: "a"},), {})
    with pytest.raises(TypeError, match="JSON cannot hold"):
        check_json_arguments((math.nan,), {})
    # What passes really does round-trip (tuples as lists).
    args = (1, [2, (3,)], {"a": None})
    assert json.loads(json.dumps(args)) == [1, [2, [3]], {"a": None}]


def test_picklable_arguments() -> None:
    check_picklable_arguments((1, "x", datetime.now(UTC)), {"a": [1]})
    with pytest.raises(TypeError, match=r"args\[0\] cannot be sent"):
        check_picklable_arguments((lambda: None,), {})
