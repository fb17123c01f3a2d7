"""ExecuTorch: memplan as PyTorch's on-device memory planner, checked by running the program.

The runtime-integration shape (:mod:`experiments.runtimes`):

* :func:`read_plan` / :func:`pte_plan` -- ExecuTorch's own plan of a ``.pte`` (each planned
  tensor's ``mem_id``, offset, size and lifetime from the instruction order) as a
  :class:`planners.Problem` plus offsets (a :class:`planners.Plan` with each buffer's pool), so
  ``memplan check`` (:func:`pte_violations`), ``memplan view`` and ``compare`` work on it
  (:func:`experiments.workloads.load_problem` resolves ``*.pte``). Storage is modelled as
  ExecuTorch lays it out (:func:`storage_aliases`): a view or an in-place result and its base
  are one buffer with the hull of their lifetimes, and each ``mem_id`` is its own pool
  ``mem{k}``; ``python -m experiments.bench.executorch_diff`` checks the verdicts against
  ExecuTorch's own storage rules on generated and corrupted programs. A ``.pte`` file is read
  by :func:`read_pte_light` (the program flatbuffer parsed here, no ``torch``: ``memplan check``
  of a program takes well under a second), the operators' written arguments from
  :data:`_KNOWN_WRITES`, else (ATen operators) torch's ``native_functions.yaml`` read as text
  (:func:`_native_schemas`), else torch's registry (which imports torch);
  ``python -m experiments.bench.executorch_readers`` checks it against ExecuTorch's reader;
* :func:`plan_for` / :class:`MemplanAlgorithm` -- a memory-planning algorithm for
  ``MemoryPlanningPass(memory_planning_algo=...)`` and
  ``MemoryPlanningAlgorithmSuite(algo_list=[...])`` that plans ExecuTorch's tensor specs with any
  registered memplan planner;
* :func:`write` -- ``torch.export`` (dynamic shapes, several methods) -> ``to_edge`` or
  ``to_edge_transform_and_lower`` (a partitioner) -> ``to_executorch`` with that planner,
  giving the ``.pte`` bytes ExecuTorch consumes;
* :func:`run` -- the ``.pte`` executed by ExecuTorch's own runtime (``executorch.runtime``).

The contract, read from ExecuTorch 1.5.1's ``exir/memory_planning.py`` (``apply_algo``,
``greedy``, ``MemoryPlanningAlgorithmSuite``, ``Verifier``) and
``exir/passes/memory_planning_pass.py``:

* the algorithm is called as ``algo(alignment, specs, graph_module, graph_signature,
  extra_padding)``; ``specs`` are ``TensorSpec`` objects whose ``lifetime`` is the **inclusive**
  ``[first, last]`` node index of the graph (``update_all_tensors_lifetime``); a spec's bytes are
  ``spec.realign(alignment)`` (``allocated_memory``, rounded up to ``alignment``);
* a spec's arena is its ``mem_id`` (``None`` means 1); every arena is planned on its own; slot 0
  of ``bufsizes`` is reserved for constants and stays 0;
* a spec with ``storage_base`` (an in-place result, ``_share_alloc_with_arg_idx``) sits at its
  base's offset plus ``storage_base_offset`` (memplan's alias groups: ``Problem(aliases=...)``);
* control-flow submodules (``cond``, ``while``, ``map``, ``scan``) are planned first by
  ``apply_algo`` and their arenas are set on ``graph_module.input_mem_buffer_sizes``: the parent's
  tensors of arena ``k`` start at that many bytes (rounded up to ``alignment`` here);
* ``bufsizes[k]`` = base + arena + ``extra_padding`` (64 bytes with an XNNPACK delegate) for each
  arena with tensors; the result is a ``MemoryAlgoResult`` of per-spec ``SpecAllocResult(mem_id,
  mem_obj_id, mem_offset)``. ``Verifier.verify_storage_reuse`` requires tensors whose address
  ranges overlap (whatever their lifetimes) to share ``mem_obj_id``: the ids are the connected
  runs of overlapping address ranges in each arena.

Why :class:`MemplanAlgorithm` plans one problem per arena rather than one
:class:`planners.MemoryPool` problem: ExecuTorch fixes each spec's ``mem_id`` before planning
(nothing is left to assign), and memplan's problems refuse alias groups together with pools
(:class:`planners.ProblemError`); for the same reason :func:`read_plan` collapses each storage
group to one buffer when a program has several arenas.

``torch`` and ``executorch`` come from the extra ``pip install -e '.[executorch]'``; this module
imports them inside its functions only, and raises :class:`experiments.runtimes.RuntimeMissing`
naming the extra when they are absent.
"""

from __future__ import annotations

import functools
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from planners import Buffer, Problem, ProblemError, check_plan
from planners.registry import get_planner

from . import require

__all__ = ["NAME", "EXTRA", "MemplanAlgorithm", "specs_problems", "plan_for", "write", "run",
           "read_plan", "read_pte_light", "pte_plan", "pte_methods", "pte_violations", "pte_capacity", "storage_aliases", "pool_name",
           "verify_storage_reuse", "planned_bytes", "PteTensor", "pte_tensors",
           "example_models", "inplace_relu_pass", "write_plan_csv",
           "reorder_graph", "reordering_pass", "planning_pass",
           "SharedMethodsPlanner", "plan_methods_for", "pte_mutable_buffers"]

NAME = "executorch"
EXTRA = "executorch"


def _require() -> None:
    require("torch", "executorch.exir", extra=EXTRA)


def _closed_lifetime(spec, item: str) -> tuple[int, int]:
    """``(start, end)`` half-open steps of a spec's inclusive ``lifetime = [first, last]``."""
    first, last = spec.lifetime
    if first is None or last is None:
        raise ProblemError(f"{item}: ExecuTorch gave no lifetime (lifetime={spec.lifetime}); "
                           "update_all_tensors_lifetime sets one for every planned spec")
    first, last = int(first), int(last)
    return first, max(first, last) + 1  # an empty [first, last] (first > last) kept live one step


def specs_problems(specs: Iterable, alignment: int, name: str = "executorch"
                   ) -> dict[int, tuple[Problem, list]]:
    """ExecuTorch's tensor specs as one :class:`planners.Problem` per arena.

    Parameters
    ----------
    specs : iterable of ``executorch.exir.tensor.TensorSpec``
        With lifetimes set (inclusive ``[first, last]`` node indices).
    alignment : int
        Bytes; every spec is realigned to it (``spec.realign``, as ExecuTorch's ``greedy``) and
        every buffer's offset is a multiple of it.

    Returns
    -------
    dict
        ``{mem_id: (problem, specs in problem order)}``; buffer ``t{i}`` is the ``i``-th spec of
        that arena, half-open lifetime ``[first, last + 1)`` steps, size ``allocated_memory``
        bytes; ``storage_base`` specs are alias children ``(base id, storage_base_offset)``.

    Raises
    ------
    ProblemError
        A spec without lifetime, a ``storage_base`` outside ``specs`` or in another arena, an
        alias breaking :class:`planners.Problem`'s rules (e.g. ``storage_base_offset`` not a
        multiple of ``alignment``, or a child larger than its base).
    """
    by_mem: dict[int, list] = {}
    for spec in specs:
        mem_id = 1 if spec.mem_id is None else int(spec.mem_id)
        if mem_id < 1:
            raise ProblemError(f"spec {spec}: mem_id {mem_id} (0 is reserved for constants)")
        spec.realign(alignment)
        by_mem.setdefault(mem_id, []).append(spec)
    out: dict[int, tuple[Problem, list]] = {}
    for mem_id, group in sorted(by_mem.items()):
        ids = {id(s): f"t{i}" for i, s in enumerate(group)}
        bufs, aliases = [], {}
        for i, s in enumerate(group):
            item = f"{name} mem_id {mem_id} spec t{i}"
            start, end = _closed_lifetime(s, item)
            bufs.append(Buffer(f"t{i}", start, end, int(s.allocated_memory), alignment))
            base = s.storage_base
            if base is not None:
                if id(base) not in ids:
                    raise ProblemError(f"{item}: its storage_base is not a planned spec of arena "
                                       f"{mem_id} (ExecuTorch places a storage-backed spec at its "
                                       "base's offset, in the base's arena)")
                aliases[f"t{i}"] = (ids[id(base)], int(s.storage_base_offset or 0))
        out[mem_id] = (Problem(bufs, alignment=alignment, name=f"{name}:mem{mem_id}",
                               aliases=aliases or None), group)
    return out


def _obj_ids(offsets: Sequence[int], sizes: Sequence[int]) -> list[int]:
    """``mem_obj_id`` of each buffer: the index of its connected run of overlapping address
    ranges ``[offset, offset + size)`` (``Verifier.verify_storage_reuse`` requires buffers that
    overlap in address to share it; zero-size buffers overlap nothing)."""
    order = sorted(range(len(offsets)), key=lambda i: (offsets[i], -sizes[i]))
    out = [0] * len(offsets)
    obj, run, top = -1, -1, None  # obj: last id given; run: id of the current run
    for i in order:
        lo, hi = offsets[i], offsets[i] + sizes[i]
        if sizes[i] == 0:  # its own id; the current run goes on
            obj += 1
            out[i] = obj
            continue
        if top is None or lo >= top:
            obj += 1
            run, top = obj, hi
        else:
            top = max(top, hi)
        out[i] = run
    return out


class MemplanAlgorithm:
    """A memory-planning algorithm for ExecuTorch backed by a registered memplan planner.

    Use it as ``MemoryPlanningPass(memory_planning_algo=MemoryPlanningAlgorithmSuite(
    algo_list=[MemplanAlgorithm("cpsat", time_limit=5.0)]))`` (or next to ExecuTorch's
    ``greedy`` in the same ``algo_list``: the suite keeps the smallest ``sum(bufsizes)``);
    :func:`plan_for` builds that pass with the same arguments. Calling it follows ExecuTorch's
    contract (module docstring) and returns a ``MemoryAlgoResult``.

    Every plan passes :func:`planners.check_plan` (inside ``Planner.plan``) per arena; the
    offsets written back are ``base + plan offset`` in bytes, ``base`` the submodules' reserved
    bytes of that arena (``input_mem_buffer_sizes``) rounded up to ``alignment``.

    Parameters
    ----------
    planner : str
        Registry name (:func:`planners.registry.available_planners`).
    **params
        The planner's parameters, as keywords (as :func:`plan_for` and
        :func:`planners.registry.get_planner` take them).

    Attributes
    ----------
    planner : str
    params : dict
        The planner's parameters.
    plans : list of dict
        One ``{mem_id: planners.Plan}`` per call (a graph and each control-flow submodule).
    seconds : float
        Wall-clock seconds spent in the planners over all calls.

    Raises
    ------
    ValueError
        An unknown planner or parameter (raised here, before any export).
    """

    def __init__(self, planner: str = "greedy_by_size", **params):
        get_planner(planner, **params)  # unknown names and parameters fail here, not mid-export
        self.planner = planner
        self.params = dict(params)
        self.plans: list = []
        self.seconds = 0.0

    def __repr__(self) -> str:
        kw = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"MemplanAlgorithm({self.planner!r}{kw})"

    @property
    def __name__(self) -> str:  # the suite names its algorithms by __name__
        return f"memplan_{self.planner}"

    def __call__(self, alignment: int, specs, graph_module, graph_signature,
                 extra_padding: int = 0):
        from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult

        specs = list(specs)
        problems = specs_problems(specs, alignment, name=self.__name__)
        base_sizes = list(getattr(graph_module, "input_mem_buffer_sizes", None) or [])
        top_id = max([1, *problems])
        bufsizes = [0] * (top_id + 1)
        result = MemoryAlgoResult({}, bufsizes)
        plans = {}
        for mem_id, (problem, group) in problems.items():
            base = base_sizes[mem_id] if mem_id < len(base_sizes) else 0
            base = -(-int(base) // alignment) * alignment
            t0 = time.perf_counter()
            plan = get_planner(self.planner, **self.params).plan(problem)
            self.seconds += time.perf_counter() - t0
            if plan.status in ("infeasible", "timeout", "skipped"):
                raise ProblemError(f"{problem.name}: planner {self.planner!r} gave no plan "
                                   f"(status {plan.status})")
            check_plan(problem, plan.offsets)
            plans[mem_id] = plan
            offs = [int(o) for o in plan.offsets.tolist()]
            sizes = [int(z) for z in problem.sizes.tolist()]
            for spec, off, obj in zip(group, offs, _obj_ids(offs, sizes), strict=True):
                result.spec_dict[spec] = SpecAllocResult(mem_id, obj, base + off)
            bufsizes[mem_id] = base + plan.arena_size + extra_padding
        self.plans.append(plans)
        return result


def plan_for(planner: str = "greedy_by_size", *, with_greedy: bool = False, **params):
    """A ``MemoryPlanningPass`` whose algorithm suite runs memplan's ``planner``.

    Parameters
    ----------
    planner : str
        Registry name of a memplan planner.
    with_greedy : bool
        Run ExecuTorch's own ``greedy`` beside it (the suite keeps the smaller
        ``sum(bufsizes)``, bytes).
    **params
        The planner's parameters, as keywords (the same as :class:`MemplanAlgorithm` takes).

    Returns
    -------
    tuple
        ``(MemoryPlanningPass, MemplanAlgorithm)``; the algorithm records its plans and seconds.

    Raises
    ------
    experiments.runtimes.RuntimeMissing
        Without the extra ``[executorch]``.
    ValueError
        An unknown planner or parameter.
    """
    _require()
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy
    from executorch.exir.passes import MemoryPlanningPass

    algo = MemplanAlgorithm(planner, **params)  # unknown planners fail here, not mid-export
    algos: list[Callable] = [algo] + ([greedy] if with_greedy else [])
    return MemoryPlanningPass(memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=algos)), algo


def _export(model, inputs, dynamic_shapes, strict: bool):
    """``torch.export.export`` of ``model`` (an ``ExportedProgram`` is kept as given)."""
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        if dynamic_shapes is not None:
            raise ValueError("dynamic_shapes of an ExportedProgram were fixed when it was exported")
        return model
    if inputs is None:
        raise ValueError(f"{type(model).__name__}: example inputs are needed to export it")
    return torch.export.export(model, tuple(inputs), dynamic_shapes=dynamic_shapes,
                               strict=strict)


def write(model=None, inputs: tuple | None = None, memory_planning_pass=None, *,
          dynamic_shapes=None, methods: dict | None = None, partitioner=None,
          transform_passes=None, compile_config=None, constant_methods: dict | None = None,
          backend_config=None, strict: bool = False):
    """Export PyTorch code to an ExecuTorch program planned by ``memory_planning_pass``.

    ``torch.export.export`` of each method, then ExecuTorch's ``to_edge`` (or, with a
    ``partitioner``, ``transform_passes``, ``compile_config`` or ``constant_methods``,
    ``to_edge_transform_and_lower``, which lowers to the backends), then
    ``to_executorch(backend_config)``.

    Parameters
    ----------
    model : torch.nn.Module, callable, ``torch.export.ExportedProgram`` or dict, optional
        The ``forward`` method; a dict ``{name: ExportedProgram}`` gives several methods
        already exported. ``None`` when ``methods`` gives them.
    inputs : tuple, optional
        Example inputs of ``model`` (not needed for an ``ExportedProgram``).
    memory_planning_pass : optional
        A ``MemoryPlanningPass`` (:func:`plan_for`, :func:`planning_pass`), or a dict of them
        by method name; ``None``: ExecuTorch's default (its ``greedy`` suite). Set on
        ``backend_config``.
    dynamic_shapes : optional
        ``torch.export``'s ``dynamic_shapes`` for ``model`` (e.g. ``{"x": {1:
        torch.export.Dim("seq", max=64)}}``). ExecuTorch plans each dynamic tensor at its upper
        bound (``DynamicMemoryPlanningMode.UPPER_BOUND``), so every ``Dim`` needs a ``max``.
    methods : dict, optional
        Several methods: ``{name: (module_or_fn, inputs)}`` or ``{name: (module_or_fn, inputs,
        dynamic_shapes)}``, each exported on its own (a method named ``forward`` and
        ``model`` together are refused). The methods of one program share its constants.
    partitioner : Partitioner, list or dict, optional
        As ``to_edge_transform_and_lower`` (e.g. ``[XnnpackPartitioner()]``, or
        ``{method: [partitioners]}``).
    transform_passes, compile_config, constant_methods : optional
        As ``to_edge_transform_and_lower`` (an ``EdgeCompileConfig``; ``{name: value}`` methods
        returning constants).
    backend_config : ``ExecutorchBackendConfig`` or dict, optional
        Passed to ``to_executorch`` (a dict: its keyword arguments); ``memory_planning_pass``,
        when given, replaces its pass.
    strict : bool
        ``torch.export``'s ``strict`` (default ``False``, non-strict tracing).

    Returns
    -------
    ExecutorchProgramManager
        ``.buffer`` holds the ``.pte`` bytes; ``.exported_program(name)`` each method's graph.

    Raises
    ------
    experiments.runtimes.RuntimeMissing
        Without the extra ``[executorch]``.
    ValueError
        No method, a method given twice, inputs missing, ``dynamic_shapes`` with an
        ``ExportedProgram`` or with ``methods`` only, or a ``memory_planning_pass`` set both
        here and in ``backend_config``.

    Source: ExecuTorch 1.5.1 ``exir/program/_program.py`` (``to_edge``,
    ``to_edge_transform_and_lower``, ``EdgeProgramManager.to_executorch``) and
    ``exir/capture/_config.py`` (``ExecutorchBackendConfig``).
    """
    _require()
    import dataclasses

    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower

    specs: dict[str, tuple] = {}
    if isinstance(model, dict):
        if inputs is not None or dynamic_shapes is not None:
            raise ValueError("a dict of ExportedPrograms takes no inputs or dynamic_shapes")
        specs.update({str(k): (v, None, None) for k, v in model.items()})
    elif model is not None:
        specs["forward"] = (model, inputs, dynamic_shapes)
    elif dynamic_shapes is not None:
        raise ValueError("dynamic_shapes is for model; give each method's in methods")
    for name, spec in (methods or {}).items():
        if name in specs:
            raise ValueError(f"method {name!r} is given twice")
        if not isinstance(spec, (tuple, list)) or len(spec) not in (2, 3):
            raise ValueError(f"methods[{name!r}]: (module_or_fn, inputs[, dynamic_shapes])")
        specs[str(name)] = (spec[0], spec[1], spec[2] if len(spec) == 3 else None)
    if not specs:
        raise ValueError("no method to export: give model or methods")
    if isinstance(backend_config, dict):
        backend_config = ExecutorchBackendConfig(**backend_config)
    cfg = backend_config if backend_config is not None else ExecutorchBackendConfig()
    if memory_planning_pass is not None:
        default = ExecutorchBackendConfig.__dataclass_fields__["memory_planning_pass"].default
        if backend_config is not None and backend_config.memory_planning_pass is not default:
            raise ValueError("memory_planning_pass is given both here and in backend_config")
        cfg = dataclasses.replace(cfg, memory_planning_pass=memory_planning_pass)
    with torch.no_grad():  # an in-place buffer update (add_) on a leaf that requires grad fails
        eps = {}
        for name, (fn, ins, dyn) in specs.items():
            if not isinstance(fn, (torch.nn.Module, torch.export.ExportedProgram)):
                fn = _FnModule(fn)
            eps[name] = _export(fn, ins, dyn, strict)
        progs = eps["forward"] if list(eps) == ["forward"] else eps
        lower = (partitioner, transform_passes, compile_config, constant_methods)
        if any(x is not None for x in lower):
            edge = to_edge_transform_and_lower(progs, transform_passes=transform_passes,
                                               partitioner=partitioner,
                                               constant_methods=constant_methods,
                                               compile_config=compile_config)
        else:
            edge = to_edge(progs)
        return edge.to_executorch(cfg)


def _fn_module_class():
    import torch

    class FnModule(torch.nn.Module):
        """A plain function as a module (``torch.export`` exports modules)."""

        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, *args):
            return self.fn(*args)

    return FnModule


def _FnModule(fn):  # noqa: N802  (a class built on first use: torch is imported lazily)
    return _fn_module_class()(fn)


def run(pte: bytes | str | Path, inputs: Sequence, method: str = "forward") -> list:
    """Outputs of ``method`` of the ``.pte`` (bytes or a path) on ``inputs``, executed by
    ExecuTorch's own runtime (``executorch.runtime.Runtime``), as a list of tensors."""
    _require()
    from executorch.runtime import Runtime

    data = Path(pte).read_bytes() if isinstance(pte, (str, Path)) else bytes(pte)
    prog = Runtime.get().load_program(data)
    return list(prog.load_method(method).execute(list(inputs)))


def verify_storage_reuse(manager) -> int:
    """Run ExecuTorch's ``Verifier.verify_storage_reuse`` on the planned graph of an
    ``ExecutorchProgramManager`` (graph inputs, outputs and mutable buffers planned, as the
    default ``MemoryPlanningPass``); returns its count of storage-sharing pairs and raises
    ExecuTorch's ``InternalError`` on an overlap of two live tensors."""
    from executorch.exir.memory_planning import Verifier

    ep = manager.exported_program()
    return Verifier(ep.graph_module, True, True, True, ep.graph_signature).verify_storage_reuse()


def planned_bytes(manager_or_pte) -> list[int]:
    """``non_const_buffer_sizes`` (bytes per arena, slot 0 constants) of the ``forward`` plan of
    an ``ExecutorchProgramManager`` or ``.pte`` bytes/path."""
    return list(_program(manager_or_pte).execution_plan[0].non_const_buffer_sizes)


def _program(src, reader: str = "light"):
    """The program of ``src``: an ``ExecutorchProgramManager``'s ``executorch_program``, a
    program object as given, or ``.pte`` bytes/path read by ``reader``: ``"light"``
    (:func:`read_pte_light`, no torch) or ``"exir"`` (ExecuTorch's ``deserialize_pte_binary``).
    Raises :class:`planners.ProblemError` for an unreadable file."""
    if hasattr(src, "executorch_program"):
        return src.executorch_program
    if hasattr(src, "execution_plan"):  # a deserialized program (either reader)
        return src
    label = str(src) if isinstance(src, (str, Path)) else "the .pte bytes"
    try:
        data = Path(src).read_bytes() if isinstance(src, (str, Path)) else bytes(src)
    except OSError as e:
        raise ProblemError(f"{label}: {e}") from None
    if reader == "light":
        try:
            return read_pte_light(data)
        except ProblemError as e:
            raise ProblemError(f"{label}: not a readable ExecuTorch program ({e})") from None
    if reader != "exir":
        raise ValueError(f"reader {reader!r}: 'light' or 'exir'")
    _require()
    from executorch.exir._serialize._program import deserialize_pte_binary

    try:
        return deserialize_pte_binary(data).program
    except Exception as e:  # ExecuTorch's flatbuffer reader raises several kinds
        raise ProblemError(f"{label}: not a readable ExecuTorch program ({type(e).__name__}: "
                           f"{e})") from None


# --- a light .pte reader: the program flatbuffer parsed with struct, no torch, no exir -------

class _FbError(ValueError):
    """A flatbuffer offset outside the file or a malformed table."""


class _Table:
    """One flatbuffer table at byte ``pos`` of ``buf`` (little-endian; FlatBuffers' layout: a
    signed 32-bit offset back to the vtable, whose 16-bit entries give each field's offset in the
    table, 0 for a field left at its default)."""

    __slots__ = ("buf", "pos", "_vt", "_vlen")

    def __init__(self, buf: memoryview, pos: int):
        self.buf, self.pos = buf, pos
        self._vt = pos - self._get("<i", pos)
        self._vlen = self._get("<H", self._vt)

    def _get(self, fmt: str, at: int):
        try:
            if at < 0:
                raise struct.error("negative offset")
            return struct.unpack_from(fmt, self.buf, at)[0]
        except struct.error:
            raise _FbError(f"offset {at} outside the {len(self.buf)}-byte file") from None

    def _field(self, slot: int) -> int:
        """Absolute position of field number ``slot`` (0-based), 0 when absent."""
        vo = 4 + 2 * slot
        if vo >= self._vlen:
            return 0
        off = self._get("<H", self._vt + vo)
        return self.pos + off if off else 0

    def scalar(self, slot: int, fmt: str, default=0):
        at = self._field(slot)
        return self._get(fmt, at) if at else default

    def _indirect(self, at: int) -> int:
        return at + self._get("<I", at)

    def table(self, slot: int) -> _Table | None:
        at = self._field(slot)
        return _Table(self.buf, self._indirect(at)) if at else None

    def string(self, slot: int) -> str | None:
        at = self._field(slot)
        if not at:
            return None
        s = self._indirect(at)
        n = self._get("<I", s)
        if s + 4 + n > len(self.buf):
            raise _FbError(f"string at {s} runs past the end of the file")
        return bytes(self.buf[s + 4:s + 4 + n]).decode("utf-8")

    def _vector(self, slot: int) -> tuple[int, int]:
        at = self._field(slot)
        if not at:
            return 0, 0
        v = self._indirect(at)
        return v + 4, self._get("<I", v)

    def scalars(self, slot: int, fmt: str) -> list:
        start, n = self._vector(slot)
        size = struct.calcsize(fmt)
        if start + n * size > len(self.buf):
            raise _FbError(f"vector at {start} runs past the end of the file")
        return list(struct.unpack_from(f"<{n}{fmt}", self.buf, start)) if n else []

    def tables(self, slot: int) -> list[_Table]:
        start, n = self._vector(slot)
        return [_Table(self.buf, self._indirect(start + 4 * i)) for i in range(n)]

    def union(self, slot: int) -> tuple[int, _Table | None]:
        """``(type index, table)`` of a union field (FlatBuffers stores a union as two fields:
        the ``_type`` byte in slot ``slot``, the table in ``slot + 1``)."""
        kind = self.scalar(slot, "<B")
        return kind, (self.table(slot + 1) if kind else None)


def _record(kind: str, /, **fields):
    """An object of class ``kind`` with ``fields`` as attributes (the light reader names its
    objects as ``executorch.exir.schema`` does, so :func:`pte_tensors` reads either)."""
    return _RECORDS.setdefault(kind, type(kind, (SimpleNamespace,), {}))(**fields)


_RECORDS: dict[str, type] = {}

#: ``KernelTypes`` of ExecuTorch's ``schema/program.fbs``, by union type index (1-based).
_KERNEL_TYPES = ("Null", "Int", "Bool", "Double", "Tensor", "String", "IntList", "DoubleList",
                 "BoolList", "TensorList", "OptionalTensorList")
#: ``InstructionArguments`` of ``schema/program.fbs``, by union type index (1-based).
_INSTRUCTIONS = ("KernelCall", "DelegateCall", "MoveCall", "JumpFalseCall", "FreeCall")


def _light_value(kind: int, t: _Table | None):
    name = _KERNEL_TYPES[kind - 1] if 1 <= kind <= len(_KERNEL_TYPES) else "Null"
    if t is None or name == "Null":
        return _record(name)
    if name == "Tensor":
        info = t.table(6)
        alloc = None if info is None else _record(
            "AllocationDetails", memory_id=info.scalar(0, "<I"),
            memory_offset=info.scalar(1, "<I") | (info.scalar(2, "<I") << 32))
        return _record("Tensor", scalar_type=t.scalar(0, "<b"), sizes=t.scalars(2, "i"),
                       allocation_info=alloc)
    if name in ("TensorList", "OptionalTensorList"):
        return _record(name, items=t.scalars(0, "i"))
    if name == "IntList":
        return _record(name, items=t.scalars(0, "q"))
    return _record(name)  # scalars and strings: never planned, never read here


def _light_instruction(kind: int, t: _Table | None):
    name = _INSTRUCTIONS[kind - 1] if 1 <= kind <= len(_INSTRUCTIONS) else "Unknown"
    if t is None:
        return _record(name)
    if name == "KernelCall":
        return _record(name, op_index=t.scalar(0, "<i"), args=t.scalars(1, "i"))
    if name == "DelegateCall":
        return _record(name, delegate_index=t.scalar(0, "<i"), args=t.scalars(1, "i"))
    if name == "MoveCall":
        return _record(name, move_from=t.scalar(0, "<i"), move_to=t.scalar(1, "<i"))
    if name == "JumpFalseCall":
        return _record(name, cond_value_index=t.scalar(0, "<i"),
                       destination_instruction=t.scalar(1, "<i"))
    if name == "FreeCall":
        return _record(name, value_index=t.scalar(0, "<i"))
    return _record(name)


def read_pte_light(data: bytes):
    """The execution plans of a ``.pte``, parsed from its flatbuffer without ``torch`` or
    ``executorch.exir``.

    Reads the fields of ExecuTorch's ``schema/program.fbs`` (1.5.1) that :func:`pte_tensors`
    and :func:`pte_plan` use, with the field names of ``executorch.exir.schema``: per execution
    plan its ``name``, ``values`` (``Tensor``: ``scalar_type``, ``sizes``, ``allocation_info``
    with ``memory_id`` and ``memory_offset`` in bytes; ``TensorList`` items; other kinds
    without fields), ``inputs``, ``outputs``, ``chains`` (instructions with their
    ``instr_args``), ``operators`` (``name``, ``overload``) and ``non_const_buffer_sizes``
    (bytes per arena). Constant data, delegate blobs and segments are not read.

    Parameters
    ----------
    data : bytes
        The whole ``.pte`` file (the flatbuffer starts at byte 0, file identifier ``ET12`` at
        bytes 4-8; an extended header and segments after it are not needed).

    Returns
    -------
    object
        With ``execution_plan``: a list of ``ExecutionPlan`` records.

    Raises
    ------
    planners.ProblemError
        No ``ET`` program identifier, or an offset outside the file.

    Source: ExecuTorch's ``schema/program.fbs``; FlatBuffers' binary format (vtables, unions as
    a ``_type`` field then the table).
    """
    buf = memoryview(bytes(data))
    if len(buf) < 8 or bytes(buf[4:6]) != b"ET":
        raise ProblemError(f"no ExecuTorch program identifier (bytes 4-8: {bytes(buf[4:8])!r}, "
                           "expected ET12)")
    try:
        root = _Table(buf, struct.unpack_from("<I", buf, 0)[0])
        plans = []
        for p in root.tables(1):
            values = [_record("EValue", val=_light_value(*e.union(0))) for e in p.tables(2)]
            chains = [_record("Chain", instructions=[
                _record("Instruction", instr_args=_light_instruction(*i.union(0)))
                for i in c.tables(2)]) for c in p.tables(5)]
            ops = [_record("Operator", name=o.string(0) or "", overload=o.string(1) or "")
                   for o in p.tables(6)]
            plans.append(_record("ExecutionPlan", name=p.string(0) or "", values=values,
                                 inputs=p.scalars(3, "i"), outputs=p.scalars(4, "i"),
                                 chains=chains, operators=ops,
                                 non_const_buffer_sizes=p.scalars(8, "q")))
    except (_FbError, struct.error, UnicodeDecodeError) as e:
        raise ProblemError(f"a malformed ExecuTorch program ({e})") from None
    return _record("Program", execution_plan=plans)


@dataclass(frozen=True)
class PteTensor:
    """A planned tensor of a ``.pte``.

    Attributes
    ----------
    index : int
        Value index in the execution plan (buffer ``v{index}``).
    mem_id : int
        Arena (``allocation_info.memory_id``; 0 is constants, never planned here).
    offset : int
        Bytes from the start of arena ``mem_id``.
    size : int
        Bytes: ``nbytes`` of its sizes and dtype, not rounded.
    first, last : int
        Closed range of the instruction indices (steps) that name it (graph inputs from step 0,
        outputs to the last step).
    steps : frozenset of int
        Every instruction index that names it.
    writes : frozenset of int
        The instruction indices that write it: the out arguments of a kernel by its operator
        schema (and the returned values), the destination of a move, every argument of a
        delegate call or of an operator whose schema is unknown (assumed written).
    is_input : bool
        A graph input (written by the caller before step 0).
    """

    index: int
    mem_id: int
    offset: int
    size: int
    first: int
    last: int
    steps: frozenset = frozenset()
    writes: frozenset = frozenset()
    is_input: bool = False


_DTYPE_BYTES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 15: 2}  # ScalarType enum


#: ExecuTorch's own tensor operators, which have no registered schema, as :func:`_written_args`
#: gives them (ExecuTorch 1.5.1 ``exir/emit/_emitter.py``): ``et_view(self, size, out)``
#: (``_emit_view``, a dynamic view) writes no bytes: ``out`` is ``self``'s storage under new
#: sizes; ``et_copy_index(copy_to, copy_from, index)`` writes ``copy_to`` (``map`` and ``scan``
#: outputs).
_PRIM_WRITES = {("executorch_prim::et_view", "default"): (3, frozenset()),
                ("executorch_prim::et_copy_index", "tensor"): (3, frozenset({0}))}


#: ``(number of schema arguments, positions written)`` of common operators as their registered
#: schemas give them (torch 2.x's ``native_functions.yaml`` and ExecuTorch's ``dim_order_ops``),
#: so :func:`_written_args` needs no ``torch`` for them; any other operator is looked up in
#: torch's registry. tests/test_runtime_executorch.py checks every entry against the registry.
_KNOWN_WRITES = {k: (n, frozenset(w)) for k, (n, w) in {
    ("aten::_softmax", "out"): (4, (3,)),
    ("aten::add", "out"): (4, (3,)),
    ("aten::addmm", "out"): (6, (5,)),
    ("aten::bmm", "out"): (3, (2,)),
    ("aten::convolution", "out"): (10, (9,)),
    ("aten::copy", "out"): (4, (3,)),
    ("aten::copy_", ""): (3, (0,)),
    ("aten::div", "out"): (3, (2,)),
    ("aten::expand_copy", "out"): (4, (3,)),
    ("aten::gelu", "out"): (3, (2,)),
    ("aten::gt", "Scalar_out"): (3, (2,)),
    ("aten::max_pool2d_with_indices", "out"): (8, (6, 7)),
    ("aten::mul", "out"): (3, (2,)),
    ("aten::native_layer_norm", "out"): (8, (5, 6, 7)),
    ("aten::permute_copy", "out"): (3, (2,)),
    ("aten::relu", "out"): (2, (1,)),
    ("aten::sigmoid", "out"): (2, (1,)),
    ("aten::split_with_sizes_copy", "out"): (4, (3,)),
    ("aten::sub", "out"): (4, (3,)),
    ("aten::sum", "IntList_out"): (5, (4,)),
    ("dim_order_ops::_clone_dim_order", "out"): (4, (3,)),
    ("dim_order_ops::_to_dim_order_copy", "out"): (4, (3,)),
    ("aten::mm", "out"): (3, (2,)),
    ("aten::cat", "out"): (3, (2,)),
    ("aten::clone", "out"): (3, (2,)),
    ("aten::view_copy", "out"): (3, (2,)),
    ("aten::tanh", "out"): (2, (1,)),
    ("aten::hardtanh", "out"): (4, (3,)),
    ("aten::mean", "out"): (5, (4,)),
    ("aten::avg_pool2d", "out"): (8, (7,)),
    ("aten::squeeze_copy", "dims_out"): (3, (2,)),
    ("aten::unsqueeze_copy", "out"): (3, (2,)),
    ("aten::slice_copy", "Tensor_out"): (6, (5,)),
    ("aten::select_copy", "int_out"): (4, (3,)),
    ("aten::index", "Tensor_out"): (3, (2,)),
    ("aten::embedding", "out"): (6, (5,)),
    ("aten::where", "self_out"): (4, (3,)),
    ("aten::rsqrt", "out"): (2, (1,)),
    ("aten::pow", "Tensor_Scalar_out"): (3, (2,)),
    ("aten::neg", "out"): (2, (1,)),
    ("aten::exp", "out"): (2, (1,)),
    ("aten::linear", "out"): (4, (3,)),
    ("aten::relu_", ""): (1, (0,)),
    ("aten::add_", "Tensor"): (3, (0,)),
    ("aten::mul_", "Tensor"): (2, (0,)),
    ("aten::index_put_", ""): (4, (0,)),
    ("aten::_log_softmax", "out"): (4, (3,)),
    ("aten::full", "out"): (3, (2,)),
    ("aten::arange", "start_out"): (4, (3,)),
    ("aten::t_copy", "out"): (2, (1,)),
    ("aten::transpose_copy", "int_out"): (4, (3,)),
    ("aten::max", "dim_max"): (5, (3, 4)),
    ("aten::argmax", "out"): (4, (3,)),
}.items()}


@functools.cache
def _written_args(name: str, overload: str) -> tuple[int, frozenset] | None:
    """``(number of schema arguments, positions of the arguments written)`` of the operator
    ``name.overload`` by its registered schema (``alias_info.is_write``: the ``out`` arguments of
    an out variant, ``self`` of an in-place operator); ``None`` when no schema is registered. The
    emitter passes the schema's arguments then the returned value(s), so positions at or beyond
    the first number are written too (:data:`_PRIM_WRITES` for ExecuTorch's own operators).
    Looked up in :data:`_KNOWN_WRITES`, then for ``aten::`` operators in torch's
    ``native_functions.yaml`` (:func:`_native_writes`, no torch import), then in the registry."""
    if (name, overload) in _PRIM_WRITES:
        return _PRIM_WRITES[name, overload]
    if (name, overload) in _KNOWN_WRITES:
        return _KNOWN_WRITES[name, overload]
    if name.startswith("aten::"):
        got = _native_writes(name[len("aten::"):], overload)
        if got is not None:
            return got
    return _registered_writes(name, overload)


def _split_args(text: str) -> list[str]:
    """The comma-separated items of a schema's argument list, commas inside ``[]``/``()`` kept
    (defaults such as ``int[2] stride=[1, 1]``, annotations such as ``Tensor(a!)``)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _schema_writes(args: list[str]) -> tuple[int, frozenset]:
    """``(number of arguments, positions written)`` of a schema's argument items (the bare
    ``*`` of keyword-only arguments is no argument; a type annotated ``(x!)`` is written)."""
    items = [a for a in args if a != "*"]
    return len(items), frozenset(k for k, a in enumerate(items) if "!)" in a.split(" ", 1)[0])


#: The arguments of a schema's ``TensorOptions`` group, which torchgen leaves out of the out
#: variants it builds (the ``out`` tensor has them).
_TENSOR_OPTIONS = frozenset({"dtype", "layout", "device", "pin_memory"})


@functools.cache
def _native_schemas() -> dict[str, tuple[list[str], list[str]]] | None:
    """``{"name.overload": (argument items, return items)}`` of every operator declared in
    torch's ``native_functions.yaml`` (shipped in the torch wheel as
    ``torchgen/packaged/ATen/native/``), read as text without importing torch; the ``autogen``
    out variants (``index_put.out``, ``slice_scatter.out``) are built as torchgen builds them
    from their functional operator: its arguments, then one keyword-only written ``out`` per
    returned tensor (``out`` for one, ``out0``, ``out1``... for several; ``Tensor(a!)[] out``
    for a returned list), without the keyword-only ``TensorOptions`` arguments (``dtype``,
    ``layout``, ``device``, ``pin_memory``). ``None`` when the file is not installed."""
    import re

    from planners.io import package_folder

    torchgen = package_folder("torchgen")
    if torchgen is None:
        return None
    path = torchgen / "packaged" / "ATen" / "native" / "native_functions.yaml"
    try:
        text = path.read_text()
    except OSError:
        return None
    decl = re.compile(r"^- func: ([\w.]+)\((.*)\) -> (.*)$")
    out: dict[str, tuple[list[str], list[str]]] = {}
    autogen: list[str] = []
    for line in text.splitlines():
        m = decl.match(line)
        if m:
            name, args, rets = m.groups()
            rets = rets.strip()
            rets = rets[1:-1] if rets.startswith("(") and rets.endswith(")") else rets
            out[name if "." in name else name + "."] = (_split_args(args), _split_args(rets))
        elif line.startswith("  autogen:"):
            autogen += [s.strip() for s in line.split(":", 1)[1].split(",") if s.strip()]
    for name in autogen:
        base, _, ovl = name.partition(".")
        if name in out or not ovl.endswith("out"):
            continue
        functional = out.get(f"{base}.{ovl[:-len('out')].rstrip('_')}")
        if functional is None or any("!" in a for a in functional[0]):
            continue  # a mutable operator's out variant: torchgen's other rules, not built here
        rets = functional[1]
        if rets and all(r.split(" ")[0] == "Tensor" for r in rets):
            outs = [f"Tensor({chr(97 + k)}!) out{k if len(rets) > 1 else ''}"
                    for k in range(len(rets))]
        elif len(rets) == 1 and rets[0].split(" ")[0] == "Tensor[]":
            outs = ["Tensor(a!)[] out"]
        else:
            continue
        args = functional[0]
        star = args.index("*") if "*" in args else len(args)
        kw = {a.split("=")[0].split(" ")[-1] for a in args[star:]}
        if {"layout", "device", "pin_memory"} <= kw:  # keyword TensorOptions: not in out variants
            args = args[:star] + [a for a in args[star:]
                                  if a.split("=")[0].split(" ")[-1] not in _TENSOR_OPTIONS]
        out[name] = (args + ([] if "*" in args else ["*"]) + outs, outs)
    return out


def _native_writes(name: str, overload: str) -> tuple[int, frozenset] | None:
    """:func:`_written_args` of the ATen operator ``name.overload`` from torch's
    ``native_functions.yaml`` (:func:`_native_schemas`, no torch import); ``None`` when the
    file or the operator is not there."""
    schemas = _native_schemas()
    got = None if schemas is None else schemas.get(f"{name}.{overload}")
    return None if got is None else _schema_writes(got[0])


def _registered_writes(name: str, overload: str) -> tuple[int, frozenset] | None:
    """:func:`_written_args` from torch's operator registry (with ExecuTorch's operators
    registered: ``executorch.exir`` imported)."""
    _require()
    import executorch.exir  # noqa: F401  (registers dim_order_ops and ExecuTorch's own ops)
    import torch

    try:
        schema = torch._C._get_schema(name, overload)
    except RuntimeError:
        return None
    return len(schema.arguments), frozenset(
        k for k, a in enumerate(schema.arguments)
        if a.alias_info is not None and a.alias_info.is_write)


def pte_tensors(src, plan_index: int = 0) -> list[PteTensor]:
    """The planned tensors of one execution plan of a ``.pte``.

    Parameters
    ----------
    src : bytes, str, Path or ``ExecutorchProgramManager``
    plan_index : int
        Execution plan (method) index, 0 for the first.

    Returns
    -------
    list of PteTensor
        The tensors with ``allocation_info`` in value order. Lifetimes from the instruction order
        of the plan's chains: instruction ``k`` of the concatenated chains is step ``k``; a
        tensor list argument names each of its tensors; graph inputs are named at step 0 and
        outputs at the last step; a planned tensor that no instruction names is given the whole
        program ``[0, last step]``. ``writes`` records the instructions that write each tensor
        (:class:`PteTensor`).

    Raises
    ------
    planners.ProblemError
        An unreadable file, or a dtype whose size is unknown here (naming it).
    """
    prog = _program(src)
    ep = prog.execution_plan[plan_index]
    steps: dict[int, list[int]] = {}
    writes: dict[int, set[int]] = {}

    def tensors_of(v: int) -> list[int]:
        val = ep.values[v].val
        items = getattr(val, "items", None)
        if isinstance(items, list) and type(val).__name__ == "TensorList":
            return [int(it) for it in items]
        return [v]

    def touch(v: int, k: int, written: bool = False) -> None:
        for t in tensors_of(v):
            steps.setdefault(t, []).append(k)
            if written:
                writes.setdefault(t, set()).add(k)

    k = 0
    for chain in ep.chains:
        for ins in chain.instructions:
            a = ins.instr_args
            kind = type(a).__name__
            args = [int(v) for v in (getattr(a, "args", None) or [])]
            if kind == "KernelCall":
                op = ep.operators[int(a.op_index)]
                known = _written_args(str(op.name), str(op.overload or ""))
                for pos, v in enumerate(args):
                    touch(v, k, known is None or pos >= known[0] or pos in known[1])
            else:  # a delegate call's arguments are its inputs and outputs: all may be written
                for v in args:
                    touch(v, k, True)
            if hasattr(a, "move_from"):
                touch(int(a.move_from), k)
            if hasattr(a, "move_to"):
                touch(int(a.move_to), k, True)
            for fld in ("cond_value_index", "value_index"):
                if hasattr(a, fld):
                    touch(int(getattr(a, fld)), k)
            k += 1
    horizon = max(k - 1, 0)
    inputs = {t for v in ep.inputs for t in tensors_of(int(v))}
    for v in ep.inputs:
        touch(int(v), 0)
    for v in ep.outputs:
        touch(int(v), horizon)
    out = []
    for i, ev in enumerate(ep.values):
        t = ev.val
        info = getattr(t, "allocation_info", None)
        if info is None or type(t).__name__ != "Tensor":
            continue
        st = int(getattr(t.scalar_type, "value", t.scalar_type))
        if st not in _DTYPE_BYTES:
            raise ProblemError(f"value {i}: scalar_type {t.scalar_type} has no byte size here")
        nbytes = int(np.prod(list(t.sizes) or [1])) * _DTYPE_BYTES[st]
        used = steps.get(i)
        first, last = (min(used), max(used)) if used else (0, horizon)
        offset = int(info.memory_offset)
        out.append(PteTensor(i, int(info.memory_id), offset, nbytes, first, last,
                             frozenset(used or ()), frozenset(writes.get(i, ())), i in inputs))
    return out


def storage_aliases(tensors: Sequence[PteTensor]) -> dict[int, tuple[int, int]]:
    """Which planned tensors of a ``.pte`` share storage, as ExecuTorch lays it out.

    Two rules, each within one ``mem_id``:

    * an **in-place result**: the instruction that first writes tensor ``t`` reads (and does not
      write) a tensor ``b`` whose address range ``[offset, offset + size)`` holds ``t``'s, and
      no later instruction names ``b``: the result is written over its argument's storage
      (ExecuTorch's ``storage_base`` from ``_share_alloc_with_arg_idx``; ExecuTorch's
      ``reinplace_pass`` and memplan's :func:`inplace_relu_pass` mark only an argument no later
      node reads). Two tensors an instruction only reads, or only writes, are never joined by
      it, nor an argument read again after the write (the write clobbered it);
    * a **view**: ExecuTorch emits no instruction for a static ``memory.view`` (a
      ``view_copy`` replaced by ``ReplaceViewCopyWithViewPass``; ``_emit_view``), and for a
      dynamic one an ``et_view``, which writes no bytes; the view is a second tensor value with
      its base's ``allocation_info``, and its base's lifetime covers the view's uses
      (``_ViewSpec`` forwards ``lifetime`` to the base). So a tensor that no
      instruction writes and that is no graph input, at exactly the ``(mem_id, offset)`` of a
      tensor of the same byte size (a view keeps ``numel`` and dtype) that is written by an
      instruction before the view's first read (or is a graph input), is a view of the one
      written last: what it reads is what that tensor's writer wrote.

    Two tensors that are both written stay two buffers unless the first write of one is an
    in-place write into the other, so every other overlap of two written tensors is reported.
    Not detectable from the ``.pte`` alone (the bytes are those of a correct program): an
    operator result placed by mistake over an argument that the same instruction reads for the
    last time (it reads as an in-place write), and a view whose true base was overwritten by
    another tensor of the same size at the same offset before the view is read.

    Parameters
    ----------
    tensors : sequence of PteTensor
        One execution plan's planned tensors (:func:`pte_tensors`).

    Returns
    -------
    dict
        ``{child value index: (parent value index, delta bytes)}``: the child occupies
        ``[offset(parent) + delta, offset(parent) + delta + size(child))``; a forest whose roots
        each contain their whole group's address range (:class:`planners.Problem` alias rules).
    """
    by_index = {t.index: t for t in tensors}
    root: dict[int, int] = {t.index: t.index for t in tensors}
    members: dict[int, list[PteTensor]] = {t.index: [t] for t in tensors}  # by root

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    def holds(a: PteTensor, b: PteTensor) -> bool:  # b's range inside a's
        return a.offset <= b.offset and b.offset + b.size <= a.offset + a.size

    def join(base: PteTensor, child: PteTensor) -> None:
        rb, rc = find(base.index), find(child.index)
        if rb == rc:
            return
        big, small = (rb, rc) if by_index[rb].size >= by_index[rc].size else (rc, rb)
        if all(holds(by_index[big], t) for t in members[small]):  # one root holds the group
            root[small] = big
            members[big].extend(members.pop(small))

    # rule 1: an instruction's first write of t lands inside an argument b it reads last
    named_at: dict[int, list[PteTensor]] = {}
    for t in sorted(tensors, key=lambda t: (-t.size, t.index)):
        for k in t.steps:
            named_at.setdefault(k, []).append(t)
    for t in tensors:
        if not t.writes:
            continue
        k = min(t.writes)
        for b in named_at.get(k, ()):
            if b is t or b.size < t.size or b.mem_id != t.mem_id:
                continue
            if holds(b, t) and k not in b.writes and max(b.steps) == k:
                join(b, t)
                break
    # rule 2: views (never written, not an input) read a same-size tensor's bytes
    at: dict[tuple[int, int, int], list[PteTensor]] = {}
    for t in tensors:
        if t.size > 0:
            at.setdefault((t.mem_id, t.offset, t.size), []).append(t)

    def written_at(t: PteTensor, before: int) -> int | None:  # last write before a step
        ks = [k for k in t.writes if k < before]
        if ks:
            return max(ks)
        return -1 if t.is_input else None

    for group in at.values():
        if len(group) < 2:
            continue
        for v in group:
            if v.writes or v.is_input:
                continue
            cands = [(w, b.index, b) for b in group if b is not v
                     and (w := written_at(b, v.first)) is not None]
            if cands:
                join(max(cands, key=lambda c: (c[0], -c[1]))[2], v)
    out: dict[int, tuple[int, int]] = {}
    for t in tensors:
        r = find(t.index)
        if r != t.index:
            out[t.index] = (r, t.offset - by_index[r].offset)
    return out


def pool_name(mem_id: int) -> str:
    """The :class:`planners.MemoryPool` name of ExecuTorch arena ``mem_id``: ``mem{mem_id}``."""
    return f"mem{int(mem_id)}"


def read_plan(src, plan_index: int = 0, name: str | None = None) -> tuple[Problem, np.ndarray]:
    """ExecuTorch's own plan of one method of a ``.pte`` as ``(problem, offsets)``.

    Buffers ``v{index}`` (the value index), half-open lifetime ``[first, last + 1)`` in
    instruction steps (:func:`pte_tensors`), size ``nbytes`` (bytes); offsets in bytes from the
    start of each tensor's arena, as the ``.pte`` stores them. Tensors that share storage
    (:func:`storage_aliases`: in-place results, views, ExecuTorch's elided static views) are one
    buffer of the model with the hull of their lifetimes: any other overlap of two live tensors
    stays an overlap, which ``memplan check`` reports.

    * One ``mem_id``: the problem has no pools; the storage sharers are alias groups
      (``Problem(aliases=...)``, each child ``v{i}`` at its root's offset plus the delta).
    * Several ``mem_id``: each arena is a pool ``mem{k}`` (:func:`pool_name`, capacity ``None``,
      alignment 1) and each buffer names its own arena as its only candidate pool
      (``Buffer.pools``); since :class:`planners.Problem` takes no alias groups with pools, each
      group is one buffer named by its root (``v{root}``, the root's offset and size, the hull
      lifetime: :meth:`planners.Problem.collapse`). :func:`pte_plan` gives the pool of each.

    Parameters
    ----------
    src : bytes, str, Path or ``ExecutorchProgramManager``
    plan_index : int
        Execution plan (method) index.
    name : str, optional
        Problem name (default: the file's stem, or ``pte``).

    Raises
    ------
    planners.ProblemError
        An unreadable program, an unknown dtype, or a storage group the alias rules refuse.
    """
    problem, offsets, _ = _read_plan(pte_tensors(src, plan_index),
                                     _label(src, name, plan_index))
    return problem, offsets


def _label(src, name: str | None, plan_index: int) -> str:
    label = name or (Path(src).stem if isinstance(src, (str, Path)) else "pte")
    return f"{label}:plan{plan_index}" if plan_index else label


def _read_plan(ts: Sequence[PteTensor], label: str) -> tuple[Problem, np.ndarray, int]:
    """:func:`read_plan` of one method's planned tensors; also returns how many tensors share
    another's storage."""
    from planners import MemoryPool

    aliases = storage_aliases(ts)
    mems = sorted({t.mem_id for t in ts})
    if len(mems) <= 1:
        bufs = [Buffer(f"v{t.index}", t.first, t.last + 1, t.size) for t in ts]
        problem = Problem(bufs, name=label, aliases={
            f"v{c}": (f"v{p}", d) for c, (p, d) in aliases.items()} or None)
        return problem, np.array([t.offset for t in ts], dtype=np.int64), len(aliases)
    hull: dict[int, list[int]] = {}
    for t in ts:  # each group's hull lifetime, keyed by its root
        r = t.index
        while r in aliases:
            r = aliases[r][0]
        h = hull.setdefault(r, [t.first, t.last])
        h[0], h[1] = min(h[0], t.first), max(h[1], t.last)
    roots = [t for t in ts if t.index in hull]
    bufs = [Buffer(f"v{t.index}", hull[t.index][0], hull[t.index][1] + 1, t.size,
                   pools=(pool_name(t.mem_id),)) for t in roots]
    problem = Problem(bufs, name=label, pools=[MemoryPool(pool_name(m)) for m in mems])
    return problem, np.array([t.offset for t in roots], dtype=np.int64), len(aliases)


def pte_plan(src, plan_index: int = 0, name: str | None = None, reader: str = "light"):
    """ExecuTorch's own plan of one method of a ``.pte`` as a :class:`planners.Plan`.

    The problem and offsets of :func:`read_plan`; with several ``mem_id`` the plan's ``pools``
    are each buffer's arena (pool ``mem{k}``), offsets relative to that arena. ``planner`` is
    ``"executorch"``, status ``heuristic``; ``info`` holds ``non_const_buffer_sizes`` (the
    bytes the program declares per ``mem_id``, slot 0 constants), ``method`` (the execution
    plan's name), ``storage_groups`` (how many tensors share another's storage) and
    ``mem_ids`` (the arenas its planned tensors use). ``reader``: ``"light"`` parses the
    flatbuffer without torch (:func:`read_pte_light`), ``"exir"`` with ExecuTorch's
    ``deserialize_pte_binary`` (the same plan; tests/test_runtime_executorch.py compares them).

    Raises
    ------
    planners.ProblemError
        As :func:`read_plan`.
    """
    from planners import Plan, lower_bound

    prog = _program(src, reader)
    ts = pte_tensors(prog, plan_index)
    problem, offsets, merged = _read_plan(ts, _label(src, name, plan_index))
    ep = prog.execution_plan[plan_index]
    pools = None
    if problem.pools:
        pools = np.array([problem.candidate_pools(i)[0] for i in range(problem.n)], np.int64)
    return Plan(problem, offsets, planner="executorch", status="heuristic",
                lower_bound=lower_bound(problem), pools=pools,
                info={"non_const_buffer_sizes": [int(b) for b in ep.non_const_buffer_sizes],
                      "method": str(ep.name), "storage_groups": merged,
                      "mem_ids": sorted({t.mem_id for t in ts})})


def pte_violations(plan, capacity: int | None = None) -> list:
    """Every violation of ExecuTorch's plan of one method (:func:`pte_plan`), as
    :func:`planners.validate.plan_violations` lists them: two buffers (storage groups) live at
    one instruction step whose address ranges intersect in one arena, and each buffer ending
    above its arena's capacity: the size the program declares for that ``mem_id``
    (``non_const_buffer_sizes``, bytes), or ``capacity`` bytes for a program with one arena.

    Raises
    ------
    planners.ProblemError
        ``capacity`` for a plan with several arenas (each has its own declared size).
    """
    from planners import MemoryPool
    from planners.validate import plan_violations

    problem = plan.problem
    declared = plan.info["non_const_buffer_sizes"]
    decl = {pool_name(m): int(b) for m, b in enumerate(declared) if m > 0}
    if problem.pools:
        if capacity is not None:
            raise ProblemError(f"{problem.name}: {len(problem.pools)} arenas "
                               f"({', '.join(q.name for q in problem.pools)}); each is checked "
                               "against its declared size, a capacity names one")
        checked = problem.with_pools([MemoryPool(q.name, capacity=decl.get(q.name))
                                      for q in problem.pools])
        return plan_violations(checked, plan.offsets, None, plan.pools)
    return plan_violations(problem, plan.offsets, pte_capacity(plan, capacity))


def pte_capacity(plan, capacity: int | None = None) -> int | None:
    """The capacity (bytes) a one-arena :func:`pte_plan` is checked against: ``capacity`` when
    given, else the size the program declares for its ``mem_id``; ``None`` for several arenas
    or none."""
    mems = plan.info["mem_ids"]
    if capacity is not None or len(mems) != 1:
        return capacity if len(mems) <= 1 else None
    declared = plan.info["non_const_buffer_sizes"]
    return int(declared[mems[0]]) if mems[0] < len(declared) else None


def pte_methods(src, reader: str = "light") -> list[str]:
    """The method (execution plan) names of a ``.pte``, in plan-index order (``reader`` as
    :func:`pte_plan`)."""
    return [str(ep.name) for ep in _program(src, reader).execution_plan]


def example_models(seed: int = 0) -> dict[str, tuple[Any, tuple]]:
    """Small PyTorch models for the tests and ``make bench-executorch``, ``{name: (model in eval
    mode, example inputs)}``, weights and inputs from ``torch.manual_seed(seed)``:

    ``cnn_residual`` (three conv blocks with two residual adds), ``transformer_block`` (one
    pre-norm attention + MLP block, 16 tokens of width 32), ``mutable_buffer`` (a registered
    buffer written in place each call, ``copy_`` then ``add_``: ExecuTorch serialises no
    initial state of a mutated buffer), ``cond`` (a
    ``torch.cond`` whose branches ExecuTorch plans as submodules)."""
    _require()
    import torch
    from torch import nn

    class CnnResidual(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, padding=1)
            self.a = nn.Conv2d(16, 16, 3, padding=1)
            self.b = nn.Conv2d(16, 16, 3, padding=1)
            self.head = nn.Conv2d(16, 8, 1)

        def forward(self, x):
            y = torch.relu(self.stem(x))
            y = torch.relu(self.a(y)) + y
            y = torch.relu(self.b(y)) + y
            return self.head(torch.nn.functional.max_pool2d(y, 2))

    class TransformerBlock(nn.Module):
        def __init__(self, d=32, heads=4):
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.h = heads

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.n1(x)).split(d, dim=-1)
            q, k, v = (z.reshape(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
            att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.h) ** 0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.n2(x))

    class MutableBuffer(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(64, 64)
            self.register_buffer("acc", torch.zeros(4, 64))

        def forward(self, x):
            y = torch.relu(self.lin(x))
            self.acc.copy_(y)  # written before read: ExecuTorch keeps no initial buffer state
            self.acc.add_(x)
            return self.lin(self.acc) + y

    class Cond(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(32, 32), nn.Linear(32, 32)

        def forward(self, x):
            def yes(z):
                return torch.relu(self.a(z)) * 2.0

            def no(z):
                return torch.sigmoid(self.b(z)) - 1.0

            y = self.a(x) + 1.0
            return torch.cond(y.sum() > 0, yes, no, (y,)) + y

    torch.manual_seed(seed)
    out = {}
    for name, cls, shape in (("cnn_residual", CnnResidual, (1, 3, 16, 16)),
                             ("transformer_block", TransformerBlock, (1, 16, 32)),
                             ("mutable_buffer", MutableBuffer, (4, 64)),
                             ("cond", Cond, (8, 32))):
        out[name] = (cls().eval(), (torch.randn(*shape),))
    return out


def inplace_relu_pass(memory_planning_algo=None):
    """A ``MemoryPlanningPass`` that first asks ExecuTorch to write every ``relu`` whose input
    has no other user into that input's storage (node meta ``_share_alloc_with_arg_idx = 0``,
    which ExecuTorch's ``_move_memory_meta_to_spec`` turns into ``spec.storage_base``), so the
    planner sees storage-backed specs (alias groups). ``memory_planning_algo``: as
    ``MemoryPlanningPass`` (``None``: ExecuTorch's default suite). The pass's ``marked``
    attribute counts the relus marked. Same as ``planning_pass(algo, inplace_relu=True)``."""
    return planning_pass(memory_planning_algo, inplace_relu=True)


def _mark_inplace_relu(graph_module) -> int:
    """Mark each out-variant ``relu`` whose input has one user (:func:`inplace_relu_pass`);
    returns how many."""
    import torch
    from executorch.exir.memory_planning import _is_out_var_node

    marked = 0
    for node in graph_module.graph.nodes:
        a = node.args[0] if node.args else None
        if (_is_out_var_node(node) and "relu" in str(node.target)
                and isinstance(a, torch.fx.Node) and len(a.users) == 1):
            node.meta["_share_alloc_with_arg_idx"] = 0
            marked += 1
    return marked


def planning_pass(memory_planning_algo=None, scheduler: str | None = None,
                  inplace_relu: bool = False, mem_id_of: Callable | None = None,
                  share_mutable_buffers: bool = False, **params):
    """A ``MemoryPlanningPass`` with memplan's graph steps before ExecuTorch plans each graph.

    Parameters
    ----------
    memory_planning_algo : callable, optional
        As ``MemoryPlanningPass`` (``None``: ExecuTorch's default suite, its ``greedy``).
    scheduler : str, optional
        A memplan scheduler that reorders the operators first (:func:`reorder_graph`, legal
        orders only; control-flow submodules keep their order); ``None`` keeps the exported
        order. The reordered order is kept only when its planned bytes (the sum of
        ``non_const_buffer_sizes`` that ``memory_planning_algo`` gives it) do not exceed the
        exported order's: both orders are planned on copies of the graph first, and
        the exported order is restored when the reordered one needs more. Each summary in the
        pass's ``reorders`` says which order was used (``"order"``: ``"reordered"`` or
        ``"exported"``) and both orders' planned bytes (``"reordered_bytes"``,
        ``"exported_bytes"``). The trial plans are extra calls of ``memory_planning_algo`` (a
        :class:`MemplanAlgorithm` records them in ``plans`` and ``seconds`` too; the last call
        is the kept plan).
    inplace_relu : bool
        Mark relus to be written into their inputs' storage (:func:`inplace_relu_pass`).
    mem_id_of : callable, optional
        ``mem_id_of(node) -> int or None``: the arena of each out-variant operator's result
        (``None`` leaves ExecuTorch's default, 1), set on its ``TensorSpec`` before planning,
        as ExecuTorch's custom-pool passes do.
    share_mutable_buffers : bool
        As ``MemoryPlanningPass``: mutable buffers shared across methods, placed in arena 2 by
        ``run_multimethod``.
    **params
        The scheduler's parameters.

    Returns
    -------
    MemoryPlanningPass
        With ``reorders`` (one summary per graph reordered) and ``marked`` (relus marked).

    Raises
    ------
    ValueError
        An unknown scheduler.
    """
    _require()
    from executorch.exir.passes import MemoryPlanningPass

    if scheduler is not None:
        from scheduling.schedulers import get_scheduler

        get_scheduler(scheduler, **params)  # unknown names fail here, not mid-export

    class _Planning(MemoryPlanningPass):
        def _trial_bytes(self, graph_module, graph_signature) -> int:
            trial = MemoryPlanningPass(
                memory_planning_algo=self.memory_planning_algo,
                allow_lifetime_and_storage_overlap=self.allow_lifetime_and_storage_overlap,
                alloc_graph_input=self.alloc_graph_input,
                alloc_graph_output=self.alloc_graph_output,
                alloc_mutable_buffers=self.alloc_mutable_buffers, alignment=self.alignment)
            trial.enable_non_cpu_memory_planning = self.enable_non_cpu_memory_planning
            gm, restore = _trial_copy(graph_module)
            try:
                trial.run(gm, graph_signature)
                return int(sum(gm.meta["non_const_buffer_sizes"]))
            finally:
                restore()

        def run(self, graph_module, graph_signature=None):
            if inplace_relu:
                self.marked += _mark_inplace_relu(graph_module)
            if mem_id_of is not None:
                _assign_mem_ids(graph_module, mem_id_of)
            if scheduler is not None:
                exported = list(graph_module.graph.nodes)
                before = self._trial_bytes(graph_module, graph_signature)
                summary = reorder_graph(graph_module, scheduler, **params)
                after = (self._trial_bytes(graph_module, graph_signature) if summary["moved"]
                         else before)
                summary.update(exported_bytes=before, reordered_bytes=after,
                               order="reordered" if after <= before else "exported")
                if after > before:
                    _set_order(graph_module, exported)
                self.reorders.append(summary)
            return super().run(graph_module, graph_signature)

    p = _Planning(memory_planning_algo=memory_planning_algo,
                  share_mutable_buffers=share_mutable_buffers)
    p.reorders, p.marked = [], 0
    return p


#: The ``TensorSpec`` fields a planning run sets (``update_all_tensors_lifetime``, ``realign``,
#: ``apply_algo``); a trial plan restores them (:func:`_trial_copy`).
_PLAN_FIELDS = ("lifetime", "mem_id", "mem_obj_id", "mem_offset", "alignment")


def _trial_copy(graph_module):
    """``(copy, restore)``: a deep copy of ``graph_module`` to plan as a trial, and a function
    that puts back the planning fields (:data:`_PLAN_FIELDS`) of every ``TensorSpec`` of the
    graph and its submodules as they are now (``fx`` copies node meta shallowly, so the copy's
    nodes hold the same specs; ExecuTorch's view specs cannot be deep-copied)."""
    import copy

    import torch

    saved = []
    for sub in graph_module.modules():
        if not isinstance(sub, torch.fx.GraphModule):
            continue
        for n in sub.graph.nodes:
            specs = n.meta.get("spec")
            for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
                if spec is not None and hasattr(spec, "lifetime"):
                    saved.append((spec, [copy.copy(getattr(spec, f)) for f in _PLAN_FIELDS]))

    def restore() -> None:
        for spec, values in saved:
            for f, v in zip(_PLAN_FIELDS, values, strict=True):
                setattr(spec, f, copy.copy(v))

    return copy.deepcopy(graph_module), restore


def _set_order(graph_module, nodes) -> None:
    """Put the nodes of ``graph_module``'s graph back in the order ``nodes`` (all of them)."""
    for a, b in zip(nodes, nodes[1:]):
        a.append(b)
    graph_module.graph.lint()
    graph_module.recompile()


def _assign_mem_ids(graph_module, mem_id_of: Callable) -> int:
    """Set ``spec.mem_id = mem_id_of(node)`` on each out-variant operator's result spec(s) where
    it gives an int; returns how many nodes."""
    import torch
    from executorch.exir.memory_planning import _is_out_var_node

    k = 0
    for sub in graph_module.modules():
        if not isinstance(sub, torch.fx.GraphModule):
            continue
        for node in sub.graph.nodes:
            if node.op != "call_function" or not _is_out_var_node(node):
                continue
            mem_id = mem_id_of(node)
            if mem_id is None:
                continue
            specs = node.meta.get("spec")
            for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
                if spec is not None:
                    spec.mem_id = int(mem_id)
            k += 1
    return k


def write_plan_csv(src, path: str | Path, plan_index: int = 0) -> Problem:
    """Write ExecuTorch's own plan of a ``.pte`` (:func:`read_plan`) as a solved MiniMalloc CSV
    (``id,lower,upper,size,offset``; half-open lifetimes in instruction steps, bytes) for
    ``memplan check`` and ``memplan view``. Alias groups (in-place results and views inside
    their base) are written as one row per group (the root's id and offset, the hull of the
    members' lifetimes, :meth:`planners.Problem.collapse`), since the CSV has no alias column.
    A program with several arenas gets the columns ``pools`` (each buffer's arena, its only
    candidate) and ``pool`` (``memplan check PLAN.csv --pools mem1=B1,mem2=B2`` checks it
    against the declared sizes, :func:`planned_bytes`). Returns the collapsed problem
    written."""
    from planners import Plan
    from planners.io import write_minimalloc_csv

    problem, offsets = read_plan(src, plan_index)
    collapsed, group, _ = problem.collapse()
    root_off = np.zeros(collapsed.n, dtype=np.int64)
    for i, g in enumerate(group.tolist()):
        if problem.ids[i] == collapsed.ids[g]:
            root_off[g] = offsets[i]
    pools = (np.array([collapsed.candidate_pools(i)[0] for i in range(collapsed.n)], np.int64)
             if collapsed.pools else None)
    write_minimalloc_csv(collapsed, path, Plan(collapsed, root_off, "executorch", "heuristic",
                                               pools=pools))
    return collapsed


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m experiments.runtimes.executorch MODEL.pte -o PLAN.csv``: write the ``.pte``'s
    own memory plan as a solved CSV (:func:`write_plan_csv`) and print its arenas. Exit 2 with
    one ``error:`` line for an unreadable file."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m experiments.runtimes.executorch",
                                 description=main.__doc__)
    ap.add_argument("pte")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    try:
        collapsed = write_plan_csv(a.pte, a.output)
        sizes = planned_bytes(a.pte)
    except Exception as e:  # a malformed .pte raises from ExecuTorch's flatbuffer reader
        print(f"error: {a.pte}: {e}", file=sys.stderr)
        return 2
    print(f"{a.output}: {collapsed.n} buffers; non_const_buffer_sizes {sizes} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def _writes_beyond_out(node) -> bool:
    """True when ``node`` may have a side effect other than writing its ``out=`` tensors: a
    schema argument written in place that is not an out argument, or a callable without a
    schema (delegate calls, higher-order ops, ``memory.view``): kept in place by
    :func:`reorder_graph`."""
    import operator

    from executorch.exir.memory_planning import _is_out_var_node
    from executorch.exir.operator.convert import get_out_args_from_opoverload

    if node.target is operator.getitem:
        return False
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return True
    outs = set(get_out_args_from_opoverload(node.target)) if _is_out_var_node(node) else set()
    return any(a.alias_info is not None and a.alias_info.is_write and a.name not in outs
               for a in schema.arguments)


def reorder_graph(graph_module, scheduler: str = "min_live", **params) -> dict:
    """Reorder the operators of an out-variant ExecuTorch graph (as ``MemoryPlanningPass.run``
    receives it) with a memplan scheduler, where that is legal.

    The graph becomes a :class:`scheduling.graph.Graph`: one operator per ``call_function``
    node other than ``memory.alloc``; its output tensor's bytes are the ``nbytes`` of its
    ``TensorSpec`` (0 for nodes that allocate nothing); its inputs are the nodes it reads (an
    ``alloc`` it writes counts as its own output). Legality: every data edge is kept; a node
    with a side effect beyond its ``out=`` tensors (:func:`_writes_beyond_out`) stays in order
    with every other such node, after every node placed before it that reads one of its
    arguments and before every node placed after it that does. Each ``alloc`` is moved right
    before the node that writes it (ExecuTorch's lifetimes start at the ``alloc``).

    Returns ``{"scheduler", "ops", "moved"}`` (operators, and how many changed position).
    Raises ``ValueError`` for an unknown scheduler.
    """
    _require()
    from executorch.exir import memory

    from scheduling.graph import Graph
    from scheduling.schedulers import get_scheduler

    fx_graph = graph_module.graph
    nodes = list(fx_graph.nodes)
    ops = [n for n in nodes if n.op == "call_function" and n.target is not memory.alloc]
    if len(ops) < 2:
        return {"scheduler": scheduler, "ops": len(ops), "moved": 0}
    is_op = set(ops)
    def _is_alloc(a) -> bool:
        return getattr(a, "op", None) == "call_function" and a.target is memory.alloc

    allocs_of = {n: [a for a in n.kwargs.values() if _is_alloc(a)] for n in ops}
    owner = {a: n for n in ops for a in allocs_of[n]}
    g = Graph(name=str(getattr(graph_module, "_get_name", lambda: "executorch")()))
    for n in nodes:
        if n.op in ("placeholder", "get_attr"):
            g.add_tensor(n.name, (), "uint8", kind="input", nbytes=0)
    deps: dict = {n: set() for n in ops}
    for n in ops:
        deps[n].update(a for a in n.all_input_nodes if a in is_op)
        deps[n].update(owner[a] for a in n.all_input_nodes if a in owner and owner[a] is not n)
    pos = {n: i for i, n in enumerate(nodes)}
    effect = [n for n in ops if _writes_beyond_out(n)]
    for prev, nxt in zip(effect, effect[1:]):
        deps[nxt].add(prev)
    for e in effect:
        touched = set(e.all_input_nodes)
        for n in ops:
            if n is e or not touched & set(n.all_input_nodes):
                continue
            (deps[e] if pos[n] < pos[e] else deps[n]).add(n if pos[n] < pos[e] else e)
    for n in ops:
        specs = n.meta.get("spec")
        specs = specs if isinstance(specs, (list, tuple)) else [specs]
        nbytes = sum(int(s.nbytes()) for s in specs if hasattr(s, "nbytes")) \
            if allocs_of[n] else 0
        g.add_tensor(n.name, (), "uint8", nbytes=nbytes)
    for n in ops:
        ins = [a.name for a in n.all_input_nodes if a.op in ("placeholder", "get_attr")]
        ins += [d.name for d in sorted(deps[n], key=pos.get)]
        g.add_op(f"op:{n.name}", str(n.target), ins, [n.name])
    order = get_scheduler(scheduler, **params).schedule(g).order
    by_name = {f"op:{n.name}": n for n in ops}
    new = [by_name[o] for o in order]
    anchor = max((n for n in nodes if n.op in ("placeholder", "get_attr")), key=pos.get,
                 default=None)
    first = anchor is None
    for n in new:  # each operator right after its allocations, in the new order
        for a in (*allocs_of[n], n):
            if first:
                nodes[0].prepend(a)
                first = False
            else:
                anchor.append(a)
            anchor = a
    fx_graph.lint()
    graph_module.recompile()
    moved = sum(1 for a, b in zip(ops, new, strict=True) if a is not b)
    return {"scheduler": scheduler, "ops": len(ops), "moved": moved}


def reordering_pass(scheduler: str = "min_live", memory_planning_algo=None, **params):
    """A ``MemoryPlanningPass`` that first reorders the graph's operators with the memplan
    ``scheduler`` (:func:`reorder_graph`, legal orders only; control-flow submodules keep their
    order), then plans memory with ``memory_planning_algo`` (``None``: ExecuTorch's default
    suite): ``planning_pass(memory_planning_algo, scheduler, **params)``. The reordered order
    is kept only when its planned bytes do not exceed the exported order's (otherwise the
    exported order is restored); ``reorders[-1]["order"]`` says which was used."""
    return planning_pass(memory_planning_algo, scheduler=scheduler, **params)


# -- several methods planned as one shared arena (issue 35) ------------------------------------


def _mutable_fqn(node, graph_signature) -> str | None:
    """FQN of the buffer a placeholder ``node`` reads when some method mutates a buffer of that
    name (``graph_signature.buffers_to_mutate``), else ``None`` (ExecuTorch 1.5.1
    ``exir/passes/memory_planning_pass.py`` ``_is_mutable_buffer``)."""
    if node.op != "placeholder" or graph_signature is None:
        return None
    fqn = graph_signature.inputs_to_buffers.get(node.target)
    return fqn if fqn is not None and fqn in graph_signature.buffers_to_mutate.values() else None


class SharedMethodsPlanner:
    """memplan's plan of several methods of one program as **one shared arena** (``mem_id`` 1).

    Every mutable buffer (a KV cache: ``register_buffer`` updated in place) is one buffer of the
    whole program: it gets one offset in every method and is reserved over each method's whole
    schedule (its state persists between calls), in the methods that do not name it too; every
    other tensor is private to its method, so the methods reuse the same bytes for their own
    tensors. :func:`planners.shared_arena.plan_shared` plans the methods' problems together (its
    ``colocate`` reduction is exact); the offsets are written on ExecuTorch's tensor specs, so
    the ``.pte`` carries them. Use :attr:`passes` as ``write(memory_planning_pass=...)`` (a
    pass per method); ExecuTorch calls each pass's ``run`` per method and then
    ``run_multimethod``, where the joint plan is made.

    ExecuTorch's own scheme (``MemoryPlanningPass(share_mutable_buffers=True)``, 1.5.1
    ``run_multimethod``) instead puts every mutable buffer in an extra arena ``mem_id`` 2, one
    after another. Here the state shares arena 1 with the activations: the runtime must give
    every method the same arena 1 (ExecuTorch 1.5.1's ``executorch.runtime`` does so for host
    methods: ``Program.load_method`` shares one set of arenas, sized to the largest), and the
    methods must not run at the same time.

    Parameters
    ----------
    methods : sequence of str
        The method names, each given a pass; every method of the program must be one of them
        (a method planned by another pass could overwrite the shared state).
    planner : str
        Registry name of the memplan planner.
    mode : {"colocate", "hull"} or None
        As :func:`planners.shared_arena.plan_shared`.
    **params
        The planner's parameters.

    Attributes
    ----------
    passes : dict
        ``{method: MemoryPlanningPass}``.
    result : planners.shared_arena.SharedPlan or None
        The shared plan (after ``to_executorch``); offsets in bytes of arena 1; buffer
        ``buffer:<fqn>`` is a shared buffer, ``t<i>`` the ``i``-th spec (alias groups collapsed
        to their root, :meth:`planners.Problem.collapse`).
    shared_offsets : dict
        ``{fqn: offset}`` (bytes of arena 1).
    storage_pairs : dict
        ``{method: n}``: ExecuTorch's ``Verifier.verify_storage_reuse`` run on each planned
        method (the count of storage-sharing pairs; it raises on an overlap of live tensors).

    Raises
    ------
    ValueError
        No methods or a repeated name; an unknown planner or parameter.
    planners.ProblemError
        (during ``to_executorch``) a method with control-flow submodules or with tensors outside
        arena 1, a method not planned, two mutable buffers in one storage group, a mutable buffer
        whose size or alignment differs between methods.
    """

    def __init__(self, methods: Sequence[str], planner: str = "greedy_by_size",
                 mode: str | None = None, **params):
        _require()
        from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
        from executorch.exir.passes import MemoryPlanningPass

        methods = [str(m) for m in methods]
        if not methods or len(set(methods)) != len(methods):
            raise ValueError(f"shared methods: need distinct method names, got {methods}")
        self.inner = MemplanAlgorithm(planner, **params)  # a provisional per-method plan
        self.planner, self.mode, self.params = planner, mode, dict(params)
        self.methods = methods
        self.seen: dict[str, dict] = {}
        self.result = None
        self.shared_offsets: dict[str, int] = {}
        self.storage_pairs: dict[str, int] = {}
        self.passes = {}
        for name in methods:
            def record(*args, _name=name, **kw):
                return self._record(_name, *args, **kw)

            record.__name__ = f"memplan_shared_{planner}"  # the suite names algorithms by it
            p = MemoryPlanningPass(memory_planning_algo=MemoryPlanningAlgorithmSuite(
                algo_list=[record]), alloc_mutable_buffers=True)
            p.run_multimethod = self.run_multimethod  # ExecuTorch calls it once per pass
            self.passes[name] = p

    def _record(self, method, alignment, specs, graph_module, graph_signature,
                extra_padding=0):
        if method in self.seen:
            raise ProblemError(f"shared methods: method {method!r} was planned twice (control-"
                               "flow submodules are not supported by shared-arena planning)")
        if getattr(graph_module, "input_mem_buffer_sizes", None):
            raise ProblemError(f"shared methods: method {method!r} has control-flow submodules, "
                               "which shared-arena planning does not support")
        specs = list(specs)
        self.seen[method] = dict(alignment=int(alignment), specs=specs, gm=graph_module,
                                 sig=graph_signature, pad=int(extra_padding))
        return self.inner(alignment, specs, graph_module, graph_signature, extra_padding)

    def _method_problem(self, name: str):
        """Collapsed problem of one method with its mutable buffers renamed ``buffer:<fqn>``,
        plus the map back to specs."""
        d = self.seen[name]
        problems = specs_problems(d["specs"], d["alignment"], name=name)
        if set(problems) - {1}:
            raise ProblemError(f"shared methods: method {name!r} has tensors in arenas "
                               f"{sorted(problems)}; shared-arena planning takes arena 1 only")
        if not problems:
            return Problem([], alignment=d["alignment"], name=name), [], None, None, {}
        problem, group = problems[1]
        col, grp, delta = problem.collapse()
        fqn_of = {}
        for node in d["gm"].graph.nodes:
            fqn = _mutable_fqn(node, d["sig"])
            if fqn is not None:
                fqn_of[id(node.meta["spec"])] = fqn
        root_fqn: dict[int, str] = {}
        for i, s in enumerate(group):
            fqn = fqn_of.get(id(s))
            if fqn is None:
                continue
            g = int(grp[i])
            if root_fqn.get(g, fqn) != fqn:
                raise ProblemError(f"shared methods: method {name!r}: mutable buffers "
                                   f"{root_fqn[g]!r} and {fqn!r} share one storage group")
            root_fqn[g] = fqn
        return col, group, grp, delta, root_fqn

    def run_multimethod(self) -> None:
        """Plan every method at once (after ExecuTorch ran each method's pass) and write the
        offsets (bytes), ``mem_obj_id`` and ``non_const_buffer_sizes`` on the specs and graphs.
        Called by ``to_executorch`` once per pass; the first call plans, the others return."""
        from executorch.exir.memory_planning import Verifier

        from planners.shared_arena import SharedArenaProblem, plan_shared

        if self.result is not None:
            return
        missing = [m for m in self.methods if m not in self.seen]
        if missing:
            raise ProblemError(f"shared methods: method(s) {missing} were not planned (a program "
                               "has no such method, or to_executorch was given other passes)")
        parts = {m: self._method_problem(m) for m in self.methods}
        shared: dict[str, tuple[int, int]] = {}  # fqn -> (size, alignment)
        for m, (col, _group, _grp, _delta, root_fqn) in parts.items():
            for g, fqn in root_fqn.items():
                sig = (int(col.sizes[g]), int(col.alignments[g]))
                if shared.setdefault(fqn, sig) != sig:
                    raise ProblemError(f"shared methods: mutable buffer {fqn!r} is (size, "
                                       f"alignment) {sig} bytes in method {m!r} but "
                                       f"{shared[fqn]} in another; a shared buffer is one buffer")
        problems = []
        for m, (col, _group, _grp, _delta, root_fqn) in parts.items():
            horizon = max(1, col.horizon)
            bufs = []
            for g, b in enumerate(col.buffers):
                if g in root_fqn:  # state: reserved over the whole method
                    bufs.append(Buffer(f"buffer:{root_fqn[g]}", 0, horizon, int(col.sizes[g]),
                                       int(col.alignments[g])))
                else:
                    bufs.append(Buffer(b.id, int(col.starts[g]), int(col.ends[g]),
                                       int(col.sizes[g]), int(col.alignments[g])))
            named = set(root_fqn.values())
            for fqn, (size, align) in shared.items():
                if fqn not in named:  # a method without the buffer must not overwrite it
                    bufs.append(Buffer(f"buffer:{fqn}", 0, horizon, size, align))
            problems.append(Problem(bufs, alignment=self.seen[m]["alignment"], name=m))
        sp = SharedArenaProblem(problems, tuple(f"buffer:{f}" for f in shared))
        self.result = plan_shared(sp, self.planner, mode=self.mode, **self.params)
        self.shared_offsets = {sid.removeprefix("buffer:"): int(off)
                               for sid, off in self.result.shared_offsets().items()}
        for m, (col, group, grp, delta, _root) in parts.items():
            d = self.seen[m]
            plan = self.result.plans[m]
            offs = [int(o) for o in (plan.offsets[: col.n][grp] + delta).tolist()] if group else []
            sizes = [int(s.allocated_memory) for s in group]
            for spec, off, obj in zip(group, offs, _obj_ids(offs, sizes), strict=True):
                spec.mem_id, spec.mem_offset, spec.mem_obj_id = 1, off, obj
            d["gm"].meta["non_const_buffer_sizes"] = [0, plan.arena_size + d["pad"]]
            self.storage_pairs[m] = Verifier(d["gm"], True, True, True, d["sig"]
                                             ).verify_storage_reuse()


def plan_methods_for(methods: Sequence[str], planner: str = "greedy_by_size",
                     mode: str | None = None, **params):
    """``({method: MemoryPlanningPass}, SharedMethodsPlanner)``: the passes for
    ``write(methods=..., memory_planning_pass=passes)`` planning all ``methods`` into one shared
    arena with memplan's ``planner`` (:class:`SharedMethodsPlanner`, which also records the
    plan). Raises as :class:`SharedMethodsPlanner`."""
    sm = SharedMethodsPlanner(methods, planner, mode, **params)
    return sm.passes, sm


def pte_mutable_buffers(src) -> dict[str, dict[str, tuple[int, int, int]]]:
    """``{method: {fqn: (mem_id, offset, nbytes)}}`` of the mutable buffers of a ``.pte``
    written with ``emit_mutable_buffer_names=True`` (``ExecutorchBackendConfig``; offsets and
    sizes in bytes), read by ExecuTorch's own deserializer. A program written without names
    gives empty dicts."""
    prog = _program(src, reader="exir")
    out: dict[str, dict[str, tuple[int, int, int]]] = {}
    for ep in prog.execution_plan:
        got = out.setdefault(ep.name, {})
        for v in ep.values:
            t = v.val
            info = getattr(t, "extra_tensor_info", None)
            fqn = getattr(info, "fully_qualified_name", None)
            alloc = getattr(t, "allocation_info", None)
            if fqn is None or alloc is None:
                continue
            off = (int(alloc.memory_offset_high) << 32) | int(alloc.memory_offset_low)
            nbytes = int(np.prod(t.sizes, dtype=np.int64)) * _DTYPE_BYTES[int(t.scalar_type)]
            got[fqn] = (int(alloc.memory_id), off, nbytes)
    return out
