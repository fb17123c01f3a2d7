"""The fast paths of ``read_minimalloc_csv`` against its row-by-row path.

A plain ASCII file with no spaces (no quotes, no blank lines, every row as wide as the header,
integers ``[+-]?[0-9]{1,18}``) is parsed with numpy from its bytes (``_fast_columns``); another
plain file (spaces, underscores in integers, long ids) column-wise in Python (``_plain_buffers``);
anything else, and any file with an error, is read row by row. All must give equal problems, and
every error message must be the row-by-row path's.
"""

from __future__ import annotations

from unittest import mock

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import planners.io as io
from planners import ProblemError
from planners.io import read_minimalloc_csv


def _read_all(path):
    """(numpy-path result, column-wise result, row-by-row result); each a Problem or the
    ProblemError message. Each path is disabled by making it decline the file."""
    out = []
    for numpy_path, plain_path in ((True, True), (False, True), (False, False)):
        with mock.patch.object(
            io, "_fast_columns", io._fast_columns if numpy_path else (lambda *a: None)
        ), mock.patch.object(
            io, "_plain_buffers", io._plain_buffers if plain_path else (lambda *a: None)
        ):
            try:
                out.append(read_minimalloc_csv(path))
            except ProblemError as e:
                out.append(str(e))
    return out


def _read_both(path):
    """(numpy-path result, row-by-row result), after checking the column-wise path agrees."""
    fast, plain, slow = _read_all(path)
    _same(plain, slow)
    return fast, slow


def _same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a.buffers == b.buffers
    assert a.ids == b.ids and a.index == b.index
    assert (a.name, a.capacity, a.alignment) == (b.name, b.capacity, b.alignment)
    for attr in ("starts", "ends", "sizes", "alignments"):
        assert getattr(a, attr).tolist() == getattr(b, attr).tolist()


def _int_text(draw, value):
    text = draw(st.sampled_from(["{}", " {}", "{} ", "+{}", "0{}"])) if value >= 0 else "{}"
    return text.format(value)


@st.composite
def plain_files(draw):
    n = draw(st.integers(1, 30))
    with_align = draw(st.booleans())
    extra = draw(st.booleans())
    cols = ["id", "lower", "upper", "size"] + (["alignment"] if with_align else [])
    cols += ["note"] if extra else []
    cols = draw(st.permutations(cols))
    lines = [",".join(f" {c}" if draw(st.booleans()) else c for c in cols)]
    for i in range(n):
        s = draw(st.integers(-5, 50))
        row = {
            "id": draw(st.sampled_from([f"b{i}", f" t{i} ", f"x_{i}"])),
            "lower": _int_text(draw, s),
            "upper": _int_text(draw, s + draw(st.integers(1, 9))),
            "size": _int_text(draw, draw(st.integers(0, 2**40))),
            "alignment": draw(st.sampled_from(["", " ", "1", "8", "3", " 16"])),
            "note": draw(st.sampled_from(["", "abc", "x y"])),
        }
        lines.append(",".join(row[c] for c in cols))
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@settings(max_examples=examples(80), deadline=None)
@given(plain_files())
def test_column_wise_equals_row_by_row(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("csv") / "p.64.csv"
    path.write_text(text)
    fast, slow = _read_both(path)
    _same(fast, slow)
    assert not isinstance(fast, str)
    assert fast.capacity == 64
    # the file is plain, so the column-wise path read it
    with mock.patch.object(io, "_checked_rows", side_effect=AssertionError("row path used")):
        read_minimalloc_csv(path)


#: Awkward files: errors, and valid files the column-wise path leaves to the row-by-row path.
BAD_FILES = {
    "negative size": "id,lower,upper,size\na,0,2,8\nb,0,2,-1\n",
    "end not after start": "id,lower,upper,size\na,0,2,8\nb,3,3,1\n",
    "not an integer": "id,lower,upper,size\na,0,2,8\nb,0,x,1\n",
    "empty field": "id,lower,upper,size\na,0,2,8\nb,0,,1\n",
    "empty id": "id,lower,upper,size\na,0,2,8\n,0,2,1\n",  # " " is an id (never stripped)
    "duplicate id": "id,lower,upper,size\na,0,2,8\na,0,2,1\n",
    "too large": f"id,lower,upper,size\na,0,2,{2**62}\n",
    "too small": f"id,lower,upper,size\na,{-(2**62)},2,1\n",
    "beyond int64": f"id,lower,upper,size\na,0,2,{2**64}\n",
    "alignment 0": "id,lower,upper,size,alignment\na,0,2,8,0\n",
    "more fields": "id,lower,upper,size\na,0,2,8,9\n",
    "fewer fields": "id,lower,upper,size\na,0,2\n",
    "blank line": "id,lower,upper,size\na,0,2,8\n\nb,0,2,8\n",
    "quoted": 'id,lower,upper,size\n"a,b",0,2,8\n',
    "carriage returns": "id,lower,upper,size\r\na,0,2,8\r\n",
    "header only": "id,lower,upper,size\n",
    "range rule": f"id,lower,upper,size\na,0,2,{2**62 - 1}\nb,0,2,{2**62 - 1}\nc,0,2,9\n",
    "field over the csv limit": "id,lower,upper,size\n" + "a" * 200_000 + ",0,2,8\n",
    "ok": "id,lower,upper,size\na,0,2,8\nb,1,3,4\n",
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_same_result_and_errors_on_awkward_files(tmp_path, case):
    path = tmp_path / "f.csv"
    path.write_text(BAD_FILES[case])
    fast, slow = _read_both(path)
    _same(fast, slow)
    if case in ("ok", "carriage returns", "blank line", "quoted"):
        assert not isinstance(fast, str)
    else:
        assert isinstance(fast, str) and str(path) in fast


@st.composite
def numpy_plain_files(draw):
    """Files the numpy path must read itself: ASCII, no spaces, integers [+-]?[0-9]{1,18}."""
    n = draw(st.integers(1, 40))
    with_align = draw(st.booleans())
    cols = ["id", "lower", "upper", "size"] + (["alignment"] if with_align else [])
    cols += draw(st.lists(st.sampled_from(["note", "lower"]), max_size=2))  # extra, duplicate
    cols = draw(st.permutations(cols))
    lines = [",".join(f" {c}" if draw(st.booleans()) else c for c in cols)]

    def num(v):
        return draw(st.sampled_from(["{}", "+{}", "00{}"])).format(v) if v >= 0 else str(v)

    for i in range(n):
        s = draw(st.integers(-(10**17), 10**17))
        row = {
            "id": draw(st.sampled_from([f"b{i}", f"x_{i}", f"T{i}:out/0", "#" * (i + 1)])),
            "lower": num(s),
            "upper": num(s + draw(st.integers(1, 10**12))),
            "size": num(draw(st.integers(0, 10**15))),
            "alignment": draw(st.sampled_from(["", "1", "8", "+3", "016"])),
            "note": draw(st.sampled_from(["", "abc", "-"])),
        }
        lines.append(",".join(row[c] for c in cols))
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@settings(max_examples=examples(80), deadline=None)
@given(numpy_plain_files())
def test_numpy_path_equals_row_by_row(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("csv") / "q.128.csv"
    path.write_text(text)
    fast, slow = _read_both(path)
    if isinstance(slow, str):  # e.g. the range rule or a duplicate "lower" column's values
        assert fast == slow
        return
    _same(fast, slow)
    # the numpy path read it: neither slower path ran
    with mock.patch.object(io, "_plain_buffers", side_effect=AssertionError("plain path used")), \
            mock.patch.object(io, "_checked_rows", side_effect=AssertionError("row path used")):
        again = read_minimalloc_csv(path)
    _same(again, slow)


@settings(max_examples=examples(150), deadline=None)
@given(numpy_plain_files(), st.data())
def test_mutated_files_same_result_on_every_path(tmp_path_factory, text, data):
    """One character of a valid file replaced or inserted (a malformed row, a field too many or
    too few, a sign alone, a dot, a blank line, a space, a non-ASCII id): every path gives the same
    problem or the same error message, naming the file and the line."""
    pos = data.draw(st.integers(0, len(text)))
    ch = data.draw(st.sampled_from([",", "\n", "-", "+", ".", "e", " ", "_", "x", "9", "0", "é",
                                    "\t", '"']))
    replace = data.draw(st.booleans())
    text = text[:pos] + ch + text[pos + (1 if replace else 0):]
    path = tmp_path_factory.mktemp("csv") / "m.csv"
    path.write_text(text)
    fast, plain, slow = _read_all(path)
    _same(fast, slow)
    _same(plain, slow)


NUMPY_EDGE_FILES = {
    "signs and zeros": "id,lower,upper,size\na,-0,+2,007\nb,-5,-1,+0\n",
    "18 digits": f"id,lower,upper,size\na,0,{10**18 - 1},{10**18 - 1}\n",
    "19 digits": f"id,lower,upper,size\na,0,2,{10**18}\n",
    "19 digits with zeros": "id,lower,upper,size\na,0,2,0000000000000000001\n",
    "sign alone": "id,lower,upper,size\na,0,2,-\n",
    "plus alone": "id,lower,upper,size\na,+,2,1\n",
    "double sign": "id,lower,upper,size\na,0,2,+-1\n",
    "exponent": "id,lower,upper,size\na,0,2,1e3\n",
    "decimal": "id,lower,upper,size\na,0,2,1.0\n",
    "underscore": "id,lower,upper,size\na,0,2,1_000\n",
    "empty alignment": "id,lower,upper,size,alignment\na,0,2,8,\nb,0,2,8,4\n",
    "alignment 0": "id,lower,upper,size,alignment\na,0,2,8,\nb,0,2,8,0\n",
    "alignment -4": "id,lower,upper,size,alignment\na,0,2,8,-4\n",
    "long id": "id,lower,upper,size\n" + "a" * 65 + ",0,2,8\nb,0,2,8\n",
    "header spaces": " id , lower,upper , size\na,0,2,8\n",
    "duplicate header column": "id,size,lower,upper,size\na,1,0,2,8\n",
    "two trailing newlines": "id,lower,upper,size\na,0,2,8\n\n",
    "no trailing newline": "id,lower,upper,size\na,0,2,8",
    "non-ASCII id": "id,lower,upper,size\nné,0,2,8\n",
    "tab": "id,lower,upper,size\na,0,2,\t8\n",
    "NUL": "id,lower,upper,size\na,0,2,8\x00\n",
    "unit separator": "id,lower,upper,size\na\x1f,0,2,8\n",
    "empty last field": "id,lower,upper,size\na,0,2,\n",
    "duplicate ids": "id,lower,upper,size\na,0,2,8\nb,0,2,8\na,1,2,8\n",
    "capacity 0 in the name": "id,lower,upper,size\na,0,2,8\n",
}


@pytest.mark.parametrize("case", sorted(NUMPY_EDGE_FILES))
def test_numpy_path_edge_cases(tmp_path, case):
    path = tmp_path / ("f.0.csv" if "capacity" in case else "f.csv")
    path.write_text(NUMPY_EDGE_FILES[case])
    fast, plain, slow = _read_all(path)
    _same(fast, slow)
    _same(plain, slow)
    if case in ("signs and zeros", "18 digits", "empty alignment", "header spaces",
                "duplicate header column", "no trailing newline"):
        assert not isinstance(fast, str)
        got = io._fast_columns(path.read_bytes(), [h.strip() for h in
                               NUMPY_EDGE_FILES[case].split("\n")[0].split(",")],
                               "alignment" in NUMPY_EDGE_FILES[case].split("\n")[0])
        assert got is not None  # read by the numpy path itself
    if case == "signs and zeros":
        assert (fast.starts.tolist(), fast.ends.tolist(), fast.sizes.tolist()) == (
            [0, -5], [2, -1], [7, 0])
    if case == "empty alignment":
        assert [b.alignment for b in fast.buffers] == [None, 4]
        assert fast.alignments.tolist() == [1, 4]
    if case in ("sign alone", "plus alone", "double sign", "exponent", "decimal", "alignment 0",
                "alignment -4", "empty last field", "duplicate ids"):
        assert isinstance(fast, str) and str(path) in fast


# -- ids are never normalised (planners.io module docstring) ---------------------------------------

#: Pairs of files whose ids differ only by a newline or surrounding spaces: each id is kept.
DISTINCT_IDS = {
    "surrounding spaces": ("id,lower,upper,size\na,0,2,8\n a ,0,2,8\na ,0,2,8\n", ["a", " a ", "a "]),
    "tab": ("id,lower,upper,size\na,0,2,8\n\ta,0,2,8\n", ["a", "\ta"]),
    "newline in a quoted id": ('id,lower,upper,size\n"a\n",0,2,8\na,0,2,8\n', ["a\n", "a"]),
    "CRLF rows, CR LF in a quoted id": ('id,lower,upper,size\r\n"a\r\n",0,2,8\r\na,0,2,8\r\n',
                                       ["a\r\n", "a"]),
    "lone CR in a quoted id": ('id,lower,upper,size\n"a\rb",0,2,8\nab,0,2,8\n', ["a\rb", "ab"]),
    "line separators are not rows": ("id,lower,upper,size\na\x0b,0,2,8\na\u2028,0,2,8\na,0,2,8\n",
                                     ["a\x0b", "a\u2028", "a"]),
    "id only spaces": ("id,lower,upper,size\n ,0,2,8\n  ,0,2,8\n", [" ", "  "]),
    "quoted, with commas and quotes": ('id,lower,upper,size\n"x,y",0,2,8\n"q""q",0,2,8\n',
                                       ["x,y", 'q"q']),
}


@pytest.mark.parametrize("case", sorted(DISTINCT_IDS))
def test_ids_that_differ_only_by_spaces_or_newlines_stay_distinct(tmp_path, case):
    text, ids = DISTINCT_IDS[case]
    path = tmp_path / "f.csv"
    path.write_bytes(text.encode())
    fast, slow = _read_both(path)
    _same(fast, slow)
    assert slow.ids == ids


@pytest.mark.parametrize("text, needle", [
    ("id,lower,upper,size\na,0,2,8\n,0,2,8\n", ":3: missing value for column 'id'"),
    ('id,lower,upper,size\na,0,2,8\n"",0,2,8\n', ":3: missing value for column 'id'"),
    ("id,lower,upper,size\n a,0,2,8\n a,1,2,8\n", "duplicate buffer id ' a'"),
])
def test_empty_and_equal_ids_are_refused_naming_the_rule(tmp_path, text, needle):
    path = tmp_path / "f.csv"
    path.write_text(text)
    fast, slow = _read_both(path)
    _same(fast, slow)
    assert isinstance(slow, str) and str(path) in slow and needle in slow


_ID_CHARS = st.one_of(
    st.sampled_from(list(' \t\n\r,"\'\x0b\x0c\x1c\x1f\x85\u2028\u2029\xa0é€;x0')),
    st.characters(exclude_characters="\x00", exclude_categories=("Cs",)))


@settings(max_examples=examples(150), deadline=None)
@given(ids=st.lists(st.text(_ID_CHARS, min_size=1, max_size=12), min_size=1, max_size=20,
                    unique=True), data=st.data())
def test_write_then_read_keeps_every_id_byte_for_byte(tmp_path_factory, ids, data):
    """Any non-empty ids (commas, quotes, CR, LF, spaces, line separators, non-ASCII) survive
    write_minimalloc_csv -> read_minimalloc_csv exactly, with their offsets (read_offsets)."""
    import numpy as np

    from experiments.cli.check import read_offsets
    from planners import Buffer, Plan, Problem
    from planners.io import write_minimalloc_csv

    n = len(ids)
    starts = data.draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    p = Problem([Buffer(i, s, s + 1, 8 * (k + 1)) for k, (i, s) in enumerate(zip(ids, starts))])
    offsets = np.cumsum([0] + [8 * (k + 1) for k in range(n - 1)]).astype(np.int64)
    path = tmp_path_factory.mktemp("csv") / "p.csv"
    write_minimalloc_csv(p, path, Plan(p, offsets, "test", "heuristic"))
    fast, slow = _read_both(path)
    _same(fast, slow)
    assert slow.ids == ids
    assert [b.id.encode() for b in slow.buffers] == [i.encode() for i in ids]
    assert read_offsets(path, slow.ids) == offsets.tolist()
