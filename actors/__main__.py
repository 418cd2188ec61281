"""``python -m actors``: the command line (``run``, ``check``, ``status``, ``demo``); see docs/cli.md."""

from __future__ import annotations

import sys

from actors.cli.main import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
