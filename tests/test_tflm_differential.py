"""The TFLite Micro differential test (issue #23 §1), a sample: memplan's ``runtime_arena`` and
``tflm_head`` against the ``tflite-micro`` interpreter itself on generated models
(experiments/runtimes/tflm/generate.py, experiments/runtimes/tflm/differential.py). The full set of 300 models
runs in ``make soak``: ``python -m experiments.runtimes.tflm.differential --models 300 --seed 0``;
of those, the models at a kernel's limit that the interpreter refuses must get no number and the
interpreter's reason (``LIMIT_SAMPLE`` here)."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite", reason="the 'tflite' package (flatbuffer bindings) is not installed")
pytest.importorskip("tflite_micro", reason="the 'tflite-micro' interpreter is not installed")

from experiments.runtimes.tflm import probe  # noqa: E402
from experiments.runtimes.tflm.differential import check_model  # noqa: E402
from experiments.runtimes.tflm.generate import (  # noqa: E402
    ACCEPTED_LIMITS,
    REFUSED,
    TAGS,
    VARIANT_KERNELS,
    generate_model,
    kernel_variant_specs,
    model_tags,
)
from experiments.runtimes.tflm.oracle import (  # noqa: E402
    arena_too_small,
    tflm_arena,
    tflm_min_arena,
)

#: Every fifth model of the soak set (seeds 0..299): 60 models, about 20 s on one core.
SAMPLE = list(range(0, 300, 5))


@pytest.mark.parametrize("seed", SAMPLE)
def test_runtime_numbers_equal_the_interpreter(tmp_path, seed):
    """runtime_arena == the smallest arena_size at which tflite-micro builds and invokes the
    model (inputs zero), and tflm_head == the head it reports."""
    path = generate_model(seed, tmp_path / f"g{seed:05d}.tflite")
    row = check_model(f"g{seed:05d}", path, seed, model_tags(seed))
    assert row["kind"] == "", (
        f"seed {seed} ({row['tags']}): runtime_arena {row.get('runtime_arena')} "
        f"({row.get('source')}) vs bisected {row['bisected_min']}; tflm_head "
        f"{row.get('head_model')} vs reported {row['tflm_head']} {row['error']}")


#: The first seed of the soak set with each kernel-limit feature of the generator (10 models,
#: about 8 s): refused ones must get no number and the interpreter's reason quoted.
LIMIT_SAMPLE = sorted({next(s for s in range(300) if t in model_tags(s))
                       for t in (*REFUSED, *ACCEPTED_LIMITS)})


@pytest.mark.parametrize("seed", LIMIT_SAMPLE)
def test_kernel_limits_numbers_only_where_the_interpreter_runs(tmp_path, seed):
    """A generated model at a kernel's limit: the interpreter refuses exactly the models the
    generator builds to be refused (REFUSED tags); there memplan gives no runtime_arena, from
    its model alone either, and quotes the interpreter's reason; elsewhere its numbers are the
    interpreter's."""
    path = generate_model(seed, tmp_path / f"g{seed:05d}.tflite")
    tags = model_tags(seed)
    row = check_model(f"g{seed:05d}", path, seed, tags)
    assert bool(row["refusal"]) == bool(set(tags) & set(REFUSED)), (tags, row["refusal"])
    assert row["kind"] == "", (f"seed {seed} ({row['tags']}): {row['kind']}: {row['error']}")
    if row["refusal"]:
        assert row.get("runtime_arena") is None and row["bisected_min"] is None


#: Every twentieth single-operator model at a modelled kernel's limit (42 of the 840 that make
#: soak checks: --kernel-variants).
VARIANT_SAMPLE = kernel_variant_specs()[::20]


@pytest.mark.parametrize("name,subs,tags", VARIANT_SAMPLE, ids=[v[0] for v in VARIANT_SAMPLE])
def test_kernel_variants_numbers_only_where_the_interpreter_runs(tmp_path, name, subs, tags):
    """A kernel at its limit (types, quantisation, arity, shapes, options): memplan's number,
    measured or modelled, equals the interpreter's bisected minimum where it runs the model, and
    where it refuses or crashes memplan gives none and quotes it."""
    from experiments.runtimes.tflm.writer import write_tflite

    path = write_tflite(tmp_path / f"{name}.tflite", subs)
    row = check_model(name, path, None, tags)
    assert row["kind"] == "", (f"{name}: {row['kind']}: {row['error']} (interpreter: "
                               f"{row['refusal'] or row['bisected_min']})")


def test_kernel_variants_cover_refusals_crashes_and_both_sources():
    """The variant set is what it claims: 840 models over 14 kernels, names unique."""
    specs = kernel_variant_specs()
    assert len(specs) == 840 and len({n for n, _, _ in specs}) == 840
    assert {t[0] for _, _, t in specs} == set(VARIANT_KERNELS)


def test_generator_is_deterministic_and_covers_every_feature():
    assert generate_model(7) == generate_model(7)
    assert generate_model(7) != generate_model(8)
    seen = {t for s in range(300) for t in model_tags(s)}
    assert seen == set(TAGS)


def test_probe_worker_bisection_is_checked_and_survives_a_crash(tmp_path):
    """The minimum is accepted and one byte less rejected (the monotonicity check), a killed
    worker is restarted, and the worker's report equals tflm_arena's child process."""
    path = generate_model(3, tmp_path / "g3.tflite")
    lo = tflm_min_arena(path)
    assert probe.accepts(path, lo) and not probe.accepts(path, lo - 1)
    w = probe._worker()
    crashes = w.crashes
    r = w.probe(str(path), 64)  # too small for the allocator objects: the interpreter segfaults
    assert (r["ok"], r["stage"], r["error"]) == (False, "crash", "worker exited with -11")
    # what the interpreter printed before dying, read back from the worker's log file
    assert r["log"].startswith("Failed to allocate tail memory. Requested: ")
    assert arena_too_small(r["log"])
    assert w.crashes == crashes + 1 and w.proc is None
    assert not probe.accepts(path, 64)  # a crash counts as rejected
    assert probe.accepts(path, lo)  # the worker is restarted
    rep = probe.report(path)
    assert rep == tflm_arena(path)
    assert probe.min_arena(path, 1) == lo  # from below: doubling, then bisection
