"""``python -m experiments.report.markdown_check --cases N --seed S``: the Markdown table escaping
of :mod:`experiments.safe` against a real renderer.

Each case is a table of two rows whose first column holds hostile text (Markdown and HTML
syntax, ``|``, backslashes, entities, ``<script>``, newlines, edge whitespace, wide and
combining characters) drawn from a seeded :class:`random.Random`, written by
:func:`experiments.safe.md_table` and parsed by ``markdown-it-py`` (CommonMark with
GitHub's table rule, raw HTML on, as GitHub renders a file). A case fails unless every row has
the header's column count, each cell reads back as the text that was written, the only tag in a
cell is ``<br>`` and the rendered HTML holds no ``<script``. Prints one line with the counts;
exit status 1 if any case fails, 2 if ``markdown-it-py`` is not installed.

Control characters that CommonMark never decodes from a numeric reference (U+0001-U+0008,
U+000B, U+000E-U+001F, U+007F-U+009F) are not drawn here: the escaper writes them as
references, which a renderer shows as written; the exact inverse is checked by the tests
(``tests/test_report_safety.py``).
"""

from __future__ import annotations

import argparse
import random
import sys

__all__ = ["hostile_text", "check_table", "run", "main"]

_PIECES = ["|", "\\", "\\|", "`", "``", "*", "_", "~~", "$", "[", "]", "](", "(", ")", "!", "#",
           "<", ">", "&", "&amp;", "&#60;", "&lt;", "<script>", "</script>", "<br>", "</td>",
           "<img src=x onerror=alert(1)>", "javascript:", "http://e.x", ":", "-", "---", "  ",
           " ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u2028", "\u3000", "a", "Z", "0", "9", "é",
           "中", "🙂", "e\u0301", "\ufeff", "x_y", "greedy_by_size", "[pools a|b=4k]", "1e5",
           "nan", "-1", "'", '"']


def hostile_text(rng: random.Random, max_pieces: int = 8) -> str:
    """A random text of up to ``max_pieces`` pieces of Markdown/HTML syntax and characters."""
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, max_pieces)))


def _renderer():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table")


def check_table(name: str, other: str, renderer=None) -> str | None:
    """``None`` when the table ``{name: [other, "plain"], "bytes": [1, 22]}`` written by
    :func:`experiments.safe.md_table` renders as written, else what went wrong."""
    import pandas as pd

    from experiments.safe import md_table

    r = renderer or _renderer()
    header = name if name.strip() else "h"
    md = md_table(pd.DataFrame({header: [other, "plain"], "bytes": [1, 22]}))
    rows: list[list[str]] = []
    in_cell = False
    tables = 0
    for t in r.parse(md):
        if t.type == "table_open":
            tables += 1
        elif t.type == "tr_open":
            rows.append([])
        elif t.type in ("th_open", "td_open"):
            rows[-1].append("")
            in_cell = True
        elif t.type in ("th_close", "td_close"):
            in_cell = False
        elif t.type == "inline" and in_cell:
            for c in t.children or []:
                if c.type == "html_inline" and c.content != "<br>":
                    return f"a tag {c.content!r} in a cell: {md!r}"
                if c.type not in ("text", "html_inline", "softbreak"):
                    return f"a {c.type} token in a cell: {md!r}"
                rows[-1][-1] += "\n" if c.type == "html_inline" else c.content
    if tables != 1 or [len(x) for x in rows] != [2, 2, 2]:
        return f"{tables} tables, row widths {[len(x) for x in rows]}: {md!r}"
    if rows[0][0] != header or rows[1][0] != other or rows[2] != ["plain", "22"]:
        return f"read back {rows!r} for {[header, other]!r}: {md!r}"
    if "<script" in r.render(md).lower():
        return f"<script in the rendered page: {md!r}"
    return None


def run(cases: int, seed: int = 0) -> tuple[int, list[str]]:
    """Check ``cases`` random tables (seeded); returns ``(cases, failure descriptions)``."""
    rng = random.Random(seed)
    r = _renderer()
    failures = []
    for _ in range(cases):
        why = check_table(hostile_text(rng), hostile_text(rng), r)
        if why is not None:
            failures.append(why)
    return cases, failures


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (module docstring); returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m experiments.report.markdown_check",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20000, help="random tables (default 20000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        import markdown_it  # noqa: F401
    except ImportError:
        print("markdown_check: markdown-it-py is not installed (pip install markdown-it-py)",
              file=sys.stderr)
        return 2
    n, failures = run(args.cases, args.seed)
    print(f"markdown_check: {n} random tables (seed {args.seed}), {len(failures)} failed")
    for f in failures[:5]:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
