"""Reports and figures drawn from stored records and problems (never from a new solve).

* :mod:`experiments.report.figures` -- the figures of ``memplan compare`` from its records.
* :mod:`experiments.report.sweep_report` -- the Markdown/CSV/figure report of a sweep.
* :mod:`experiments.report.markdown_check` -- the Markdown tables of :mod:`experiments.safe`
  (the one check of record text that becomes a path, the one escaping of text that goes into
  Markdown, HTML or a figure; every writer above uses it) against a Markdown renderer.
"""

from experiments.report.sweep_report import *  # noqa: F401,F403
from experiments.report.sweep_report import __all__  # noqa: F401
