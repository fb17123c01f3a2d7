"""Issue 35, ExecuTorch part: a program of two methods sharing a mutable buffer (a KV cache)
planned by memplan as one shared arena, and a method with a dynamic sequence length planned at
its upper bound; both run by ExecuTorch's own runtime and compared with eager PyTorch. Skipped
without the extra ``[executorch]``."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="needs the extra [executorch] (torch)")
pytest.importorskip("executorch.exir", reason="needs the extra [executorch]")

from torch import nn  # noqa: E402

from experiments.runtimes import executorch as et  # noqa: E402

L, D, P = 8, 4, 3  # cache rows, width, prefill length


class Core(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(D, D)
        self.register_buffer("cache", torch.zeros(L, D))


class Prefill(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        y = self.c.lin(x)
        self.c.cache[: x.shape[0]].copy_(y)
        return y * 2


class Decode(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x, pos):
        y = self.c.lin(x)
        self.c.cache.index_copy_(0, pos, y)
        return self.c.cache @ y.T  # reads the rows prefill wrote


@pytest.fixture(scope="module")
def kv():
    torch.manual_seed(1)
    xp, xd, pos = torch.randn(P, D), torch.randn(1, D), torch.tensor([P])
    core = Core()
    state = {k: v.clone() for k, v in core.state_dict().items()}
    passes, sm = et.plan_methods_for(["prefill", "decode"], "greedy_by_size")
    m = et.write(methods={"prefill": (Prefill(core), (xp,)), "decode": (Decode(core), (xd, pos))},
                 memory_planning_pass=passes, backend_config={"emit_mutable_buffer_names": True})
    eager = Core()
    eager.load_state_dict(state)
    with torch.no_grad():
        want = [Prefill(eager)(xp), Decode(eager)(xd, pos)]
    return m, sm, (xp, xd, pos), want


def _run_both(buf, xp, xd, pos):
    from executorch.runtime import Runtime

    prog = Runtime.get().load_program(bytes(buf))
    o1 = prog.load_method("prefill").execute([xp])[0]
    o2 = prog.load_method("decode").execute([xd, pos])[0]
    return o1, o2


def test_two_methods_share_the_cache_at_one_offset_and_run_as_eager(kv):
    m, sm, (xp, xd, pos), want = kv
    bufs = et.pte_mutable_buffers(m.buffer)
    # the cache: 8 x 4 float32 = 128 bytes, one (mem_id, offset) in both methods of the .pte
    assert bufs["prefill"]["c.cache"] == bufs["decode"]["c.cache"] == (1, 0, 128)
    assert sm.shared_offsets == {"c.cache": 0}
    assert set(sm.storage_pairs) == {"prefill", "decode"}  # ExecuTorch's Verifier passed
    sizes = {p.name: list(p.non_const_buffer_sizes) for p in m.executorch_program.execution_plan}
    assert sizes == {n: [0, sm.result.plans[n].arena_size] for n in ("prefill", "decode")}
    assert sm.result.arena == max(s[1] for s in sizes.values())
    o1, o2 = _run_both(m.buffer, xp, xd, pos)
    torch.testing.assert_close(o1, want[0])
    torch.testing.assert_close(o2, want[1])
    assert o2[:P].abs().min() > 0  # decode read prefill's rows (zeros without them)
    assert torch.equal(o2[P + 1:], torch.zeros(L - P - 1, 1))


def test_the_shared_buffer_is_reserved_in_every_method():
    """A private tensor of a method never overlaps the cache's bytes (they persist)."""
    from planners.shared_arena import check_shared_plan

    pytest.importorskip("executorch.runtime")
    # the plan of the module fixture is checked by plan_shared; here the reservation itself
    m_passes, sm = et.plan_methods_for(["prefill", "decode"])
    core = Core()
    et.write(methods={"prefill": (Prefill(core), (torch.randn(P, D),)),
                      "decode": (Decode(core), (torch.randn(1, D), torch.tensor([P])))},
             memory_planning_pass=m_passes)
    check_shared_plan(sm.result.problem, sm.result.plans)
    for p in sm.result.problem.problems:
        i = p.index["buffer:c.cache"]
        assert (int(p.starts[i]), int(p.ends[i])) == (0, p.horizon)
        off = sm.result.plans[p.name].offsets
        lo, hi = int(off[i]), int(off[i]) + 128
        for j in range(p.n):
            if j != i and p.sizes[j] > 0:
                assert off[j] >= hi or off[j] + p.sizes[j] <= lo, p.ids[j]


def test_plan_methods_for_refuses_repeated_names():
    with pytest.raises(ValueError, match="distinct method names"):
        et.plan_methods_for(["decode", "decode"])


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.lin = nn.Linear(D, 2 * D)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 3


def test_dynamic_sequence_length_planned_at_the_upper_bound_and_run():
    smax = 16
    seq = torch.export.Dim("seq", min=1, max=smax)
    model = Seq()
    mpp, algo = et.plan_for("greedy_by_size")
    m = et.write(model, (torch.randn(4, D),), mpp, dynamic_shapes={"x": {0: seq}})
    ts = et.pte_tensors(m.buffer)
    # fp32, every seq-dependent tensor at seq = 16: x 16x4 (256 B), the linear's output, the
    # relu's and the product 16x8 (512 B each); the transposed weight 4x8 (128 B) and the
    # scalar 3 (4 B) do not depend on seq
    assert sorted(t.size for t in ts) == [4, 2 * D * D * 4, smax * D * 4] + [smax * 2 * D * 4] * 3
    assert max(t.size for t in ts) == smax * 2 * D * 4
    [plans] = algo.plans
    assert plans[1].arena_size <= et.planned_bytes(m)[1]
    from executorch.runtime import Runtime

    meth = Runtime.get().load_program(bytes(m.buffer)).load_method("forward")
    for n in (1, 7, smax):
        x = torch.randn(n, D)
        out = meth.execute([x])[0]
        assert out.shape == (n, 2 * D)
        with torch.no_grad():
            torch.testing.assert_close(out, model(x))
