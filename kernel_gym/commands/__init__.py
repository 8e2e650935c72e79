"""Sub-commands of `kernel-gym` beyond the built-in ones in kernel_gym/cli.py, one module each.

A module here defines `register(sub)`: it adds its parser to `sub` (argparse sub-parsers) and sets
`parser.set_defaults(func=run)` where `run(args) -> int` is the exit code. The CLI discovers the modules itself.
"""
