"""Every Python block of the README and ``docs/*.md`` runs as written (``tests.docs.blocks``).

One test per document: its blocks run in order, each as a subtest named by its line, in a
temporary directory of the document's own. A fragment (``<!-- fragment -->``) is compiled only.
"""

from __future__ import annotations

import os
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.blocks import Block, blocks_of, documents, with_postgres
from tests.store.pg import DSN, drop_schemas, new_schema, require_postgres

DOCUMENTS = [doc for doc in documents() if blocks_of(doc)]


class Postgres:
    """The test server, on a schema made for the first block that asks for it (dropped afterwards)."""

    def __init__(self) -> None:
        self.schemas: list[str] = []

    def dsn(self) -> str:
        require_postgres()
        if not self.schemas:
            self.schemas.append(new_schema())
        separator = "&" if "?" in DSN else "?"
        return f"{DSN}{separator}options=-csearch_path%3D{self.schemas[0]}"


@pytest.fixture
def postgres() -> Iterator[Postgres]:
    server = Postgres()
    yield server
    drop_schemas(server.schemas)


def require_celery() -> None:
    """Skip (fail under ``CI=true``, where they run) unless Celery, RabbitMQ and Redis are here."""
    from tests.executors.conftest import have, reachable

    if not (have("celery", "redis") and reachable(5672) and reachable(6379)):
        reason = "needs the [celery] extra, RabbitMQ on 127.0.0.1:5672 and Redis on 127.0.0.1:6379"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def run(block: Block, code: str) -> None:
    """Run ``code`` (the block's, maybe rewritten) as a module of its own; call its tests."""
    name = "doc_block_" + re.sub(r"\W", "_", block.where)
    module = types.ModuleType(name)
    module.__file__ = block.doc
    sys.modules[name] = module  # dataclasses and pickling look the module up
    try:
        exec(block.compiled(code), module.__dict__)
        for test in block.defined_tests():
            module.__dict__[test]()
    finally:
        del sys.modules[name]


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_the_python_blocks_of_the_document_run(
    doc: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    subtests: pytest.Subtests,
    postgres: Postgres,
) -> None:
    monkeypatch.chdir(tmp_path)  # the files a block makes (tasks.db) are the document's own
    monkeypatch.syspath_prepend(tmp_path)  # and so are the modules its file blocks show
    before = set(sys.modules)
    try:
        for block in blocks_of(doc):
            with subtests.test(msg=f"{block.where} ({block.kind})"):
                run_one(block, tmp_path, postgres)
    finally:
        for name in set(sys.modules) - before:  # another document's "jobs" is another module
            if made_in(sys.modules[name], tmp_path):
                del sys.modules[name]


def made_in(module: types.ModuleType, directory: Path) -> bool:
    """Whether ``module`` (a namespace package such as ``jobs`` included) comes from ``directory``."""
    places = [getattr(module, "__file__", None) or "", *getattr(module, "__path__", [])]
    return any(Path(place).is_relative_to(directory) for place in places if place)


def run_one(block: Block, directory: Path, postgres: Postgres) -> None:
    if block.kind == "fragment":
        block.compiled()
    elif block.kind == "file":
        block.compiled()
        path = directory / block.file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code, encoding="utf-8")
    elif block.kind == "postgres":
        run(block, with_postgres(block.code, postgres.dsn()))
    elif block.kind == "celery":
        require_celery()
        run(block, block.code)
    else:
        run(block, block.code)


def test_blocks_are_found_with_their_markers() -> None:
    readme = blocks_of("README.md")
    assert any("settle(also=" in block.code and block.defined_tests() for block in readme)
    assert len(blocks_of("docs/actors.md")) >= 4
    kinds = {block.kind for doc in documents() for block in blocks_of(doc)}
    assert kinds == {"run", "fragment", "file", "postgres", "celery"}


def test_a_marker_applies_to_the_block_right_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.docs import blocks

    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n\n<!-- fragment: uses s -->\n\n```python\ns.settle()\n```\n\n"
        "```python\n# file: jobs/a.py\ndef f() -> None: ...\n```\n\n"
        "```sh\nls\n```\n\n  ```py\n  x = 1\n  ```\n\n<!-- postgres -->\n```python title\n"
        'Scheduler(store="postgresql://app@db/app")\n```\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(blocks, "ROOT", tmp_path)
    found = blocks.blocks_of("doc.md")
    assert [(b.line, b.kind, b.code) for b in found] == [
        (6, "fragment", "s.settle()\n"),
        (10, "file", "# file: jobs/a.py\ndef f() -> None: ...\n"),
        (19, "run", "x = 1\n"),
        (24, "postgres", 'Scheduler(store="postgresql://app@db/app")\n'),
    ]
    assert found[1].file == "jobs/a.py"
    assert with_postgres(found[3].code, "postgresql://me@here/test") == (
        'Scheduler(store="postgresql://me@here/test")\n'
    )
