"""Run several schedulers and keep the lowest peak (XLA's ``DefaultMemoryScheduler``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..graph import Graph
from .base import Scheduler, ScheduleResult
from .memsim import MemoryModel

__all__ = ["BestOf", "DEFAULT_CANDIDATES"]

#: Schedulers tried by default: all fast ones (file order always included).
DEFAULT_CANDIDATES = (
    "file_order",
    "dfs",
    "bfs",
    "min_live",
    "earliest_free",
    "list_xla",
    "lpmf",
    "critical_path",
)


class BestOf(Scheduler):
    """Run several schedulers and keep the order with the lowest peak of live bytes.

    XLA's ``DefaultMemoryScheduler`` runs its list, DFS and post-order schedulers and keeps the
    one with the least memory; here any registered schedulers can be tried. ``file_order`` is
    always among the candidates (added first if missing), so the result is **never worse than the
    file order**. Ties go to the earlier candidate. Status: ``"optimal"`` if a candidate proved
    optimality and won, else ``"heuristic"``.

    Parameters
    ----------
    schedulers : sequence of str, default :data:`DEFAULT_CANDIDATES`
        Registry names.

    Raises
    ------
    ValueError
        Unknown scheduler name. ``CycleError`` for a cyclic graph.

    Notes
    -----
    Cost: the sum of the candidates' costs plus ``O(n + #tensor uses)`` per peak evaluation.
    ``info`` has ``peak_bytes``, ``winner`` and ``peaks`` (per candidate).
    """

    name = "best_of"

    def __init__(self, schedulers: Sequence[str] = DEFAULT_CANDIDATES) -> None:
        self.schedulers = schedulers

    def _schedule(self, graph: Graph) -> ScheduleResult:
        from .registry import get_scheduler

        names = list(self.schedulers)
        if "file_order" not in names:
            names.insert(0, "file_order")
        if "best_of" in names:
            raise ValueError("best_of: cannot include itself among its schedulers")
        m = MemoryModel(graph)
        best = None
        peaks: dict[str, int] = {}
        for name in names:
            s = get_scheduler(name).schedule(graph)
            pk = m.peak(m.to_indices(s.order))
            peaks[name] = pk
            if best is None or pk < best[0]:
                best = (pk, name, s)
        pk, winner, s = best
        status = "optimal" if s.status == "optimal" else "heuristic"
        return ScheduleResult(s.order, status, {"peak_bytes": pk, "winner": winner, "peaks": peaks})
