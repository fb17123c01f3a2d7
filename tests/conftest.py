"""Shared test helpers: paths into ``../shared`` that skip with a reason where it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (``derandomize``): ``make test`` passes or
# fails the same way on every machine and load. ``HYPOTHESIS_PROFILE=explore`` draws new random
# examples (for a search for counter-examples; a failure prints its reproduction).
settings.register_profile("memplan", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "memplan"))

#: ``make test-full`` sets ``MEMPLAN_TEST_FULL=1``: every property test draws its full count of
#: examples there; ``make test`` draws half of it (at least 10, or the full count where it is
#: below 10), the same derandomized sample on every run (:func:`examples`).
FULL = os.environ.get("MEMPLAN_TEST_FULL") == "1"


def examples(full: int) -> int:
    """``max_examples`` of a property test: ``full`` under ``make test-full``; under ``make
    test`` ``max(min(full, 10), full // 2)``, a smaller sample of the same strategy (the
    examples are derandomized, so the sample is the same on every machine and load)."""
    return full if FULL else max(min(full, 10), full // 2)


#: ``../shared`` beside the repository (a user's clone has none; tests that need it skip).
SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(*parts: str) -> Path:
    """Return ``../shared/<parts>``, or skip the calling test with a reason if it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared is not checked out beside the repository)")
    return path


def shared_case(name: str) -> Path:
    """Return ``../shared/cases/<name>`` (a small failing input with its expected value), or skip."""
    return shared_path("cases", name)


#: The slowest tests, by node id (a prefix covers every parametrised case), each with its
#: seconds in a full run on the 2-core machine at load 6-11 (``--durations``). They carry the
#: ``slow`` mark: ``make test`` deselects them (``-m "not slow"``), ``make test-full`` runs them.
#: Each repeats what a faster test in ``make test`` samples (a second execution of the
#: notebooks, every figure redrawn, a larger random sample, a cluster start-up), so ``make
#: test`` keeps one test of every kind; none of them is a test that CI would otherwise skip for
#: a missing package.
SLOW = {
    "tests/test_figure_style.py::test_make_figures_draws_every_figure_by_the_print_rules": 77,
    "tests/test_rv64_interp.py::test_random_programs_match_unicorn": 62,
    "tests/test_sweep.py::test_report_is_deterministic_from_the_records": 37,
    "tests/test_notebooks.py::test_notebook_shows_its_figures_inline": 66,
    "tests/test_tflm_offline.py::test_generated_models_export_and_keep_their_outputs": 29,
    "tests/test_joint_features.py::test_lns_with_pools_pins_and_aliases_is_valid_and_determin": 24,
    "tests/test_figures_from_records.py::test_one_command_redraws_the_benchmark_figures": 22,
    "tests/test_schedulers.py::test_schedulers_at_20000_operators_return_and_say_what_stop": 32,
    "tests/test_sweep.py::test_second_sweep_on_one_folder_waits_or_refuses": 20,
    "tests/test_cli_errors.py::test_unreachable_dask_scheduler_fails_fast": 16,
    "tests/test_telamalloc_engine.py::test_compiled_probe_matches_python_node_for_node": 16,
    "tests/test_figures_from_records.py::test_sweep_report_figures_are_drawn_from_records": 14,
    "tests/test_sweep.py::test_timeout_stops_code_that_never_returns_to_python[2]": 12,
    "tests/test_sweep.py::test_process_pool_and_dask_local_cluster_match_local": 11,
    # two of the three recurrent/attention programs (make test keeps [gru])
    "tests/test_runtime_executorch.py::test_views_read_again_check_valid_on_both_plans[mha]": 4,
    "tests/test_runtime_executorch.py::test_views_read_again_check_valid_on_both_plans[lstm]": 3,
    # differential samples whose kind make test keeps on smaller models: the transformer block
    # (cnn_residual, cond and mutable_buffer stay), the LSTM overlap (GRU and MHA stay), the
    # two largest ONNX models of the measured-size comparison (seven stay)
    "tests/test_runtime_executorch.py::test_memplan_plan_runs_identically_and_uses_no_more_bytes[transformer_block]": 3,
    "tests/test_runtime_executorch.py::test_reordered_program_runs_identically[transformer_block]": 3,
    "tests/test_runtime_executorch.py::test_genuine_overlap_is_still_flagged[11-lstm-executorch-2]": 4,
    "tests/test_onnx_shapes.py::test_measured_equals_inferred_on_light_models[vgg19]": 2,
    "tests/test_onnx_shapes.py::test_measured_equals_inferred_on_light_models[densenet121]": 2,
}


def package_missing(planner: str) -> bool:
    """True when ``planner`` needs an optional package that is not installed (``vela_hillclimb``:
    ``ethos-u-vela``, the extra ``peers``); such a planner refuses in one line naming the
    package, which a loop over every planner must accept instead of a plan."""
    from planners.vela_hillclimb import vela_available

    return planner == "vela_hillclimb" and not vela_available()


def pytest_collection_modifyitems(config, items):
    """Mark the :data:`SLOW` tests ``slow``; skip, with a reason, the cases parametrized by a
    planner whose optional package is absent (``vela_hillclimb`` needs ``ethos-u-vela``, the
    extra ``peers``; it refuses in one line without it, which the every-planner tests would
    count as a failure)."""
    slow = pytest.mark.slow
    for item in items:
        if any(item.nodeid.startswith(k) for k in SLOW):
            item.add_marker(slow)
    if not package_missing("vela_hillclimb"):
        return
    skip = pytest.mark.skip(reason="ethos-u-vela is not installed (pip install -e '.[peers]')")
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "vela_hillclimb" in params.values():
            item.add_marker(skip)
