"""The nodes of a shared (PostgreSQL) store, as the web API shows them: ``/api/nodes``.

A shared store keeps no table of nodes: what is known of one is what it left in the store,
the leases it holds now (``runs_in_flight``) and the runs it ended (the run ledger's ``node``).
So a node is listed once it held a lease or ended a run among the last ``limit`` runs, and its
``last_seen`` is the later of its last lease renewal and its last run's end. Threads: a
request's (two reads of the store).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from actors.store import SharedStore

__all__ = ["nodes_json"]


def nodes_json(store: SharedStore, limit: int = 1000) -> list[dict[str, Any]]:
    """Every node the store shows, this one first, then by name (see the module)."""
    seen: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        if name not in seen:
            seen[name] = {"node": name, "this_node": name == store.node, "leases_held": 0,
                          "runs_running": 0, "runs_ended": 0, "last_seen": None}  # fmt: skip
        return seen[name]

    entry(store.node)
    for run in store.runs_in_flight():
        node = entry(run.owner)
        node["leases_held"] += 1
        node["runs_running"] += run.started
        _saw(node, run.expires - store.lease)  # the lease was last renewed then (or taken)
    for row in store.runs(None, limit=limit):
        if row.node is not None:
            node = entry(row.node)
            node["runs_ended"] += 1
            _saw(node, row.finished)
    listed = sorted(seen.values(), key=lambda node: (not node["this_node"], node["node"]))
    for node in listed:
        at = node["last_seen"]
        node["last_seen"] = None if at is None else datetime.fromtimestamp(at, UTC).isoformat()
    return listed


def _saw(node: dict[str, Any], at: float) -> None:
    if node["last_seen"] is None or at > node["last_seen"]:
        node["last_seen"] = at
