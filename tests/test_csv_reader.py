"""The column-wise path of ``read_minimalloc_csv`` against its row-by-row path.

A plain file (no quotes, no blank lines, every row as wide as the header) is parsed column-wise;
anything else, and any file with an error, is read row by row. Both must give equal problems, and
every error message must be the row-by-row path's.
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planners.io as io
from planners import ProblemError
from planners.io import read_minimalloc_csv


def _read_both(path):
    """(column-wise result, row-by-row result); each a Problem or the ProblemError message."""
    out = []
    for fast in (True, False):
        patch = mock.patch.object(io, "_plain_buffers", io._plain_buffers if fast else (lambda *a: None))
        with patch:
            try:
                out.append(read_minimalloc_csv(path))
            except ProblemError as e:
                out.append(str(e))
    return out


def _same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a.buffers == b.buffers
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


@settings(max_examples=80, deadline=None)
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
    "empty id": "id,lower,upper,size\na,0,2,8\n ,0,2,1\n",
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
