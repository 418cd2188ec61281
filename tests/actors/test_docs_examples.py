"""The code in docs/actors.md and the README's tests runs as written.

Each ```python block of docs/actors.md, and each README block that defines a test, is executed
as a module of its own; then every ``test_*`` function it defines is called.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks(name: str, *, only_tests: bool) -> list[tuple[str, str]]:
    text = (ROOT / name).read_text(encoding="utf-8")
    found = []
    for match in BLOCK.finditer(text):
        code = match.group(1)
        if only_tests and not re.search(r"^def test_", code, re.MULTILINE):
            continue
        line = text.count("\n", 0, match.start()) + 2
        found.append((f"{name}:{line}", code))
    return found


EXAMPLES = blocks("docs/actors.md", only_tests=False) + blocks("README.md", only_tests=True)


def test_the_examples_are_found() -> None:
    assert len(blocks("docs/actors.md", only_tests=False)) >= 4
    assert any("settle(also=" in code for _, code in blocks("README.md", only_tests=True))


@pytest.mark.parametrize(("where", "code"), EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_example_runs(where: str, code: str) -> None:
    name = "docs_example_" + re.sub(r"\W", "_", where)
    module = types.ModuleType(name)
    module.__file__ = where
    sys.modules[name] = module  # dataclasses look their module up
    try:
        exec(compile(code, where, "exec"), module.__dict__)
        tests = [value for key, value in vars(module).items() if key.startswith("test_") and callable(value)]
        for test in tests:
            test()
    finally:
        del sys.modules[name]
