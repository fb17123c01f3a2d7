"""Runtime memory pools of seed 002 section 5.3.1, to compare with static offset plans.

A static plan fixes every offset before the run (seed 000 section 6); a **pool** decides them at
run time, request by request, and pays for it with fragmentation. Three designs:

* :class:`FixedBlockPool` -- ``n`` blocks of ``block_size`` bytes (``pool_size = n x
  block_size``); a request takes one free block (lowest address first); internal fragmentation
  ``block_size - s`` per live request. ``O(log n)`` per call (a heap of free block indices).
* :class:`BuddyAllocator` -- blocks of power-of-two sizes (``allocated_size(s) = min{2^k >= s}``,
  at least ``min_block``), split in halves on demand and merged with their buddy (``offset XOR
  size``) on free. ``O(log(pool / min_block))`` per call with one sorted free set per order.
* :class:`RingBuffer` -- streaming FIFO: ``write_ptr = (write_ptr + size) mod buffer_size``,
  allocations freed oldest first; a request that does not fit before the end wraps to 0 (the tail
  is skipped). ``O(1)`` per call.

All three share :class:`Pool`'s statistics (bytes): ``used`` (requested sizes of live
allocations), ``allocated`` (block bytes they hold), ``internal_fragmentation = allocated -
used``, the fragmentation ratio ``(allocated - used) / allocated`` and the peaks. The pools compute
in Python integers; a pool is at most ``2**63 - 1`` bytes, so every offset it hands out fits the
int64 offsets of a plan (the range rule of :mod:`planners.model`).
:func:`replay` runs a :class:`~planners.model.Problem`'s allocation and free events through a
pool to measure the pool size it needs against a static plan's arena.

Exercise 5.8 of seed 002 (units MB): a 1024 MB buddy pool, ``alloc(150), alloc(200), free(150),
alloc(100), alloc(300)`` leaves blocks of 256, 128 and 512 MB holding 200, 100 and 300 MB: 896 MB
allocated, 296 MB internal fragmentation (33.0 %).

>>> b = BuddyAllocator(1024)
>>> for op, *a in [("a", "x", 150), ("a", "y", 200), ("f", "x"), ("a", "z", 100), ("a", "w", 300)]:
...     _ = b.alloc(*a) if op == "a" else b.free(*a)
>>> b.allocated, b.used, b.internal_fragmentation
(896, 600, 296)
"""

from __future__ import annotations

import heapq
from collections import OrderedDict

import numpy as np

from .errors import InfeasibleError, ProblemError
from .model import INT64_MAX, Problem

__all__ = ["PoolError", "Pool", "FixedBlockPool", "BuddyAllocator", "RingBuffer", "POOLS",
           "replay"]


class PoolError(InfeasibleError):
    """A runtime pool cannot serve a request (out of memory or fragmented); the message names
    the request, its size and the pool state."""


class Pool:
    """Common bookkeeping of the runtime pools (see module docstring).

    Attributes
    ----------
    pool_size : int
        Bytes managed.
    used, allocated : int
        Requested bytes and block bytes of the live allocations.
    peak_used, peak_allocated : int
        Maxima over the run.
    high_water : int
        Highest ``offset + block size`` ever handed out (the address space actually touched).

    Raises
    ------
    ProblemError
        ``pool_size`` is not an integer in ``1 .. 2**63 - 1`` bytes.
    """

    name = "pool"

    def __init__(self, pool_size: int) -> None:
        if isinstance(pool_size, bool) or not isinstance(pool_size, (int, np.integer)) \
                or not 0 < pool_size <= INT64_MAX:
            raise ProblemError(f"{self.name}: pool size must be an integer in 1..2**63 - 1 "
                               f"bytes, got {pool_size!r}")
        self.pool_size = int(pool_size)
        self.live: dict[str, tuple[int, int, int]] = {}  # id -> (offset, size, block)
        self.used = self.allocated = 0
        self.peak_used = self.peak_allocated = self.high_water = 0

    # -- statistics -------------------------------------------------------------------------
    @property
    def internal_fragmentation(self) -> int:
        """``allocated - used`` bytes of the live allocations."""
        return self.allocated - self.used

    @property
    def fragmentation_ratio(self) -> float:
        """``(allocated - used) / allocated`` (seed 002's 碎片率); 0 when nothing is live."""
        return self.internal_fragmentation / self.allocated if self.allocated else 0.0

    def _record(self, bid: str, offset: int, size: int, block: int) -> int:
        self.live[bid] = (offset, size, block)
        self.used += size
        self.allocated += block
        self.peak_used = max(self.peak_used, self.used)
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.high_water = max(self.high_water, offset + block)
        return offset

    def _check_new(self, bid: str, size: int) -> None:
        if bid in self.live:
            raise ProblemError(f"{self.name}: allocation {bid!r} is already live")
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise ProblemError(f"{self.name}: allocation {bid!r}: size must be an integer >= 0 "
                               f"bytes, got {size!r}")

    def _pop(self, bid: str) -> tuple[int, int, int]:
        if bid not in self.live:
            raise ProblemError(f"{self.name}: free of {bid!r}, which is not a live allocation")
        off, size, block = self.live.pop(bid)
        self.used -= size
        self.allocated -= block
        return off, size, block

    def stats(self) -> dict:
        """A flat record of the statistics above."""
        return {"pool": self.name, "pool_size": self.pool_size, "used": self.used,
                "allocated": self.allocated, "internal_fragmentation": self.internal_fragmentation,
                "fragmentation_ratio": self.fragmentation_ratio, "peak_used": self.peak_used,
                "peak_allocated": self.peak_allocated, "high_water": self.high_water}

    def alloc(self, bid: str, size: int) -> int:  # pragma: no cover - interface
        """Allocate ``size`` bytes for ``bid``; return the offset (bytes). Raises PoolError."""
        raise NotImplementedError

    def free(self, bid: str) -> None:  # pragma: no cover - interface
        """Release ``bid``. Raises ProblemError for an id that is not live."""
        raise NotImplementedError


class FixedBlockPool(Pool):
    """``pool_size // block_size`` blocks of ``block_size`` bytes; one block per request.

    Raises :class:`PoolError` for a request larger than a block or when every block is taken.
    """

    name = "fixed_block"

    def __init__(self, pool_size: int, block_size: int) -> None:
        super().__init__(pool_size)
        if block_size <= 0 or block_size > pool_size:
            raise ProblemError(f"fixed_block: block size must be in 1..{pool_size}, "
                               f"got {block_size!r}")
        self.block_size = int(block_size)
        self._free = list(range(self.pool_size // self.block_size))

    def alloc(self, bid: str, size: int) -> int:
        """Give ``bid`` (``size`` bytes) the lowest free block; returns its offset (bytes).
        :class:`PoolError` when ``size`` exceeds the block size or every block is taken."""
        self._check_new(bid, size)
        if size > self.block_size:
            raise PoolError(f"fixed_block: allocation {bid!r} of {size} bytes exceeds the block "
                            f"size {self.block_size} bytes")
        if not self._free:
            raise PoolError(f"fixed_block: allocation {bid!r} of {size} bytes: all "
                            f"{self.pool_size // self.block_size} blocks are taken")
        i = heapq.heappop(self._free)
        return self._record(bid, i * self.block_size, size, self.block_size)

    def free(self, bid: str) -> None:
        """Return ``bid``'s block to the pool (:class:`ProblemError` for an unknown id)."""
        off, _, _ = self._pop(bid)
        heapq.heappush(self._free, off // self.block_size)


class BuddyAllocator(Pool):
    """Binary buddy system over ``pool_size`` bytes (a power of two times ``min_block``).

    ``alloc`` takes the lowest-address free block of the smallest order that fits, splitting
    larger blocks in halves; ``free`` merges a block with its free buddy repeatedly.

    Raises
    ------
    ProblemError
        ``pool_size / min_block`` not a power of two.
    PoolError
        No free block is large enough (external fragmentation or a full pool).
    """

    name = "buddy"

    def __init__(self, pool_size: int, min_block: int = 1) -> None:
        super().__init__(pool_size)
        ratio = self.pool_size // max(1, int(min_block))
        if min_block < 1 or self.pool_size % min_block or ratio & (ratio - 1):
            raise ProblemError(f"buddy: pool size {pool_size} must be min_block {min_block} "
                               "times a power of two")
        self.min_block = int(min_block)
        self.max_order = ratio.bit_length() - 1
        self._free: list[list[int]] = [[] for _ in range(self.max_order + 1)]  # heaps of offsets
        self._free_set: list[set[int]] = [set() for _ in range(self.max_order + 1)]
        self._add(self.max_order, 0)

    def _add(self, order: int, off: int) -> None:
        heapq.heappush(self._free[order], off)
        self._free_set[order].add(off)

    def _take(self, order: int) -> int | None:
        h, s = self._free[order], self._free_set[order]
        while h:
            off = heapq.heappop(h)
            if off in s:  # lazily deleted entries are skipped
                s.discard(off)
                return off
        return None

    def block_size(self, size: int) -> int:
        """``min{2^k x min_block >= size}`` bytes (at least ``min_block``)."""
        b = self.min_block
        while b < size:
            b *= 2
        return b

    def alloc(self, bid: str, size: int) -> int:
        """Give ``bid`` (``size`` bytes, rounded up to a power-of-two block) the lowest free block
        of the smallest order that fits, splitting larger ones; returns its offset (bytes).
        :class:`PoolError` when no block that large is free."""
        self._check_new(bid, size)
        block = self.block_size(size)
        order = (block // self.min_block).bit_length() - 1
        if order > self.max_order:
            raise PoolError(f"buddy: allocation {bid!r} of {size} bytes needs a {block}-byte "
                            f"block, larger than the pool ({self.pool_size} bytes)")
        o = order
        while o <= self.max_order and not self._free_set[o]:
            o += 1
        if o > self.max_order:
            raise PoolError(f"buddy: allocation {bid!r} of {size} bytes: no free block of "
                            f"{block} bytes or more ({self.allocated} of {self.pool_size} "
                            "bytes allocated)")
        off = self._take(o)
        while o > order:  # split, keep the lower half, free the upper buddy
            o -= 1
            self._add(o, off + self.min_block * (1 << o))
        return self._record(bid, off, size, block)

    def free(self, bid: str) -> None:
        """Free ``bid``'s block and merge it with its free buddies, order by order."""
        off, _, block = self._pop(bid)
        order = (block // self.min_block).bit_length() - 1
        while order < self.max_order:
            buddy = off ^ (self.min_block << order)
            if buddy not in self._free_set[order]:
                break
            self._free_set[order].discard(buddy)  # heap entry removed lazily
            off = min(off, buddy)
            order += 1
        self._add(order, off)


class RingBuffer(Pool):
    """FIFO ring buffer for streaming (seed 002: ``write_ptr = (write_ptr + size) mod size``).

    Allocations are contiguous; one that would cross the end restarts at offset 0 (the skipped
    tail counts as allocated to it). ``free`` must release the oldest live allocation.

    Raises
    ------
    PoolError
        Not enough contiguous space before the oldest live allocation.
    ProblemError
        Freeing out of FIFO order.
    """

    name = "ring"

    def __init__(self, pool_size: int) -> None:
        super().__init__(pool_size)
        self.write_ptr = 0
        self.read_ptr = 0
        self._fifo: OrderedDict[str, None] = OrderedDict()

    @property
    def available(self) -> int:
        """Contiguous-or-not free bytes: ``(read_ptr - write_ptr - 1) mod size`` when something is
        live (seed 002's formula keeps one byte to tell full from empty), ``size`` when empty."""
        if not self.live:
            return self.pool_size
        return (self.read_ptr - self.write_ptr - 1) % self.pool_size

    def alloc(self, bid: str, size: int) -> int:
        """Write ``bid`` (``size`` bytes) at the write pointer, wrapping to 0 when the tail is too
        short; returns its offset (bytes). :class:`PoolError` when it does not fit."""
        self._check_new(bid, size)
        if not self.live:
            self.write_ptr = self.read_ptr = 0
        w, r, n = self.write_ptr, self.read_ptr, self.pool_size
        if not self.live:
            ok, off, block = size <= n, 0, size
        elif w > r or (w == r):  # free space is [w, n) and [0, r)
            if w + size <= n:
                ok, off, block = True, w, size
            else:
                ok, off, block = size < r, 0, size + (n - w)
        else:  # free space is [w, r)
            ok, off, block = w + size < r, w, size
        if not ok:
            raise PoolError(f"ring: allocation {bid!r} of {size} bytes does not fit: "
                            f"{self.available} bytes free, write_ptr {w}, read_ptr {r}")
        self.write_ptr = (off + size) % n
        self._fifo[bid] = None
        self._record(bid, off, size, block)
        return off

    def free(self, bid: str) -> None:
        """Release ``bid``, which must be the oldest live allocation (FIFO order), else
        :class:`ProblemError`."""
        oldest = next(iter(self._fifo), None)
        if bid != oldest:
            raise ProblemError(f"ring: free of {bid!r} out of FIFO order (oldest live is "
                               f"{oldest!r})")
        off, size, _ = self._pop(bid)
        del self._fifo[bid]
        self.read_ptr = (off + size) % self.pool_size
        if self._fifo:
            self.read_ptr = self.live[next(iter(self._fifo))][0]


#: Name -> factory ``f(pool_size) -> Pool`` (fixed blocks get the largest buffer as block).
POOLS = {"buddy": BuddyAllocator, "ring": RingBuffer, "fixed_block": FixedBlockPool}


def replay(problem: Problem, pool: Pool) -> dict:
    """Run a problem's events through a runtime pool, step by step.

    At each step ``t`` (ascending), buffers whose half-open lifetime ends at ``t`` are freed, then
    those starting at ``t`` are allocated in problem order. Zero-size buffers are skipped.
    ``O(n log n)`` plus the pool's cost per call.

    Returns
    -------
    dict
        The pool's :meth:`Pool.stats` plus ``lower_bound`` (max live bytes of the problem) and
        ``offsets`` (int64 array, problem order).

    Raises
    ------
    PoolError
        The pool runs out (the message names the buffer).
    """
    from .bounds import lower_bound

    n = problem.n
    offsets = np.zeros(n, np.int64)
    ev = []
    for i, b in enumerate(problem.buffers):
        if b.size > 0:
            ev.append((b.end, 0, i))
            ev.append((b.start, 1, i))
    ev.sort()
    for _, kind, i in ev:
        b = problem.buffers[i]
        if kind == 0:
            pool.free(b.id)
        else:
            offsets[i] = pool.alloc(b.id, b.size)
    out = pool.stats()
    out["lower_bound"] = lower_bound(problem)
    out["offsets"] = offsets
    return out
