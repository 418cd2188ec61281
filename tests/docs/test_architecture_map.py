"""``docs/architecture.md`` is the map: every module of ``actors`` and ``messages`` is on it.

A module is on the map when the page names it, with its folder (``api/bulk.py``) or as a
row of its folder's table (`` `bulk.py` ``). A new module without its row fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAP = (ROOT / "docs" / "architecture.md").read_text()
MODULES = sorted(
    path.relative_to(ROOT).as_posix()
    for package in ("actors", "messages")
    for path in (ROOT / package).rglob("*.py")
    if path.name != "__init__.py"
)


@pytest.mark.parametrize("module", MODULES)
def test_every_module_is_on_the_map(module: str) -> None:
    path = Path(module)
    assert f"{path.parent.name}/{path.name}" in MAP or f"`{path.name}`" in MAP, (
        f"{module} has no row in docs/architecture.md"
    )
