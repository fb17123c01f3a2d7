"""Small hand-checked problems from the seeds and the literature (for tests, docs and notebooks).

* :func:`seed000_problem` -- the 8-tensor residual graph of seed 000 section 8 (greedy allocator demo).
* :func:`exercise_5_1_problem` -- seed 002 exercise 5.1 (five tensors, first-fit).
* :func:`pisarchyk_lee_problem` -- the toy example of Pisarchyk & Lee 2020 (eight tensors).

The seeds write closed lifetimes ``[first_use, last_use]``; the problems here convert them to the
toolkit's half-open ``[start, end)`` with :meth:`planners.model.Buffer.from_closed`.
"""

from __future__ import annotations

from .model import Buffer, Problem

__all__ = [
    "SEED000_TENSORS",
    "SEED000_STEPS",
    "SEED000_OFFSETS",
    "seed000_problem",
    "exercise_5_1_problem",
    "pisarchyk_lee_problem",
]

#: Seed 000 section 8 tensor table: ``(name, first_use, last_use, size bytes, resident)`` with
#: closed lifetimes, as in the C array ``t[]`` of the seed's ``main``.
SEED000_TENSORS: tuple[tuple[str, int, int, int, bool], ...] = (
    ("input", 0, 0, 4096, True),
    ("conv_w", 0, 1, 65536, True),
    ("conv_y", 1, 2, 8192, False),
    ("skip", 0, 2, 4096, False),
    ("res", 2, 3, 8192, False),
    ("gemm_w", 3, 4, 262144, True),
    ("logits", 4, 5, 1024, False),
    ("probs", 5, 5, 1024, False),
)

#: ``steps`` of the seed's ``main`` (the graph has operators 0..5 in the closed lifetimes).
SEED000_STEPS = 5

#: The offsets printed by the seed's program (section 8 output table), bytes.
SEED000_OFFSETS: dict[str, int] = {
    "input": 0,
    "conv_w": 4096,
    "conv_y": 335872,
    "skip": 331776,
    "res": 344064,
    "gemm_w": 69632,
    "logits": 331776,
    "probs": 332800,
}


def seed000_problem(alignment: int = 16, unified: bool = True) -> Problem:
    """The seed 000 section 8 demo problem (8 tensors, alignment 16 bytes).

    With ``unified=True`` (the seed's layout) the resident tensors (``input``, ``conv_w``,
    ``gemm_w``) are live for the whole schedule, closed ``[0, SEED000_STEPS]`` = half-open
    ``[0, 6)``, as the seed's ``span_of`` treats them, with ``kind="resident"``; with
    ``unified=False`` they are left out (activations only). Activations keep their closed
    ``[first_use, last_use]`` from the table. ``greedy_in_order`` reproduces
    :data:`SEED000_OFFSETS` (arena 352256 bytes).

    >>> p = seed000_problem()
    >>> p.n, int(p.sizes[p.resident].sum())
    (8, 331776)
    """
    bufs = []
    for name, first, last, size, resident in SEED000_TENSORS:
        if resident:
            if unified:
                bufs.append(Buffer.from_closed(name, 0, SEED000_STEPS, size, kind="resident"))
        else:
            bufs.append(Buffer.from_closed(name, first, last, size))
    return Problem(bufs, alignment=alignment, name="seed000")


def exercise_5_1_problem() -> Problem:
    """Seed 002 exercise 5.1: closed ``T1[0,3]`` 100, ``T2[1,4]`` 200, ``T3[2,5]`` 150, ``T4[3,6]``
    250, ``T5[4,7]`` 180 (sizes in MB in the seed, plain units here). First-fit in this order needs
    880; the lower bound (max live at step 4) is 780."""
    return Problem.from_closed(
        [
            ("T1", 0, 3, 100),
            ("T2", 1, 4, 200),
            ("T3", 2, 5, 150),
            ("T4", 3, 6, 250),
            ("T5", 4, 7, 180),
        ],
        name="seed002-exercise-5.1",
    )


def pisarchyk_lee_problem() -> Problem:
    """The toy example of Pisarchyk & Lee 2020 ("Efficient Memory Management for Deep Neural Net
    Inference"): closed ``(first, last, size)`` = (0,1,32) (1,4,28) (2,5,36) (3,5,16) (4,5,8)
    (5,7,64) (6,8,10) (7,8,40). Lower bound 124 (step 5), no-reuse total 234; greedy by size
    reaches 124."""
    items = [
        (0, 1, 32),
        (1, 4, 28),
        (2, 5, 36),
        (3, 5, 16),
        (4, 5, 8),
        (5, 7, 64),
        (6, 8, 10),
        (7, 8, 40),
    ]
    return Problem.from_closed(
        [(f"t{k}", f, last, s) for k, (f, last, s) in enumerate(items)], name="pisarchyk-lee-toy"
    )
