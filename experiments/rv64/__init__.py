"""RV64 cost of the allocator cores: real RISC-V machine code, emulated, with in-order core models.

Seed 000 section 2 notes that planning online at load time costs load latency, and section 8
compiles its allocator for RV64 and runs it under an emulator. This package measures that cost:

1. ``cores.c`` implements the allocator cores (``greedy_in_order``, ``first_fit``, ``best_fit``,
   ``greedy_by_size``, ``freelist_bump``, and ``greedy_by_size_tree``: ``greedy_by_size``'s
   offsets from a centred interval tree over time whose nodes hold their placed blocks sorted by
   offset) in freestanding C99 with 64-bit sizes; they produce the same offsets as the Python
   planners in :mod:`planners` (:data:`CORE_PLANNER`).
2. :mod:`.build` cross-compiles it with ``python -m ziglang cc -target riscv64-freestanding-none``
   (``-mcpu=baseline_rv64`` and ``-mcpu=sifive_u74``), cached by content hash.
3. :mod:`.emulate` runs a core on a problem and reads the offsets back, in our RV64IMC
   interpreter (``interp.c``, the default) or in unicorn (``UC_ARCH_RISCV``, ``UC_MODE_RISCV64``,
   the reference: the interpreter reproduces its translation blocks, data-address stream and
   results, ``tests/test_rv64_interp.py``); block and memory hooks (C) count executed blocks in
   place and advance the core models, so no trace is stored.
4. :mod:`.decode` classifies every instruction of the code segment once (RV64GC incl. compressed).
5. :mod:`.cycles` estimates cycles on in-order cores (SiFive U74, T-Head C906), with and without L1
   caches; :mod:`.mca` cross-checks the U74 pipeline against ``llvm-mca``.

Entry points: :func:`available` and :func:`estimate`. ``rv64_instructions`` counts the
``baseline_rv64`` build; ``rv64_cycles_u74`` runs the U74 model (with caches) over the
``sifive_u74`` build's execution and ``rv64_cycles_c906`` the C906 model over the ``baseline_rv64``
build's.

Nothing here is imported by :mod:`planners`; a missing ``ziglang``/``unicorn`` only makes
:func:`available` return ``(False, reason)`` and :func:`estimate` raise :class:`Rv64Unavailable`.

Range: the cores hold every value in ``int64_t``. For the greedy cores the range rule of
:mod:`planners.model` (worst-case arena ``<= 2**63 - 1`` bytes, enforced by ``Problem``) bounds
every top, round-up and sum they form. The ``freelist_bump`` core rounds requests up to a granule,
which can go beyond that bound; :func:`core_range_error` finds such problems and :func:`estimate`
declines them with :class:`Rv64OutOfRange` (one line naming the value), never reporting offsets
that wrapped in the emulated core.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planners.errors import MemplanError

__all__ = [
    "Rv64Estimate",
    "Rv64Unavailable",
    "Rv64OutOfRange",
    "available",
    "core_range_error",
    "estimate",
    "CORE_NAMES",
    "CORE_PLANNER",
    "INSTRUCTION_CLASSES",
]

#: RV64 cores: planner registry names, plus ``greedy_by_size_tree``, a faster core for the
#: planner ``greedy_by_size`` (same offsets; :data:`CORE_PLANNER`).
CORE_NAMES = ("greedy_in_order", "first_fit", "best_fit", "greedy_by_size", "freelist_bump",
              "greedy_by_size_tree")  # fmt: skip

#: The Python planner whose offsets each core reproduces.
CORE_PLANNER = {name: name for name in CORE_NAMES} | {"greedy_by_size_tree": "greedy_by_size"}

#: Instruction classes reported (``mul`` and ``div`` merged into ``muldiv``).
INSTRUCTION_CLASSES = ("alu", "load", "store", "branch", "jump", "muldiv", "other")

_INSTALL = "pip install 'memplan[rv64]'  (or: .venv/bin/pip install ziglang unicorn)"


class Rv64Unavailable(MemplanError, RuntimeError):
    """The RV64 toolchain (``ziglang``) or emulator (``unicorn``) is missing or broken."""


class Rv64OutOfRange(MemplanError, ValueError):
    """A problem's values do not fit the ``int64_t`` fields of an RV64 core (see
    :func:`core_range_error`); the estimate is declined rather than reported with wrapped
    offsets."""


_INT64_MAX = 2**63 - 1


def core_range_error(problem, planner_name: str, granule: int = 16) -> str | None:
    """Why the RV64 core ``planner_name`` cannot represent ``problem``, or ``None`` if it can.

    Every value the cores hold is an ``int64_t`` (bytes, steps). The greedy cores form only tops,
    aligned round-ups and sums bounded by the problem's worst-case arena, which ``Problem``
    keeps ``<= 2**63 - 1`` (the range rule of :mod:`planners.model`); the check repeats that rule.
    The ``freelist_bump`` core also computes ``size + granule - 1`` (round-up of a request) and a
    bump pointer that grows by whole requests; both are checked exactly by replaying the Python
    planner of the same name (:class:`planners.freelist_bump.FreelistBump`, Python integers).

    Parameters
    ----------
    problem : planners.Problem
    planner_name : one of :data:`CORE_NAMES`.
    granule : int
        The ``freelist_bump`` request granule in bytes (:func:`planners.freelist_bump.freelist_granule`).

    Returns
    -------
    str or None
        A one-line reason naming the value and the limit ``2**63 - 1``; ``None`` when it fits.
    """
    from planners.errors import ProblemError

    w = problem.worst_case_arena
    if w > _INT64_MAX:  # unreachable for a Problem; kept so the check stands on its own
        return (f"problem {problem.name!r}: worst-case arena {w} bytes exceeds the cores' int64 "
                f"range (2**63 - 1)")
    if planner_name != "freelist_bump" or not int((problem.sizes > 0).sum()):
        return None
    top = int(problem.sizes.max()) + int(granule) - 1
    if top > _INT64_MAX:
        return (f"problem {problem.name!r}: the freelist_bump core rounds requests up to the "
                f"granule {granule} bytes, which needs {top} bytes, beyond its int64 range "
                "(2**63 - 1)")
    from planners.freelist_bump import FreelistBump

    try:
        FreelistBump(granule=granule)._solve(problem)
    except ProblemError as e:
        return f"the freelist_bump core cannot represent it: {e}"
    return None


def available() -> tuple[bool, str]:
    """Whether RV64 estimates can run here: ``(True, "")`` or ``(False, reason)``.

    The reason names the missing package and how to install it. Imports are attempted on every call
    (cheap after the first), so a test can simulate a missing package by patching ``sys.modules``.
    """
    missing = []
    for mod in ("ziglang", "unicorn"):
        try:
            importlib.import_module(mod)
        except Exception as e:  # noqa: BLE001 - ImportError or a broken install
            missing.append(f"{mod} ({type(e).__name__}: {e})")
    if missing:
        return False, (
            "RV64 estimates need the Python packages ziglang (RISC-V cross-compiler) and unicorn "
            f"(emulator); missing: {', '.join(missing)}. Install with: {_INSTALL}"
        )
    return True, ""


@dataclass
class Rv64Estimate:
    """Cost of one allocator core on one problem, measured on emulated RV64 machine code.

    Attributes
    ----------
    planner : registry name of the core.
    n : number of buffers.
    instructions : int, executed instructions of the core (``baseline_rv64`` build).
    instructions_by_class : ``{class: count}`` over :data:`INSTRUCTION_CLASSES`.
    cycles : ``{"u74": int, "c906": int}`` estimated cycles per core model.
    cycles_per_buffer : ``{"u74": float, "c906": float}`` (``nan`` when ``n == 0``).
    offsets : int64 array ``(n,)`` bytes, problem order, read back from the emulated core.
    python_offsets : int64 array ``(n,)`` from the Python planner of the same name.
    offsets_match : bool or None, emulated offsets equal the Python planner's (``None`` when the
        estimate was made with ``check=False``).
    arena : bytes, highest ``offset + size`` of the emulated offsets.
    mispredicts, branches : per core model.
    instructions_u74 : executed instructions of the ``sifive_u74`` build.
    images : ``{build: content hash}`` of the images used.
    cycles_ideal_memory : ``{"u74": int, "c906": int}``, the same models with every access hitting
        and no instruction-fetch misses (``cycles`` includes the L1 caches).
    cache : ``{model: {"l1i_accesses", "l1i_misses", "l1d_accesses", "l1d_misses"}}``.
    stack_bytes : ``{build: bytes}`` of stack touched below the entry stack pointer in the full
        image, where ``memplan_run``'s frame is sized for the largest core; one core alone: :func:`.emulate.core_stack_bytes`.
    scratch_bytes : bytes of the host-provided work array the core touched (the cores allocate
        nothing else: no heap).
    text_bytes : ``{build: bytes}`` of ``.text`` in an image holding this core alone
        (:func:`.build.core_text_bytes`).
    assumptions : ``{model: [parameter, ...]}`` whose source is an assumption.
    """

    planner: str
    n: int
    instructions: int
    instructions_by_class: dict
    cycles: dict
    cycles_per_buffer: dict
    offsets: np.ndarray
    python_offsets: np.ndarray
    offsets_match: bool | None
    arena: int
    mispredicts: dict = field(default_factory=dict)
    branches: dict = field(default_factory=dict)
    instructions_u74: int = 0
    images: dict = field(default_factory=dict)
    cycles_ideal_memory: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict)
    stack_bytes: dict = field(default_factory=dict)
    scratch_bytes: int = 0
    text_bytes: dict = field(default_factory=dict)
    assumptions: dict = field(default_factory=dict)

    @property
    def rv64_instructions(self) -> int:
        """Column ``rv64_instructions`` of ``memplan compare --rv64``."""
        return self.instructions

    @property
    def rv64_cycles_u74(self) -> int:
        """Column ``rv64_cycles_u74``."""
        return self.cycles["u74"]

    @property
    def rv64_cycles_c906(self) -> int:
        """Column ``rv64_cycles_c906``."""
        return self.cycles["c906"]

    def as_record(self) -> dict[str, Any]:
        """A flat, JSON-serialisable record (``memplan rv64 --json``); includes the three columns
        ``rv64_instructions``, ``rv64_cycles_u74``, ``rv64_cycles_c906``."""
        rec: dict[str, Any] = {
            "planner": self.planner,
            "n": self.n,
            "rv64_instructions": self.rv64_instructions,
            "rv64_cycles_u74": self.rv64_cycles_u74,
            "rv64_cycles_c906": self.rv64_cycles_c906,
            "cycles_per_buffer_u74": self.cycles_per_buffer["u74"],
            "cycles_per_buffer_c906": self.cycles_per_buffer["c906"],
            "offsets_match": self.offsets_match,
            "arena": self.arena,
            "instructions_u74": self.instructions_u74,
        }
        for k in INSTRUCTION_CLASSES:
            rec[f"insn_{k}"] = self.instructions_by_class[k]
        for m in ("u74", "c906"):
            rec[f"mispredicts_{m}"] = self.mispredicts.get(m, 0)
            rec[f"branches_{m}"] = self.branches.get(m, 0)
        for m in ("u74", "c906"):
            rec[f"rv64_cycles_{m}_ideal_memory"] = self.cycles_ideal_memory.get(m, 0)
            c = self.cache.get(m, {})
            for lvl in ("l1i", "l1d"):
                acc, mis = c.get(f"{lvl}_accesses", 0), c.get(f"{lvl}_misses", 0)
                rec[f"{lvl}_accesses_{m}"] = acc
                rec[f"{lvl}_misses_{m}"] = mis
                rec[f"{lvl}_hit_rate_{m}"] = (acc - mis) / acc if acc else float("nan")
        for b in ("baseline_rv64", "sifive_u74"):
            rec[f"text_bytes_{b}"] = self.text_bytes.get(b, 0)
            rec[f"stack_bytes_{b}"] = self.stack_bytes.get(b, 0)
        rec["scratch_bytes"] = self.scratch_bytes
        rec["heap_bytes"] = 0
        for m, names in self.assumptions.items():
            rec[f"assumptions_{m}"] = ";".join(names)
        rec["offsets"] = self.offsets.tolist()
        return rec


def _measure(image, core: str, problem, granule: int, models=(), record: bool = False,
             engine: str = "auto"):
    """One emulated run of ``core`` with the in-hook ``models`` (``engine``: see
    :func:`.emulate.run_core`); returns the run and the executed instructions by class
    (:data:`INSTRUCTION_CLASSES`)."""
    from .emulate import run_core

    run = run_core(
        image,
        core,
        problem.starts,
        problem.ends,
        problem.sizes,
        problem.alignments,
        problem.resident.astype(np.int64),
        granule=granule,
        models=models,
        record=record,
        engine=engine,
    )
    by_class = dict.fromkeys(INSTRUCTION_CLASSES, 0)
    for k, c in run.sim.by_kind.items():
        by_class["muldiv" if k in ("mul", "div") else k] += c
    return run, by_class


def estimate(problem, planner_name: str, check: bool = True, engine: str = "auto") -> Rv64Estimate:
    """Run the RV64 core ``planner_name`` on ``problem`` and estimate its cost.

    Parameters
    ----------
    problem : planners.Problem
        ``n`` buffers with half-open lifetimes ``[start, end)`` (steps), sizes and alignments
        (bytes); resident buffers go first for ``greedy_in_order`` (seed 000 section 8).
    planner_name : one of :data:`CORE_NAMES`.
    check : bool, default True
        Also run the Python planner of the same name and compare offsets (else
        ``offsets_match`` is ``None``).
    engine : ``"auto"`` (default), ``"interp"`` or ``"unicorn"``
        What executes the RV64 image (:func:`.emulate.run_core`): our RV64IMC interpreter
        (``interp.c``, the default: same blocks, data addresses and results as unicorn, checked
        by ``tests/test_rv64_interp.py``; 1.3x to 1.9x less CPU time) or unicorn.
        Every number of the estimate is the same with either.

    Returns
    -------
    Rv64Estimate

    Raises
    ------
    Rv64Unavailable
        ziglang or unicorn missing (the message says how to install them).
    Rv64OutOfRange
        A value the core would compute does not fit its ``int64_t`` fields
        (:func:`core_range_error`).
    ValueError
        ``planner_name`` has no RV64 core.
    RuntimeError
        The compiler failed or the emulated core faulted.

    Notes
    -----
    Cost: two emulated runs (``baseline_rv64`` and ``sifive_u74`` builds, in two threads) of the
    core's own complexity (``O(n^2)`` instructions for the greedy cores in the worst case) plus one native
    callback per executed basic block and per data access, which advance the core models (with
    and without caches) in place: memory does not grow with the run length. Images and the host
    helper are compiled once and cached (:func:`.build.cache_dir`).
    """
    ok, reason = available()
    if not ok:
        raise Rv64Unavailable(reason)
    if planner_name not in CORE_NAMES:
        raise ValueError(
            f"planner {planner_name!r} has no RV64 core; cores exist for {', '.join(CORE_NAMES)}"
        )
    from planners.freelist_bump import freelist_granule

    from .build import build_image, core_text_bytes
    from .cycles import CORE_MODELS

    granule = freelist_granule(problem) if planner_name == "freelist_bump" else 16
    reason = core_range_error(problem, planner_name, granule)
    if reason:
        raise Rv64OutOfRange(f"rv64 estimate of {planner_name!r} declined: {reason}")
    base_img = build_image("baseline_rv64")
    u74_img = build_image("sifive_u74")
    mu, mc = CORE_MODELS["u74"], CORE_MODELS["c906"]
    from concurrent.futures import ThreadPoolExecutor

    from .cycles import host_library
    from .emulate import code_table

    host_library()  # compiled and loaded once, before the threads
    code_table(base_img), code_table(u74_img)
    # The two builds run in two threads: the emulator and the in-hook models are native code
    # called through ctypes, which releases the GIL, and each run has its own emulator and model
    # state.
    with ThreadPoolExecutor(2) as pool:
        job_b = pool.submit(_measure, base_img, planner_name, problem, granule,
                            [mc, mc.without_caches()], False, engine)  # fmt: skip
        job_u = pool.submit(_measure, u74_img, planner_name, problem, granule,
                            [mu, mu.without_caches()], False, engine)  # fmt: skip
        run_b, by_class = job_b.result()
        run_u, by_class_u = job_u.result()
    if not np.array_equal(run_b.offsets, run_u.offsets):
        raise RuntimeError(f"{planner_name}: the two RV64 builds disagree on the offsets")
    sim_u, sim_c = run_u.sim.pipes, run_b.sim.pipes
    n = problem.n
    offsets = run_b.offsets
    if check:
        from planners.registry import get_planner

        py = np.asarray(get_planner(CORE_PLANNER[planner_name]).plan(problem).offsets, np.int64)
        match = bool(np.array_equal(py, offsets))
    else:
        py = np.zeros(0, np.int64)
        match = None
    from planners.model import arena_top

    arena = arena_top(offsets, problem.sizes)
    cycles = {"u74": sim_u[0]["cycles"], "c906": sim_c[0]["cycles"]}
    keys = ("l1i_accesses", "l1i_misses", "l1d_accesses", "l1d_misses")
    return Rv64Estimate(
        planner=planner_name,
        n=n,
        instructions=int(sum(by_class.values())),
        instructions_by_class=by_class,
        cycles=cycles,
        cycles_per_buffer={k: (v / n if n else float("nan")) for k, v in cycles.items()},
        offsets=offsets,
        python_offsets=py,
        offsets_match=match,
        arena=arena,
        mispredicts={"u74": sim_u[0]["mispredicts"], "c906": sim_c[0]["mispredicts"]},
        branches={"u74": sim_u[0]["branches"], "c906": sim_c[0]["branches"]},
        instructions_u74=int(sum(by_class_u.values())),
        cycles_ideal_memory={"u74": sim_u[1]["cycles"], "c906": sim_c[1]["cycles"]},
        cache={"u74": {k: sim_u[0][k] for k in keys}, "c906": {k: sim_c[0][k] for k in keys}},
        stack_bytes={"baseline_rv64": run_b.sim.stack_bytes, "sifive_u74": run_u.sim.stack_bytes},
        scratch_bytes=max(run_b.sim.scratch_bytes, run_u.sim.scratch_bytes),
        text_bytes={b: core_text_bytes(planner_name, b) for b in ("baseline_rv64", "sifive_u74")},
        assumptions={"u74": mu.assumptions(), "c906": mc.assumptions()},
        images={"baseline_rv64": base_img.digest, "sifive_u74": u74_img.digest},
    )
