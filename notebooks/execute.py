"""``make notebooks``: execute every notebook of this folder in place, so the committed notebooks
hold their outputs (tables, figures as PNG, the plotly explorer with a static image beside it).

Each notebook runs top to bottom in a fresh ``python3`` kernel (nbclient) with this folder as the
working directory and the kernel's inline backend (``MPLBACKEND`` unset); execution counts and
outputs are written back into the ``.ipynb`` file, cell metadata timings are dropped so that a rerun
changes only what the code prints. A failing cell stops with its traceback and writes nothing.

``python notebooks/execute.py [NOTEBOOK ...]`` (default: every ``*.ipynb`` here, sorted).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def execute(path: Path, timeout: int = 600) -> float:
    """Execute the notebook ``path`` in place; returns the wall-clock seconds it took. Raises
    ``nbclient.exceptions.CellExecutionError`` on a failing cell (the file is left as it was)."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # timestamps: not part of the result
    nbformat.write(nb, path)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; returns 0, or 1 after a failing notebook (named on stderr)."""
    os.environ.pop("MPLBACKEND", None)  # the kernel picks its inline backend
    names = argv if argv else sorted(str(p) for p in HERE.glob("*.ipynb"))
    for name in names:
        path = Path(name).resolve()
        try:
            secs = execute(path)
        except Exception as exc:  # noqa: BLE001 - report the notebook, then stop
            print(f"notebooks: {path.name} failed: {type(exc).__name__}: "
                  f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}",
                  file=sys.stderr)
            return 1
        print(f"executed {path.name} in {secs:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
