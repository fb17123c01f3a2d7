"""Reports and figures drawn from stored records and problems (never from a new solve).

* :mod:`experiments.report.figures` -- the figures of ``memplan compare`` from its records.
* :mod:`experiments.report.sweep_report` -- the Markdown/CSV/figure report of a sweep.
"""

from experiments.report.sweep_report import *  # noqa: F401,F403
from experiments.report.sweep_report import __all__  # noqa: F401
