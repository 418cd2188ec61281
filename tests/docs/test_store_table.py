"""``docs/persistence.md`` and ``docs/scale-out.md`` carry one table of what each store supports.

Written once and copied: this holds the two copies equal, so neither drifts from the other.
"""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
TABLE = re.compile(r"<!-- store-support:.*?-->\n(.*?)<!-- store-support: end -->", re.S)


def table_of(document: str) -> str:
    found = TABLE.findall((DOCS / document).read_text())
    assert len(found) == 1, f"{document} must carry the store-support table once"
    return str(found[0])


def test_the_two_pages_carry_the_same_table_of_what_each_store_supports() -> None:
    persistence = table_of("persistence.md")
    assert persistence == table_of("scale-out.md")
    header = next(line for line in persistence.splitlines() if line.startswith("| you ask for"))
    assert [cell.strip().split(" ")[0] for cell in header.strip("|").split("|")][1:] == [
        "memory",
        "SQLite",
        "PostgreSQL,",
    ]
