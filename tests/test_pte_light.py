"""``memplan check`` / ``memplan view`` of a ``.pte`` without torch (issue 36 item 7).

The light reader (:func:`experiments.runtimes.executorch.read_pte_light`) and the operators'
written arguments read from torch's ``native_functions.yaml`` as text
(:func:`experiments.runtimes.executorch._native_schemas`) against ExecuTorch's reader and
torch's operator registry, on the example models' programs (ExecuTorch's plan and memplan's) and
a program of two methods sharing a KV cache (``index_put.out`` and ``slice_scatter.out``, which
the fixed operator table lacks). Needs the extra ``[executorch]``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="needs the extra [executorch] (torch)")
pytest.importorskip("executorch.exir", reason="needs the extra [executorch]")

from torch import nn  # noqa: E402

from experiments.cli import main as cli_main  # noqa: E402
from experiments.runtimes import executorch as et  # noqa: E402


class _Core(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.register_buffer("cache", torch.zeros(8, 4))


class _Prefill(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        y = self.c.lin(x)
        self.c.cache[: x.shape[0]].copy_(y)
        return y * 2


class _Decode(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x, pos):
        y = self.c.lin(x)
        self.c.cache.index_copy_(0, pos, y)
        return self.c.cache @ y.T


@pytest.fixture(scope="module")
def ptes(tmp_path_factory):
    """``{label: path}``: every example model with ExecuTorch's plan and memplan's
    (``greedy_by_size``), and the two-method KV-cache program planned as one shared arena."""
    d = tmp_path_factory.mktemp("pte_light")
    out = {}
    for name, (model, inputs) in et.example_models(seed=0).items():
        for label in ("default", "memplan"):
            mp = et.plan_for("greedy_by_size")[0] if label == "memplan" else None
            p = d / f"{name}_{label}.pte"
            p.write_bytes(et.write(model, inputs, mp).buffer)
            out[f"{name}_{label}"] = p
    core = _Core()
    torch.manual_seed(1)
    xp, xd, pos = torch.randn(3, 4), torch.randn(1, 4), torch.tensor([3])
    passes, _ = et.plan_methods_for(["prefill", "decode"], "greedy_by_size")
    m = et.write(methods={"prefill": (_Prefill(core), (xp,)),
                          "decode": (_Decode(core), (xd, pos))},
                 memory_planning_pass=passes, backend_config={"emit_mutable_buffer_names": True})
    out["two_methods"] = d / "two_methods.pte"
    out["two_methods"].write_bytes(m.buffer)
    return out


def _registry(name: str, overload: str):
    return et._registered_writes(name, overload)


def test_native_yaml_schemas_equal_the_registry():
    """Every ATen operator read from ``native_functions.yaml`` (declared and ``autogen`` out
    variants, TensorOptions dropped) that torch registers has the registry's argument count and
    written positions; more than 2500 are compared, among them the out variants torchgen builds."""
    schemas = et._native_schemas()
    assert schemas is not None
    compared, differ = 0, []
    for key, (args, _) in schemas.items():
        name, _, overload = key.partition(".")
        want = _registry("aten::" + name, overload)
        if want is None:
            continue  # declared but not registered by this torch (composite autogen)
        compared += 1
        if et._schema_writes(args) != want:
            differ.append((key, et._schema_writes(args), want))
    assert differ == []
    assert compared > 2500
    # hand-checked: index_put.out(self, indices, values, accumulate, *, out) writes out (4);
    # empty_like.out drops dtype/layout/device/pin_memory: (self, *, memory_format, out)
    assert et._native_writes("index_put", "out") == (5, frozenset({4}))
    assert et._native_writes("empty_like", "out") == (3, frozenset({2}))
    assert et._native_writes("max_pool2d_with_indices", "out") == (8, frozenset({6, 7}))


def test_every_operator_of_the_programs_is_known_without_torch(ptes):
    """Each operator of every program gets its written arguments from the table or the yaml
    (no registry lookup), equal to the registry's; the two-method program has operators the
    table lacks, so the yaml path is exercised."""
    from_yaml = set()
    for p in ptes.values():
        for ep in et._program(p, "exir").execution_plan:
            for op in ep.operators:
                key = (str(op.name), str(op.overload or ""))
                if key in et._PRIM_WRITES:
                    continue
                assert key[0].startswith("aten::") or key in et._KNOWN_WRITES, key
                got = et._KNOWN_WRITES.get(key) or et._native_writes(key[0][6:], key[1])
                assert got is not None and got == _registry(*key), key
                if key not in et._KNOWN_WRITES:
                    from_yaml.add(key)
    assert {("aten::index_put", "out"), ("aten::slice_scatter", "out")} <= from_yaml


def test_light_reader_equals_exir_reader(ptes):
    """Both readers give the same planned tensors (value index, mem_id, offset, size, lifetime,
    writes), plans (ids, lifetimes, sizes, offsets, info) and violations for every method."""
    from experiments.bench.executorch_readers import compare

    for label, p in ptes.items():
        assert compare(p) == [], label
        prog = et._program(p, "light")
        assert [str(e.name) for e in prog.execution_plan] == \
            [str(e.name) for e in et._program(p, "exir").execution_plan]
    two = et._program(ptes["two_methods"], "light")
    assert [str(e.name) for e in two.execution_plan] == ["decode", "prefill"]
    ts = et.pte_tensors(two, 1)
    assert ts == et.pte_tensors(et._program(ptes["two_methods"], "exir"), 1)
    assert all(t.mem_id == 1 for t in ts) and len(ts) > 3


def _with_exir_reader(monkeypatch):
    """Make every path read by ``memplan check``/``view`` go through ExecuTorch's reader."""
    real = et._program
    monkeypatch.setattr(et, "_program", lambda src, reader="light": real(src, "exir"))


def test_check_and_view_output_is_the_same_with_either_reader(ptes, tmp_path, monkeypatch,
                                                              capsys):
    """``memplan check`` (text and ``--json``) prints the same with either reader, and
    ``memplan view`` writes the same HTML file (byte for byte: plotly's div id is derived from
    the figure) on a one-method and the two-method program."""
    def run(args):
        rc = cli_main(args)
        return rc, capsys.readouterr().out

    picked = ["two_methods", "transformer_block_memplan", "cond_default"]
    light = {k: (run(["check", str(ptes[k])]), run(["check", str(ptes[k]), "--json"]))
             for k in ptes}
    for k in picked:
        run(["view", str(ptes[k]), "-o", str(tmp_path / f"{k}.light.html")])
    with monkeypatch.context() as mp:
        _with_exir_reader(mp)
        exir = {k: (run(["check", str(ptes[k])]), run(["check", str(ptes[k]), "--json"]))
                for k in ptes}
        for k in picked:
            run(["view", str(ptes[k]), "-o", str(tmp_path / f"{k}.exir.html")])
    assert light == exir
    assert light["two_methods"][0][0] == 0 and "method       prefill" in light["two_methods"][0][1]
    for k in picked:
        a = (tmp_path / f"{k}.light.html").read_bytes()
        assert a == (tmp_path / f"{k}.exir.html").read_bytes(), k
        assert len(a) > 1_000_000  # plotly.js inlined: a real figure, not an error page


@pytest.mark.parametrize("command", ["check", "view"])
def test_check_and_view_of_a_pte_import_no_torch(ptes, tmp_path, command):
    """``memplan check``/``view`` of the two-method program (operators beyond the fixed table)
    in a fresh interpreter: neither torch nor ``executorch.exir`` is imported, nothing is
    printed on stderr (no torch deprecation warning)."""
    argv = [command, str(ptes["two_methods"])]
    if command == "view":
        argv += ["-o", str(tmp_path / "v.html")]
    code = ("import sys; from experiments.cli import main; rc = main(sys.argv[1:]); "
            "print('imported', sorted(m for m in ('torch', 'executorch.exir', 'onnx') "
            "if m in sys.modules)); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-W", "default", "-c", code, *argv],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "imported []" in r.stdout
    assert r.stderr == ""
