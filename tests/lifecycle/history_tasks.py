"""Module-level task functions for the history tests (durable tasks are stored by reference)."""

from __future__ import annotations

from actors import current_run

BIG = "x" * (64 * 1024)  # 64 KiB of text: with its quotes, two bytes more than keep_result keeps


def numbered() -> dict[str, object]:
    """Return JSON data naming the run."""
    return {"run": current_run().run, "tags": ("a", "b")}


def big() -> str:
    return BIG


def not_json() -> set[int]:
    return {1, 2}


def boom() -> None:
    raise RuntimeError("boom")
