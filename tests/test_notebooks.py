"""The notebooks show their figures inline: each is executed with nbclient (a fresh Jupyter
kernel, its default inline backend) and its outputs must hold at least its figures as
``image/png``. A figure lost to a forced non-interactive backend, or a plotting function that
returns nothing drawable, fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _rv64_figures() -> int:
    from experiments import rv64

    return 1 if rv64.available()[0] else 0


#: notebook -> the figures it draws (heatmap, memory over time, layout, the static layouts beside
#: the plotly explorer; the quality/time scatter
#: and a report figure; live bytes per schedule; RV64 cycles when the emulator is available).
EXPECTED = {
    "01_planner_comparison.ipynb": lambda: 4,
    "02_sweeps_and_figures.ipynb": lambda: 2,
    "03_scheduling.ipynb": lambda: 1,
    "04_rv64_cost.ipynb": _rv64_figures,
}


def _png_outputs(nb) -> int:
    return sum("image/png" in out.get("data", {})
               for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", []))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_notebook_shows_its_figures_inline(name, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel chooses its inline backend
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    assert _png_outputs(nb) >= EXPECTED[name](), f"{name}: {_png_outputs(nb)} inline figures"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_committed_notebook_holds_its_outputs(name):
    """``make notebooks`` executed the committed notebook: every code cell ran (in order) and
    its figures are stored as PNG; an interactive plotly explorer is followed by a static
    image, so it survives rendering to HTML or on GitHub (no JavaScript)."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in code]
    assert all(isinstance(n, int) for n in counts), f"{name}: not executed ({counts})"
    assert counts == sorted(counts), f"{name}: cells not run top to bottom ({counts})"
    assert _png_outputs(nb) >= EXPECTED[name](), f"{name}: {_png_outputs(nb)} stored figures"
    for k, cell in enumerate(code):
        if any("application/vnd.plotly.v1+json" in o.get("data", {}) for o in cell.outputs):
            later = code[k + 1] if k + 1 < len(code) else None
            assert later is not None and any("image/png" in o.get("data", {})
                                             for o in later.outputs), \
                f"{name}: no static image after the interactive figure of code cell {k}"
