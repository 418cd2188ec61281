"""The Python code blocks of the README and ``docs/*.md``, and how each is run.

A block is a fenced block whose info string starts with ``python`` (or ``py``). The marker
on the line before it, an HTML comment (invisible once rendered), says how it runs:

- no marker: the block runs as a module of its own, then each ``test_*`` function it defines
  is called. A document's blocks run in order, in one temporary directory as the working
  directory, so a later block finds the files an earlier one made (``tasks.db``).
- ``<!-- fragment -->`` (``<!-- fragment: why -->``): a piece of a larger program (it uses a
  scheduler ``s`` from the text around it, say). It is compiled, so its syntax cannot rot,
  but not run.
- a block whose first line is ``# file: PATH`` (``# file: jobs/reports.py``) shows a module
  that other blocks import by reference (``"jobs.reports:send"``): it is written to ``PATH``
  in the document's directory, which is on ``sys.path`` while its blocks run.
- ``<!-- postgres -->``: the block needs a PostgreSQL server. It runs with every
  ``postgresql://...`` URL in it replaced by the test server's (``SCHEDULER_TEST_DSN``) on a
  schema of its own; without a server it is skipped with the reason (failed under ``CI=true``).
- ``<!-- celery -->``: the block needs the ``[celery]`` extra, RabbitMQ on 127.0.0.1:5672 and
  Redis on 127.0.0.1:6379 (it starts its own ``celery worker``); without them it is skipped
  with the reason (failed under ``CI=true``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FENCE = re.compile(r"^(?P<indent> *)(?P<ticks>`{3,})(?P<info>[^`\n]*)$")
FILE = re.compile(r"^# file: (?P<path>[\w./-]+\.py)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(?P<kind>fragment|postgres|celery)\b[^>]*-->\s*$")
POSTGRES_URL = re.compile(r"postgres(?:ql)?://[^\s\"']+")
PYTHON = {"python", "py", "python3"}


@dataclass(frozen=True, slots=True)
class Block:
    """A Python block: where it is, its code, its kind (``run``, ``fragment``, ``file``, ``postgres``)."""

    doc: str  # the document's path from the repository root
    line: int  # the line of the block's first line of code in the document
    code: str
    kind: str

    @property
    def file(self) -> str:
        """The path a ``file`` block is written to."""
        named = FILE.match(self.code.split("\n", 1)[0])
        assert named is not None, f"{self.where} is not a file block"
        return named["path"]

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    def compiled(self, code: str | None = None) -> object:
        """The block compiled so that tracebacks name the document and its line numbers."""
        padded = "\n" * (self.line - 1) + (self.code if code is None else code)
        path = str(ROOT / self.doc)  # absolute: tracebacks show the document's lines from any cwd
        return compile(padded, path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)

    def defined_tests(self) -> list[str]:
        """The names of the module-level ``test_*`` functions the block defines."""
        tree = ast.parse(self.code)
        return [
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
        ]


def documents() -> list[str]:
    """The documents whose blocks run: the README and every ``docs/*.md``."""
    return ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


def blocks_of(doc: str) -> list[Block]:
    """The Python blocks of ``doc``, in order, with the kind each one's marker gives."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, ticks = len(opening["indent"]), opening["ticks"]
        end = index + 1
        while end < len(lines) and not re.match(rf"^ *{ticks}`*\s*$", lines[end]):
            end += 1
        words = opening["info"].split()
        if words and words[0].lower() in PYTHON:
            body = "\n".join(line[indent:] for line in lines[index + 1 : end]) + "\n"
            kind = "file" if FILE.match(body.split("\n", 1)[0]) else _kind(lines, index)
            found.append(Block(doc, index + 2, body, kind))
        index = end + 1
    return found


def _kind(lines: list[str], fence: int) -> str:
    before = fence - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    marker = MARKER.match(lines[before]) if before >= 0 else None
    return marker["kind"] if marker else "run"


def with_postgres(code: str, dsn: str) -> str:
    """``code`` with each PostgreSQL URL replaced by ``dsn`` (which names the test's schema)."""
    return POSTGRES_URL.sub(lambda _: dsn, code)
