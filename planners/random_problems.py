"""Seeded random allocation problems for property tests and speed benchmarks.

:func:`random_problem` draws ``n`` buffers with uniformly random start steps over a horizon,
geometric lifetimes of a given mean, and sizes from a named distribution. The same ``(n, seed,
parameters)`` always gives the same problem (numpy ``default_rng(seed)``), so benchmark rows and
test failures are reproducible.

With the defaults (``horizon = n`` steps, ``mean_lifetime = 50`` steps) about 50 buffers are live at
any step, the "typical overlap" of the speed benchmark.

:func:`realistic_problem` is the scale benchmark's problem (issue #34): starts uniform on
``[0, n)``, exponential lifetimes of mean 1,000 steps (so about 1,000 buffers live at a step)
and sizes log-uniform between 64 B and 1 MiB.
"""

from __future__ import annotations

import numpy as np

from .errors import ProblemError
from .model import Problem

__all__ = ["random_problem", "realistic_problem", "SIZE_DISTRIBUTIONS"]

#: Size distributions accepted by :func:`random_problem` (``size_dist``).
SIZE_DISTRIBUTIONS = ("lognormal", "uniform", "pow2")


def random_problem(
    n: int,
    seed: int = 0,
    *,
    mean_lifetime: float = 50.0,
    horizon: int | None = None,
    size_dist: str = "lognormal",
    median_size: int = 4096,
    size_sigma: float = 1.5,
    min_size: int = 1,
    max_size: int = 1 << 24,
    zero_fraction: float = 0.0,
    alignment: int = 1,
    name: str | None = None,
) -> Problem:
    """A seeded random problem of ``n`` buffers with half-open lifetimes ``[start, end)``.

    Parameters
    ----------
    n : int
        Number of buffers (``>= 0``).
    seed : int
        Seed of ``numpy.random.default_rng``; equal arguments give an identical problem.
    mean_lifetime : float, default 50
        Mean of the geometric lifetime length ``end - start`` in schedule steps (``>= 1``).
    horizon : int or None
        Start steps are uniform on ``[0, horizon)``; default ``n`` (one new buffer per step on
        average, so about ``mean_lifetime`` buffers are live at a step).
    size_dist : {"lognormal", "uniform", "pow2"}
        ``lognormal``: ``median_size * exp(size_sigma * N(0, 1))`` rounded; ``uniform``: integers on
        ``[min_size, max_size]``; ``pow2``: ``2**k`` with ``k`` uniform so that the size lies in
        ``[min_size, max_size]`` (tensor-like sizes). Every size is clipped to
        ``[min_size, max_size]`` bytes.
    median_size, size_sigma : lognormal parameters (bytes, dimensionless).
    min_size, max_size : int
        Size range in bytes (``1 <= min_size <= max_size``).
    zero_fraction : float, default 0
        Probability that a buffer gets size 0 (zero-size buffers are valid and take no space).
    alignment : int, default 1
        Default offset alignment of the problem (bytes).
    name : str or None
        Problem name; default ``"random-n{n}-s{seed}"``.

    Returns
    -------
    Problem
        Buffers with ids ``"0" .. "n-1"``, no capacity.

    Raises
    ------
    ProblemError
        ``n < 0``, ``mean_lifetime < 1``, ``horizon < 1``, bad size range, unknown ``size_dist`` or
        ``zero_fraction`` outside ``[0, 1]``.

    Notes
    -----
    ``O(n)`` time. Lifetimes are ``1 + Geometric(1 / mean_lifetime) - 1`` so ``end > start`` always.

    Examples
    --------
    >>> p = random_problem(100, seed=1)
    >>> p.n, bool((p.ends > p.starts).all())
    (100, True)
    """
    if n < 0:
        raise ProblemError(f"random_problem: n must be >= 0 buffers, got {n}")
    if mean_lifetime < 1:
        raise ProblemError(f"random_problem: mean_lifetime must be >= 1 step, got {mean_lifetime}")
    horizon = n if horizon is None else horizon
    horizon = max(int(horizon), 1)
    if not 1 <= min_size <= max_size:
        raise ProblemError(
            f"random_problem: need 1 <= min_size <= max_size bytes, got {min_size}, {max_size}"
        )
    if size_dist not in SIZE_DISTRIBUTIONS:
        raise ProblemError(
            f"random_problem: unknown size_dist {size_dist!r}; choose from {SIZE_DISTRIBUTIONS}"
        )
    if not 0.0 <= zero_fraction <= 1.0:
        raise ProblemError(f"random_problem: zero_fraction must be in [0, 1], got {zero_fraction}")
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, horizon, size=n)
    lengths = rng.geometric(1.0 / mean_lifetime, size=n)
    if size_dist == "lognormal":
        sizes = np.rint(median_size * np.exp(size_sigma * rng.standard_normal(n)))
    elif size_dist == "uniform":
        sizes = rng.integers(min_size, max_size + 1, size=n)
    else:
        lo = int(np.ceil(np.log2(min_size)))
        hi = int(np.floor(np.log2(max_size)))
        if lo > hi:
            raise ProblemError(
                f"random_problem: no power of two in [min_size, max_size] = [{min_size}, {max_size}]"
            )
        sizes = 2.0 ** rng.integers(lo, hi + 1, size=n)
    sizes = np.clip(sizes, min_size, max_size).astype(np.int64)
    if zero_fraction > 0:
        sizes[rng.random(n) < zero_fraction] = 0
    ends = starts + lengths
    problem = Problem._from_columns(  # numpy-checked columns, no Buffer objects until asked
        None, starts.astype(np.int64), ends.astype(np.int64), sizes,
        alignment=alignment, name=name or f"random-n{n}-s{seed}",
    )
    if problem is None:  # pragma: no cover - the draws above satisfy every buffer rule
        raise ProblemError(f"random_problem: drew an invalid buffer (n={n}, seed={seed})")
    return problem


def realistic_problem(
    n: int,
    seed: int = 0,
    *,
    mean_lifetime: float = 1000.0,
    horizon: int | None = None,
    min_size: int = 64,
    max_size: int = 1 << 20,
    name: str | None = None,
) -> Problem:
    """The realistic large problem of the scale benchmark: ``n`` buffers, half-open lifetimes
    ``[start, end)`` in schedule steps with starts uniform on ``[0, horizon)``, lengths
    ``max(1, round(Exponential(mean_lifetime)))`` steps, sizes ``round(exp(U(ln min_size,
    ln max_size)))`` bytes (log-uniform), alignment 1.

    With the defaults (``horizon = n``, mean 1,000 steps) about ``n x mean / horizon`` = 1,000
    buffers are live at a step away from the ends of the horizon (the expected live count; it
    is the mean lifetime, ``mean_lifetime x n / horizon``), and the sizes average about
    ``(max - min) / ln(max / min)`` = 108 KiB.

    Parameters
    ----------
    n : int
        Number of buffers (``>= 0``).
    seed : int
        Seed of ``numpy.random.default_rng``: equal arguments give an identical problem.
    mean_lifetime : float
        Mean lifetime in steps (``> 0``).
    horizon : int or None
        Starts are uniform on ``[0, horizon)`` steps; default ``n``.
    min_size, max_size : int
        Size range in bytes (``1 <= min_size <= max_size``).
    name : str or None
        Problem name; default ``"realistic-n{n}-s{seed}"``.

    Returns
    -------
    Problem
        Ids ``"0" .. "n-1"``, no capacity; built from numpy columns (no :class:`Buffer`
        objects until asked), ``O(n)``.

    Raises
    ------
    ProblemError
        ``n < 0``, ``mean_lifetime <= 0``, ``horizon < 1`` or a bad size range.

    Examples
    --------
    >>> p = realistic_problem(1000, seed=3)
    >>> p.n, int(p.sizes.min()) >= 64, int(p.sizes.max()) <= 1 << 20
    (1000, True, True)
    """
    if n < 0:
        raise ProblemError(f"realistic_problem: n must be >= 0 buffers, got {n}")
    if not mean_lifetime > 0:
        raise ProblemError(f"realistic_problem: mean_lifetime must be > 0 steps, got {mean_lifetime}")
    horizon = n if horizon is None else int(horizon)
    if horizon < 1 and n:
        raise ProblemError(f"realistic_problem: horizon must be >= 1 step, got {horizon}")
    if not 1 <= min_size <= max_size:
        raise ProblemError(
            f"realistic_problem: need 1 <= min_size <= max_size bytes, got {min_size}, {max_size}"
        )
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, max(horizon, 1), size=n, dtype=np.int64)
    lengths = np.maximum(1, np.rint(rng.exponential(mean_lifetime, size=n))).astype(np.int64)
    sizes = np.rint(np.exp(rng.uniform(np.log(min_size), np.log(max_size), size=n)))
    sizes = np.clip(sizes, min_size, max_size).astype(np.int64)
    problem = Problem._from_columns(
        None, starts, starts + lengths, sizes, name=name or f"realistic-n{n}-s{seed}"
    )
    if problem is None:  # pragma: no cover - the draws above satisfy every buffer rule
        raise ProblemError(f"realistic_problem: drew an invalid buffer (n={n}, seed={seed})")
    return problem
