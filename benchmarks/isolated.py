"""One case for one peer in this fresh process: ``python -m benchmarks.isolated WORKLOAD CASE PEER``.

Add ``--quick`` for the sizes of a quick run. The runner starts this for cases with
``child_args`` (see ``runner.run_in_child``), so that figures about the whole process
(memory, the garbage collector's objects and pauses) count only this run. Progress goes to
stderr; the last line on stdout is one JSON object: the measurement (``metrics``, ``extra``,
``note``) and the ``leaked`` threads, or ``skip`` and the reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import threading

from benchmarks.adapters import ADAPTERS
from benchmarks.results import Skip
from benchmarks.runner import run_once
from benchmarks.workloads import Config, build_cases


def main(argv: list[str] | None = None) -> int:
    """Run the named case once for the named peer; print its result as JSON."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.isolated", description=__doc__.split("\n")[0])
    p.add_argument("workload")
    p.add_argument("case", help="the case's label, as the tables show it")
    p.add_argument("peer", choices=list(ADAPTERS))
    p.add_argument("--quick", action="store_true", help="the sizes of a --quick run")
    args = p.parse_args(argv)
    cases = build_cases(Config.for_mode(args.quick), [args.workload])[args.workload]
    matching = [c for c in cases if c.label == args.case]
    if not matching:
        raise SystemExit(f"no case {args.case!r} in workload {args.workload!r}")
    case = dataclasses.replace(matching[0], child_args=None)  # run it here, not in yet another child
    try:
        measurement, leaked = run_once(ADAPTERS[args.peer], case)
    except Skip as exc:
        print(json.dumps({"skip": str(exc)}), flush=True)
        return 0
    result = {
        "metrics": measurement.metrics,
        "extra": measurement.extra,
        "note": measurement.note,
        "leaked": leaked,
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        os._exit(status)  # a leaked thread (already reported) must not hang the exit
    sys.exit(status)
