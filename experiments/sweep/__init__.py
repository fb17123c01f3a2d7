"""Sweeps: a TOML config expanded into runs, executed (resumably) into a record store.

:mod:`experiments.sweep.run` holds the implementation; the names below are its public API.
"""

from experiments.sweep.run import *  # noqa: F401,F403
from experiments.sweep.run import __all__  # noqa: F401
