"""The one place where text from an input (a record, a stored file, a model, the command line)
is checked before it becomes a file path, or escaped before it goes into Markdown, HTML or a
figure's text.

Every writer of ``report.md`` (:mod:`experiments.report.sweep_report`), ``compare.md`` and the
other ``compare_*.md`` (:mod:`experiments.report.compare`), the figures drawn from records
(:mod:`experiments.report.figures`) and the stored problems and plans they read
(:mod:`experiments.records`, :mod:`experiments.sweep.store`) goes through these functions; none of
them writes a record's field into a path, a table or a page any other way.

Paths
    * :func:`check_digest` -- a stored problem's name is a SHA-256 hex digest (64 lowercase hex
      digits), nothing else (no ``/``, no ``..``);
    * :func:`inside` -- a path built under a folder resolves (symbolic links followed) inside it;
    * :func:`stored_problem` -- ``FOLDER/problems/DIGEST.csv`` (or ``.ref``) from a record's
      digest, both checks at once; :func:`stored_problem_rel` the same for the relative names
      ``problems/DIGEST.csv`` that ``compare_plans.json`` stores; :func:`ref_source` the
      benchmark a ``DIGEST.ref`` names (``minimalloc:NAME`` or a file under ``../shared``);
    * :func:`file_stem` -- a name (a workload, a planner) as a file-name stem of safe characters.

Text
    * :func:`md_cell` / :func:`md_table` -- a Markdown table cell: ``|``, ``\\``, backticks,
      emphasis, link brackets and HTML (``< > &``) escaped, newlines as ``<br>``, other control
      characters and the whitespace at either end as numeric character references, so any text
      stays one cell (the table keeps its column count) and reads back unchanged
      (:func:`md_cell` is invertible); :func:`md_text` the same for prose; :func:`md_code` a code span for plain text;
    * :func:`html_text` -- HTML text and attribute values (:func:`html.escape`);
    * :func:`plot_text` -- matplotlib text (``$`` escaped, so no mathtext is parsed from data;
      control characters as spaces); :func:`plot_frame` a table's string cells alike.

Every refusal raises :class:`UnsafeInputError` (a :class:`planners.errors.ProblemError`, so the
command line prints it as one ``memplan: error:`` line, exit status 2) naming where the text came
from (the record, the file).
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any

from planners.errors import ProblemError

__all__ = ["UnsafeInputError", "DIGEST_LENGTH", "check_digest", "inside", "stored_problem",
           "stored_problem_rel", "ref_source", "file_stem", "md_cell", "md_text", "md_code", "md_table",
           "html_text", "plot_text", "plot_frame"]

#: Hex digits of a stored problem's digest (SHA-256).
DIGEST_LENGTH = 64
_DIGEST = re.compile(f"[0-9a-f]{{{DIGEST_LENGTH}}}")
_SUFFIXES = (".csv", ".ref")


class UnsafeInputError(ProblemError):
    """Text from an input that would leave its folder as a path, or is not the identifier it
    must be (a stored problem's digest); the message names the input."""


def _shown(text: Any) -> str:
    r = repr(text)
    return r if len(r) <= 80 else r[:77] + "..."


def check_digest(digest: Any, where: str) -> str:
    """``digest`` when it is a SHA-256 hex digest (:data:`DIGEST_LENGTH` lowercase hex digits).

    Parameters
    ----------
    digest : object
        The text to check, e.g. a record's ``problem_digest``.
    where : str
        What it came from, named in the message (``"record 0123abcd..."``).

    Returns
    -------
    str
        ``digest`` unchanged.

    Raises
    ------
    UnsafeInputError
        Anything else (another length, upper case, ``/``, ``..``, not a string), as
        ``"{where}: problem digest '../x' is not a SHA-256 hex digest (64 hex digits); no file
        is opened for it"``.

    >>> check_digest("0" * 64, "record k") == "0" * 64
    True
    """
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise UnsafeInputError(f"{where}: problem digest {_shown(digest)} is not a SHA-256 hex "
                               f"digest ({DIGEST_LENGTH} hex digits); no file is opened for it")
    return digest


def inside(folder: str | os.PathLike, path: str | os.PathLike, where: str) -> Path:
    """``path`` (relative to ``folder``, or absolute) when it resolves inside ``folder``.

    Both are resolved (:meth:`pathlib.Path.resolve`, symbolic links followed), so ``..`` parts
    and a link pointing out of the folder are caught.

    Raises
    ------
    UnsafeInputError
        ``"{where}: path '...' leaves the folder FOLDER; it is not opened"``.
    """
    base = Path(folder).resolve()
    full = (base / path).resolve()
    if not full.is_relative_to(base):
        raise UnsafeInputError(f"{where}: path {_shown(str(path))} leaves the folder {base}; "
                               "it is not opened")
    return full


def stored_problem(folder: str | os.PathLike, digest: Any, suffix: str, where: str) -> Path:
    """``FOLDER/problems/DIGEST{suffix}`` (``suffix`` ``".csv"`` or ``".ref"``) for a record's
    digest: :func:`check_digest`, then :func:`inside` (a ``problems`` link out of the folder is
    refused too). Raises :class:`UnsafeInputError` naming ``where``."""
    if suffix not in _SUFFIXES:
        raise ValueError(f"stored_problem: suffix must be one of {_SUFFIXES}, got {suffix!r}")
    check_digest(digest, where)
    return inside(folder, Path("problems") / f"{digest}{suffix}", where)


def stored_problem_rel(folder: str | os.PathLike, rel: Any, where: str) -> Path:
    """The path of a stored problem named relative to ``folder`` as ``problems/DIGEST.csv`` (the
    names ``compare_plans.json`` and ``compare_sched_orders.json`` store): exactly that form
    (:func:`check_digest` on ``DIGEST``), inside ``folder``. Raises :class:`UnsafeInputError`
    naming ``where``."""
    m = re.fullmatch(r"problems/([^/]*)\.csv", rel) if isinstance(rel, str) else None
    if m is None:
        raise UnsafeInputError(f"{where}: stored problem {_shown(rel)} is not "
                               "'problems/DIGEST.csv'; no file is opened for it")
    return stored_problem(folder, m.group(1), ".csv", where)


def ref_source(source: Any, shared: str | os.PathLike, repo: str | os.PathLike,
               where: str) -> str:
    """The workload a stored reference (``problems/DIGEST.ref``, JSON ``source``) may name:
    ``minimalloc:NAME`` (``NAME`` of letters, digits, ``_``, ``-``, ``.``, not starting with a
    dot) or a path relative to ``repo`` that resolves inside ``shared`` (``../shared``, the only
    place :func:`experiments.records.external_source` stores references to). Returns the spec
    to load (``minimalloc:NAME`` or the resolved path).

    Raises
    ------
    UnsafeInputError
        Any other source, naming ``where`` (the ``.ref`` file).
    """
    if isinstance(source, str) and source.startswith("minimalloc:"):
        if re.fullmatch(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]*", source.split(":", 1)[1]):
            return source
    elif isinstance(source, str) and source:
        full = (Path(repo) / source).resolve()
        if full.is_relative_to(Path(shared).resolve()):
            return str(full)
    raise UnsafeInputError(f"{where}: referenced source {_shown(source)} is neither "
                           f"minimalloc:NAME nor a file under {Path(shared)}; it is not opened")


def file_stem(name: Any, keep: str = "-_") -> str:
    """``name`` as a file-name stem: every character that is not a letter, a digit or one of
    ``keep`` becomes ``_`` (so no ``/``, no ``..`` path part, no control character), a leading
    ``.`` too (no hidden file); ``"_"`` for an empty name.

    >>> file_stem("minimalloc:C"), file_stem("../../etc/x"), file_stem("a.b", keep="-_.")
    ('minimalloc_C', '______etc_x', 'a.b')
    """
    out = "".join(c if (c.isascii() and c.isalnum()) or c in keep else "_" for c in str(name))
    if out.startswith("."):
        out = "_" + out[1:]
    return out or "_"


# -- Markdown -------------------------------------------------------------------------------------
#: Characters a backslash always escapes in a cell: the escape itself, the cell separator, code
#: spans, emphasis (``*``), strikethrough (``~``) and math (``$``, GitHub); ``_`` and ``]`` are
#: escaped where they could open or close emphasis or a link (CommonMark allows a backslash
#: before any ASCII punctuation, so each escape reads back as the character).
_MD_BACKSLASH = set("\\|`*~$")
_MD_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _control(c: str) -> bool:
    return ord(c) < 32 or ord(c) == 127 or 0x80 <= ord(c) < 0xA0 or c in "\u2028\u2029"


def md_cell(value: Any) -> str:
    """``value`` as the text of one Markdown (GitHub) table cell that reads back as ``str(value)``.

    ``\\``, ``|``, backticks, ``*``, ``~`` and ``$`` get a backslash, and so do ``_`` where it
    is not between two letters or digits (``greedy_by_size`` stays as it is) and ``]`` before
    ``(``, ``[`` or ``:`` (no link); ``<``, ``>``, ``&`` become ``&lt;``, ``&gt;``, ``&amp;`` (so
    no HTML tag, e.g. ``<script>``, passes); a newline becomes ``<br>``; other control characters,
    whitespace other than a space, and the whitespace at either end (which a table trims) become
    numeric character references (``&#13;``). The result has no unescaped ``|``, no line break
    and no ``<`` other than those of ``<br>``, so a row keeps its column count whatever the text.
    ``O(len(text))``.

    Parameters
    ----------
    value : object
        The cell's content; ``str(value)`` is escaped.

    Returns
    -------
    str
        One line of Markdown that a GitHub-flavoured renderer shows as ``str(value)``.

    References
    ----------
    GitHub Flavored Markdown spec, section 4.10 "Tables (extension)" (an escaped ``\\|`` is part
    of a cell) and CommonMark 0.31 sections 2.4 (backslash escapes) and 2.5 (entity and numeric
    character references); checked against ``markdown-it-py`` by
    :mod:`experiments.report.markdown_check`.

    >>> md_cell("a|b"), md_cell("<script>alert(1)</script>"), md_cell("x\\ny")
    ('a\\\\|b', '&lt;script&gt;alert(1)&lt;/script&gt;', 'x<br>y')
    >>> md_cell("greedy_by_size [pools sram=4k]"), md_cell("_x_")
    ('greedy_by_size [pools sram=4k]', '\\\\_x\\\\_')
    """
    text = str(value)
    n = len(text)
    out = []
    for i, c in enumerate(text):
        if c == "\n":
            out.append("<br>")
        elif c in _MD_BACKSLASH:
            out.append("\\" + c)
        elif c == "_" and not (0 < i < n - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()):
            out.append("\\_")
        elif c == "]" and i + 1 < n and text[i + 1] in "([:":
            out.append("\\]")
        elif c in _MD_ENTITY:
            out.append(_MD_ENTITY[c])
        elif _control(c) or (c.isspace() and (c != " " or i == 0 or i == n - 1)):
            out.append(f"&#{ord(c)};")
        else:
            out.append(c)
    return "".join(out)


def md_text(value: Any) -> str:
    """``value`` for Markdown prose (a sentence of ``report.md``): :func:`md_cell`'s escaping,
    which also keeps the text on its line."""
    return md_cell(value)


_PLAIN = re.compile(r"[A-Za-z0-9_.,:;=/+\-@%~ ]*")


def md_code(value: Any) -> str:
    """``value`` as a code span (`` `text` ``) when it is plain text (letters, digits, spaces and
    ``_.,:;=/+-@%~``), else as escaped text (:func:`md_text`): a code span shows its content raw,
    so text with a backtick, ``<`` or a newline is never put in one.

    >>> md_code("sram=256k:16"), md_code("a`b")
    ('`sram=256k:16`', 'a\\\\`b')
    """
    text = str(value)
    return f"`{text}`" if text and _PLAIN.fullmatch(text) else md_text(text)


def _holds_text(col) -> bool:
    """Whether a pandas column (object or string dtype) holds at least one ``str``."""
    import pandas as pd

    if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
        return False
    return bool(col.map(lambda v: isinstance(v, str)).any())


def _map_text(col, f):
    """``col`` with ``f`` applied to its ``str`` cells (others unchanged), as an object column."""
    return col.astype(object).map(lambda v: f(v) if isinstance(v, str) else v)


def md_table(df, **kw) -> str:
    """``df`` (a pandas DataFrame) as a Markdown table (:meth:`pandas.DataFrame.to_markdown`,
    ``index=False``) with every string cell and column name through :func:`md_cell`.

    Columns holding strings are not read as numbers (``tabulate``'s ``disable_numparse``), so a
    name such as ``"1e5"`` is shown as given; numeric columns keep ``kw`` such as ``floatfmt``.
    ``O(cells)``.

    Parameters
    ----------
    df : pandas.DataFrame
        The table; its index is not written (call ``reset_index()`` first to keep it).
    **kw
        Passed to :meth:`pandas.DataFrame.to_markdown` (``tabulate``), e.g. ``floatfmt=".3f"``.

    Returns
    -------
    str
        A pipe table whose every row has the header's column count.
    """
    t = df.copy()
    texty = []
    for k, c in enumerate(t.columns):
        if _holds_text(t[c]):
            texty.append(k)
            t[c] = _map_text(t[c], md_cell)
    t.columns = [md_cell(c) if isinstance(c, str) else c for c in t.columns]
    kw.setdefault("index", False)
    if texty:
        kw.setdefault("disable_numparse", texty)
    return t.to_markdown(**kw)


# -- HTML and figures -----------------------------------------------------------------------------
def html_text(value: Any, quote: bool = True) -> str:
    """``str(value)`` for HTML text or a quoted attribute value: ``& < >`` (and with ``quote``,
    ``" '``) as character references (:func:`html.escape`). ``quote=False`` is for element text
    only (plotly's hover and title text, which plotly.js decodes), never for an attribute value.

    Parameters
    ----------
    value : object
        The text; ``str(value)`` is escaped.
    quote : bool, default True
        Escape ``"`` and ``'`` too.

    >>> html_text("<script>alert(1)</script>"), html_text("'a' & b", quote=False)
    ('&lt;script&gt;alert(1)&lt;/script&gt;', "'a' &amp; b")
    """
    return html.escape(str(value), quote=quote)


def plot_frame(df):
    """A copy of ``df`` (a pandas DataFrame) for a figure: every string cell through
    :func:`plot_text` (names drawn as tick labels and legend entries)."""
    t = df.copy()
    for c in t.columns:
        if _holds_text(t[c]):
            t[c] = _map_text(t[c], plot_text)
    return t


def plot_text(value: Any) -> str:
    """``str(value)`` for a matplotlib title, label or legend entry: ``$`` as ``\\$`` (two ``$``
    in a name would otherwise start mathtext, whose parse error stops the figure), control
    characters (a newline too) as spaces. Apply it once, to the name (not to a whole title with
    its own line breaks).

    Parameters
    ----------
    value : object
        A name from an input (workload, planner, pool).

    Returns
    -------
    str
        Text that matplotlib draws as written (its "Writing mathematical expressions" guide:
        ``\\$`` is a literal dollar sign).

    >>> plot_text("cost $a$ b\\nc")
    'cost \\\\$a\\\\$ b c'
    """
    return "".join(" " if _control(c) else ("\\$" if c == "$" else c) for c in str(value))
