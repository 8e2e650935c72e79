"""Sub-commands of `kernel-gym` beyond the built-in ones in kernel_gym/cli.py, one module each.

A module here defines `register(sub)`: it adds its parser to `sub` (argparse sub-parsers) and sets
`parser.set_defaults(func=run)` where `run(args) -> int` is the exit code. The CLI discovers the modules itself.
"""

from __future__ import annotations

import argparse


def add_split_argument(parser: argparse.ArgumentParser) -> None:
    """--split of a command that writes training data: the train split unless asked otherwise."""
    parser.add_argument("--split", default="train", choices=("train", "eval", "all"),
                        help="keep tasks of this split: train (the default; also tasks outside the built-in suites, "
                             "which have no split), eval (held-out tasks only), or all (mixes held-out tasks into "
                             "the data: only on purpose)")
