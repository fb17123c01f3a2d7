"""MiniMalloc CSV reading and writing, and the one atomic-write helper for results.

Format (MiniMalloc, google/minimalloc): a header ``id,lower,upper,size`` and one row per buffer with a
**half-open** lifetime ``[lower, upper)`` in steps and a size in bytes. Optional column ``alignment``
(bytes). A solved file adds a column ``offset``. MiniMalloc names its benchmark files
``NAME.CAPACITY.csv`` (e.g. ``A.1048576.csv``); :func:`capacity_from_name` reads that capacity.
A file whose sizes are affine expressions in named dims (a ``# dims: seq=1..2048`` line before the
header, ``size`` cells such as ``64*seq+128``) is :mod:`planners.symbolic`'s; this reader refuses
it in one line naming that reader.

**MiniMalloc's full dialect** (``src/converter.cc``, ``FromCsv``/``ToCsv``): header aliases
``buffer`` and ``buffer_id`` for ``id``, ``start`` and ``begin`` for ``lower``, and ``end`` for
``upper`` with an **inclusive** end (``upper = end + 1``, also for the gaps' upper ends); optional
columns ``hint`` (a preferred offset; ``-1`` or empty: none, another negative value is
refused), ``gaps`` (space-separated
``lower-upper`` or ``lower-upper@lo:hi``: a sub-interval of the lifetime in which the buffer takes
nothing, or only the window ``[lo, hi)`` of its range; :class:`~planners.model.Gap`) and
``offset``: on input a **fixed position** (a pin) unless ``offsets="ignore"`` (empty or ``-1``:
not fixed; MiniMalloc fixes every given offset). memplan's own columns: ``pools`` (space-separated
candidate pool names; empty: any) and ``kind`` (``scratch`` for an operator's one-step
temporary, :mod:`planners.scratch`; empty: ``activation``) on input, and ``pool`` (the pool of each buffer) on output of a
plan with pools; read back with pools, a fixed offset is fixed in that pool. Two columns that alias one name are refused, as MiniMalloc does.

**Alias and colocation groups** (:class:`~planners.model.Problem` ``aliases`` and
``colocations``) travel in three more memplan columns, written only when the problem has such
groups: ``alias_of`` (the parent's id of an alias child, e.g. an in-place result sitting in its
input; empty for a buffer that is no child) with ``alias_delta`` (bytes from the parent's offset
to the child's; empty or ``0``), and ``colocate`` (for every member of a colocation group the id of
the group's first member, that member included; empty elsewhere). Without them a plan of a
problem with groups would read back as independent buffers, and the members that share addresses
on purpose would be reported as overlaps. MiniMalloc's reader (``FromCsv``) accepts the file: it
maps every header column and reads only those it knows.

**Ids are never normalised.** An id is the ``id`` field byte for byte as the CSV rules (RFC 4180,
Python's ``csv`` module) give it: surrounding spaces and tabs are part of the id, and a quoted id
keeps its commas, doubled quotes, carriage returns and newlines. So ``a``, `` a `` and ``"a<LF>"``
are three different buffers, and :func:`write_minimalloc_csv` (which quotes where needed) followed
by :func:`read_minimalloc_csv` gives back every id exactly. An empty id is refused (naming the
file and line), and so are two equal ids. Header names and integer fields are read with
surrounding spaces stripped, as before.

:func:`atomic_write` / :func:`atomic_output` write every result file of the toolkit (temporary
file beside it, ``fsync``, :func:`os.replace`, temporary removed on any error) and turn a failed
write into one :class:`~planners.errors.OutputError` naming the path and the cause.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import gc
import io
import os
import re
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .errors import OutputError, ProblemError
from .model import Buffer, Plan, Problem

__all__ = ["read_minimalloc_csv", "write_minimalloc_csv", "minimalloc_csv_text", "csv_dict_reader", "capacity_from_name", "atomic_write",
           "atomic_output", "output_folder", "output_error", "OutputError", "parse_pools", "pools_text"]


# -- writing results: one atomic-write helper and one error -------------------------------------


def package_folder(name: str) -> Path | None:
    """The folder of the installed package ``name`` (its first search location), found with
    :func:`importlib.util.find_spec` without importing it; ``None`` where it is not installed or
    is a plain module. For the data and source files other packages ship (ONNX Runtime's shape
    tool, torch's operator schemas, models inside wheels) read without paying for, or needing,
    their imports. Raises nothing."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def output_error(path: str | os.PathLike, exc: OSError) -> OutputError:
    """The :class:`OutputError` for an ``OSError`` met while writing ``path``: ``cannot write
    PATH: CAUSE``, the cause in words (a missing parent folder and a parent that is not a folder
    are named as such; otherwise the system's text: ``No space left on device``, ``Read-only file
    system``, ...). Keeps ``errno``."""
    path = Path(path)
    parent = path.parent
    code = getattr(exc, "errno", None)
    if code == errno.ENOENT and not parent.exists():
        cause = f"its folder {parent} does not exist"
    elif code == errno.ENOTDIR or (code in (errno.ENOENT, errno.EEXIST)
                                   and parent.exists() and not parent.is_dir()):
        cause = f"{_first_non_folder(parent)} is not a folder"
    else:  # the system's words for the errno (a library's own text, e.g. Arrow's, only if none)
        cause = os.strerror(code) if code else (exc.strerror or str(exc))
    err = OutputError(f"cannot write {path}: {cause}")
    err.errno, err.strerror, err.filename = code, exc.strerror, str(path)
    return err


def _first_non_folder(folder: Path) -> Path:
    """The first ancestor of ``folder`` (from the root) that exists and is not a folder, else
    ``folder`` itself."""
    for p in reversed([folder, *folder.parents]):
        if p.exists() and not p.is_dir():
            return p
    return folder


def output_folder(folder: str | os.PathLike) -> Path:
    """Create ``folder`` and its parents (``mkdir -p``) for results and return it; an
    :class:`OutputError` naming the folder and the cause when it cannot be (a parent that is a
    file, a read-only file system, ...)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"cannot write {folder}: it exists and is not a folder") from None
    except OSError as e:
        raise output_error(folder / ".", e) from None
    return folder


def _tmp_name(path: Path) -> Path:
    """The temporary file beside ``path`` for one writer: ``.NAME.PID.THREAD.tmp`` (hidden, so
    globs over the folder skip it; ``memplan sweep`` removes dead ones on start). Long names are
    cut to 100 characters so the temporary name stays within the 255 bytes of a file name."""
    return path.with_name(f".{path.name[:100]}.{os.getpid()}.{threading.get_ident()}.tmp")


def _is_special(path: Path) -> bool:
    """``path`` exists and is neither a regular file nor a folder (``/dev/stdout``, a FIFO,
    ``/dev/full``): written in place, never replaced by a rename."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, make_parents: bool = False) -> Iterator[Path]:
    """Write one result file atomically through a writer that takes a path (``savefig``,
    ``to_parquet``, a ``csv`` writer): yields the temporary path beside ``path`` to write; when the
    block ends without error the file is flushed to disk (``fsync``) and renamed onto ``path``
    (:func:`os.replace`, atomic on POSIX), so a reader never sees a partial file and a killed or
    failed writer leaves the old file as it was. On any error the temporary file is removed; an
    ``OSError`` (full disk, read-only file system, missing or non-folder parent, ...) becomes an
    :class:`OutputError` naming ``path`` and the cause, other errors pass unchanged.

    ``make_parents`` creates missing parent folders (for files inside an output folder); without
    it a missing parent is an error (a path the user gave with ``-o``). A symbolic link is
    followed (its target is replaced). A ``path`` that exists and is not a regular file (a device
    such as ``/dev/stdout`` or ``/dev/full``, a FIFO) is written in place, not replaced.
    """
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if path.is_dir() or not path.name:
        raise OutputError(f"cannot write {path}: it is a folder (give a file name)")
    if make_parents:
        output_folder(path.parent)
    if _is_special(path):
        try:
            yield path
        except OSError as e:
            raise output_error(path, e) from None
        return
    tmp = _tmp_name(path)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(e, OSError) and not isinstance(e, OutputError):
            raise output_error(path, e) from None
        raise


def atomic_write(path: str | os.PathLike, data: str | bytes, make_parents: bool = False) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically and durably
    (:func:`atomic_output`: temporary file beside it, ``fsync``, :func:`os.replace`; the
    temporary file removed on any error) and return the path. Raises :class:`OutputError` naming
    the path and the cause (full disk, read-only file system, missing parent folder unless
    ``make_parents``, a parent that is not a folder)."""
    with atomic_output(path, make_parents=make_parents) as tmp:
        with open(tmp, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
            f.flush()
    return Path(path)

_REQUIRED = ("id", "lower", "upper", "size")

#: MiniMalloc's header aliases (``src/converter.cc``); ``end`` is inclusive (read as ``upper``
#: with ``+1``).
_ALIASES = {"buffer": "id", "buffer_id": "id", "begin": "lower", "start": "lower", "end": "upper"}

#: Columns read row by row (the fast paths know id, lower, upper, size, alignment only);
#: ``kind`` (memplan's): a buffer's kind, written only for ``scratch`` buffers
#: (:mod:`planners.scratch`), empty elsewhere (``activation``).
_FEATURE_COLUMNS = ("hint", "gaps", "pools", "kind")

#: memplan's group columns (module docstring): alias child -> parent id, the child's delta in
#: bytes, and a colocation group's first member; read row by row too.
_GROUP_COLUMNS = ("alias_of", "alias_delta", "colocate")


def _normalise_header(header: list[str], path) -> tuple[list[str], int]:
    """MiniMalloc's header aliases applied (:data:`_ALIASES`) and the addend of the upper ends
    (1 when an ``end`` column gives inclusive ends, else 0). Raises :class:`ProblemError` when
    two columns name one field after aliasing."""
    out = [_ALIASES.get(h, h) for h in header]
    dup = sorted({h for h in out if out.count(h) > 1 and h in
                  set(_REQUIRED) | {"alignment", "offset", *_FEATURE_COLUMNS, *_GROUP_COLUMNS}})
    if dup and out != header:
        raise ProblemError(f"{path}: header {header} names column(s) {dup} twice after "
                           f"MiniMalloc's aliases (buffer/buffer_id=id, start/begin=lower, "
                           f"end=upper inclusive)")
    return out, int("end" in header)


def _parse_gaps(raw: str, addend: int, where: str) -> list:
    """MiniMalloc's ``gaps`` field: space-separated ``lower-upper[@lo:hi]`` (``upper`` inclusive
    when ``addend`` is 1). Raises :class:`ProblemError` naming the gap."""
    out = []
    for g in raw.split():
        m = re.fullmatch(r"(-?\d+)-(-?\d+)(?:@(-?\d+):(-?\d+))?", g)
        if not m:
            raise ProblemError(f"{where}: column 'gaps': improperly formed gap {g!r} (expected "
                               f"lower-upper or lower-upper@lo:hi)")
        a, b = int(m.group(1)), int(m.group(2)) + addend
        w = None if m.group(3) is None else (int(m.group(3)), int(m.group(4)))
        out.append((a, b, w))
    return out


def capacity_from_name(path: str | Path) -> int | None:
    """Capacity encoded in a MiniMalloc file name ``NAME.CAPACITY.csv`` (bytes), else ``None``."""
    m = re.fullmatch(r".+\.(\d+)\.csv", Path(path).name)
    return int(m.group(1)) if m else None


def _int_field(row: dict, key: str, where: str) -> int:
    raw = row.get(key)
    if raw is None or str(raw).strip() == "":
        raise ProblemError(f"{where}: missing value for column {key!r}")
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ProblemError(f"{where}: column {key!r} must be an integer, got {raw!r}") from None


#: Characters that make the csv module or ``str.splitlines`` split or quote differently from a plain
#: split on commas and newlines; a file holding any of them is read by the row-by-row path.
_NOT_PLAIN = ('"', "\r", "\x00", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _plain_buffers(text: str, header: list[str], has_align: bool) -> list[Buffer] | None:
    """The buffers of a plain, valid MiniMalloc CSV, parsed column-wise; ``None`` when the file is
    not plain or any row would raise an error (the row-by-row path then reads it and names the
    error exactly as before).

    Plain: no quote, carriage return, NUL or other line separator; no blank line; no line longer
    than the csv module's field size limit; every row with as many fields as the header. Every value is checked here as the row-by-row path checks it
    (``int()`` of the stripped field, ids as written (never stripped) and non-empty, ``|value| < 2**62``, size >= 0,
    end > start, alignment >= 1; a later duplicate header column wins, as in ``csv.DictReader``),
    so the buffers are equal to the ones that path builds; they are then built without re-running
    :class:`Buffer`'s per-field checks. ``O(n)``; the cyclic garbage collector is paused meanwhile
    (millions of new objects, none in a cycle).
    """
    if any(c in text for c in _NOT_PLAIN):
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    width = len(header)
    if (
        len(lines) < 2
        or max(map(len, lines)) > csv.field_size_limit()  # the csv module refuses such a field
        or any(r.count(",") != width - 1 for r in lines[1:])
    ):
        return None
    body = text[len(lines[0]) + 1 :].rstrip("\n")
    del lines
    flat = body.replace("\n", ",").split(",")  # row-major fields, no per-row containers
    col = {name: k for k, name in enumerate(header)}  # a later duplicate name wins
    n = len(flat) // width
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        ids = flat[col["id"] :: width]  # ids byte for byte, never stripped (module docstring)
        lower, upper, size = (
            list(map(int, flat[col[c] :: width])) for c in ("lower", "upper", "size")
        )
        aligns = None
        if has_align:
            aligns = [int(x) if x.strip() else None for x in flat[col["alignment"] :: width]]
        del flat
        arrays = [np.array(v, dtype=np.int64) for v in (lower, upper, size)]
        if aligns is not None:
            arrays.append(np.array([1 if a is None else a for a in aligns], np.int64))
        limit = 2**62
        lo, up, sz = arrays[:3]
        if (
            len(ids) != n
            or not all(ids)
            or len(set(ids)) != n
            or any(int(a.max()) >= limit or int(a.min()) <= -limit for a in arrays)
            or np.any(sz < 0)
            or np.any(up <= lo)
            or (aligns is not None and np.any(arrays[3] < 1))
        ):
            return None
        new, put = object.__new__, object.__setattr__
        out = []
        for i, (bid, s_, e_, z_) in enumerate(zip(ids, lower, upper, size, strict=True)):
            b = new(Buffer)
            put(b, "id", bid)
            put(b, "start", s_)
            put(b, "end", e_)
            put(b, "size", z_)
            put(b, "alignment", None if aligns is None else aligns[i])
            put(b, "kind", "activation")
            put(b, "offset", None)
            put(b, "hint", None)
            put(b, "gaps", ())
            put(b, "pools", ())
            out.append(b)
        return out
    except (ValueError, OverflowError):
        return None
    finally:
        if gc_was_enabled:
            gc.enable()


#: Longest integer field (sign and leading zeros included) the numpy path parses.
_FAST_INT_BYTES = 40

#: Longest id the numpy path gathers into a fixed-width byte matrix (longer: the plain path).
_FAST_ID_BYTES = 64


def _int_columns(body: np.ndarray, fs: np.ndarray, fe: np.ndarray, allow_empty: bool):
    """Integers of the fields ``body[fs[r]:fe[r]]`` (ASCII bytes), parsed with numpy, as int64,
    with a mask of the empty fields; ``None`` unless every field is empty (when ``allow_empty``) or
    ``[+-]?[0-9]+`` of at most :data:`_FAST_INT_BYTES` bytes with a value below ``10**18``
    (``< 2**62``) in magnitude (leading zeros allowed); the value is exactly ``int()`` of the
    field. One vector pass per digit position, ``O(rows)`` memory."""
    length = fe - fs
    empty = length == 0
    if empty.any() and not allow_empty:
        return None
    first = body[np.minimum(fs, body.size - 1)]
    minus = (first == 45) & ~empty
    signed = minus | ((first == 43) & ~empty)
    nd = length - signed  # number of digits
    if bool(((nd <= 0) & ~empty).any()) or int(nd.max()) > _FAST_INT_BYTES:
        return None
    val = np.zeros(fs.size, np.int64)
    for d in range(int(nd.max())):  # the d-th digit from the right
        has = nd > d
        ch = body[np.where(has, fe - 1 - d, 0)].astype(np.int64) - 48
        ch[~has] = 0
        if bool(((ch < 0) | (ch > 9)).any()):
            return None
        if d < 18:
            val += ch * (10**d)
        elif ch.any():  # a value of 10**18 or more: the slower paths (exact Python ints)
            return None
    return np.where(minus, -val, val), empty


def _fast_columns(raw: bytes, header: list[str], has_align: bool):
    """The columns of a plain, valid MiniMalloc CSV parsed with numpy from its bytes, or ``None``
    (then the slower paths read the file and name any error exactly as before).

    Returns ``(ids, lower, upper, size, own_align)``: ids as ``str`` (problem order; ``None`` when
    they are exactly ``"0" .. "rows-1"`` in order, :func:`_canonical_range_ids`), int64 arrays
    of shape ``(rows,)``, ``own_align`` 0 where the field is empty (or ``None`` without an
    alignment column). Taken only when ``raw`` is ASCII with no carriage return, the header line
    holds no control character or quote, the rows hold only printable characters other than space
    and ``"`` (so ``strip()`` and the csv module change nothing), every row has exactly as many
    fields as the header (so no blank line), every id is non-empty and at most
    :data:`_FAST_ID_BYTES` bytes, every integer field is ``[+-]?[0-9]+`` below ``10**18`` in
    magnitude and every given alignment is ``>= 1``. A later duplicate header column wins, as in ``csv.DictReader``.
    ``O(bytes)`` vector passes; no per-row Python object but the id strings.
    """
    nl = raw.find(b"\n")
    if nl < 0 or not raw.isascii() or b"\r" in raw:
        return None
    buf = np.frombuffer(raw, np.uint8)
    head = buf[:nl]
    if bool(((head < 32) | (head == 34) | (head == 127)).any()):
        return None
    body = buf[nl + 1 :]
    if body.size and body[-1] == 10:
        body = body[:-1]
    if body.size == 0:
        return None
    newline = body == 10
    if bool((((body < 33) & ~newline) | (body == 34) | (body == 127)).any()):
        return None
    seps = np.flatnonzero(newline | (body == 44))
    width = len(header)
    nfields = seps.size + 1
    if nfields % width:
        return None
    want_nl = np.zeros(seps.size, bool)
    want_nl[width - 1 :: width] = True
    if not np.array_equal(newline[seps], want_nl):
        return None
    del newline, want_nl
    rows = nfields // width
    starts = np.empty(nfields, np.int64)
    starts[0] = 0
    starts[1:] = seps + 1
    ends = np.empty(nfields, np.int64)
    ends[:-1] = seps
    ends[-1] = body.size
    del seps
    col = {name: k for k, name in enumerate(header)}  # a later duplicate name wins
    out = []
    for name in ("lower", "upper", "size", "alignment") if has_align else ("lower", "upper", "size"):
        k = col[name]
        parsed = _int_columns(body, starts[k::width], ends[k::width], allow_empty=name == "alignment")
        if parsed is None:
            return None
        out.append(parsed)
    own_align = None
    if has_align:
        own_align, empty = out.pop()
        if bool(((own_align < 1) & ~empty).any()):
            return None
        own_align[empty] = 0
    k = col["id"]
    fs, fe = starts[k::width], ends[k::width]
    length = fe - fs
    longest = int(length.max())
    if int(length.min()) == 0 or longest > _FAST_ID_BYTES:
        return None
    (lower, _), (upper, _), (size, _) = out
    if _canonical_range_ids(body, fs, fe):  # "0", "1", ..., the problem's own default ids
        return None, lower, upper, size, own_align
    mat = np.zeros((rows, longest), np.uint8)
    for j in range(longest):
        has = length > j
        mat[has, j] = body[fs[has] + j]
    ids = mat.view(f"S{longest}").ravel().astype(f"U{longest}").tolist()
    return ids, lower, upper, size, own_align


def _canonical_range_ids(body: np.ndarray, fs: np.ndarray, fe: np.ndarray) -> bool:
    """Whether the id fields ``body[fs[r]:fe[r]]`` are exactly ``str(0), str(1), ..., str(rows -
    1)`` in order (no sign, no leading zero), the ids :class:`~planners.model.Problem` gives
    itself when none are passed; then no id string is built or hashed (``O(rows)`` vector
    passes). Any other id column (a sign, ``"01"``, a gap, another order) gives ``False``."""
    rows = fs.size
    if rows > 10**17:  # pragma: no cover - beyond _int_columns' digits
        return False
    parsed = _int_columns(body, fs, fe, allow_empty=False)
    if parsed is None:
        return False
    val = parsed[0]
    if not np.array_equal(val, np.arange(rows, dtype=np.int64)):
        return False
    # the canonical decimal of v >= 0 has 1 digit for v < 10, else floor(log10 v) + 1
    digits = np.searchsorted(10 ** np.arange(1, 19, dtype=np.int64), val, side="right") + 1
    return bool(np.array_equal(fe - fs, digits))


def _read_text(path: Path) -> tuple[bytes, str]:
    """``(raw bytes, text)`` of a CSV file. The text keeps carriage returns where a quoted field
    may hold them (a file with a ``"``): no newline translation, so a quoted id keeps its
    ``\\r`` and ``\\n`` (module docstring). A file without a quote has every ``\\r\\n`` and ``\\r``
    read as ``\\n`` (there each one ends a row anyway). ASCII is decoded directly, anything else
    with the locale's encoding (as :meth:`Path.read_text`). Raises :class:`ProblemError` for a
    missing or undecodable file."""
    if not path.exists():
        raise ProblemError(f"{path}: no such file")
    raw = path.read_bytes()
    try:
        if raw.isascii() and b"\r" not in raw:
            return raw, raw.decode("ascii")
        text = io.TextIOWrapper(io.BytesIO(raw), newline="").read()
    except UnicodeDecodeError as e:
        raise ProblemError(f"{path}: not a text CSV file ({e.reason} at byte {e.start})") from None
    if '"' not in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return raw, text


def _dict_reader(text: str) -> csv.DictReader:
    """A ``csv.DictReader`` over ``text`` that splits rows as the CSV rules do (only ``\\n``,
    ``\\r\\n`` and ``\\r`` outside quotes end a row; not ``str.splitlines``'s other separators)."""
    return csv.DictReader(io.StringIO(text, newline=""))


def csv_dict_reader(path: str | Path) -> csv.DictReader:
    """A ``csv.DictReader`` over a MiniMalloc CSV with its header names stripped and MiniMalloc's
    aliases applied (``buffer`` -> ``id``, ...), reading ids byte for byte (module docstring):
    for readers of extra columns (``memplan check``'s ``offset`` and ``pool``) that must see the
    same rows and ids as :func:`read_minimalloc_csv`. Raises :class:`ProblemError` for a missing
    or undecodable file or a malformed header."""
    path = Path(path)
    reader = _dict_reader(_read_text(path)[1])
    try:
        reader.fieldnames = _normalise_header(
            [h.strip() for h in (reader.fieldnames or [])], path)[0]
    except csv.Error as e:
        raise ProblemError(f"{path}:{reader.line_num + 1}: malformed CSV header ({e})") from None
    return reader


def _checked_rows(reader: csv.DictReader, path: Path):
    """The rows of ``reader``; a ``csv.Error`` (a field above the csv module's size limit, a NUL
    byte, ...) becomes a :class:`ProblemError` naming the file and line."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise ProblemError(f"{path}:{reader.line_num + 1}: malformed CSV row ({e})") from None
        yield row


def _csv_error(path: Path, e: ProblemError) -> ProblemError:
    """A problem-wide error of the rows of ``path`` as one line naming the file; a duplicate id
    names the CSV lines of its first two rows (``lines 2 and 5``), not the item indices."""
    text = str(e)
    m = re.search(r"duplicate buffer id (.+?) \(items (\d+) and (\d+)\)", text)
    if m:
        try:
            reader = csv_dict_reader(path)
            ids = {}
            for row in _checked_rows(reader, path):
                ids.setdefault(str(row.get("id") or ""), []).append(reader.line_num)
            lines = next((v for v in ids.values() if len(v) > 1), None)
        except ProblemError:
            lines = None
        if lines:
            return ProblemError(f"{path}: duplicate buffer id {m.group(1)} (lines {lines[0]} "
                                f"and {lines[1]})")
    return ProblemError(f"{path}: {text}")


def read_minimalloc_csv(
    path: str | Path,
    capacity: int | None | str = "auto",
    alignment: int = 1,
    name: str | None = None,
    offsets: str = "fixed",
    pools=None,
) -> Problem:
    """Read a MiniMalloc CSV into a :class:`Problem` (half-open ``[lower, upper)`` lifetimes).

    Parameters
    ----------
    path : file path.
    capacity : int, None or "auto"
        Bytes; ``"auto"`` takes it from the file name (``A.1048576.csv``) when present.
    alignment : default alignment (bytes) for rows without an ``alignment`` column.
    name : problem name (default: the file name without ``.csv``).
    offsets : {"fixed", "ignore"}
        What an ``offset`` column means: ``"fixed"`` (MiniMalloc's reading): each given offset is
        the buffer's fixed position (empty or ``-1``: not fixed); ``"ignore"``: the column is
        not read (to re-plan a solved file, or to check it: ``memplan check``).
    pools : sequence of MemoryPool or None
        The problem's pools (preference order; a ``pools`` column names candidates among them).
        With pools the capacity is the pools' (``capacity`` is then not taken from the name).

    Raises
    ------
    ProblemError
        Empty file, missing header columns, a missing or non-integer field or an empty id (naming
        file, line and column), negative size, ``upper <= lower``, a value with
        ``|value| >= 2**62``, duplicate ids (ids are compared byte for byte, never stripped or
        otherwise normalised: the module docstring), or a worst-case arena above ``2**63 - 1``
        bytes (the range rule of :mod:`planners.model`).

    Notes
    -----
    Three paths, one result: a plain ASCII file without spaces is parsed with numpy from its bytes
    straight into the problem's columns (:func:`_fast_columns`; no :class:`Buffer` objects until
    ``problem.buffers`` is read; about 1 s per 10**6 rows); another plain file column-wise in
    Python (:func:`_plain_buffers`); anything else, and every file with an error, row by row with
    the csv module, which names the file, the line and the rule of the first bad row.
    """
    path = Path(path)
    if capacity == "auto":
        capacity = capacity_from_name(path)
    raw, text = _read_text(path)
    if not text.strip():
        raise ProblemError(f"{path}: empty file (expected a header 'id,lower,upper,size')")
    if text.lstrip().startswith("#") and re.match(r"(?:\s*#.*\n)*\s*#\s*dims\s*:", text):
        raise ProblemError(f"{path}: sizes in named dims (a '# dims:' line before the header): "
                           "read it with planners.symbolic.read_symbolic_csv; `memplan plan` "
                           "plans it at the upper bounds, or at --at DIM=VALUE")
    reader = _dict_reader(text)
    try:
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as e:  # e.g. a field longer than the csv module's limit
        raise ProblemError(f"{path}:{reader.line_num + 1}: malformed CSV header ({e})") from None
    reader.fieldnames = header
    if offsets not in ("fixed", "ignore"):
        raise ValueError(f"offsets must be 'fixed' or 'ignore', got {offsets!r}")
    given = header
    header, addend = _normalise_header(header, path)
    reader.fieldnames = header
    missing = [c for c in _REQUIRED if c not in header]
    if missing:
        raise ProblemError(f"{path}: header {given} lacks column(s) {missing}")
    has_align = "alignment" in header
    pname = name if name is not None else path.name.removesuffix(".csv")
    if pools:
        capacity = None
    # the fast paths read plain columns; MiniMalloc's aliases and feature columns go row by row
    special = (header != given or any(c in header for c in _FEATURE_COLUMNS + _GROUP_COLUMNS)
               or bool(pools) or (offsets == "fixed" and "offset" in header))
    cols = None if special else _fast_columns(raw, header, has_align)
    del raw
    if cols is not None:
        try:
            problem = Problem._from_columns(
                *cols, capacity=capacity, alignment=alignment, name=pname
            )
        except ProblemError as e:  # duplicate ids, capacity, the int64 range rule
            raise _csv_error(path, e) from None
        if problem is not None:
            return problem
        # else a row breaks a buffer rule: the row-by-row path names it
    plain = None if cols is not None or special else _plain_buffers(text, header, has_align)
    buffers = plain if plain is not None else []
    aliases: dict[str, tuple[str, int]] = {}
    coloc: dict[str, list[str]] = {}  # first member -> members, in file order
    coloc_line: dict[str, str] = {}  # first member -> where its group was first named
    for row in _checked_rows(reader, path) if plain is None else ():
        where = f"{path}:{reader.line_num}"
        if None in row:  # more fields than the header
            raise ProblemError(f"{where}: more fields than the header's {len(header)}")
        bid = row.get("id") or ""  # byte for byte, never stripped (module docstring)
        if not bid:
            raise ProblemError(f"{where}: missing value for column 'id'")
        lower = _int_field(row, "lower", where)
        upper = _int_field(row, "upper", where) + addend
        size = _int_field(row, "size", where)
        align = None
        if has_align and str(row.get("alignment") or "").strip():
            align = _int_field(row, "alignment", where)
        extra = {}
        if special:
            if "hint" in header and str(row.get("hint") or "").strip():
                h = _int_field(row, "hint", where)
                if h < -1:  # MiniMalloc writes -1 (or nothing) for "no hint"
                    raise ProblemError(f"{where}: buffer {bid!r}: hint must be >= 0 bytes, or -1 "
                                       f"or empty for none, got {h}")
                extra["hint"] = None if h == -1 else h
            if "gaps" in header:
                extra["gaps"] = _parse_gaps(str(row.get("gaps") or ""), addend, where)
            if "kind" in header and str(row.get("kind") or "").strip():
                extra["kind"] = str(row.get("kind")).strip()  # Buffer checks it (KINDS)
            if "pools" in header:
                extra["pools"] = tuple(str(row.get("pools") or "").split())
                if extra["pools"] and not pools:
                    raise ProblemError(
                        f"{where}: column 'pools' names candidate pools {list(extra['pools'])} "
                        "but no pools were given (pools=..., on the command line --pools "
                        "NAME=BYTES[:ALIGN],... in preference order)")
            if offsets == "fixed" and "offset" in header and str(row.get("offset") or "").strip():
                o = _int_field(row, "offset", where)
                extra["offset"] = None if o == -1 else o
                pool = str(row.get("pool") or "").strip()
                if extra["offset"] is not None and pool and pools:
                    extra["pools"] = (pool,)  # a solved file: the offset is inside that pool
            parent = row.get("alias_of") or ""  # an id: byte for byte, never stripped
            if parent:
                delta = 0
                if "alias_delta" in header and str(row.get("alias_delta") or "").strip():
                    delta = _int_field(row, "alias_delta", where)
                aliases[bid] = (parent, delta)
            elif "alias_delta" in header and str(row.get("alias_delta") or "").strip() not in (
                    "", "0"):
                raise ProblemError(f"{where}: buffer {bid!r} has an alias_delta but no alias_of "
                                   "(the delta is the offset inside the parent it names)")
            first = row.get("colocate") or ""
            if first:
                coloc.setdefault(first, []).append(bid)
                coloc_line.setdefault(first, where)
        try:
            buffers.append(Buffer(bid, lower, upper, size, align, **extra))
        except ProblemError as e:
            raise ProblemError(f"{where}: {e}") from None
    if not buffers:
        raise ProblemError(f"{path}: header only, no buffers")
    if aliases and any(b.offset is not None for b in buffers):
        raise ProblemError(f"{path}: the file has alias groups (column 'alias_of') and offsets "
                           "read as fixed positions, which alias groups do not combine with; "
                           "read its offsets as a plan (offsets='ignore'; on the command line "
                           "`memplan check`, or `memplan plan --ignore-offsets` to re-plan)")
    for first, members in coloc.items():
        if first not in members:
            raise ProblemError(f"{coloc_line[first]}: column 'colocate' names {first!r}, which "
                               "is not a member of its own group (every member, the first "
                               "included, names the group's first member)")
    try:
        return Problem(
            buffers,
            capacity=capacity,
            alignment=alignment,
            name=pname,
            pools=pools or None,
            aliases=aliases or None,
            colocations=[tuple(m) for m in coloc.values()] or None,
        )
    except ProblemError as e:  # duplicate ids, capacity, the int64 range rule (planners.model)
        raise _csv_error(path, e) from None


def minimalloc_csv_text(problem: Problem, plan: Plan | None = None) -> str:
    """``problem`` as MiniMalloc CSV text (:func:`write_minimalloc_csv`'s columns and rules).

    A field holding a comma, a quote, a carriage return or a newline is quoted (RFC 4180,
    quotes doubled), every other one written as it is (spaces kept), so that
    :func:`read_minimalloc_csv` gives back every id byte for byte. Rows end in ``\\n`` (LF, as
    every other text file memplan writes; the ``csv`` module with an LF terminator would leave a
    lone carriage return unquoted, so the quoting is done here).
    """
    cols = ["id", "lower", "upper", "size"]
    with_align = bool(np.any(problem.alignments != 1))
    if with_align:
        cols.append("alignment")
    feats = problem.features
    if "hints" in feats:
        cols.append("hint")
    if "gaps" in feats:
        cols.append("gaps")
    if problem.candidates:
        cols.append("pools")
    kinds = ([b.kind if b.kind == "scratch" else "" for b in problem.buffers]
             if problem._buffers is not None else [])
    with_kind = any(kinds)
    if with_kind:
        cols.append("kind")
    with_offset = plan is not None or "pins" in feats
    if with_offset:
        cols.append("offset")
    with_pool = plan is not None and plan.pools is not None and bool(problem.pools)
    if with_pool:
        cols.append("pool")
    aliases = problem.aliases or {}
    if aliases:
        cols += ["alias_of", "alias_delta"]
    first_of = {b: g[0] for g in problem.colocations for b in g}
    if first_of:
        cols.append("colocate")
    lines = [_csv_line(cols)]
    hints, pins = problem.hints.tolist(), problem.pins.tolist()
    for i, b in enumerate(problem.buffers):
        row = [b.id, b.start, b.end, b.size]
        if with_align:
            row.append(int(problem.alignments[i]))
        if "hints" in feats:
            row.append(hints[i])  # -1: none, as MiniMalloc writes it
        if "gaps" in feats:
            row.append(" ".join(f"{g.start}-{g.end}" + ("" if g.window is None else
                                                         f"@{g.window[0]}:{g.window[1]}")
                                for g in b.gaps))
        if problem.candidates:
            row.append(" ".join(b.pools))
        if with_kind:
            row.append(kinds[i])
        if with_offset:
            if plan is not None:
                row.append(int(plan.offsets[i]))
            else:
                row.append("" if pins[i] < 0 else pins[i])
        if with_pool:
            row.append(problem.pools[int(plan.pools[i])].name)
        if aliases:
            parent, delta = aliases.get(b.id, ("", ""))
            row += [parent, delta]
        if first_of:
            row.append(first_of.get(b.id, ""))
        lines.append(_csv_line(row))
    return "".join(lines)


def _csv_line(fields) -> str:
    """One CSV row ending in ``\\n``: a field with ``,``, ``"``, CR or LF quoted (RFC 4180)."""
    out = []
    for v in fields:
        t = str(v)
        if any(c in t for c in ',"\r\n'):
            t = '"' + t.replace('"', '""') + '"'
        out.append(t)
    return ",".join(out) + "\n"


def write_minimalloc_csv(problem: Problem, path: str | Path, plan: Plan | None = None) -> None:
    """Write ``problem`` as a MiniMalloc CSV (``id,lower,upper,size`` [,``alignment``] [,``hint``]
    [,``gaps``] [,``pools``] [,``offset``] [,``pool``] [,``alias_of``,``alias_delta``]
    [,``colocate``]).

    ``alignment`` is written when any buffer's alignment differs from 1; ``hint`` (``-1``: none)
    and ``gaps`` (``lower-upper[@lo:hi]``, half-open) as MiniMalloc's ``ToCsv`` writes them when
    a buffer has one; ``pools`` (candidate names) when a buffer names some; ``offset`` when a
    plan is given (its offsets) or a buffer is pinned (its fixed offset, empty where free);
    ``pool`` when the plan has pools; ``alias_of``, ``alias_delta`` and ``colocate`` when the
    problem has alias or colocation groups (module docstring). Values are written as exact decimal integers, so reading the file back gives the same
    problem (and offsets) for any admissible value, e.g. sizes near ``2**62``; ids are quoted
    where the CSV rules need it (:func:`minimalloc_csv_text`) and read back byte for byte. The
    file is written atomically (:func:`atomic_write`): a crash or a write error leaves no half
    file and no temporary file. Raises :class:`OutputError` (naming the path and the cause) on a
    full disk, a read-only file system, or a parent folder that is missing or not a folder.
    """
    atomic_write(path, minimalloc_csv_text(problem, plan))


def parse_pools(text: str | None):
    """``--pools NAME=BYTES[:ALIGN],...`` in preference order as a tuple of
    :class:`planners.model.MemoryPool` (``None`` when not given). ``BYTES`` is an integer or
    ``inf`` (unbounded) with an optional ``k``/``M``/``G`` suffix (binary: 1k = 1024 bytes);
    ``ALIGN`` bytes (default 1). Raises :class:`planners.errors.ProblemError` naming the item.

    >>> [(q.name, q.capacity, q.alignment) for q in parse_pools("sram=256k:16,psram=8M")]
    [('sram', 262144, 16), ('psram', 8388608, 1)]
    """
    from .model import MemoryPool

    if text is None:
        return None
    out = []
    for item in (x.strip() for x in text.split(",")):
        m = re.fullmatch(r"([^=,\s]+)=(inf|\d+)([kKmMgG]?)(?::(\d+))?", item)
        if not m:
            raise ProblemError(f"--pools {item!r}: expected NAME=BYTES[:ALIGN] (e.g. sram=256k:16), "
                               "comma-separated in preference order")
        cap = None if m.group(2) == "inf" else int(m.group(2)) * 1024 ** (
            " kmg".index(m.group(3).lower() or " "))
        out.append(MemoryPool(m.group(1), cap, int(m.group(4) or 1)))
    return tuple(out)


def pools_text(pools) -> str:
    """``pools`` (:class:`planners.model.MemoryPool`, preference order) as canonical ``--pools``
    text: ``NAME=BYTES[:ALIGN]`` joined by commas, ``BYTES`` exact with the largest binary suffix
    that divides it (``k``/``M``/``G``, 1k = 1024 bytes) or ``inf`` for an unbounded pool, the
    alignment only when above 1. It reads back through
    :func:`parse_pools` to the same pools, and equal pools give equal
    text (``256k`` and ``262144`` alike). ``""`` for no pools.

    >>> from planners.model import MemoryPool
    >>> pools_text([MemoryPool("sram", 262144, 16), MemoryPool("psram", 8 << 20),
    ...             MemoryPool("dram", None), MemoryPool("odd", 1000)])
    'sram=256k:16,psram=8M,dram=inf,odd=1000'
    """
    def size(b: int | None) -> str:
        if b is None:
            return "inf"
        for k, suffix in ((3, "G"), (2, "M"), (1, "k")):
            if b and b % 1024 ** k == 0:
                return f"{b // 1024 ** k}{suffix}"
        return str(b)

    return ",".join(f"{q.name}={size(q.capacity)}"
                    + (f":{int(q.alignment)}" if int(q.alignment) > 1 else "")
                    for q in pools or ())
