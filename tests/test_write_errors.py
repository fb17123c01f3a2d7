"""Every command that writes gives one ``memplan: error:`` line naming the path and the cause, exit
2, no temporary file and no lost record, when the result cannot be written (issue #23 section 3):
a full disk (``/dev/full``, a small full tmpfs), a read-only file system (a read-only bind mount;
root ignores permission bits, so ``chmod`` proves nothing here), a missing parent folder, a parent
that is a file. Mount tests skip with the reason where ``mount`` is refused (not root, no
``CAP_SYS_ADMIN``). Every write goes through :func:`planners.io.atomic_write` /
:func:`planners.io.atomic_output`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import subprocess
import warnings
from pathlib import Path

import pytest
from conftest import shared_case

from experiments.cli import main as memplan_main
from planners.errors import OutputError
from planners.io import atomic_output, atomic_write

SWEEP = """
name = "small"
code_version = "pinned"
workloads = ["seed000", "seed002_ex5.1", {generator = "random_layered", params = {n_ops = 12}, seeds = [3]}]
[schedulers]
file_order = {}
min_live = {}
[planners]
greedy_in_order = {}
first_fit = {}
greedy_by_size = {}
"""


def _model() -> str:
    return str(shared_case("cheader_newline_name.onnx"))


#: Commands that write one file given with ``-o``: argv for a target path.
FILE_COMMANDS = {
    "plan": lambda out: ["plan", _model(), "-o", out],
    "export-json": lambda out: ["export", _model(), "-o", out],
    "export-c-header": lambda out: ["export", _model(), "--format", "c-header", "-o", out],
    "view": lambda out: ["view", _model(), "-o", out],
}


def one_line_error(capsys, rc: int, *needles: str) -> str:
    """Assert exit 2 and exactly one stderr line ``memplan: error: ...`` holding ``needles``."""
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("memplan: error: "), err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@contextlib.contextmanager
def mounted(where: Path, *args: str):
    """``mount ARGS where`` for the block, then ``umount``; skip when mounting is refused."""
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", *args, str(where)], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"mount {' '.join(args)} refused here ({r.stderr.strip()}): needs root "
                    "with CAP_SYS_ADMIN")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@contextlib.contextmanager
def read_only_view(src: Path, where: Path):
    """A read-only bind mount of ``src`` at ``where`` (checked: creating a file there fails with
    ``EROFS``)."""
    with mounted(where, "--bind", str(src)):
        r = subprocess.run(["mount", "-o", "remount,bind,ro", str(where)], capture_output=True,
                           text=True)
        if r.returncode:
            pytest.skip(f"read-only remount refused here ({r.stderr.strip()})")
        try:
            (where / ".probe").write_text("x")
        except OSError as e:
            assert e.errno == errno.EROFS
        else:
            pytest.skip("the read-only bind mount accepts writes here")
        yield where


def fill(folder: Path) -> None:
    """Fill the file system of ``folder`` to the last byte (a filler file written until ENOSPC)."""
    with open(folder / "filler", "wb", buffering=0) as f:  # unbuffered: close flushes nothing
        with pytest.raises(OSError) as info:
            while True:
                f.write(b"\0" * 4096)
    assert info.value.errno == errno.ENOSPC


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A sweep folder with records and a `memplan compare` folder, to write reports from."""
    base = tmp_path_factory.mktemp("results")
    cfg = base / "sw.toml"
    cfg.write_text(f'out = "{base / "sw"}"\nworkloads = ["seed002_ex5.1"]\n[planners]\n'
                   "first_fit = {}\n")
    assert memplan_main(["sweep", str(cfg), "--quiet"]) == 0
    assert memplan_main(["compare", "--workloads", "seed002_ex5.1", "--planners", "first_fit",
                         "--quiet", "--out", str(base / "cmp")]) == 0
    return base


#: Commands that write into an output folder: argv for a target folder.
FOLDER_COMMANDS = {
    "compare": lambda r, out: ["compare", "--workloads", "seed002_ex5.1", "--planners",
                               "first_fit", "--quiet", "--out", out],
    "report": lambda r, out: ["report", str(r / "sw"), "--out", out, "--formats", "png"],
    "figures": lambda r, out: ["report", str(r / "cmp"), "--out", out],
}


# -- /dev/full, missing and non-folder parents: no mount needed ---------------------------------


def device(tmp_path: Path, name: str, major: int, minor: int) -> Path:
    """A character device node in ``tmp_path`` (as root: ``mknod``, so that a regression that
    replaces the target by a file cannot replace the system's ``/dev`` node), else ``/dev/NAME``
    itself (a non-root process cannot replace it); skip when neither exists."""
    node = tmp_path / name
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.close(os.open(node, os.O_WRONLY))  # fails on a nodev mount
        return node
    except (OSError, AttributeError):
        if os.geteuid() != 0 and Path("/dev", name).is_char_device():
            return Path("/dev", name)
    pytest.skip(f"cannot make a {name} device node here and /dev/{name} is not safe to use")


@pytest.mark.parametrize("cmd", sorted(FILE_COMMANDS))
def test_full_device_gives_one_line(tmp_path, capsys, cmd):
    full = device(tmp_path, "full", 1, 7)  # /dev/full: every write fails with ENOSPC
    rc = memplan_main(FILE_COMMANDS[cmd](str(full)))
    one_line_error(capsys, rc, f"cannot write {full}: No space left on device")
    assert full.is_char_device()  # written in place, never replaced by a file
    assert sorted(os.listdir(full.parent)) == ["full"] or full.parent == Path("/dev")


@pytest.mark.parametrize("cmd", sorted(FILE_COMMANDS))
def test_missing_or_non_folder_parent(tmp_path, capsys, cmd):
    (tmp_path / "afile").write_text("keep")
    before = tree(tmp_path)
    out = tmp_path / "nodir" / "x.out"
    one_line_error(capsys, memplan_main(FILE_COMMANDS[cmd](str(out))), str(out),
                   f"its folder {out.parent} does not exist")
    out = tmp_path / "afile" / "x.out"
    one_line_error(capsys, memplan_main(FILE_COMMANDS[cmd](str(out))), str(out),
                   f"{tmp_path / 'afile'} is not a folder")
    one_line_error(capsys, memplan_main(FILE_COMMANDS[cmd](str(tmp_path))), str(tmp_path),
                   "is a folder")
    assert tree(tmp_path) == before  # nothing written, no temporary file


@pytest.mark.parametrize("cmd", sorted(FOLDER_COMMANDS))
def test_output_folder_under_a_file(tmp_path, capsys, results, cmd):
    (tmp_path / "afile").write_text("keep")
    out = tmp_path / "afile" / "sub"
    one_line_error(capsys, memplan_main(FOLDER_COMMANDS[cmd](results, str(out))),
                   f"{tmp_path / 'afile'} is not a folder")
    one_line_error(capsys, memplan_main(FOLDER_COMMANDS[cmd](results, str(tmp_path / "afile"))),
                   str(tmp_path / "afile"), "not a folder")
    assert tree(tmp_path) == {"afile": b"keep"}


def test_sweep_out_under_a_file(tmp_path, capsys):
    (tmp_path / "afile").write_text("keep")
    cfg = tmp_path / "s.toml"
    cfg.write_text('workloads = ["seed002_ex5.1"]\n[planners]\nfirst_fit = {}\n')
    rc = memplan_main(["sweep", str(cfg), "--out", str(tmp_path / "afile" / "o"), "--quiet"])
    one_line_error(capsys, rc, str(tmp_path / "afile" / "o"), "cannot write")
    assert (tmp_path / "afile").read_text() == "keep"


# -- the helper itself ---------------------------------------------------------------------------


def test_atomic_output_removes_its_temporary_file_on_any_error(tmp_path):
    target = tmp_path / "f.txt"
    target.write_text("old")
    for exc in (RuntimeError("writer failed"), OSError(errno.ENOSPC, "No space left on device")):
        with pytest.raises((RuntimeError, OutputError)) as info:
            with atomic_output(target) as tmp:
                tmp.write_text("half")
                raise exc
        assert target.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["f.txt"]
    assert isinstance(info.value, OutputError) and info.value.errno == errno.ENOSPC
    assert str(info.value) == f"cannot write {target}: No space left on device"
    atomic_write(target, "new")
    assert target.read_text() == "new" and sorted(os.listdir(tmp_path)) == ["f.txt"]


def test_atomic_write_writes_a_device_in_place(tmp_path):
    null = device(tmp_path, "null", 1, 3)
    link = tmp_path / "link"
    link.symlink_to(null)
    atomic_write(null, "x" * 100)
    atomic_write(link, "y" * 100)  # a symbolic link is followed, the device written in place
    assert null.is_char_device() and link.is_symlink() and null.stat().st_size == 0


# -- full file systems and read-only file systems (mounts) ---------------------------------------


@pytest.mark.parametrize("cmd", sorted(FILE_COMMANDS))
def test_full_disk_keeps_the_old_file_and_leaves_no_temporary(tmp_path, capsys, cmd):
    with mounted(tmp_path / "mnt", "-t", "tmpfs", "-o", "size=64k", "tmpfs") as mnt:
        (mnt / "old.out").write_text("the old result")
        fill(mnt)
        before = tree(mnt)
        rc = memplan_main(FILE_COMMANDS[cmd](str(mnt / "old.out")))
        one_line_error(capsys, rc, f"cannot write {mnt / 'old.out'}: No space left on device")
        assert tree(mnt) == before


@pytest.mark.parametrize("cmd", sorted(FOLDER_COMMANDS))
def test_full_disk_in_an_output_folder(tmp_path, capsys, results, cmd):
    with mounted(tmp_path / "mnt", "-t", "tmpfs", "-o", "size=64k", "tmpfs") as mnt:
        fill(mnt)
        rc = memplan_main(FOLDER_COMMANDS[cmd](results, str(mnt / "out")))
        one_line_error(capsys, rc, f"cannot write {mnt / 'out'}", "No space left on device")
        assert not [p for p in mnt.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("cmd", sorted(FILE_COMMANDS) + sorted(FOLDER_COMMANDS) + ["sweep"])
def test_read_only_file_system(tmp_path, capsys, results, cmd):
    src = tmp_path / "src"
    src.mkdir()
    (src / "old.out").write_text("the old result")
    with read_only_view(src, tmp_path / "ro") as ro:
        if cmd in FILE_COMMANDS:
            target = ro / "old.out"
            argv = FILE_COMMANDS[cmd](str(target))
        elif cmd in FOLDER_COMMANDS:
            target = ro / "out"
            argv = FOLDER_COMMANDS[cmd](results, str(target))
        else:
            cfg = tmp_path / "s.toml"
            cfg.write_text('workloads = ["seed002_ex5.1"]\n[planners]\nfirst_fit = {}\n')
            target = ro / "out"
            argv = ["sweep", str(cfg), "--out", str(target), "--quiet"]
        one_line_error(capsys, memplan_main(argv), str(target), "Read-only file system")
    assert tree(src) == {"old.out": b"the old result"}


def test_sweep_that_fills_the_disk_keeps_every_record(tmp_path, capsys):
    """12 runs into a 48 KiB tmpfs: the sweep stops at the first record that does not fit, with
    one line; every record written before is complete and stays; after the disk grows a rerun runs
    only the missing runs and the kept records are byte for byte the same."""
    from experiments.sweep import load_records
    from experiments.sweep.store import CorruptRecordWarning, read_records

    cfg = tmp_path / "s.toml"
    cfg.write_text(SWEEP)
    with mounted(tmp_path / "mnt", "-t", "tmpfs", "-o", "size=48k", "tmpfs") as mnt:
        out = mnt / "sw"
        rc = memplan_main(["sweep", str(cfg), "--out", str(out), "--quiet"])
        line = one_line_error(capsys, rc, f"cannot write {out}", "No space left on device",
                              "records written so far are kept")
        assert line.split(": No space")[0].endswith((".json", ".csv"))  # a record or a problem
        kept = {p.name: p.read_bytes() for p in (out / "records").glob("*.json")}
        with warnings.catch_warnings():
            warnings.simplefilter("error", CorruptRecordWarning)
            recs = read_records(out)
        assert 0 < len(recs) == len(kept) < 12
        assert all(json.loads(b)["status"] == "ok" or json.loads(b)["valid"] for b in kept.values())
        assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
        r = subprocess.run(["mount", "-o", "remount,size=4m", str(mnt)], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        assert memplan_main(["sweep", str(cfg), "--out", str(out), "--quiet"]) == 0
        assert f"{len(kept)} already recorded, {12 - len(kept)} ran" in capsys.readouterr().out
        assert {p.name: p.read_bytes() for p in (out / "records").glob("*.json")
                if p.name in kept} == kept
        assert len(load_records(out)) == 12
