"""Runtime integrations: one home and one shape for every runtime that consumes memplan's plans.

Each runtime gets one module here (``experiments.runtimes.<runtime>``) with the same four parts,
the protocol :class:`RuntimeIntegration` names:

``read_plan(artifact)``
    The runtime's **own** plan of a compiled artifact (a ``.pte``, a ``.tflite`` with its
    arena), as a :class:`planners.Problem` (half-open lifetimes in steps, bytes) and the
    runtime's offsets (bytes, problem order), so ``planners.check_plan`` and the CLI can judge it.
``plan_for(...)``
    Plan for the runtime with any registered memplan planner, under the runtime's rules
    (alignment, arenas, aliases), returning what the runtime's planning hook expects.
``write(...)``
    The artifact the runtime consumes (a ``.pte`` buffer, offline-plan metadata, a C header).
``run(artifact, inputs)``
    Run the artifact in the runtime's **own** interpreter (installed from PyPI) and return its
    outputs, so a plan is checked by running the program, never against a model of the runtime.

Modules: :mod:`experiments.runtimes.executorch` (ExecuTorch, the optional extra
``pip install -e '.[executorch]'``) and :mod:`experiments.runtimes.tflm` (TensorFlow Lite Micro,
the extra ``[tflite]``: its arena oracle, offline plans, probe, model generator and differential
test). The C header and Chrome-trace exports stay in :mod:`scheduling.transforms.export`: they
are file formats for code the user writes (a hand-made C runtime, ui.perfetto.dev), with no
runtime here to read a plan from or to run, so they have no place in this shape.

A runtime module imports its runtime's packages only inside its functions (or behind
:func:`require`), so importing this package never needs them.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

__all__ = ["RuntimeIntegration", "RuntimeMissing", "require", "RUNTIMES"]

#: Registered runtime modules (import paths), by runtime name.
RUNTIMES = {"executorch": "experiments.runtimes.executorch", "tflm": "experiments.runtimes.tflm"}


class RuntimeMissing(ImportError):
    """A runtime's optional packages are not installed; the message names the extra to install."""


def require(*modules: str, extra: str) -> None:
    """Import ``modules`` or raise :class:`RuntimeMissing` naming the first missing one and the
    pip extra (``pip install -e '.[EXTRA]'``) that provides it."""
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            raise RuntimeMissing(f"{m} is not installed ({e}); install the extra: "
                                 f"pip install -e '.[{extra}]'") from None


@runtime_checkable
class RuntimeIntegration(Protocol):
    """The shape of a runtime module (module docstring): ``NAME``, ``EXTRA`` and four functions.

    Units everywhere: bytes for sizes and offsets, schedule steps for lifetimes (half-open
    ``[start, end)`` in memplan's problems, whatever the runtime itself writes)."""

    NAME: str
    EXTRA: str

    def read_plan(self, artifact: Any) -> tuple[Any, Any]:
        """``(problem, offsets)``: the runtime's own plan of ``artifact``."""

    def plan_for(self, *args: Any, **kwargs: Any) -> Any:
        """Plan for the runtime with a memplan planner (the runtime's hook's return type)."""

    def write(self, *args: Any, **kwargs: Any) -> Any:
        """The artifact the runtime consumes."""

    def run(self, artifact: Any, inputs: Any) -> Any:
        """Outputs of ``artifact`` on ``inputs`` in the runtime's own interpreter."""
