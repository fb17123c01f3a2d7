"""Run several schedulers and keep the lowest peak (XLA's ``DefaultMemoryScheduler``)."""

from __future__ import annotations

from collections.abc import Sequence

from planners.params import SequenceOf, StrOptions

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


def _candidates() -> list[str]:
    """Registered scheduler names but ``best_of`` (read at check time: the registry imports this
    module)."""
    from .catalogue import SCHEDULERS  # noqa: PLC0415

    return [n for n in SCHEDULERS if n != "best_of"]


class BestOf(Scheduler):
    """Run several schedulers and keep the order with the lowest peak of live bytes.

    XLA's ``DefaultMemoryScheduler`` runs its list, DFS and post-order schedulers and keeps the
    one with the least memory; here any registered schedulers can be tried. ``file_order`` is
    always among the candidates (added first if missing), so the result is **never worse than the
    file order**. Ties go to the earlier candidate. Its bound is the largest of the candidates'
    proved bounds, so the status is ``"optimal"`` when that bound proves the winner optimal
    (:func:`.base.decide_status`), else ``"heuristic"``.

    Parameters
    ----------
    schedulers : sequence of str, default :data:`DEFAULT_CANDIDATES`
        Registry names.

    Raises
    ------
    ParameterError
        (from :meth:`schedule`, a ``ValueError``) An unknown scheduler name, or ``best_of``
        itself. ``CycleError`` for a cyclic graph.

    Notes
    -----
    Cost: the sum of the candidates' costs plus ``O(n + #tensor uses)`` per peak evaluation.
    ``info`` has ``peak_bytes``, ``winner`` and ``peaks`` (per candidate).
    """

    name = "best_of"
    # registry names other than best_of itself (file_order is added when missing)
    _parameter_constraints = {"schedulers": [SequenceOf(StrOptions(_candidates), min_len=0)]}

    def __init__(self, schedulers: Sequence[str] = DEFAULT_CANDIDATES) -> None:
        self.schedulers = schedulers

    def _schedule(self, graph: Graph) -> ScheduleResult:
        from .catalogue import get_scheduler

        names = list(self.schedulers)
        if "file_order" not in names:
            names.insert(0, "file_order")
        m = MemoryModel.of(graph)
        best = None
        peaks: dict[str, int] = {}
        bound = 0
        for name in names:
            s = get_scheduler(name).schedule(graph)
            pk = m.peak(m.to_indices(s.order))
            peaks[name] = pk
            if s.bound is not None:
                bound = max(bound, s.bound)
            if best is None or pk < best[0]:
                best = (pk, name, s)
        pk, winner, s = best
        return ScheduleResult(s.order, "heuristic",
                              {"peak_bytes": pk, "winner": winner, "peaks": peaks}, bound=bound)
