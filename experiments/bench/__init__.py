"""Benchmarks: one module per ``make bench-*`` target (and ``make soak``); each writes to ``results/``.
"""
