"""Workloads: named sources of allocation problems for the harness.

A :class:`Workload` is a name plus a loader that returns a :class:`planners.Problem` (half-open
lifetimes in schedule steps, sizes in bytes). The registry :data:`WORKLOADS` holds the bundled real
workloads: the nine ONNX models that the ``onnx`` wheel ships (lifetimes from the file order) and the
seed examples; :func:`minimalloc_workloads` adds every CSV of a MiniMalloc folder, and
:func:`load_problem` turns a path (``.csv`` / ``.onnx``) or a registry name into a problem.

This module is the one workload resolver of the toolkit: the command line
(:func:`resolve_problems`, :func:`resolve_graphs`), the harness and sweeps (:func:`kind_graph`,
:func:`activation_problem`) all resolve names, files and graph kinds here. A new workload kind
gets its loader in :func:`kind_graph` (graphs) or :func:`load_problem` (problems) and, for a
graph kind, its lifetime policy in :data:`KIND_LIFETIME_POLICY`.
"""

from __future__ import annotations

import glob
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from planners import Problem, ProblemError, read_minimalloc_csv
from planners.examples import exercise_5_1_problem, pisarchyk_lee_problem, seed000_problem

__all__ = [
    "unknown_workload_message",
    "Workload",
    "WORKLOADS",
    "register_workload",
    "onnx_workloads",
    "minimalloc_workloads",
    "default_workloads",
    "load_problem",
    "onnx_problem",
    "tflite_workloads",
    "tflite_model_files",
    "KIND_LIFETIME_POLICY",
    "activation_problem",
    "kind_graph",
    "workload_key",
    "resolve_problems",
    "resolve_graphs",
]

#: How a schedule of each graph workload kind becomes an activation problem: keyword arguments of
#: :func:`scheduling.lifetimes.lifetime_problem`. TFLite models plan their graph input in the
#: arena with 16-byte alignment, as TFLite Micro's arena does (``MicroArenaBufferAlignment()``);
#: ONNX models, generated graphs and other graphs plan activations only, unaligned.
KIND_LIFETIME_POLICY: dict[str, dict] = {
    "onnx": {"include_inputs": False, "alignment": 1},
    "generator": {"include_inputs": False, "alignment": 1},
    "graph": {"include_inputs": False, "alignment": 1},
    "tflite": {"include_inputs": True, "alignment": 16},
}


def activation_problem(kind: str, graph, order, name: str | None = None,
                       unified: bool = False) -> Problem:
    """The activation :class:`planners.Problem` of ``graph`` under the operator ``order`` (a
    schedule's order), with the lifetime policy of workload ``kind``
    (:data:`KIND_LIFETIME_POLICY`): half-open lifetimes ``[start, end)`` in schedule steps, sizes
    in bytes. ``unified=True`` also plans weights and inputs as residents (seed 000 layout).
    Raises ``ValueError`` for an unknown kind."""
    from scheduling.lifetimes import lifetime_problem

    if kind not in KIND_LIFETIME_POLICY:
        raise ValueError(f"workload kind {kind!r} has no lifetime policy; known kinds: "
                         f"{', '.join(KIND_LIFETIME_POLICY)}")
    return lifetime_problem(graph, order, unified=unified, name=name, **KIND_LIFETIME_POLICY[kind])


def kind_graph(kind: str, source: str, params: dict | None = None):
    """``(graph, extra)`` of a graph workload of ``kind``: ``"onnx"`` (``source`` a path,
    ``params`` shape overrides for :func:`scheduling.onnx_import.load_onnx`), ``"tflite"`` (a path;
    ``extra`` holds ``persistent_bytes``, the tensors outside the activation arena) or
    ``"generator"`` (``source`` a generator name of :mod:`scheduling.generators`, ``params`` its
    keyword arguments). Raises ``ValueError`` for another kind."""
    p = params or {}
    if kind == "onnx":
        from scheduling.onnx_import import load_onnx

        return load_onnx(source, overrides=p or None), {}
    if kind == "tflite":
        from scheduling.tflite_import import load_tflite

        m = load_tflite(source, overrides=p or None)
        return m.graph, {"persistent_bytes": m.persistent_bytes}
    if kind == "generator":
        from scheduling.generators import generate

        return generate(source, **p), {}
    raise ValueError(f"workload kind {kind!r} has no graph")


def workload_key(spec: str) -> str:
    """The record name of a workload given on the command line: a file's stem, else the name.

    >>> workload_key("models/net.onnx"), workload_key("seed000")
    ('net', 'seed000')
    """
    return Path(spec).stem if spec.endswith((".csv", ".onnx", ".tflite", ".json", ".pte")) \
        else spec


def resolve_problems(names: list[str] | None = None, minimalloc_dir: str | Path | None = None,
                     size_attr: str = "cost_ram", overrides: list[str] | None = None,
                     pools=None) -> dict[str, Problem]:
    """Problems by record name (:func:`workload_key`) for the names, files and ``minimalloc:NAME``
    specs in ``names`` (:func:`load_problem` each), or for :func:`default_workloads` when
    ``names`` is empty; plus every CSV of ``minimalloc_dir`` unless ``names`` already names
    ``minimalloc:`` workloads (then it is only where those are looked up). ``overrides`` are
    ``NAME=DIMS`` items (:func:`parse_overrides`) for the ONNX/TFLite workloads in ``names``.
    ``pools`` (``--pools``): the named inputs are loaded with them (:func:`load_problem`, so a
    CSV's own ``pools`` column is read); the default workloads take them later.
    Raises :class:`planners.ProblemError` naming a bad input, ``ValueError`` for overrides
    without names."""
    if overrides and not names:
        raise ValueError("--override needs --workloads naming the ONNX/TFLite models it applies to")
    problems: dict[str, Problem] = {}
    if names:
        for n in names:
            problems[workload_key(n)] = load_problem(n, minimalloc_folder=minimalloc_dir,
                                                     size_attr=size_attr,
                                                     overrides=parse_overrides(overrides),
                                                     pools=pools)
    else:
        for n, w in default_workloads().items():
            problems[n] = w.problem()
    if minimalloc_dir and not any(n.startswith("minimalloc:") for n in names or []):
        for n, w in minimalloc_workloads(minimalloc_dir).items():
            problems[n] = w.problem()
    return problems


def resolve_graphs(names: list[str] | None = None, size_attr: str = "cost_ram",
                   overrides: list[str] | None = None) -> dict:
    """Graphs by record name (:func:`workload_key`) for the names and files in ``names``
    (:func:`load_graph` each), or every :func:`graph_workloads` entry when ``names`` is empty.
    Raises :class:`planners.ProblemError` naming an input that is not a graph workload."""
    return {workload_key(n): load_graph(n, size_attr=size_attr, overrides=parse_overrides(overrides))
            for n in (names or list(graph_workloads()))}


@dataclass(frozen=True)
class Workload:
    """A named allocation problem source.

    name : registry name used in records. kind : "onnx", "seed", "minimalloc" or "synthetic".
    source : path or citation. loader : ``() -> Problem``.
    """

    name: str
    kind: str
    source: str
    loader: Callable[[], Problem] = field(repr=False, compare=False)

    def problem(self) -> Problem:
        """Load the problem (named after the workload)."""
        p = self.loader()
        return Problem(p.buffers, capacity=p.capacity, alignment=p.alignment, name=self.name)


#: Registry of workloads by name.
WORKLOADS: dict[str, Workload] = {}


def register_workload(w: Workload) -> Workload:
    """Add ``w`` to :data:`WORKLOADS` (``ValueError`` if the name is taken by another source)."""
    old = WORKLOADS.get(w.name)
    if old is not None and old.source != w.source:
        raise ValueError(f"workload name {w.name!r} already names {old.source}")
    WORKLOADS[w.name] = w
    return w


def onnx_problem(path: str | Path, schedule: str = "file_order", unified: bool = False,
                 overrides: dict | None = None) -> Problem:
    """Import an ONNX model, schedule it and derive the activation problem (see
    :func:`scheduling.lifetimes.problem_from_graph`). Raises :class:`planners.ProblemError` (or a
    subclass) naming the tensor when a size is unknown or the file is malformed."""
    from scheduling.onnx_import import load_onnx
    from scheduling.schedulers import get_scheduler

    graph = load_onnx(path, overrides=overrides)
    order = get_scheduler(schedule).schedule(graph).order
    return activation_problem("onnx", graph, order, name=Path(path).stem, unified=unified)


def onnx_workloads() -> dict[str, Workload]:
    """The nine light ONNX models shipped by the ``onnx`` wheel, lifetimes in file order."""
    from scheduling.workloads import onnx_light_models

    out = {}
    for name, path in onnx_light_models().items():
        out[name] = Workload(name, "onnx", str(path), lambda p=path: onnx_problem(p))
    return out


def _seed_workloads() -> dict[str, Workload]:
    return {
        "seed000": Workload(
            "seed000", "seed", "seed 000 section 8 (unified arena, residents first)", seed000_problem
        ),
        "seed002_ex5.1": Workload(
            "seed002_ex5.1", "seed", "seed 002 exercise 5.1", exercise_5_1_problem
        ),
        "pisarchyk_lee": Workload(
            "pisarchyk_lee", "seed", "Pisarchyk & Lee 2020, toy example", pisarchyk_lee_problem
        ),
    }


#: Where ``minimalloc:NAME`` is looked up when no folder is given: ``$MEMPLAN_MINIMALLOC_DIR``, else
#: ``../shared/benchmarks/minimalloc`` beside the repository.
DEFAULT_MINIMALLOC_DIR = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "minimalloc"


def minimalloc_dir(folder: str | Path | None = None) -> Path:
    """The MiniMalloc folder: ``folder``, else ``$MEMPLAN_MINIMALLOC_DIR``, else
    :data:`DEFAULT_MINIMALLOC_DIR`."""
    import os

    return Path(folder or os.environ.get("MEMPLAN_MINIMALLOC_DIR") or DEFAULT_MINIMALLOC_DIR)


def minimalloc_workloads(folder: str | Path, pattern: str = "*.csv") -> dict[str, Workload]:
    """Every MiniMalloc CSV in ``folder`` (capacity from the ``NAME.CAPACITY.csv`` file name), named
    ``minimalloc:NAME``. Raises :class:`ProblemError` if the folder has none."""
    folder = Path(folder)
    files = sorted(glob.glob(str(folder / pattern)))
    if not files:
        raise ProblemError(f"{folder}: no MiniMalloc CSV files matching {pattern!r}")
    out = {}
    for f in files:
        stem = Path(f).name.split(".")[0]
        name = f"minimalloc:{stem}"
        out[name] = Workload(name, "minimalloc", f, lambda f=f: read_minimalloc_csv(f))
    return out


def default_workloads() -> dict[str, Workload]:
    """The bundled real workloads of ``make run``: nine ONNX models and the seed examples."""
    out = dict(onnx_workloads())
    out.update(_seed_workloads())
    return out


def parse_overrides(items) -> dict[str, list[int]] | None:
    """``["N=1", "input=1,3,224,224"]`` (command-line ``--override``) -> ``{"N": [1], "input":
    [1, 3, 224, 224]}`` for :func:`scheduling.onnx_import.load_onnx`: a symbolic dimension name
    with one value, or a tensor name (graph input or output, ``value_info`` entry, node output;
    for ``.tflite`` models a tensor name) with its full static shape. :class:`ProblemError` on
    a malformed item."""
    if not items:
        return None
    out: dict[str, list[int]] = {}
    for item in items:
        name, sep, dims = str(item).partition("=")
        try:
            values = [int(d) for d in dims.split(",") if d.strip()]
        except ValueError:
            values = []
        if not sep or not name or not values or any(v < 0 for v in values):
            raise ProblemError(
                f"override {item!r}: expected NAME=DIM (a symbolic dimension) or "
                f"TENSOR=D1,D2,... (a tensor's static shape), non-negative integers"
            )
        out[name] = values
    return out


def _onnx_overrides(o: dict[str, list[int]] | None) -> dict | None:
    # load_onnx takes {dim_param: int} or {tensor_name: [dims]} (an int for a tensor: rank 1)
    if not o:
        return None
    return {k: (v[0] if len(v) == 1 else v) for k, v in o.items()}


def _no_overrides(spec: str, overrides) -> None:
    if overrides:
        raise ProblemError(
            f"{spec!r}: --override applies to ONNX and TFLite models only ({sorted(overrides)} "
            "given)")


def load_problem(spec: str | Path, capacity: int | None | str = "auto", unified: bool = False,
                 schedule: str = "file_order", overrides: dict | None = None,
                 minimalloc_folder: str | Path | None = None,
                 size_attr: str = "cost_ram", pools=None) -> Problem:
    """A problem from a MiniMalloc ``.csv``, an ``.onnx`` or ``.tflite`` path, a workload name
    (:func:`default_workloads`, ``minimalloc`` and TFLite names) or a graph workload
    (:func:`load_graph`: ``mobilenet_v2``, ``gen:randwire``, ...; lifetimes from the ``schedule``).

    ``capacity``: bytes, ``None``, or ``"auto"`` (from a MiniMalloc file name, else none).
    ``overrides``: static shapes for symbolic ONNX dimensions (:func:`parse_overrides`).
    ``minimalloc:NAME`` reads ``NAME.*.csv`` from :func:`minimalloc_dir` (``minimalloc_folder``).
    A ``.json`` path is a node-link graph (:mod:`scheduling.nodelink`; ``size_attr`` names the
    node attribute with the output bytes, ``cost_ram`` as in Checkmate and MOCCASIN).
    ``pools`` (:class:`planners.model.MemoryPool`, preference order; ``--pools``): the problem
    gets them (:meth:`planners.Problem.with_pools`, capacity then the pools'); a CSV's own
    ``pools`` column (each buffer's candidates) is read against them.
    Raises :class:`ProblemError` naming the input when it is none of these, or when a CSV names
    candidate pools and ``pools`` is not given.
    """
    if pools:
        if str(spec).endswith(".csv"):
            return read_minimalloc_csv(Path(str(spec)), capacity=None, pools=pools)
        return load_problem(spec, capacity=None, unified=unified, schedule=schedule,
                            overrides=overrides, minimalloc_folder=minimalloc_folder,
                            size_attr=size_attr).with_pools(pools)
    spec_s = str(spec)
    path = Path(spec_s)
    if spec_s.startswith("minimalloc:"):
        folder = minimalloc_dir(minimalloc_folder)
        stem = spec_s.split(":", 1)[1]
        files = sorted(folder.glob(f"{stem}.*csv")) if folder.is_dir() else []
        files = [f for f in files if f.name.split(".")[0] == stem]
        if not files:
            raise ProblemError(
                f"{spec_s!r}: no {stem}.CAPACITY.csv in {folder} (set --minimalloc-dir or "
                f"MEMPLAN_MINIMALLOC_DIR)"
            )
        spec_s, path = str(files[0]), files[0]
        p = read_minimalloc_csv(path, capacity=capacity, name=f"minimalloc:{stem}")
        if capacity not in ("auto", None) or (capacity is None and p.capacity is not None):
            p = p.with_capacity(None if capacity is None else int(capacity))
        return p
    if spec_s.endswith(".csv"):
        p = read_minimalloc_csv(path, capacity=capacity)
    elif spec_s.endswith(".onnx"):
        if not path.exists():
            raise ProblemError(f"{path}: no such file")
        p = onnx_problem(path, schedule=schedule, unified=unified,
                         overrides=_onnx_overrides(overrides))
    elif spec_s.endswith(".tflite"):
        p = _tflite_problem(path, schedule=schedule, overrides=overrides)
    elif spec_s.endswith(".pte"):  # ExecuTorch's own plan's problem (extra [executorch])
        from experiments.runtimes.executorch import read_plan

        _no_overrides(spec_s, overrides)
        if not path.exists():
            raise ProblemError(f"{path}: no such file")
        try:
            p = read_plan(path)[0]
        except ImportError as e:  # RuntimeMissing: the extra is not installed
            raise ProblemError(f"{path}: {e}") from None
    elif spec_s.endswith(".json"):
        from scheduling.schedulers import get_scheduler

        _no_overrides(spec_s, overrides)
        graph = load_graph(path, size_attr=size_attr)
        order = get_scheduler(schedule).schedule(graph).order
        p = activation_problem("graph", graph, order, name=path.stem, unified=unified)
    elif overrides and spec_s in onnx_workloads():
        p = onnx_problem(onnx_workloads()[spec_s].source, schedule=schedule, unified=unified,
                         overrides=_onnx_overrides(overrides))
        p = Problem(p.buffers, capacity=p.capacity, alignment=p.alignment, name=spec_s)
    else:
        _no_overrides(spec_s, overrides)
        reg = dict(WORKLOADS)
        if spec_s not in reg:
            reg.update(default_workloads())
        if spec_s not in reg and ":" in spec_s:
            reg.update(tflite_workloads())
        if spec_s in reg:
            p = reg[spec_s].problem()
        else:
            try:
                graph = load_graph(spec_s)
            except ProblemError:
                raise ProblemError(unknown_workload_message(spec_s, reg)) from None
            from scheduling.schedulers import get_scheduler

            order = get_scheduler(schedule).schedule(graph).order
            p = activation_problem("graph", graph, order, name=spec_s, unified=unified)
    if capacity not in ("auto", None) or (capacity is None and p.capacity is not None):
        p = p.with_capacity(None if capacity is None else int(capacity))
    return p


def _tflite_problem(path, schedule: str = "file_order", overrides: dict | None = None) -> Problem:
    """The activation problem of a ``.tflite`` model under ``schedule`` with the ``tflite``
    lifetime policy (:data:`KIND_LIFETIME_POLICY`; as
    :func:`scheduling.tflite_import.tflite_problem` with its defaults)."""
    from scheduling.schedulers import get_scheduler
    from scheduling.tflite_import import load_tflite

    m = load_tflite(path, overrides=overrides or None)
    order = get_scheduler(schedule).schedule(m.graph).order
    return activation_problem("tflite", m.graph, order, name=m.graph.name)


def tflite_model_files() -> dict[str, Path]:
    """Real ``.tflite`` models shipped inside optional pip packages, when installed:
    ``wakeword:NAME`` (the four int8 TFLite Micro models of ``pymicro-wakeword``) and
    ``mediapipe:NAME`` (the float models under ``mediapipe/modules`` of ``mediapipe==0.10.14``).

    The packages are located with :func:`importlib.util.find_spec` without importing them (the
    mediapipe wheel's files are usable even without its heavy dependencies). Sorted by name;
    empty when neither package is installed.
    """
    from planners.io import package_folder

    out: dict[str, Path] = {}
    for pkg, prefix, sub in (("pymicro_wakeword", "wakeword", "models"),
                             ("mediapipe", "mediapipe", "modules")):
        folder = package_folder(pkg)
        if folder is None:
            continue
        for f in sorted((folder / sub).rglob("*.tflite")):
            out.setdefault(f"{prefix}:{f.stem}", f)
    return dict(sorted(out.items()))


def tflite_workloads() -> dict[str, Workload]:
    """Workloads of :func:`tflite_model_files` (kind ``"tflite"``): activation problems of the
    main subgraph in file order, graph input in the arena, 16-byte alignment (TFLite Micro's
    arena; see :func:`scheduling.tflite_import.tflite_problem`). Needs the ``tflite`` package to
    load."""
    return {
        name: Workload(name, "tflite", str(path), lambda p=path: _tflite_problem(p))
        for name, path in tflite_model_files().items()
    }


for _w in _seed_workloads().values():
    register_workload(_w)


def unknown_workload_message(spec: str, known=None) -> str:
    """The one message for a name no command or sweep config resolves: every family of names
    (registered workloads, ``minimalloc:NAME``, ``wakeword:NAME`` / ``mediapipe:NAME`` TFLite
    models when installed, graph workloads and ``gen:*``, ``mobilenet_v1/v2[:alpha:res:dtype]``,
    file paths) and the closest known name (:func:`planners.params.did_you_mean`).
    ``known``: the names already listed by the caller (default: all of them)."""
    from planners.params import did_you_mean

    names = dict.fromkeys(known if known is not None else
                          [*WORKLOADS, *default_workloads()])
    try:
        names.update(dict.fromkeys(tflite_model_files()))
    except Exception:  # noqa: BLE001 - TFLite models not installed: their family is still named
        pass
    names.update(dict.fromkeys(graph_workloads()))
    try:
        names.update(dict.fromkeys(f"minimalloc:{n.split(':', 1)[-1]}"
                                   for n in minimalloc_workloads(minimalloc_dir())))
    except Exception:  # noqa: BLE001 - no MiniMalloc folder: the family is still named
        pass
    return (f"unknown workload {str(spec)!r}{did_you_mean(spec, names)}; known: "
            f"{', '.join(names)}; families: minimalloc:NAME (MiniMalloc NAME.CAPACITY.csv), "
            "wakeword:NAME and mediapipe:NAME (TFLite models of installed packages), gen:NAME, "
            "mobilenet_v1[:alpha:resolution:dtype], mobilenet_v2[...], or a .csv/.onnx/.tflite/"
            ".json path")


def graph_workloads(synthetic: bool = True) -> dict[str, Callable]:
    """Workloads that are dataflow graphs (so a scheduler can reorder them): name -> ``() -> Graph``.

    The nine ONNX models, the seed 000 graph, and (``synthetic=True``) one seeded instance of each
    synthetic generator of :mod:`scheduling.generators` named ``gen:NAME`` (seed 0, default sizes).
    """
    from scheduling.examples import seed000_graph
    from scheduling.onnx_import import load_onnx
    from scheduling.workloads import onnx_light_models

    out: dict[str, Callable] = {}
    for name, path in onnx_light_models().items():
        out[name] = lambda p=path: load_onnx(p)
    out["seed000"] = seed000_graph
    from scheduling.examples import mobilenet_v1_first_layer
    from scheduling.mobilenet import mobilenet_v1, mobilenet_v2

    out["mobilenet_v1_first_layer"] = mobilenet_v1_first_layer
    out["mobilenet_v1"] = mobilenet_v1
    out["mobilenet_v2"] = mobilenet_v2
    if synthetic:
        from scheduling.generators import GENERATORS, generate

        for g in GENERATORS:
            out[f"gen:{g}"] = lambda g=g: generate(g, seed=0)
    return out


def load_graph(spec, size_attr: str = "cost_ram", overrides: dict | None = None):
    """A :class:`scheduling.graph.Graph` from a graph, an ``.onnx`` path, a node-link ``.json``
    path (:func:`scheduling.nodelink.read_nodelink` with the size attribute ``size_attr``), a graph
    workload name (:func:`graph_workloads`), or a MobileNet spec
    ``mobilenet_v1[:alpha:resolution:dtype]`` / ``mobilenet_v2[...]`` (e.g.
    ``mobilenet_v2:1.0:224:int8``).

    ``overrides`` (:func:`parse_overrides`, command-line ``--override``) give static shapes to an
    ONNX model's tensors or symbolic dimensions (a path or one of the nine light model names);
    any other workload with overrides is an error.

    Raises :class:`ProblemError` naming the input (and listing the known names) otherwise.
    """
    from scheduling.graph import Graph

    spec_s = str(spec)
    if isinstance(spec, Graph):
        _no_overrides(spec.name, overrides)
        return spec
    if spec_s.endswith(".onnx") or (overrides and spec_s in onnx_workloads()):
        from scheduling.onnx_import import load_onnx

        path = onnx_workloads()[spec_s].source if spec_s in onnx_workloads() else spec_s
        if not Path(path).exists():
            raise ProblemError(f"{spec_s}: no such file")
        name = spec_s if spec_s in onnx_workloads() else None
        return load_onnx(path, overrides=_onnx_overrides(overrides), name=name)
    _no_overrides(spec_s, overrides)
    if spec_s.endswith(".json"):
        from scheduling.nodelink import read_nodelink

        return read_nodelink(spec_s, size=size_attr)
    reg = graph_workloads()
    if spec_s in reg:
        return reg[spec_s]()
    head, *rest = spec_s.split(":")
    if head in ("mobilenet_v1", "mobilenet_v2"):
        from scheduling.mobilenet import mobilenet_v1, mobilenet_v2

        kw: dict = {}
        try:
            if len(rest) > 0 and rest[0]:
                kw["alpha"] = float(rest[0])
            if len(rest) > 1 and rest[1]:
                kw["resolution"] = int(rest[1])
        except ValueError:
            raise ProblemError(f"{spec_s!r}: expected {head}[:alpha:resolution:dtype]") from None
        if len(rest) > 2 and rest[2]:
            kw["dtype"] = rest[2]
        return (mobilenet_v1 if head == "mobilenet_v1" else mobilenet_v2)(**kw)
    from planners.params import did_you_mean

    raise ProblemError(
        f"{spec_s!r} is not a graph workload{did_you_mean(spec_s, reg)} (schedulers and passes "
        f"need a dataflow graph); known: {', '.join(reg)}, mobilenet_v1[:alpha:resolution:dtype], "
        "mobilenet_v2[...], PATH.onnx, PATH.json (node-link); interval problems (minimalloc:NAME, "
        "wakeword:NAME, .csv) have no graph"
    )
