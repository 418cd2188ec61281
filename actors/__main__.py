"""Command line: ``python -m actors demo`` runs the seed design's 30 ms scenario."""

from __future__ import annotations

import argparse
import sys

from actors.demo import main as demo


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen command."""
    parser = argparse.ArgumentParser(prog="python -m actors", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="fixed rate vs fixed delay on the real clock, beside the seed's table")
    parser.parse_args(argv)
    return demo()


if __name__ == "__main__":
    sys.exit(main())
