"""The C header export holds any name: it compiles under C99 and C11 and every string in it equals
the original name byte for byte (issue #23 section 3).

Headers are made from hostile names (newlines and every control character, the nine trigraphs,
quotes, backslashes, ``*/`` and ``/*``, non-ASCII, names that collide after sanitising, C keywords,
leading digits), compiled with ``gcc -std=c99`` / ``-std=c11`` ``-Wall -Wextra -Werror -pedantic``
together with a small C file that prints every string's bytes in hex, run, and the bytes compared
with the UTF-8 of the names. Skipped with a reason where no C compiler is on ``PATH``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import examples, shared_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.cli import main as memplan_main
from scheduling.transforms.export import c_header, c_identifier

CC = shutil.which("gcc") or shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (gcc or cc) on PATH")

STANDARDS = ("c99", "c11")

#: Hand-picked names: every trigraph, escapes, comment markers, collisions after sanitising,
#: keywords, leading digits, octal-escape neighbours (a digit after a non-ASCII byte), non-ASCII.
HOSTILE = [
    "new\nline", "cr\rlf\r\n", "tab\there", "bell\a\b\f\v", "\x01\x1f\x7f", "esc\x1b[0m",
    "??/", "??=", "??(", "??)", "??'", "??<", "??!", "??>", "??-", "a??/\nb", "???/", "?", "??",
    'quote"d', "back\\slash", "ends with \\", "\\", '"', "'", "*/", "/*", "/* x */", "*/ int x; /*",
    "// line", "#define X 1", "é1", "\u00e9\u0031\u0032", "\u20ac7", "\U0001d11e0", "\u2028\x85",
    "\xff", "a.b", "a_b", "A_B", "A_B_2", "a-b", "x", "X", "int", "for", "_Bool", "1x", "T1X",
    "123", "", " ", "  lead and trail  ", "a" * 300, "tensor:0", "MEMPLAN_BUF_A",
]

_SPECIAL = st.sampled_from(list("\n\r\t\v\f\a\b\x1b\x7f\x01\x1f\"\\'?=()<>!-/*#% 0189afAF_.:\u00e9\u20ac\u2028\x85\U0001d11e"))
_CHAR = st.one_of(_SPECIAL, st.characters(exclude_characters="\x00", exclude_categories=("Cs",)))
NAMES = st.text(_CHAR, max_size=24)


def _plan(names: list[str], model: str = "m", pipeline: str = "p", planner: str = "q") -> dict:
    """An execution-plan dict with one buffer per name and one operator per name (reading the
    previous buffer, writing its own), as :func:`execution_plan` makes it."""
    bufs = [{"tensor": n, "offset": 16 * k, "length": 16, "first": k, "last": k + 1,
             "kind": "activation", "alias_parent": None, "alias_delta": 0}
            for k, n in enumerate(names)]
    ops = [{"step": k, "name": n, "op_type": "Relu", "kernel": n[::-1] + "??/",
            "fused": [n], "inputs": [names[k - 1]] if k else ["outside" + n],
            "outputs": [n]} for k, n in enumerate(names)]
    return {"model": model, "pipeline": pipeline, "planner": planner, "status": "heuristic",
            "arena_size": 16 * len(names), "lower_bound": 0, "operators": ops, "buffers": bufs,
            "reuse": []}


_MAIN = r"""
#include <stdio.h>
%(includes)s
static void hex(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) printf("%%02x", *p++);
  printf("\n");
}
int main(void) {
  int i;
%(body)s
  return 0;
}
"""


def _compile_and_run(tmp: Path, headers: list[tuple[str, dict]], std: str) -> list[str]:
    """Write each ``(prefix, plan)`` as ``h<k>.h``, compile one C file including them all with
    ``-std=<std> -Wall -Wextra -Werror -pedantic``, run it; the printed lines (hex bytes of every
    buffer name, then every operator name and kernel, header after header)."""
    body = []
    for k, (prefix, ep) in enumerate(headers):
        (tmp / f"h{k}.h").write_text(c_header(ep, prefix), encoding="ascii")
        P, pl = prefix.upper(), prefix.lower()
        if ep["buffers"]:
            body.append(f"  for (i = 0; i < {P}_NUM_BUFFERS; i++) hex({pl}_buffers[i].name);")
        if ep["operators"]:
            body.append(f"  for (i = 0; i < {P}_NUM_OPS; i++) {{ hex({pl}_ops[i].name); "
                        f"hex({pl}_ops[i].kernel); }}")
    includes = "\n".join(f'#include "h{k}.h"' for k in range(len(headers)))
    (tmp / "main.c").write_text(_MAIN % {"includes": includes, "body": "\n".join(body)})
    exe = tmp / f"a_{std}.out"
    r = subprocess.run([CC, f"-std={std}", "-Wall", "-Wextra", "-Werror", "-pedantic", "-o",
                        str(exe), str(tmp / "main.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return subprocess.run([str(exe)], check=True, capture_output=True,
                          text=True).stdout.splitlines()


def _expected(headers: list[tuple[str, dict]]) -> list[str]:
    out = []
    for _, ep in headers:
        out += [b["tensor"].encode().hex() for b in ep["buffers"]]
        for op in ep["operators"]:
            out += [op["name"].encode().hex(), op["kernel"].encode().hex()]
    return out


@needs_cc
@pytest.mark.parametrize("std", STANDARDS)
def test_hand_picked_hostile_names_compile_and_equal_byte_for_byte(tmp_path, std):
    headers = [("memplan", _plan(HOSTILE, model="m */ /* ??/\n\\", pipeline="a??/\nb*/",
                                 planner="q\"\\\u00e9")),
               ("p", _plan(["h", "a_h"], model="buf_a")),  # guard P_BUF_A_H vs enum P_BUF_A_H
               ("_x1", _plan(["MEMPLAN_BUF_A"], model="1"))]
    assert _compile_and_run(tmp_path, headers, std) == _expected(headers)


@needs_cc
@settings(max_examples=examples(12), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(groups=st.lists(st.lists(NAMES, min_size=1, max_size=12, unique=True), min_size=1,
                       max_size=4),
       model=NAMES, std=st.sampled_from(STANDARDS))
def test_generated_hostile_names_compile_and_equal_byte_for_byte(tmp_path, groups, model, std):
    headers = [(f"p{k}", _plan(names, model=model, pipeline=model[::-1], planner=model + "*/"))
               for k, names in enumerate(groups)]
    assert _compile_and_run(tmp_path, headers, std) == _expected(headers)


@needs_cc
@pytest.mark.parametrize("std", STANDARDS)
def test_shared_case_newline_name_header_compiles(tmp_path, std, capsys):
    """``cheader_newline_name.onnx``: a tensor named ``new<LF>line`` (was written raw)."""
    model = shared_case("cheader_newline_name.onnx")
    out = tmp_path / "plan.h"
    assert memplan_main(["export", str(model), "--format", "c-header", "-o", str(out)]) == 0
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include <string.h>\n#include "plan.h"\nint main(void) {\n'
        "  int i, n = 0;\n"
        "  for (i = 0; i < MEMPLAN_NUM_BUFFERS; i++)\n"
        '    n += strcmp(memplan_buffers[i].name, "new\\nline") == 0;\n'
        '  printf("%d %d\\n", n, MEMPLAN_NUM_BUFFERS);\n  return 0;\n}\n')
    exe = tmp_path / "a.out"
    r = subprocess.run([CC, f"-std={std}", "-Wall", "-Werror", "-pedantic", "-o", str(exe),
                        str(tmp_path / "main.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert subprocess.run([str(exe)], check=True, capture_output=True,
                          text=True).stdout.split() == ["1", "2"]


def test_header_is_ascii_without_trigraphs_or_raw_newlines_in_strings():
    hdr = c_header(_plan(HOSTILE, model="??/", pipeline="*/", planner="/*"))
    assert hdr.isascii() and "??" not in hdr
    assert hdr.count("/*") == hdr.count("*/")  # no comment ends early or nests
    for line in hdr.splitlines():
        if line.startswith("    {\""):
            assert line.endswith("},")  # a whole row on one line


def test_nul_in_a_name_and_a_bad_prefix_are_refused():
    with pytest.raises(ValueError, match="NUL"):
        c_header(_plan(["a\x00b"]))
    for prefix in ("1abc", "my-prefix", "", "a b"):
        with pytest.raises(ValueError, match="not a C identifier"):
            c_header(_plan(["a"]), prefix)


def test_c_identifier_is_unique_and_a_valid_identifier():
    taken: set[str] = set()
    names = ["a.b", "a_b", "A_B", "A_B_2", "1x", "T1X", "", "int", "é"]
    ids = [c_identifier(n, taken) for n in names]
    assert ids == ["A_B", "A_B_2", "A_B_3", "A_B_2_2", "T1X", "T1X_2", "T", "INT", "_"]
    assert len(set(ids)) == len(ids) == len(taken)
