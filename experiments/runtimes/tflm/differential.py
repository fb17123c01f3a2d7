"""The TFLite Micro differential test: memplan's runtime numbers against the interpreter itself.

For every model of the seeded generator (:mod:`experiments.runtimes.tflm.generate`) it compares

* ``runtime_arena(path)["runtime_arena"]`` (:func:`experiments.runtimes.tflm.oracle.runtime_arena`) with
  the bisected minimum: the smallest ``arena_size`` at which the ``tflite-micro`` interpreter
  builds and invokes the model with every input zero (:func:`experiments.runtimes.tflm.oracle.tflm_min_arena`);
* ``runtime_arena(path)["tflm_head"]`` with the non-persistent head the interpreter reports
  (:func:`experiments.runtimes.tflm.oracle.tflm_arena` ``.head``),

and records where ``runtime_arena`` came from (``model``: memplan's model of the arena;
``measured``: the bisection itself, where the model does not cover a kernel; a measured number
equals the minimum by construction, so only ``model`` rows test the arena model, while the head
is tested on every row). Where the interpreter refuses the model at every arena size (the
generator's kernel limits: CONCATENATION over 10 inputs, of rank 7, with a fused activation or
re-scaling int8 inputs; outputs with a zero-size dimension; MUL with three inputs; an
unregistered CUSTOM operator; a float16 DEQUANTIZE), memplan must give no ``runtime_arena``,
neither measured nor from its model alone, and one ``runtime_refusal`` line quoting the
interpreter's own reason; where the interpreter runs it, memplan must not say it refuses. Every
model that disagrees (or on which memplan raises) is written to ``--failures`` as
``NAME.tflite`` with ``NAME.json`` (expected vs got, the model's feature tags).

With ``--offline`` each model is also exported with ``--format tflm-offline``
(:func:`check_offline`): the planned model's outputs must equal the original's in the
interpreter on every model the export accepts; accepted and refused models are counted (a
model the interpreter refuses has nothing to compare and is not exported).

With ``--kernel-variants`` the single-operator models at the limits of every modelled kernel
(:func:`experiments.runtimes.tflm.generate.kernel_variant_specs`, :func:`run_kernel_variants`)
are checked too.

Run: ``python -m experiments.runtimes.tflm.differential --models 300 --seed 0 --offline
--kernel-variants --out results/tflm_differential.csv`` (exit 1 when any model disagrees, 2 when
tflite-micro is missing).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

__all__ = ["COLUMNS", "check_model", "run", "run_kernel_variants", "main"]

COLUMNS = ["model", "seed", "tags", "source", "runtime_arena", "bisected_min", "tflm_head",
           "head_model", "arena_ok", "head_ok", "kind", "error", "refusal", "model_refusal",
           "offline"]

DEFAULT_FAILURES = "/tmp/tflm_diff/failures"


def check_model(name: str, path: str | Path, seed: int | None = None,
                tags: list[str] = ()) -> dict:
    """One row (:data:`COLUMNS`) for the model at ``path``: expected (interpreter) vs got
    (memplan). ``kind`` is ``""`` when memplan agrees with the interpreter, else a ``+``-joined
    subset of ``arena_below`` / ``arena_above`` (``runtime_arena`` below / above the bisected
    minimum), ``head`` (``tflm_head`` differs from the reported head), ``error`` (memplan
    raised, or gave no number where the interpreter runs the model; the message is in
    ``error``), ``false_refusal`` (memplan says the interpreter refuses a model it runs), and,
    where the interpreter refuses the model at every arena size (:class:`TflmRefused`, its
    reason in ``refusal``): ``number_on_refusal`` (memplan gives a ``runtime_arena``, measured
    or from its model alone, ``measure=False``) and ``reason_missing`` (memplan's
    ``runtime_refusal`` line does not quote the interpreter's reason, integers aside:
    :func:`_digits`). ``model_refusal``: the
    line memplan gives without running the interpreter (``measure=False``), ``""`` when it gives
    none. Raises :class:`experiments.runtimes.tflm.oracle.TflmUnavailable` when the interpreter
    cannot be measured for another reason (a timeout, acceptance not monotone)."""
    from experiments.runtimes.tflm.oracle import TflmRefused, runtime_arena, tflm_min_arena
    from experiments.runtimes.tflm.probe import report

    row = {"model": name, "seed": seed, "tags": " ".join(tags), "error": "", "refusal": "",
           "model_refusal": ""}
    try:
        head = report(path).head  # the persistent worker's report, as tflm_arena's
        lo = tflm_min_arena(path)
    except TflmRefused as e:
        return _check_refused(row, path, e.reason)
    row.update(bisected_min=lo, tflm_head=head)
    try:
        got = runtime_arena(path)
        row["model_refusal"] = runtime_arena(path, measure=False).get("runtime_refusal", "")
    except Exception as e:  # noqa: BLE001  (any memplan fault is a finding, recorded)
        row.update(kind="error", error=f"{type(e).__name__}: {e}"[:500], arena_ok=False,
                   head_ok=False)
        return row
    if "runtime_refusal" in got or row["model_refusal"]:
        row.update(kind="false_refusal", arena_ok=False, head_ok=False,
                   error=(got.get("runtime_refusal") or row["model_refusal"])[:500])
        return row
    ra = got["runtime_arena"]
    row.update(source=got["runtime_arena_source"], runtime_arena=ra, head_model=got["tflm_head"],
               arena_ok=ra == lo, head_ok=got["tflm_head"] == head)
    kinds = []
    if ra is None:
        kinds.append("error")
        row["error"] = f"runtime_arena is None ({got.get('runtime_arena_note', '')})"
    elif ra < lo:
        kinds.append("arena_below")
    elif ra > lo:
        kinds.append("arena_above")
    if not row["head_ok"]:
        kinds.append("head")
    row["kind"] = "+".join(kinds)
    return row


def _digits(text: str) -> str:
    """``text`` with every integer replaced by ``N``: the interpreter prints some failed
    ``TF_LITE_ENSURE_EQ`` operands of type double with ``%d`` (concatenation.cc's scale check
    prints ``(-1537171504 != -1555275008)``), which differ between two runs."""
    return re.sub(r"-?\d+", "N", text)


def _check_refused(row: dict, path: str | Path, reason: str) -> dict:
    """:func:`check_model` where the interpreter refuses the model (``reason``, its own words):
    memplan must give no ``runtime_arena`` (neither measured nor from its model alone) and a
    ``runtime_refusal`` line quoting ``reason``."""
    from experiments.runtimes.tflm.oracle import runtime_arena

    row.update(refusal=reason, bisected_min=None, tflm_head=None)
    try:
        got = runtime_arena(path)
        alone = runtime_arena(path, measure=False)
    except Exception as e:  # noqa: BLE001  (any memplan fault is a finding, recorded)
        row.update(kind="error", error=f"{type(e).__name__}: {e}"[:500], arena_ok=False,
                   head_ok=False)
        return row
    row["model_refusal"] = alone.get("runtime_refusal", "")
    numbers = [(g.get("runtime_arena_source"), g["runtime_arena"]) for g in (got, alone)
               if g.get("runtime_arena") is not None]
    kinds = []
    if numbers:
        kinds.append("number_on_refusal")
        row.update(source=numbers[0][0], runtime_arena=numbers[0][1],
                   head_model=got.get("tflm_head"))
    line = got.get("runtime_refusal", "")
    if _digits(reason) not in _digits(line):
        kinds.append("reason_missing")
        row["error"] = (f"runtime_refusal {line!r} does not quote the interpreter's "
                        f"{reason!r}")[:500]
    row.update(kind="+".join(kinds), arena_ok=not kinds, head_ok=not kinds,
               source=row.get("source", "refused"))
    return row


#: (scheduler, planner) pairs of the offline-plan check (as ``make bench-tflm-offline``).
OFFLINE_PLANS = (("file_order", "greedy_by_size"), ("best_of", "choose_best"))


def check_offline(path: str | Path, workdir: str | Path, invocations: int = 3) -> list[dict]:
    """The ``--format tflm-offline`` check of one model, per :data:`OFFLINE_PLANS` pair:
    :func:`experiments.runtimes.tflm.offline.export_offline`, then the ``tflite-micro`` interpreter runs
    the original and the planned model on the same seeded inputs
    (:func:`experiments.runtimes.tflm.offline.run_model`). Rows ``{"scheduler", "planner", "accepted",
    "refusal", "outputs_identical", "head", "arena", "head_equals_arena", "note"}``; a refusal
    (``ValueError`` / ``MemplanError``, one line) is recorded, not raised."""
    from experiments.runtimes.tflm.offline import export_offline, run_model
    from planners.errors import MemplanError

    base = run_model(path, invocations=invocations)
    rows = []
    for sched, planner in OFFLINE_PLANS:
        out = Path(workdir) / f"{Path(path).stem}.{sched}.{planner}.tflite"
        row = {"scheduler": sched, "planner": planner}
        try:
            rep = export_offline(path, out, planner, sched)
        except (ValueError, MemplanError) as e:
            rows.append({**row, "accepted": False, "refusal": str(e).splitlines()[0]})
            continue
        new = run_model(out, invocations=invocations)
        rows.append({**row, "accepted": True, "refusal": "",
                     "outputs_identical": new["outputs"] == base["outputs"],
                     "head": new["head"], "arena": rep["arena"],
                     "head_equals_arena": new["head"] == rep["arena"], "note": rep["note"]})
    return rows


def _save_failure(row: dict, path: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, folder / f"{row['model']}.tflite")
    expected = {"runtime_arena": row["bisected_min"], "tflm_head": row["tflm_head"],
                "refusal": row.get("refusal", "")}
    got = {"runtime_arena": row.get("runtime_arena"), "tflm_head": row.get("head_model"),
           "runtime_arena_source": row.get("source"), "error": row.get("error", ""),
           "model_refusal": row.get("model_refusal", "")}
    (folder / f"{row['model']}.json").write_text(json.dumps(
        {"model": row["model"], "seed": row["seed"], "tags": row["tags"].split(),
         "kind": row["kind"], "expected": expected, "got": got,
         "offline": row.get("offline", []),
         "reference": "smallest arena_size at which tflite-micro builds and invokes the model "
                      "(inputs zero); head from print_allocations"}, indent=2) + "\n")


def run(models: int, seed: int = 0, failures: str | Path | None = DEFAULT_FAILURES,
        progress: bool = False, offline: bool = False) -> list[dict]:
    """Check the generated models of seeds ``seed .. seed + models - 1``
    (:func:`check_model`; with ``offline`` also :func:`check_offline`, whose rows go in the
    row's ``offline`` list, and a planned model whose outputs differ, or whose head differs from
    the plan's arena without a note saying why, makes the row fail with kind ``offline``); each
    failing one is saved into ``failures`` (when not ``None``). Returns the rows."""
    from experiments.runtimes.tflm.generate import generate_model, model_tags

    rows = []
    with tempfile.TemporaryDirectory(prefix="tflm_diff_") as work:
        for s in range(seed, seed + models):
            name = f"g{s:05d}"
            path = generate_model(s, Path(work) / f"{name}.tflite")
            row = check_model(name, path, s, model_tags(s))
            if offline and not row["refusal"]:  # a refused model has nothing to export
                row["offline"] = check_offline(path, work)
                if any(r["accepted"] and (not r["outputs_identical"] or (
                        not r["head_equals_arena"] and not r["note"]))
                       for r in row["offline"]):
                    row["kind"] = "+".join(k for k in (row["kind"], "offline") if k)
            rows.append(row)
            if row["kind"] and failures is not None:
                _save_failure(row, path, Path(failures))
            if progress:
                print(f"{name}: {row['kind'] or 'ok'} ({row.get('source')}, "
                      f"{row.get('runtime_arena')} vs {row['bisected_min']}, head "
                      f"{row.get('head_model')} vs {row['tflm_head']})", file=sys.stderr)
    return rows


def run_kernel_variants(failures: str | Path | None = DEFAULT_FAILURES,
                        progress: bool = False) -> list[dict]:
    """:func:`check_model` on every single-operator model of
    :func:`experiments.runtimes.tflm.generate.kernel_variant_specs` (the kernels memplan's arena
    model covers, at their limits: types, quantisation, arity, shapes, options).

    Parameters
    ----------
    failures : path or None
        Folder for ``NAME.tflite`` + ``NAME.json`` of each disagreeing model (``None``: none).
    progress : bool
        One line per model on standard error.

    Returns
    -------
    list of dict
        840 rows (:data:`COLUMNS`), models named ``v.<kernel>.<type>.<variant>``, ``seed``
        empty; numbers in bytes.

    Raises
    ------
    experiments.runtimes.tflm.oracle.TflmUnavailable
        As :func:`check_model` (``tflite-micro`` missing, a probe timed out).

    Notes
    -----
    About 2 minutes on one core (a crash restarts the probe worker).
    """
    from experiments.runtimes.tflm.generate import kernel_variant_specs
    from experiments.runtimes.tflm.writer import write_tflite

    rows = []
    with tempfile.TemporaryDirectory(prefix="tflm_variants_") as work:
        for name, subs, tags in kernel_variant_specs():
            path = write_tflite(Path(work) / f"v.{name}.tflite", subs)
            row = check_model(f"v.{name}", path, None, tags)
            rows.append(row)
            if row["kind"] and failures is not None:
                _save_failure(row, path, Path(failures))
            if progress:
                print(f"v.{name}: {row['kind'] or 'ok'} ({row.get('source')}, "
                      f"{row.get('runtime_arena')} vs {row['bisected_min']})", file=sys.stderr)
    return rows


def summary(rows: list[dict]) -> str:
    """A few lines: totals, failures by kind, by source and by feature tag."""
    bad = [r for r in rows if r["kind"]]
    lines = [f"{len(rows)} models, {len(bad)} disagree; source: "
             + ", ".join(f"{k} {v}" for k, v in sorted(Counter(
                 str(r.get("source")) for r in rows).items()))]
    refused = [r for r in rows if r.get("refusal")]
    lines.append(f"refused by the interpreter: {len(refused)} (memplan's model alone says so on "
                 f"{sum(bool(r['model_refusal']) for r in refused)}; its reason quoted on "
                 f"{sum('reason_missing' not in r['kind'] for r in refused)}; no number on "
                 f"{sum('number_on_refusal' not in r['kind'] for r in refused)})")
    lines.append("by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(
        r["kind"] for r in bad).items())))
    off = [o for r in rows for o in r.get("offline", [])]
    if off:
        for sched, planner in OFFLINE_PLANS:
            mine = [o for o in off if (o["scheduler"], o["planner"]) == (sched, planner)]
            acc = [o for o in mine if o["accepted"]]
            lines.append(
                f"tflm-offline {sched}/{planner}: {len(acc)} accepted, {len(mine) - len(acc)} "
                f"refused; outputs identical on {sum(o['outputs_identical'] for o in acc)}, head "
                f"== arena on {sum(o['head_equals_arena'] for o in acc)} (a note on "
                f"{sum(bool(o['note']) for o in acc)})"
                + "".join(f"; refused {n}: {m}" for m, n in Counter(
                    re.sub(r"\S+\.tflite|'[^']*'", "...", o["refusal"])
                    for o in mine if not o["accepted"]).most_common(3)))
    tags_all = Counter(t for r in rows for t in r["tags"].split())
    tags_bad = Counter(t for r in bad for t in r["tags"].split())
    lines.append("by tag (failing/all): " + ", ".join(
        f"{t} {tags_bad[t]}/{n}" for t, n in sorted(tags_all.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring); exit 0 when every model agrees, 1 otherwise, 2 when
    ``tflite``/``tflite-micro`` is missing."""
    import pandas as pd

    from experiments.records import write_csv
    from experiments.runtimes.tflm.oracle import tflm_available
    from scheduling.tflite_import import tflite_available

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="CSV of one row per model")
    ap.add_argument("--failures", default=DEFAULT_FAILURES,
                    help="folder for NAME.tflite + NAME.json of each disagreeing model")
    ap.add_argument("--offline", action="store_true",
                    help="also export each model with --format tflm-offline and compare the "
                         "planned model's outputs and head with the original's")
    ap.add_argument("--kernel-variants", action="store_true",
                    help="also check the 840 single-operator models at the modelled kernels' "
                         "limits (generate.kernel_variant_specs)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    for ok, why in (tflite_available(), tflm_available()):
        if not ok:
            print(f"tflm differential: {why}", file=sys.stderr)
            return 2
    rows = run(args.models, args.seed, args.failures, args.verbose, args.offline)
    if args.kernel_variants:
        rows += run_kernel_variants(args.failures, args.verbose)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        flat = [{**r, "offline": "; ".join(
            f"{o['scheduler']}/{o['planner']}: " + (
                ("identical" if o["outputs_identical"] else "OUTPUTS DIFFER")
                + f", head {o['head']} arena {o['arena']}" if o["accepted"]
                else "refused: " + o["refusal"]) for o in r.get("offline", []))}
                for r in rows]
        df = pd.DataFrame(flat).reindex(columns=COLUMNS)
        for c in ("seed", "runtime_arena", "bisected_min", "tflm_head", "head_model"):
            df[c] = df[c].astype("Int64")
        write_csv(df, out)
    print(summary(rows))
    return 1 if any(r["kind"] for r in rows) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
