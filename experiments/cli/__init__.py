"""The ``memplan`` command line: :func:`main` parses arguments and runs one command.

One module per command group over library functions (:mod:`experiments.cli.app` holds the parser).
"""

from experiments.cli.app import main

__all__ = ["main"]
