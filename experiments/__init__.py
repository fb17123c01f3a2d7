"""Experiments on top of :mod:`planners` and :mod:`scheduling`: runs, records, reports, figures.

Stage map (data flows one way, top to bottom: a module imports its own stage and earlier ones,
never a later one; ``tests/test_layout.py`` checks this on the import statements)::

    workloads.py   the one workload resolver: names, files, graph kinds -> Problem / Graph
    metrics.py     ratio, fit, geometric mean, Pareto front, per-planner summary
    records.py     atomic writes, CSV/Parquet, stored problems, plans and schedules
    safe.py        input text checked before it is a path, escaped before Markdown/HTML/figures
    corpus.py, rv64/   the real-model corpus; RV64 emulation and cycle model
    runtimes/      runtime integrations (read the runtime's plan, plan for it, write, run):
                   executorch (a ``.pte`` is a workload, so workloads.py imports it) and
                   tflm (TFLite Micro: arena oracle, offline plans, differential test)
        |
    harness.py     planners on problems -> one validated record per run
        |
    sched_compare.py, transforms_compare.py   schedulers / graph passes -> records + orders
    enrich.py      RV64 and TFLite Micro columns of records
        |
    sweep/         config -> keyed runs -> execute (workers) -> store (records/*.json);
                   provenance: a run's code version from the sources of the modules it executes
        |
    plots/         plot_*(data, ..., ax=None): draw plans, live profiles, record tables
        |
    report/        Markdown, tables and figures from records and stored data alone
        |
    cli/, bench/   ``memplan`` (one thin module per command group); one module per
                   ``make bench-*`` target, and ``make figures`` (every figure from records)

``plots/`` and ``report/`` import no planner, scheduler or lifetime analysis.
"""
