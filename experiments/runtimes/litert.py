"""Multi-signature ``.tflite`` programs, run in LiteRT and in one planned arena.

The differential test of :func:`scheduling.tflite_signatures.tflite_shared_problem`
(``tests/test_tflite_signatures.py``) needs programs whose signatures share resource variables and
two ways to run them:

* :func:`kv_cache_model` writes a two-signature program (``prefill`` assigns the ``kv`` variable,
  ``decode`` reads it, adds its input and assigns the sum back); :func:`random_signature_model`
  writes a seeded random one (2-3 signatures, 0-2 shared variables, elementwise chains with
  fan-out), both with :func:`experiments.runtimes.tflm.writer.write_tflite`;
* :func:`litert_run` runs a sequence of signature calls in LiteRT (``ai-edge-litert`` on PyPI,
  TFLite's interpreter; its resource map keeps a variable between calls of different signatures);
* :func:`arena_run` runs the same calls with every activation and every shared variable placed at
  its offset in **one** ``bytearray`` arena laid out by a :class:`planners.shared_arena.SharedPlan`:
  each operator reads its inputs from and writes its output to the arena bytes. A plan that let
  two live tensors (or a tensor and a variable) share bytes changes the outputs, so equality with
  LiteRT's outputs is a test of the plan in execution, not of the validator's own model.

:func:`arena_run` executes the operators the generators write (``ADD``, ``SUB``, ``MUL`` on
float32 tensors of one shape, ``VAR_HANDLE``, ``READ_VARIABLE``, ``ASSIGN_VARIABLE``); any other
operator raises ``NotImplementedError`` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = ["litert_available", "kv_cache_model", "random_signature_model", "litert_run",
           "arena_run"]


def litert_available() -> tuple[bool, str]:
    """``(True, "")`` when LiteRT's Python interpreter imports, else ``(False, reason)``."""
    try:
        from ai_edge_litert.interpreter import Interpreter  # noqa: F401
    except Exception as e:  # noqa: BLE001 - a missing or broken wheel
        return False, f"ai-edge-litert (LiteRT, TFLite's interpreter) is not importable: {e}"
    return True, ""


def _sub(tensors, inputs, outputs, ops):
    return {"tensors": tensors, "inputs": inputs, "outputs": outputs, "ops": ops}


def kv_cache_model(path: str | Path, seq: int = 4, dim: int = 8) -> Path:
    """Write a two-signature program with a KV-cache-like resource variable ``kv`` (float32
    ``[1, seq, dim]``, ``4 * seq * dim`` bytes): ``prefill(x)`` assigns ``kv = x + x`` and returns
    ``(x + x) * (x + x)``; ``decode(t)`` returns ``u = kv + t`` and assigns ``kv = u``. Returns the
    path."""
    import tflite

    f32, res = tflite.TensorType.FLOAT32, tflite.TensorType.RESOURCE
    s = [1, seq, dim]
    handle = ("VAR_HANDLE", [], [1], ("VarHandleOptions", {"SharedName": "kv"}))
    prefill = _sub([("x", s, f32), ("kv_handle", [], res), ("y", s, f32), ("z", s, f32)],
                   [0], [3],
                   [handle, ("ADD", [0, 0], [2], None), ("ASSIGN_VARIABLE", [1, 2], [], None),
                    ("MUL", [2, 2], [3], None)])
    decode = _sub([("t", s, f32), ("kv_handle", [], res), ("kv_value", s, f32), ("u", s, f32)],
                  [0], [3],
                  [handle, ("READ_VARIABLE", [1], [2], None), ("ADD", [2, 0], [3], None),
                   ("ASSIGN_VARIABLE", [1, 3], [], None)])
    from experiments.runtimes.tflm.writer import write_tflite

    return write_tflite(Path(path), [prefill, decode], signatures=[
        {"key": "prefill", "subgraph": 0, "inputs": {"x": 0}, "outputs": {"z": 3}},
        {"key": "decode", "subgraph": 1, "inputs": {"t": 0}, "outputs": {"u": 3}}])


def random_signature_model(path: str | Path, seed: int) -> Path:
    """Write a seeded random multi-signature program: 2-3 signatures, 0-2 resource variables
    (float32, shapes ``[1, a, b]``, ``a, b`` in 1..9) each used by one or more signatures, every
    signature a chain of 2-7 elementwise ``ADD``/``SUB``/``MUL`` over its inputs, earlier results
    (fan-out: a result may be read by several later operators) and the variables it reads; a
    signature may assign a variable (its last result, or another of that shape). Same seed, same
    bytes. Returns the path."""
    import tflite

    from experiments.runtimes.tflm.writer import write_tflite

    rng = np.random.default_rng(seed)
    f32, res = tflite.TensorType.FLOAT32, tflite.TensorType.RESOURCE
    n_var = int(rng.integers(0, 3))
    var_shapes = [[1, int(rng.integers(1, 10)), int(rng.integers(1, 10))] for _ in range(n_var)]
    n_sig = int(rng.integers(2, 4))
    subs, sigs = [], []
    for k in range(n_sig):
        v = int(rng.integers(-1, n_var)) if n_var else -1  # -1: this signature uses no variable
        shape = var_shapes[v] if v >= 0 else [1, int(rng.integers(1, 10)), int(rng.integers(1, 10))]
        tensors, ops, pool = [], [], []
        n_in = int(rng.integers(1, 3))
        for i in range(n_in):
            tensors.append((f"s{k}_in{i}", shape, f32))
            pool.append(len(tensors) - 1)
        h = None
        if v >= 0:
            tensors.append((f"s{k}_handle", [], res))
            h = len(tensors) - 1
            ops.append(("VAR_HANDLE", [], [h], ("VarHandleOptions", {"SharedName": f"v{v}"})))
            if k > 0 and rng.random() < 0.8:  # read its value (the first signature only writes)
                tensors.append((f"s{k}_read", shape, f32))
                ops.append(("READ_VARIABLE", [h], [len(tensors) - 1], None))
                pool.append(len(tensors) - 1)
        for j in range(int(rng.integers(2, 8))):
            a, b = (int(rng.choice(pool)) for _ in range(2))
            tensors.append((f"s{k}_t{j}", shape, f32))
            ops.append((str(rng.choice(["ADD", "SUB", "MUL"])), [a, b], [len(tensors) - 1], None))
            pool.append(len(tensors) - 1)
        outs = sorted({pool[-1], int(rng.choice(pool[n_in:] or pool))})
        if h is not None and rng.random() < 0.8:
            ops.append(("ASSIGN_VARIABLE", [h, int(rng.choice(pool[-3:]))], [], None))
        subs.append(_sub(tensors, list(range(n_in)), outs, ops))
        sigs.append({"key": f"sig{k}", "subgraph": k,
                     "inputs": {tensors[i][0]: i for i in range(n_in)},
                     "outputs": {tensors[o][0]: o for o in outs}})
    return write_tflite(Path(path), subs, signatures=sigs)


def litert_run(path: str | Path, calls: Sequence[tuple[str, Mapping[str, np.ndarray]]]
               ) -> list[dict[str, np.ndarray]]:
    """Run ``calls`` (``(signature key, {input name: array})``, in order) on one LiteRT
    interpreter; returns each call's outputs ``{output name: array}``. Raises what LiteRT raises
    (``ValueError`` for an unknown signature or input, ``RuntimeError`` from a kernel). LiteRT's
    builtin kernels
    run, without the default XNNPACK delegate: with it, LiteRT 2.3.0 crashed (segmentation fault)
    in a signature reading a variable another signature had assigned
    (``random_signature_model(seed=257)``)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=str(path),
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    runners = {}
    out = []
    for key, inputs in calls:
        if key not in runners:
            runners[key] = it.get_signature_runner(key)
        res = runners[key](**{k: np.asarray(v, np.float32) for k, v in inputs.items()})
        out.append({k: np.array(v) for k, v in res.items()})
    return out


def arena_run(path: str | Path, shared_plan, calls: Sequence[tuple[str, Mapping[str, np.ndarray]]]
              ) -> list[dict[str, np.ndarray]]:
    """Run ``calls`` (as :func:`litert_run`) with every tensor of the plan at its offset in one
    arena (``bytearray`` of ``shared_plan.arena`` bytes): activations at their offset in their
    signature's plan, resource variable ``v`` at the offset of shared buffer ``var:v``. Variables
    start as zeros. Returns each call's outputs. Raises ``NotImplementedError`` for an operator
    outside the module docstring's list."""
    import tflite

    from scheduling.tflite_import import _enum_names, open_model, operator_type, tensor_names
    from scheduling.tflite_signatures import tflite_signatures

    _, model = open_model(path)
    op_names = _enum_names(tflite.BuiltinOperator)
    sigs = {s.key: s for s in tflite_signatures(path)}
    arena = bytearray(max(1, shared_plan.arena))
    var_off = {sid.removeprefix("var:"): int(o) for sid, o in shared_plan.shared_offsets().items()}

    def view(off, shape):
        n = int(np.prod(shape))
        return np.frombuffer(arena, np.float32, n, off).reshape(shape)

    outputs = []
    for key, inputs in calls:
        sig = sigs[key]
        sg = model.Subgraphs(sig.subgraph)
        names = tensor_names(sg)
        plan = shared_plan.plans[key]
        offset = dict(zip(plan.problem.ids, (int(o) for o in plan.offsets)))

        def t(j, names=names, sg=sg, offset=offset):
            shape = sg.Tensors(j).ShapeAsNumpy().tolist() if sg.Tensors(j).ShapeLength() else []
            return view(offset[names[j]], shape)

        handle = {}
        by_name = {n: j for j, n in enumerate(names)}
        for name, tname in sig.inputs.items():
            t(by_name[tname])[...] = np.asarray(inputs[name], np.float32)
        for oi in range(sg.OperatorsLength()):
            op = sg.Operators(oi)
            otype = operator_type(model, op, op_names)
            ins = op.InputsAsNumpy().tolist() if op.InputsLength() else []
            outs = op.OutputsAsNumpy().tolist() if op.OutputsLength() else []
            if otype == "VAR_HANDLE":
                o = tflite.VarHandleOptions()
                tb = op.BuiltinOptions()
                o.Init(tb.Bytes, tb.Pos)
                handle[outs[0]] = o.SharedName().decode()
            elif otype == "READ_VARIABLE":
                dst = t(outs[0])
                dst[...] = view(var_off[handle[ins[0]]], dst.shape)
            elif otype == "ASSIGN_VARIABLE":
                src = t(ins[1]).copy()
                view(var_off[handle[ins[0]]], src.shape)[...] = src
            elif otype in ("ADD", "SUB", "MUL"):
                a, b = t(ins[0]).copy(), t(ins[1]).copy()
                t(outs[0])[...] = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}[otype](a, b)
            else:
                raise NotImplementedError(f"arena_run: operator {otype} is not executed here")
        outputs.append({name: t(by_name[tname]).copy() for name, tname in sig.outputs.items()})
    return outputs
