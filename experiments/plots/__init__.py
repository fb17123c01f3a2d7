"""Figures drawn from data: plans, live profiles and record tables (no solving, no analysis).

* :mod:`experiments.plots.style` -- figure styles (:func:`style`, a context manager), palette,
  byte axes, :func:`save`, and the planner-comparison figures.
* :mod:`experiments.plots.sched` -- the scheduler-comparison figures.
* :mod:`experiments.plots.view` -- the interactive HTML plan explorer.

Importing this package changes no matplotlib state (backend or rcParams).
"""

from experiments.plots.style import *  # noqa: F401,F403
from experiments.plots.style import __all__  # noqa: F401
