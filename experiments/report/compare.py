"""The Markdown reports of ``memplan compare`` (planners, ``--schedulers``, ``--pipeline``), built
from the records alone (no solving). Metrics come from :mod:`experiments.metrics`.

Sizes are bytes; ``ratio`` is ``arena / lower_bound`` (1.000 is the lower bound itself).
Every name from the records (workloads, planners, pools, errors, the command line) reaches the
Markdown through :mod:`experiments.safe` (:func:`~experiments.safe.md_table`,
:func:`~experiments.safe.md_code`), so a ``|``, a newline or HTML in a name never breaks a
table or passes into the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from experiments.metrics import coverage_note, planner_summary
from experiments.safe import md_cell, md_code, md_table

__all__ = ["compare_markdown", "ratio_tables", "RATIO_COLUMNS", "rewrite_compare_md",
           "sched_markdown", "pipeline_summary", "pipeline_markdown", "main"]

#: At most this many planner columns per ratio table of ``compare.md`` (a page on the web).
RATIO_COLUMNS = 8


def _dashes(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the missing values of its numeric columns as ``None`` (object columns), which
    :func:`experiments.safe.md_table` with ``missingval="-"`` prints as ``-``, never ``nan``."""
    t = df.copy()
    for c in t.columns:
        if pd.api.types.is_numeric_dtype(t[c]) and t[c].isna().any():
            t[c] = t[c].astype(object).where(t[c].notna(), None)
    return t


def _reason(rec) -> str:
    """Why the record ``rec`` (a row with ``status``, ``error`` and ``reason``) has no valid plan:
    its status and the error of a failed run, or the reason the planner gave (``reason``, which
    the harness fills from ``plan.info["reason"]`` for a skipped or stopped run), or "no reason
    recorded" for records written before the harness kept it."""
    status = str(getattr(rec, "status", "") or "error")

    def text(field):
        v = getattr(rec, field, "")
        return "" if v is None or (isinstance(v, float) and v != v) else str(v).strip()

    err = text("error") or text("reason")
    return f"{status}: {err}" if err else f"{status}: no reason recorded"


def _planner_groups(records: pd.DataFrame, width: int) -> list[tuple[str, list[str]]]:
    """The planners of ``records`` in columns of at most ``width``: by ``family`` (record order),
    a family of more than ``width`` planners split into equal parts ("greedy, 1 of 2"),
    consecutive whole families joined while they fit ``width`` (the first part of a split family
    joins a whole one before it too)."""
    planners = list(dict.fromkeys(records["planner"].astype(str)))
    fam = (dict(zip(records["planner"].astype(str), records["family"].fillna("other").astype(str),
                    strict=False)) if "family" in records else {})
    families: dict[str, list[str]] = {}
    for p in planners:
        families.setdefault(fam.get(p, "other"), []).append(p)
    groups: list[tuple[list[str], list[str], bool]] = []  # (family names, planners, whole)
    for f, members in families.items():
        if len(members) > width:
            parts = -(-len(members) // width)
            step = -(-len(members) // parts)
            for k in range(parts):
                chunk, name = members[k * step:(k + 1) * step], f"{f}, {k + 1} of {parts}"
                if k == 0 and groups and groups[-1][2] and len(groups[-1][1]) + len(chunk) <= width:
                    groups[-1] = (groups[-1][0] + [name], groups[-1][1] + chunk, False)
                else:
                    groups.append(([name], chunk, False))
        elif groups and groups[-1][2] and len(groups[-1][1]) + len(members) <= width:
            groups[-1][0].append(f)
            groups[-1][1].extend(members)
        else:
            groups.append(([f], list(members), True))
    return [(" + ".join(names), members) for names, members, _ in groups]


def ratio_tables(records: pd.DataFrame, width: int = RATIO_COLUMNS
                 ) -> list[tuple[str, pd.DataFrame, list[tuple[int, str]]]]:
    """The ``arena / lower_bound`` ratios of ``compare.md`` as tables of at most ``width``
    planner columns (:func:`_planner_groups`: by family), rows the workloads in record order.

    Parameters
    ----------
    records : DataFrame
        Comparison records (:data:`experiments.harness.RECORD_COLUMNS`: ``workload``,
        ``planner``, ``family``, ``ratio``, ``valid``, ``status``, ``error``).
    width : int
        Planner columns per table, at least 1.

    Returns
    -------
    list of (title, table, notes)
        ``title`` names the families; ``table`` holds text cells: the ratio (bytes / bytes) to
        three decimals (the minimum over duplicate records), ``"- (k)"`` for a run without a
        valid plan (never ``nan``) and ``""`` for a pair not run; ``notes`` are the ``(k, text)``
        used by the table, ``text`` the status and reason (:func:`_reason`) and the runs it
        covers. Note numbers are shared by all tables (one number per distinct status and
        reason). Raises ``ValueError`` for ``width < 1``.
    """
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    workloads = list(dict.fromkeys(records["workload"].astype(str)))
    valid = records["valid"].astype(bool)
    ok = records[valid]
    ratio = ok.assign(workload=ok["workload"].astype(str), planner=ok["planner"].astype(str)) \
        .groupby(["workload", "planner"])["ratio"].min().to_dict()
    ran = set(zip(records["workload"].astype(str), records["planner"].astype(str), strict=True))
    why: dict[tuple[str, str], str] = {}
    for rec in records[~valid].itertuples(index=False):
        why.setdefault((str(rec.workload), str(rec.planner)), _reason(rec))
    number: dict[str, int] = {}
    for key in sorted(why, key=lambda k: (workloads.index(k[0]), k[1])):
        if key not in ratio:
            number.setdefault(why[key], len(number) + 1)
    out = []
    for title, members in _planner_groups(records, width):
        rows, used = [], {}
        for w in workloads:
            row = {"workload": w}
            for p in members:
                if (w, p) in ratio:
                    row[p] = f"{float(ratio[(w, p)]):.3f}"
                elif (w, p) in why:
                    k = number[why[(w, p)]]
                    used.setdefault(k, {}).setdefault(p, []).append(w)
                    row[p] = f"- ({k})"
                else:
                    row[p] = "" if (w, p) not in ran else "-"
            rows.append(row)
        text = {k: r for r, k in number.items()}
        notes = [(k, md_cell(text[k]) + " (" + "; ".join(
                     f"{md_cell(p)} on {md_cell(', '.join(ws))}" for p, ws in runs.items()) + ")")
                 for k, runs in sorted(used.items())]
        out.append((title, pd.DataFrame(rows, columns=["workload", *members]), notes))
    return out


def compare_markdown(records: pd.DataFrame, out: Path, figures: Sequence[Path] = (),
                     command: str = "memplan compare", time_limit: float | None = None) -> str:
    """``compare.md``: the workloads (buffers, lower bound, naive and best arena), the ratio of
    every (workload, planner), the runs without a valid plan, the per-planner summary with its
    coverage (n of N, and the geometric mean over the workloads every planner solved:
    :func:`experiments.metrics.planner_summary`) and links to the PNG ``figures`` (relative to
    ``out``). ``records`` has the columns of :data:`experiments.harness.RECORD_COLUMNS`."""
    ok = records[records["valid"].astype(bool)]
    info = records.groupby("workload", sort=False)[["buffers", "lower_bound", "naive"]].first()
    best = ok.groupby("workload", sort=False)["arena"].min().rename("best_arena")
    head = info.join(best)
    head["best_arena"] = head["best_arena"].round().astype("Int64")
    lines = [
        "# Planner comparison",
        "",
        f"Generated by {md_code(command)}. Lifetimes of the ONNX models come from the file order; every",
        "plan was checked by the independent validator. Sizes in bytes; `ratio` = arena / lower",
        "bound (max live bytes), so 1.000 is the lower bound itself (an instance whose optimum lies",
        "above its lower bound cannot reach 1.000).",
        "",
        (f"Time limit: {time_limit:g} s per run for the planners that take one (exact and anytime "
         "solvers); a solver stopped by it reports `feasible` (a plan without a proof of "
         "optimality) or `timeout` (no plan), so their ratios depend on this limit and on the "
         "machine's load." if time_limit is not None else ""),
        "",
        "## Workloads",
        "",
        md_table(_dashes(head.reset_index()), missingval="-"),
        "",
        "## Arena / lower bound (1.000 = the lower bound)",
        "",
        ("One table per planner family (families of more than "
         f"{RATIO_COLUMNS} planners split, small neighbouring families joined), so each fits "
         "a page; every (workload, planner) ratio, the wide table, is in `compare.csv`. `-` is "
         "a run without a valid plan, its status and reason in the numbered note under the "
         "table; an empty cell a pair that was not run."),
        "",
    ]
    for title, table, notes in ratio_tables(records):
        lines += [f"### {md_cell(title)}", "", md_table(table), ""]
        lines += [f"{k}. {text}" for k, text in notes] + ([""] if notes else [])
    lines += _pool_lines(ok)
    bad = records[~records["valid"].astype(bool)]
    if len(bad):
        shown = bad[["workload", "planner", "status", "seconds"]].copy()
        shown["reason"] = [_reason(r) for r in bad.itertuples(index=False)]
        lines += ["## Runs without a valid plan", "", md_table(shown), ""]
    summary = planner_summary(records)
    lines += ["## Per planner", "", coverage_note(summary.rename(index=md_cell)), "",
              md_table(_dashes(summary.reset_index()), floatfmt=".4g", missingval="-"), "",
              "## Figures", ""]
    for f in figures:
        if f.suffix == ".png":
            lines.append(f"![{md_cell(f.stem)}]({_link(f.relative_to(out).as_posix())})")
    lines.append("")
    return "\n".join(lines)


def _link(path: str) -> str:
    """A relative figure path as a Markdown link target: percent-encoded except ``/`` (a space,
    ``(`` or ``)`` in a file name would end the link)."""
    from urllib.parse import quote

    return quote(path, safe="/")


def _pool_lines(ok: pd.DataFrame) -> list[str]:
    """The "Memory pools" section of ``compare.md`` for valid records with pools (``pools``,
    ``arena_NAME`` columns, :data:`experiments.harness.POOL_COLUMNS`): the pools given and each
    plan's bytes per pool; ``[]`` without pools."""
    if "pools" not in ok.columns or not ok["pools"].fillna("").astype(str).str.len().any():
        return []
    from experiments.records import arena_columns

    per_pool = [c for c in arena_columns([{"pools": t} for t in ok["pools"].dropna().unique()])
                if c in ok.columns]
    given = ", ".join(md_code(t) for t in dict.fromkeys(ok["pools"].dropna().astype(str)) if t)
    table = ok[["workload", "planner", "status", "fits", "arena", *per_pool]]
    return ["## Memory pools", "",
            f"Pools in preference order (NAME=BYTES[:ALIGN]): {given}. Every plan gives each "
            "buffer a pool; `arena_NAME` is the bytes that pool needs, `arena` their sum (the "
            "ratio above divides that sum by the max live bytes), `fits` whether every pool is "
            "within its capacity (status `over_capacity` otherwise).", "",
            md_table(table), ""]


def sched_markdown(df: pd.DataFrame) -> str:
    """``compare_sched.md``: peak live activation bytes per (workload, scheduler) and its
    reduction (%) against ``file_order``, from the scheduler-comparison rows
    (:data:`experiments.sched_compare.SCHED_COLUMNS`)."""
    base = df[df["scheduler"] == "file_order"].groupby("workload")["peak_bytes"].first()
    peak = df.pivot_table(index="workload", columns="scheduler", values="peak_bytes", aggfunc="first")
    rel = (1 - peak.div(base, axis=0)) * 100
    md = ["# Scheduler comparison", "", "Peak live activation bytes per schedule (the lower bound "
          "of any plan for that order), and its reduction against the file order.", "",
          "## Peak bytes", "", md_table(peak.reset_index()), "",
          "## Peak reduction vs file order (%)", "",
          md_table(rel.reset_index(), floatfmt=".1f"), ""]
    return "\n".join(md)


def pipeline_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, planner) of the pipeline rows (:func:`experiments.transforms_compare.compare_pipeline`;
    rows with ``status == "error"`` left out): peak and arena (bytes) before the first and after
    the last pass, the passes' saved bytes (memory traffic) and the peak reduction in %."""
    ok = df[df.get("status", "") != "error"] if "status" in df else df
    first = ok[ok["stage"] == 0].set_index(["model", "planner"])
    last = ok.sort_values("stage").groupby(["model", "planner"]).last()
    summary = pd.DataFrame({
        "peak_before": first["peak"], "peak_after": last["peak"],
        "arena_before": first["arena"], "arena_after": last["arena"],
        "saved_bytes": ok.groupby(["model", "planner"])["saved_bytes"].sum(),
    })
    summary["peak_reduction_%"] = (1 - summary["peak_after"] / summary["peak_before"]) * 100
    return summary


def pipeline_markdown(df: pd.DataFrame, pipeline: str) -> str:
    """``compare_pipeline.md``: :func:`pipeline_summary` of the rows of ``pipeline``."""
    md = ["# Graph passes", "", f"Pipeline {md_code(pipeline)}: peak live bytes (lower bound) and "
          "planned arena before the first and after the last pass; per-pass rows in "
          "`compare_pipeline.csv`. `saved_bytes` is memory traffic, not arena: the bytes of "
          "intermediate tensors no longer written and read back, `2 x size x steps eliminated` "
          "summed over the fusions (seed 000 section 4).", "",
          md_table(pipeline_summary(df).reset_index(), floatfmt=".1f"), ""]
    return "\n".join(md)


def _previous_header(md: str) -> tuple[str | None, float | None]:
    """The command and time limit (seconds) an earlier ``compare.md`` names ("Generated by
    `...`", "Time limit: N s per run"), ``None`` for either that it does not name."""
    import re

    cmd = re.search(r"^Generated by (`+) ?(.*?) ?\1\. ", md, re.M)
    lim = re.search(r"^Time limit: ([0-9.eE+-]+) s per run", md, re.M)
    return (cmd.group(2) if cmd else None), (float(lim.group(1)) if lim else None)


def rewrite_compare_md(out: str | Path, figures: Sequence[Path] | None = None) -> Path:
    """Rewrite ``out/compare.md`` from ``out/compare.csv`` alone (no planner runs): the tables
    of :func:`compare_markdown`, the links to the PNG figures of ``out/figures`` that
    :data:`experiments.report.figures.OWNED_COMPARE` names, and the command line and time limit
    (seconds) the previous ``compare.md`` named (``"memplan compare"`` and none without one).
    ``figures``: the files to link, in that order (as :func:`experiments.report.figures.
    compare_figures` returns them); default the owned PNGs found in ``out/figures``.

    Returns the path written. Raises ``FileNotFoundError`` without ``compare.csv``.
    """
    from experiments.records import atomic_write
    from experiments.report.figures import OWNED_COMPARE

    out = Path(out)
    df = pd.read_csv(out / "compare.csv", keep_default_na=True)
    df["valid"] = df["valid"].astype(bool)
    md_path = out / "compare.md"
    command, limit = _previous_header(md_path.read_text(encoding="utf-8")) \
        if md_path.is_file() else (None, None)
    figs = sorted((out / "figures").glob("*.png")) if (out / "figures").is_dir() else []
    figs = [f for f in figs if any(Path(f.stem).match(pat) for pat in OWNED_COMPARE)]
    order = {pat: k for k, pat in enumerate(OWNED_COMPARE)}
    figs.sort(key=lambda f: (min(order[p] for p in OWNED_COMPARE if Path(f.stem).match(p)),
                             f.name))
    if figures is not None:
        figs = [Path(f) for f in figures if Path(f).suffix == ".png"]
    atomic_write(md_path, compare_markdown(df, out, figs, command or "memplan compare",
                                           time_limit=limit))
    return md_path


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.report.compare [--results results]``: :func:`rewrite_compare_md`;
    returns 0."""
    import argparse

    ap = argparse.ArgumentParser(description="rewrite compare.md from compare.csv (no planning)")
    ap.add_argument("--results", default="results", help="the comparison folder")
    a = ap.parse_args(argv)
    print(f"wrote {rewrite_compare_md(a.results)}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
