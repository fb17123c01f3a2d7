"""Experiments on top of :mod:`planners` and :mod:`scheduling`: runs, records, reports, figures.

Stage map (data flows one way, top to bottom; no stage imports a later one)::

    workloads.py        names, files, graph kinds -> Problem / Graph (the one resolver)
        |
    harness.py          planners on problems -> one validated record per run
    sched_compare.py    schedulers on graphs -> records + each schedule's order
    transforms_compare.py  graph passes -> per-stage records + orders and offsets
    sweep/              config -> keyed runs -> execute (in workers) -> store (records/*.json)
        |               (provenance: code version from the sources of the modules a run executes)
    metrics.py          ratio, fit, geometric mean, per-planner summary
    enrich.py           RV64 and TFLite Micro columns of records
    records.py          atomic writes, CSV/Parquet, stored problems, plans and schedules
        |
    report/             Markdown and tables from records; figures from records and stored data
    plots/              plot_*(data, ..., ax=None): draw plans, live profiles, record tables
        |
    cli/                ``memplan``: one thin module per command group over the above
    bench/              one module per ``make bench-*`` target, each writing ``results/``
    rv64/, tflm/        RV64 emulation and cycle model; TFLite Micro oracle and offline plans

``plots/`` and ``report/`` import no planner, scheduler or lifetime analysis
(``tests/test_layout.py``).
"""
