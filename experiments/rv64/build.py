"""Cross-compile the allocator cores (``cores.c``) to RV64 machine code with ``ziglang`` and cache it.

The image is a static, freestanding ELF64 (no libc) linked by ``link.ld`` at ``0x10000``. Compiled
images are cached by the SHA-256 of (compiler command with file names, not paths, ``cores.c``,
``link.ld``, zig version) under
``$MEMPLAN_CACHE`` or ``~/.cache/memplan/rv64``, so the compiler runs once per source change and CPU.

Seed 000 section 8 compiles its allocator for RV64 (``riscv64-unknown-linux-gnu-gcc -O2 -static``)
and runs it under ``qemu-riscv64``; here the compiler is clang from the ``ziglang`` wheel and the
emulator is our RV64IMC interpreter or unicorn, the reference (:mod:`experiments.rv64.emulate`).
"""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CORES", "CPUS", "Image", "build_image", "cache_dir", "compile_command",
           "core_text_bytes", "load_elf", "section_size"]

#: Core ids of ``memplan_run`` (``cores.c``) by planner registry name.
CORES = {
    "greedy_in_order": 0,
    "first_fit": 1,
    "best_fit": 2,
    "greedy_by_size": 3,
    "freelist_bump": 4,
    "greedy_by_size_tree": 5,
}

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "cores.c"
LINKER_SCRIPT = HERE / "link.ld"

#: ``-mcpu`` per build name: a generic RV64GC baseline and the SiFive U74 (the HiFive Unmatched /
#: VisionFive 2 application core). Both include the C extension, so images contain compressed
#: instructions; :mod:`experiments.rv64.decode` decodes them.
CPUS = {"baseline_rv64": "baseline_rv64", "sifive_u74": "sifive_u74"}


def cache_dir() -> Path:
    """The image cache directory (``$MEMPLAN_CACHE/rv64`` or ``~/.cache/memplan/rv64``; the temp
    directory when that is not writable). Created on first use."""
    root = os.environ.get("MEMPLAN_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "memplan"
    d = base / "rv64"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:  # read-only home (some CI runners): fall back to the temp directory
        d = Path(tempfile.gettempdir()) / "memplan-rv64"
        d.mkdir(parents=True, exist_ok=True)
    return d


def compile_command(cpu: str, out: Path, only_core: int | None = None) -> list[str]:
    """The ``python -m ziglang cc`` command line that builds the image for ``cpu``
    (``only_core``: an image with that core alone, ``-DMEMPLAN_CORE=<id>``, for code size)."""
    if cpu not in CPUS:
        raise ValueError(f"unknown RV64 cpu {cpu!r}; known: {', '.join(CPUS)}")
    only = [] if only_core is None else [f"-DMEMPLAN_CORE={int(only_core)}"]
    return [
        sys.executable, "-m", "ziglang", "cc",
        "-target", "riscv64-freestanding-none", f"-mcpu={CPUS[cpu]}",
        "-O2", "-ffreestanding", "-nostdlib", "-static", "-fno-builtin",
        "-std=c99", *only, "-T", str(LINKER_SCRIPT), str(SOURCE), "-o", str(out),
    ]  # fmt: skip


@dataclass(frozen=True)
class Image:
    """A loaded RV64 image.

    Attributes
    ----------
    path : Path of the cached ELF file.
    segments : list of ``(address, bytes)`` to map (PT_LOAD, zero-filled to their memory size).
    symbols : ``{name: (address, size)}`` of the ELF symbol table (functions and labels).
    cpu : build name (a key of :data:`CPUS`).
    digest : content hash of the build inputs.
    """

    path: Path
    segments: list
    symbols: dict
    cpu: str
    digest: str


def load_elf(path: Path) -> tuple[list, dict]:
    """Parse a little-endian ELF64: PT_LOAD segments and the symbol table. ``O(file size)``.

    Raises ``ValueError`` when the file is not a little-endian ELF64 RISC-V executable.
    """
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a little-endian ELF64 file")
    (e_machine,) = struct.unpack_from("<H", data, 18)
    if e_machine != 243:
        raise ValueError(f"{path}: ELF machine {e_machine} is not RISC-V (243)")
    e_phoff, e_shoff = struct.unpack_from("<QQ", data, 32)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", data, 54)
    segments = []
    for k in range(e_phnum):
        p_type, _flags, p_off, p_vaddr, _pa, p_filesz, p_memsz = struct.unpack_from(
            "<IIQQQQQ", data, e_phoff + k * e_phentsize
        )
        if p_type == 1 and p_memsz:
            body = data[p_off : p_off + p_filesz] + bytes(p_memsz - p_filesz)
            segments.append((p_vaddr, body))
    symbols = {}
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + k * e_shentsize) for k in range(e_shnum)
    ]
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        s_off, s_size = strtab[4], strtab[5]
        names = data[s_off : s_off + s_size]
        for k in range(sh[5] // 24):
            st_name, _info, _other, _shndx, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", data, sh[4] + k * 24
            )
            name = names[st_name : names.index(b"\0", st_name)].decode()
            if name and not name.startswith((".L", "$")):
                symbols[name] = (st_value, st_size)
    return segments, symbols


def section_size(path: Path, name: str) -> int:
    """Size in bytes of the ELF64 section ``name`` (0 when absent). ``O(file size)``."""
    data = Path(path).read_bytes()
    (e_shoff,) = struct.unpack_from("<Q", data, 40)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 58)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + k * e_shentsize) for k in range(e_shnum)
    ]
    strtab = sections[e_shstrndx]
    names = data[strtab[4] : strtab[4] + strtab[5]]
    for sh in sections:
        if names[sh[0] : names.index(b"\0", sh[0])].decode() == name:
            return int(sh[5])
    return 0


def core_text_bytes(core: str, cpu: str) -> int:
    """``.text`` bytes of an image built with the allocator core ``core`` alone (plus the
    ``_start`` stub and the ``memset``/``memcpy`` the compiler may call), for ``cpu``."""
    return section_size(build_image(cpu, only_core=CORES[core]).path, ".text")


def build_image(cpu: str = "sifive_u74", only_core: int | None = None) -> Image:
    """Compile (or fetch from the cache) the cores image for ``cpu`` and load it.

    Raises
    ------
    ValueError
        Unknown ``cpu``.
    RuntimeError
        The compiler failed (its stderr is in the message).
    """
    import ziglang  # noqa: F401  (fails clearly if missing; callers check available() first)

    zig_version = getattr(ziglang, "__version__", "")
    if not zig_version:
        try:
            from importlib.metadata import version

            zig_version = version("ziglang")
        except Exception:  # pragma: no cover
            zig_version = "?"
    h = hashlib.sha256()
    # the command with file names only: the key must not depend on where the clone lives
    cmd = compile_command(cpu, Path("OUT"), only_core)[3:]
    cmd = [Path(c).name if c in (str(SOURCE), str(LINKER_SCRIPT)) else c for c in cmd]
    h.update(" ".join(cmd).encode())
    h.update(SOURCE.read_bytes())
    h.update(LINKER_SCRIPT.read_bytes())
    h.update(zig_version.encode())
    digest = h.hexdigest()[:16]
    out = cache_dir() / f"cores-{cpu}-{digest}.elf"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        proc = subprocess.run(compile_command(cpu, tmp, only_core), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"zig cc failed for cpu {cpu!r}:\n{proc.stderr}")
        tmp.replace(out)
    segments, symbols = load_elf(out)
    return Image(out, segments, symbols, cpu, digest)
