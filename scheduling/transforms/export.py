"""Execution plan export (seed 000 section 2 and the end of section 8).

An execution plan holds what a runtime needs so that no allocator runs on the inference path:

* the **operator sequence**: step, operator name, type, kernel name, fused members, input and
  output tensors;
* the **buffer layout table**: tensor, offset (bytes from the arena base), length (bytes),
  closed lifetime ``[first, last]`` (steps), alias parent and delta;
* the **reuse table**: sets of tensors whose address ranges intersect (they share memory at
  different times, or alias each other);
* the **arena size** (bytes).

:func:`execution_plan` builds it as a JSON-ready dict; :func:`c_header` renders it as a C99 header
(``#define`` of the arena size, an enum of buffer ids, a ``static const`` table of offsets and
lengths, and the operator table), which compiles with any C compiler; :func:`chrome_trace` renders
it as a Chrome / Perfetto trace (Trace Event Format JSON) to open in ``ui.perfetto.dev`` or
``chrome://tracing``.

Numbers are exact: the dict holds Python integers (JSON writes them digit for digit), and the
header picks each field's width from the values it must hold: offsets and lengths are
``uint32_t`` when the arena and every offset + length fit in 32 bits and ``uint64_t`` otherwise
(arenas above 4 GiB); the operator table's argument indices are ``uint16_t`` or ``uint32_t`` the
same way. A C99 compile-time check (a negative array size) guards each choice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from planners.model import Plan

from ..graph import Graph

__all__ = ["execution_plan", "reuse_table", "c_header", "c_identifier", "chrome_trace"]


def reuse_table(plan: Plan) -> list[list[str]]:
    """Groups of buffers whose address ranges ``[offset, offset + size)`` intersect (connected
    components of the address-overlap relation; zero-size buffers excluded), each sorted by
    offset, only groups of two or more; with pools, within each pool (in pool order). A sweep over buffers sorted by offset: ``O(n log n)``."""
    p = plan.problem
    if p.pools and plan.pools is not None:  # offsets are relative to each pool's base
        pools = np.asarray(plan.pools)
        return [g for k in range(len(p.pools))
                for g in _overlap_groups(plan, np.flatnonzero((p.sizes > 0) & (pools == k)))]
    return _overlap_groups(plan, np.flatnonzero(p.sizes > 0))


def _overlap_groups(plan: Plan, idx) -> list[list[str]]:
    """:func:`reuse_table` over the buffers ``idx`` (one address space)."""
    p = plan.problem
    if idx.size == 0:
        return []
    off = plan.offsets[idx]
    order = idx[np.lexsort((p.sizes[idx], off))]
    groups: list[list[str]] = []
    cur: list[str] = []
    top = -1
    for i in order.tolist():
        o, s = int(plan.offsets[i]), int(p.sizes[i])
        if cur and o < top:
            cur.append(p.buffers[i].id)
            top = max(top, o + s)
        else:
            if len(cur) > 1:
                groups.append(cur)
            cur, top = [p.buffers[i].id], o + s
    if len(cur) > 1:
        groups.append(cur)
    return groups


def execution_plan(graph: Graph, plan: Plan, order: Sequence[str] | None = None,
                   pipeline: str = "") -> dict[str, Any]:
    """The execution plan of ``graph`` under ``plan`` (module docstring) as a dict.

    Parameters
    ----------
    graph : Graph
        The (transformed) graph whose :func:`~.base.transformed_problem` was planned.
    plan : Plan
        Its plan; buffer ids are tensor names.
    order : sequence of str, optional
        The schedule used for the problem (default: stored order).
    pipeline : str
        Pass pipeline, recorded verbatim.

    Returns
    -------
    dict
        Keys ``model``, ``pipeline``, ``planner``, ``status``, ``arena_size``, ``lower_bound``,
        ``operators``, ``buffers``, ``reuse``. Tensors of an operator that are not buffers
        (weights, graph inputs, outside the arena) appear with ``"buffer": null``. With memory
        pools (:meth:`planners.Problem.with_pools`) also ``pools`` (``[{"name", "capacity",
        "alignment"}]`` in preference order, capacity ``null`` when unbounded) and ``arenas``
        (``{pool: bytes}``, :attr:`planners.Plan.arenas`, summing to ``arena_size``), and each
        buffer its ``pool`` (name; its offset is relative to that pool's base).
    """
    order = list(graph.ops) if order is None else list(order)
    p = plan.problem
    pooled = bool(p.pools) and plan.pools is not None
    bufs = []
    for k, b in enumerate(p.buffers):
        parent = p.aliases.get(b.id)
        bufs.append({
            "tensor": b.id, "offset": int(plan.offsets[k]), "length": int(b.size),
            "first": b.first_use, "last": b.last_use, "kind": b.kind,
            "alias_parent": parent[0] if parent else None,
            "alias_delta": int(parent[1]) if parent else 0,
        })
        if pooled:
            bufs[-1]["pool"] = p.pools[int(plan.pools[k])].name
    ops = []
    for step, name in enumerate(order):
        op = graph.ops[name]
        ops.append({
            "step": step, "name": name, "op_type": op.op_type,
            "kernel": str(op.attributes.get("kernel", op.op_type.lower())),
            "fused": list(op.attributes.get("fused_ops") or [name]),
            "inputs": list(op.inputs), "outputs": list(op.outputs),
        })
    out = {
        "model": graph.name, "pipeline": pipeline, "planner": plan.planner,
        "status": plan.status, "arena_size": plan.arena_size, "lower_bound": plan.lower_bound,
        "operators": ops, "buffers": bufs, "reuse": reuse_table(plan),
    }
    if pooled:
        out["pools"] = [{"name": q.name, "capacity": q.capacity, "alignment": int(q.alignment)}
                        for q in p.pools]
        out["arenas"] = {name: int(v) for name, v in plan.arenas.items()}
    return out


def c_identifier(name: str, taken: set[str]) -> str:
    """A unique upper-case C identifier for ``name``, added to ``taken``.

    Every character outside ``[0-9A-Za-z_]`` (ASCII) becomes ``_`` and letters are upper-cased;
    an empty result becomes ``T`` and one that starts with a digit gets a ``T`` in front (C99
    6.4.2.1: an identifier starts with a letter or ``_``). Upper case is never a C keyword (the
    keywords of C99/C11 6.4.1 all hold a lower-case letter). Names that collide after this
    (``a.b`` and ``a_b``, ``x`` and ``X``) get ``_2``, ``_3``, ... in the order they come, skipping
    any suffix already in ``taken``, so the result is never in ``taken``.
    """
    base = re.sub(r"[^0-9A-Za-z_]", "_", name).upper() or "T"
    if base[0].isdigit():
        base = "T" + base
    ident, k = base, 1
    while ident in taken:
        k += 1
        ident = f"{base}_{k}"
    taken.add(ident)
    return ident


#: Bytes written as themselves inside a C string literal or comment: printable ASCII except the
#: double quote, the backslash and ``?`` (``??/``, ``??=`` ... are trigraphs in C99/C11 5.2.1.1,
#: translated before anything else; ``\?`` is a simple escape sequence, C99 6.4.4.4).
_C_PLAIN = frozenset(range(0x20, 0x7F)) - {ord('"'), ord("\\"), ord("?")}


def _c_escaped(s: str) -> str:
    """``s`` as printable ASCII for a C99/C11 string literal (without the quotes).

    The text is encoded as UTF-8 (a lone surrogate, which no model format can hold, as its
    three-byte form); ``"`` -> ``\\"``, ``\\`` -> ``\\\\``, ``?`` -> ``\\?`` (no trigraph can
    form), every other byte outside printable ASCII -> a three-digit octal escape ``\\ooo``
    (C99 6.4.4.4: an octal escape ends after three digits, so a following digit is never
    swallowed, unlike ``\\x``). The compiled string holds exactly the UTF-8 bytes of ``s``.

    Raises
    ------
    ValueError
        ``s`` holds a NUL character: a C string ends at the first NUL byte, so it cannot hold it.
    """
    if "\x00" in s:
        raise ValueError(f"name {s!r} holds a NUL character, which a C string cannot hold "
                         "(it would end the string there); rename the tensor or operator")
    out = []
    for byte in s.encode("utf-8", "surrogatepass"):
        if byte in _C_PLAIN:
            out.append(chr(byte))
        elif byte in (0x22, 0x5C, 0x3F):
            out.append("\\" + chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def _c_string(s: str) -> str:
    """``s`` as a C99/C11 string literal whose bytes are exactly the UTF-8 of ``s``
    (:func:`_c_escaped`); one line, no trigraph, compiles under ``-std=c99 -Wall -Werror
    -pedantic`` up to the 4095 bytes a C99 compiler must accept in one literal."""
    return '"' + _c_escaped(s) + '"'


def _c_comment_text(s: str) -> str:
    """``s`` for the inside of a ``/* ... */`` comment: escaped as in a string
    (:func:`_c_escaped`, so no newline, trigraph or non-ASCII byte), with ``*/`` and ``/*``
    broken up (``*\\/``, ``/\\*``) so the comment neither ends early nor nests (``-Wcomment``)."""
    return _c_escaped(s.replace("\x00", "\\0")).replace("*/", "*\\/").replace("/*", "/\\*")


_C_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1


def c_header(ep: dict[str, Any], prefix: str = "memplan") -> str:
    """Render an :func:`execution_plan` dict as a C99 header.

    Defines ``<PREFIX>_ARENA_SIZE``, ``<PREFIX>_NUM_BUFFERS``, ``<PREFIX>_NUM_OPS``, an enum
    ``<PREFIX>_BUF_<TENSOR>`` of buffer indices, ``<prefix>_size_t`` (the type of offsets and
    lengths: ``uint32_t`` when the arena and every ``offset + length`` are below ``2**32`` bytes,
    else ``uint64_t``), ``<prefix>_buffers[]`` (name, offset, length, alias parent index or -1),
    ``<prefix>_op_args[]`` (buffer index per operator argument, -1 for tensors outside the arena)
    and ``<prefix>_ops[]`` (name, kernel, first input, input count, first output, output count into
    ``<prefix>_op_args``; ``uint16_t`` fields, ``uint32_t`` beyond 65535 arguments). Uses only
    ``<stdint.h>``; every literal carries the suffix of its type and a C99 compile-time check
    (``typedef char ...[cond ? 1 : -1]``) fails the build if an edited value no longer fits.

    Any names are safe: every string holds exactly the UTF-8 bytes of its tensor or operator name
    (:func:`_c_string`: newlines, control characters, quotes, backslashes, trigraphs and non-ASCII
    bytes escaped, octal escapes only), the names in the opening comment are escaped the same way
    with ``*/`` and ``/*`` broken up, and enum names come from :func:`c_identifier`, unique after
    sanitising (also against the include guard). The header compiles under ``gcc -std=c99`` and
    ``-std=c11`` with ``-Wall -Wextra -Werror -pedantic`` (``tests/test_export_c_header.py``
    compiles headers of generated hostile names and compares every string byte for byte).

    Raises
    ------
    ValueError
        A negative offset or length, a value above ``2**64 - 1`` bytes (no C field holds it), a
        ``prefix`` that is not a C identifier (``[A-Za-z_][A-Za-z0-9_]*``), or a name holding a
        NUL character (no C string holds it).
    """
    if not isinstance(prefix, str) or not _C_PREFIX.fullmatch(prefix):
        raise ValueError(f"C header prefix {prefix!r} is not a C identifier "
                         "([A-Za-z_][A-Za-z0-9_]*)")
    P, pl = prefix.upper(), prefix.lower()
    taken: set[str] = set()
    ids = {b["tensor"]: c_identifier(b["tensor"], taken) for b in ep["buffers"]}
    model_id = c_identifier(str(ep["model"]), set())
    pools = list(ep.get("pools") or [])
    pool_taken: set[str] = set()
    pool_ids = [c_identifier(str(q["name"]), pool_taken) for q in pools]
    guard = f"{P}_{model_id}_H"
    while (guard.startswith(f"{P}_BUF_") and guard[len(P) + 5:] in taken) or (
            guard.startswith(f"{P}_POOL_") and guard[len(P) + 6:] in pool_taken):  # an enum name
        model_id += "_H"
        guard = f"{P}_{model_id}_H"
    index = {b["tensor"]: k for k, b in enumerate(ep["buffers"])}
    arena = int(ep["arena_size"])
    tops = [arena] + [int(b["offset"]) + int(b["length"]) for b in ep["buffers"]]
    for b in ep["buffers"]:
        if int(b["offset"]) < 0 or int(b["length"]) < 0:
            raise ValueError(f"buffer {b['tensor']!r}: offset {b['offset']} and length "
                             f"{b['length']} must be >= 0 bytes")
    if max(tops) > _U64_MAX:
        raise ValueError(f"execution plan of {ep['model']!s}: offset + length {max(tops)} bytes "
                         f"does not fit a 64-bit C field (<= 2**64 - 1)")
    wide = max(tops) > _U32_MAX
    size_t, suf, size_max = ("uint64_t", "ull", "UINT64_MAX") if wide else ("uint32_t", "u",
                                                                           "UINT32_MAX")
    args: list[int] = []
    op_rows = []
    for op in ep["operators"]:
        i0 = len(args)
        args += [index.get(t, -1) for t in op["inputs"]]
        o0 = len(args)
        args += [index.get(t, -1) for t in op["outputs"]]
        op_rows.append(f"    {{{_c_string(op['name'])}, {_c_string(op['kernel'])}, {i0}u, "
                       f"{o0 - i0}u, {o0}u, {len(args) - o0}u}},")
    if len(args) > _U32_MAX:
        raise ValueError(f"execution plan of {ep['model']!s}: {len(args)} operator arguments do "
                         "not fit a 32-bit index")
    arg_t, arg_max = ("uint16_t", "UINT16_MAX") if len(args) <= 2**16 - 1 else ("uint32_t",
                                                                               "UINT32_MAX")
    lines = [
        f"/* Execution plan of {_c_comment_text(str(ep['model']))}: pipeline "
        f"'{_c_comment_text(str(ep['pipeline'] or 'none'))}', planner "
        f"'{_c_comment_text(str(ep['planner']))}'. Generated by memplan; offsets and lengths in "
        "bytes. */",
        f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", "",
        f"#define {P}_ARENA_SIZE {arena}{suf}",
        f"#define {P}_NUM_BUFFERS {len(ep['buffers'])}",
        f"#define {P}_NUM_OPS {len(ep['operators'])}", "",
    ]
    if pools:  # one arena per pool: its size, an enum of pools, each buffer's pool
        pool_index = {str(q["name"]): k for k, q in enumerate(pools)}
        lines += [f"/* Memory pools in preference order; a buffer's offset is relative to the "
                  f"base of its pool's arena. {P}_ARENA_SIZE is their sum. */",
                  f"#define {P}_NUM_POOLS {len(pools)}"]
        lines += [f"#define {P}_ARENA_{pid}_BYTES {int(ep['arenas'][str(q['name'])])}{suf}"
                  f" /* pool {_c_comment_text(str(q['name']))} */"
                  for pid, q in zip(pool_ids, pools)]
        lines += ["", f"enum {pl}_pool_id {{"]
        lines += [f"    {P}_POOL_{pid} = {k}," for k, pid in enumerate(pool_ids)]
        lines += ["};", f"typedef char {pl}_pools_fit[({P}_NUM_POOLS <= UINT16_MAX) ? 1 : -1];",
                  f"static const char *const {pl}_pool_names[{P}_NUM_POOLS] = {{"]
        lines += [f"    {_c_string(str(q['name']))}," for q in pools]
        lines += ["};", ""]
        if ep["buffers"]:
            cells = [str(pool_index[str(b["pool"])]) + "u" for b in ep["buffers"]]
            lines += [f"/* Pool of each buffer (enum {pl}_pool_id), in buffer order. */",
                      f"static const uint16_t {pl}_buffer_pool[{P}_NUM_BUFFERS] = {{"]
            lines += ["    " + ", ".join(cells[k:k + 16]) + "," for k in range(0, len(cells), 16)]
            lines += ["};", ""]
    lines += [
        f"/* Offsets and lengths (bytes): {size_t}, chosen from the arena. */",
        f"typedef {size_t} {pl}_size_t;",
        f"typedef char {pl}_arena_fits_size_t[({P}_ARENA_SIZE <= {size_max}) ? 1 : -1];",
        f"typedef char {pl}_op_args_fit[({max(len(args), 1)}u <= {arg_max}) ? 1 : -1];",
        f"typedef struct {{ const char *name; {pl}_size_t offset; {pl}_size_t length; int32_t alias_parent; }} {pl}_buffer_t;",
        f"typedef struct {{ const char *name; const char *kernel; {arg_t} in_first, in_count, out_first, out_count; }} {pl}_op_t;",
        "",
    ]
    if ep["buffers"]:
        lines.append(f"enum {pl}_buffer_id {{")
        lines += [f"    {P}_BUF_{ids[b['tensor']]} = {k}," for k, b in enumerate(ep["buffers"])]
        lines += ["};", "", f"static const {pl}_buffer_t {pl}_buffers[{P}_NUM_BUFFERS] = {{"]
        for b in ep["buffers"]:
            par = index[b["alias_parent"]] if b["alias_parent"] is not None else -1
            lines.append(f"    {{{_c_string(b['tensor'])}, {int(b['offset'])}{suf}, "
                         f"{int(b['length'])}{suf}, {par}}},")
        lines.append("};")
    lines += ["", f"static const int32_t {pl}_op_args[{max(len(args), 1)}] = {{"]
    lines += ["    " + ", ".join(str(a) for a in args[k:k + 16]) + ","
              for k in range(0, len(args), 16)] or ["    -1,"]
    lines += ["};", ""]
    if op_rows:
        lines += [f"static const {pl}_op_t {pl}_ops[{P}_NUM_OPS] = {{", *op_rows, "};"]
    lines += ["", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def chrome_trace(ep: dict[str, Any]) -> dict[str, Any]:
    """Render an :func:`execution_plan` dict as a Chrome / Perfetto trace (Trace Event Format).

    Time is the schedule: step ``k`` is ``ts = k`` microseconds of trace time. Two processes:

    * pid 1, ``arena <N> bytes``: one track (thread) per buffer, named after its tensor and
      sorted by offset (``thread_sort_index`` = rank by ``(offset, tensor)``), so the tracks read
      top to bottom as the arena's addresses, as ExecuTorch's memory trace lays out memory; on it
      one ``"X"`` (complete) event per buffer with ``ts = first`` and ``dur = last - first + 1``
      (its closed lifetime ``[first, last]`` in steps) and ``args`` ``offset``, ``size``, ``end``
      (``offset + size``), ``first``, ``last`` (bytes, steps) and ``alias_parent``; and a counter
      (``"C"``) ``live bytes`` with the bytes live at each step (alias children counted in their
      parent only).
    * pid 0, ``schedule``: one ``"X"`` event per operator at its step (``args``: op type, inputs,
      outputs).

    With pools (``ep["pools"]``) each pool is its own process instead of pid 1: pid ``1 + k`` for
    the ``k``-th pool in preference order, named ``pool NAME: arena N bytes``, with its buffers'
    tracks (sorted by offset within the pool, ``args`` also ``pool``) and its own ``live bytes``
    counter; ``metadata`` also holds ``arenas``.

    Returns a JSON-ready dict ``{"traceEvents": [...], "displayTimeUnit": "ms", "metadata":
    {...}}``; numbers are Python integers. ``O(n log n + steps)``.
    """
    bufs = list(ep["buffers"])
    ops = list(ep["operators"])
    arena = int(ep["arena_size"])
    pools = list(ep.get("pools") or [])
    if pools:  # one process (track group) per pool, in preference order
        groups = [(1 + k, f"pool {q['name']}: arena {int(ep['arenas'][q['name']])} bytes "
                          f"({ep['planner']})",
                   [i for i, b in enumerate(bufs) if b.get("pool") == q["name"]])
                  for k, q in enumerate(pools)]
    else:
        groups = [(1, f"arena {arena} bytes ({ep['planner']})", list(range(len(bufs))))]
    ev: list[dict[str, Any]] = [
        {"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "schedule"}},
        {"ph": "M", "pid": 0, "name": "process_sort_index", "args": {"sort_index": 0}},
        {"ph": "M", "pid": 0, "tid": 0, "name": "thread_name", "args": {"name": "operators"}},
    ]
    for pid, title, _ in groups:
        ev += [{"ph": "M", "pid": pid, "name": "process_name", "args": {"name": title}},
               {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}]
    for op in ops:
        ev.append({"ph": "X", "pid": 0, "tid": 0, "name": str(op["name"]), "cat": "operator",
                   "ts": int(op["step"]), "dur": 1,
                   "args": {"op_type": op["op_type"], "inputs": list(op["inputs"]),
                            "outputs": list(op["outputs"])}})
    horizon = max([int(b["last"]) + 1 for b in bufs] + [len(ops)])
    for pid, _, members in groups:
        rank = sorted(members, key=lambda k: (int(bufs[k]["offset"]), str(bufs[k]["tensor"])))
        delta = [0] * (horizon + 1)
        for pos, k in enumerate(rank):
            b = bufs[k]
            tid = k + 1
            off, size = int(b["offset"]), int(b["length"])
            first, last = int(b["first"]), int(b["last"])
            ev.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                       "args": {"name": f"{b['tensor']} @{off}"}})
            ev.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": pos}})
            args = {"offset": off, "size": size, "end": off + size, "first": first,
                    "last": last, "alias_parent": b.get("alias_parent")}
            if pools:
                args["pool"] = b["pool"]
            ev.append({"ph": "X", "pid": pid, "tid": tid, "name": str(b["tensor"]),
                       "cat": "buffer", "ts": first, "dur": last - first + 1, "args": args})
            if not b.get("alias_parent"):
                delta[first] += size
                delta[last + 1] -= size
        live = 0
        for step in range(horizon + 1):
            live += delta[step]
            ev.append({"ph": "C", "pid": pid, "tid": 0, "name": "live bytes", "ts": step,
                       "args": {"bytes": live}})
    meta = {"model": str(ep["model"]), "pipeline": ep["pipeline"],
            "planner": ep["planner"], "arena_size": arena,
            "lower_bound": int(ep["lower_bound"]),
            "time_unit": "1 us of trace time = 1 schedule step"}
    if pools:
        meta["arenas"] = {q["name"]: int(ep["arenas"][q["name"]]) for q in pools}
    return {"traceEvents": ev, "displayTimeUnit": "ms", "metadata": meta}
