"""Benchmark harness: our actor scheduler side by side with its peers.

Run ``python -m benchmarks --help``. Modules: :mod:`benchmarks.adapters`
(one adapter per scheduler), :mod:`benchmarks.textbook` (the yardstick),
:mod:`benchmarks.workloads`, :mod:`benchmarks.runner` and
:mod:`benchmarks.report`.
"""
