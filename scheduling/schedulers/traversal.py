"""Traversal schedulers: depth-first (ONNX Runtime's default order) and breadth-first."""

from __future__ import annotations

from planners.params import StrOptions

from ..graph import Graph
from .base import Scheduler, ScheduleResult
from .memsim import MemoryModel

__all__ = ["DFS", "BFS"]


class DFS(Scheduler):
    """Depth-first schedule.

    ``direction="backward"`` (default) is ONNX Runtime's default order (``GraphViewer`` builds it
    with ``Graph::ReverseDFSFrom`` the graph's leaves): a depth-first search from the sinks
    (operators whose outputs nobody reads, in stored order) along *predecessor* edges, emitting an
    operator after all its predecessors (post-order), so each operator runs as late as its
    consumer chain requires and a branch is finished before the next starts. ``"forward"`` is the
    reverse post-order of a depth-first search from the sources along successor edges (the
    textbook DFS topological sort). Predecessors/successors are visited in stored order.

    Parameters
    ----------
    direction : {"backward", "forward"}

    Raises
    ------
    ParameterError
        (from :meth:`schedule`, a ``ValueError``) Unknown direction. ``CycleError`` for a cyclic graph.

    Notes
    -----
    Iterative (no recursion limit), ``O(n + E)``.
    """

    name = "dfs"
    _parameter_constraints = {"direction": [StrOptions(("backward", "forward"))]}

    def __init__(self, direction: str = "backward") -> None:
        self.direction = direction

    def _schedule(self, graph: Graph) -> ScheduleResult:
        m = MemoryModel.of(graph)
        nxt = m.preds if self.direction == "backward" else m.succs
        roots = [
            v for v in range(m.n) if not (m.succs if self.direction == "backward" else m.preds)[v]
        ]
        seen = [False] * m.n
        post: list[int] = []
        for r in roots:
            if seen[r]:
                continue
            seen[r] = True
            stack = [(r, iter(nxt[r]))]
            while stack:
                v, it = stack[-1]
                for w in it:
                    if not seen[w]:
                        seen[w] = True
                        stack.append((w, iter(nxt[w])))
                        break
                else:
                    stack.pop()
                    post.append(v)
        order = post if self.direction == "backward" else post[::-1]
        return ScheduleResult(m.to_names(order), "heuristic", {"peak_bytes": m.peak(order)})


class BFS(Scheduler):
    """Breadth-first (level-order) schedule: operators sorted by ASAP level (longest path in edges
    from a source, :meth:`MemoryModel.levels`), stored order within a level -- PyTorch Inductor's
    ``topological_sort_bfs``. Every branch advances one level at a time, so parallel branches are
    all live together: the memory-unfriendly baseline. ``O(n log n + E)``.

    Raises
    ------
    CycleError
        The graph has a cycle (named).
    """

    name = "bfs"
    _parameter_constraints: dict = {}  # no parameters

    def __init__(self) -> None:
        pass

    def _schedule(self, graph: Graph) -> ScheduleResult:
        m = MemoryModel.of(graph)
        lev = m.levels().tolist()
        order = sorted(range(m.n), key=lambda v: (lev[v], v))
        return ScheduleResult(m.to_names(order), "heuristic", {"peak_bytes": m.peak(order)})
