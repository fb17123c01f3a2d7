"""Sweeps: a TOML config expanded into keyed runs, executed (resumably) into a record store.

* :mod:`.config` -- the config file, its workloads and grids, the runs and their keys.
* :mod:`.provenance` -- each run's code version from the sources of the modules it executes.
* :mod:`.execute` -- one run in a worker: problem, plan, enrichment, provenance fields.
* :mod:`.store` -- records on disk (one JSON file per run), the folder lock, :func:`load_records`.
* :mod:`.executors` -- local process pool (timeouts kill the worker), Dask.
* :mod:`.run` -- :func:`run_sweep`, which ties them together (its docstring describes the format).
"""

from experiments.sweep.config import *  # noqa: F401,F403
from experiments.sweep.config import __all__ as _config
from experiments.sweep.execute import *  # noqa: F401,F403
from experiments.sweep.execute import __all__ as _execute
from experiments.sweep.executors import *  # noqa: F401,F403
from experiments.sweep.executors import __all__ as _executors
from experiments.sweep.provenance import *  # noqa: F401,F403
from experiments.sweep.provenance import __all__ as _provenance
from experiments.sweep.run import *  # noqa: F401,F403
from experiments.sweep.run import __all__ as _run
from experiments.sweep.store import *  # noqa: F401,F403
from experiments.sweep.store import __all__ as _store

__all__ = [*_config, *_provenance, *_execute, *_store, *_executors, *_run]
