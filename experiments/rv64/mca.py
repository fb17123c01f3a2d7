"""Cross-check of the U74 pipeline model against ``llvm-mca -mcpu=sifive-u74``.

llvm-mca runs LLVM's SiFive7 scheduling model (the source of the U74 parameters in
:data:`.cycles.CORE_MODELS`) with its in-order issue stage. For a straight block it sees no branch
prediction, no fetch redirects and ideal memory, so the comparison uses the same view of our model
(:func:`.cycles.block_cycles`). Steady-state cycles per iteration are measured the same way on
both sides: ``(cycles(200 iterations) - cycles(100 iterations)) / 100``, which removes pipeline
fill and drain and any difference in how the last cycle is counted.

Blocks come from two sources:

* ``core``: the hottest basic blocks (by executed count, from the emulator's per-block counters)
  of the compiled cores (``sifive_u74`` build), disassembled with ``llvm-objdump`` and fed to
  llvm-mca as text; our side decodes the same bytes with :mod:`.decode`.
* ``hand``: hand-made dependence sequences (:data:`HAND_SEQUENCES`), assembled with ``llvm-mc``
  (RV64IM, no compression) and decoded by :mod:`.decode` for our side.

Branch and jump targets are replaced by a label after the block (llvm-mca needs assemblable text;
the target does not change the schedule). Needs LLVM >= 19 (the version whose SiFive7 model has the
``SiFive7AnyToGPRBypass`` read advances the U74 parameters cite): :func:`find_llvm` says why not.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

__all__ = ["HAND_SEQUENCES", "MIN_LLVM", "McaRow", "find_llvm", "mca_cycles_per_iteration",
           "our_cycles_per_iteration", "hand_rows", "core_rows", "hot_blocks"]  # fmt: skip

#: Oldest LLVM whose ``llvm-mca`` runs the SiFive7 model with the bypass entries we follow.
MIN_LLVM = 19

#: Hand-made dependence sequences (name -> RV64 assembly, one instruction per line).
HAND_SEQUENCES = {
    "alu_chain": "add a0, a0, a1\nadd a0, a0, a1\nadd a0, a0, a1",
    "load_to_alu": "ld a0, 0(a1)\nadd a2, a0, a3\nadd a4, a2, a3",
    "load_to_branch": "ld a0, 0(a1)\nbnez a0, 1f\n1:",
    "alu_to_load_address": "addi a1, a1, 8\nld a0, 0(a1)\nadd a2, a2, a0",
    "pointer_chase": "ld a0, 0(a0)\nld a0, 8(a0)",
    "load_alu_load": "ld a0, 0(a0)\nadd a1, a0, a2\nld a0, 0(a1)",
    "mul_chain": "mul a0, a0, a2\nmul a0, a0, a3",
    "mul_to_alu": "mul a0, a1, a2\nadd a1, a0, a3",
    "div_then_alu": "div a0, a1, a2\naddi a3, a4, 1",
    "divw_chain": "divw a0, a0, a2",
    "load_store": "ld a0, 0(a1)\nsd a2, 0(a3)",
    "alu_store": "addi a0, a1, 1\nsd a2, 0(a3)",
    "load_to_store_data": "ld a0, 0(a1)\nsd a0, 8(a2)",
    "load_to_store_address": "ld a0, 0(a1)\nsd a2, 0(a0)",
    "alu_to_store_data": "addi a0, a0, 1\nsd a0, 0(a2)",
    "compare_loop": "ld a4, 0(a1)\nld a5, 8(a1)\nslt a6, a4, a5\naddi a1, a1, 16\nbnez a6, 1f\n1:",
    "mixed_pipes": "addi a0, a0, 1\naddi a1, a1, 1\nld a2, 0(a3)\nbeq a4, a5, 1f\n1:",
}


@dataclass(frozen=True)
class Llvm:
    """An LLVM installation: ``llvm-mca``, ``llvm-mc`` and ``llvm-objdump`` paths and major version."""

    mca: str
    mc: str
    objdump: str
    version: int


def _major(tool: str) -> int:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    m = re.search(r"LLVM version (\d+)", out)
    return int(m.group(1)) if m else 0


def find_llvm() -> tuple[Llvm | None, str]:
    """The newest ``llvm-mca`` (with ``llvm-mc`` and ``llvm-objdump`` beside it) of LLVM >=
    :data:`MIN_LLVM`: ``(Llvm, "")``, or ``(None, reason)`` naming what was found and how to
    install it. Looks at ``$MEMPLAN_LLVM_MCA``, ``PATH`` (``llvm-mca``, ``llvm-mca-NN``) and
    ``/usr/lib/llvm-NN/bin``."""
    cands = []
    env = os.environ.get("MEMPLAN_LLVM_MCA")
    if env:
        cands.append(env)
    for name in ["llvm-mca"] + [f"llvm-mca-{v}" for v in range(30, MIN_LLVM - 6, -1)]:
        p = shutil.which(name)
        if p:
            cands.append(p)
    cands += sorted(glob.glob("/usr/lib/llvm-*/bin/llvm-mca"), reverse=True)
    seen, found = set(), []
    for c in cands:
        real = os.path.realpath(c)
        if real in seen or not os.access(real, os.X_OK):
            continue
        seen.add(real)
        found.append((_major(c), c))
    if not found:
        return None, ("llvm-mca not found; install LLVM >= "
                      f"{MIN_LLVM} (Debian: apt-get install -y llvm-{MIN_LLVM})")  # fmt: skip
    found.sort(reverse=True)
    version, mca = found[0]
    if version < MIN_LLVM:
        return None, (f"llvm-mca {version} ({mca}) predates the SiFive7 bypass model (LLVM >= "
                      f"{MIN_LLVM} needed; Debian: apt-get install -y llvm-{MIN_LLVM})")  # fmt: skip
    d = os.path.dirname(mca)
    suffix = mca.rsplit("llvm-mca", 1)[1]
    tools = {}
    for t in ("llvm-mc", "llvm-objdump"):
        p = os.path.join(d, t + suffix)
        tools[t] = p if os.access(p, os.X_OK) else shutil.which(t + suffix) or ""
        if not tools[t] or _major(tools[t]) != version:
            return None, f"{t}{suffix} of LLVM {version} not found beside {mca}"
    return Llvm(mca, tools["llvm-mc"], tools["llvm-objdump"], version), ""


def _run_mca(llvm: Llvm, asm: str, iterations: int) -> int:
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write(asm + "\n")
        path = f.name
    try:
        proc = subprocess.run(
            [llvm.mca, "-mtriple=riscv64", "-mcpu=sifive-u74", f"-iterations={iterations}", path],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        os.unlink(path)
    m = re.search(r"Total Cycles:\s+(\d+)", proc.stdout)
    if proc.returncode != 0 or not m:
        raise RuntimeError(f"llvm-mca failed on:\n{asm}\n{proc.stderr}")
    return int(m.group(1))


def mca_cycles_per_iteration(llvm: Llvm, asm: str) -> float:
    """llvm-mca's steady-state cycles per iteration of ``asm``: ``(C(200) - C(100)) / 100``."""
    return (_run_mca(llvm, asm, 200) - _run_mca(llvm, asm, 100)) / 100


def our_cycles_per_iteration(insns, model="u74") -> float:
    """Our model's steady-state cycles per iteration, measured as for llvm-mca."""
    from .cycles import block_cycles

    return (block_cycles(insns, model, 200) - block_cycles(insns, model, 100)) / 100


def assemble(llvm: Llvm, asm: str) -> bytes:
    """Machine code of ``asm`` (RV64IM, no compressed instructions) from ``llvm-mc``."""
    proc = subprocess.run([llvm.mc, "-triple=riscv64", "-mattr=+m", "-show-encoding"],
                          input=asm + "\n", capture_output=True, text=True, timeout=60)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"llvm-mc failed on:\n{asm}\n{proc.stderr}")
    out = bytearray()
    for enc in re.findall(r"encoding: \[([^\]]*)\]", proc.stdout):
        # unresolved branch offsets print as 0x63'A' (fixup bits): the opcode and registers,
        # all the decoder reads, are in the hex part
        out += bytes(int(x.strip().split("'")[0], 16) for x in enc.split(","))
    return bytes(out)


@dataclass
class McaRow:
    """One row of ``results/bench_rv64_mca.csv``."""

    block: str
    source: str
    instructions: int
    ours: float
    mca: float
    asm: str

    @property
    def ratio(self) -> float:
        """Ours / llvm-mca."""
        return self.ours / self.mca if self.mca else float("nan")

    def as_record(self) -> dict:
        """One row of ``results/bench_rv64_mca.csv`` (cycles per iteration)."""
        return {"block": self.block, "source": self.source, "instructions": self.instructions,
                "our_cycles_per_iter": self.ours, "mca_cycles_per_iter": self.mca,
                "ratio": round(self.ratio, 4), "asm": self.asm.replace("\n", "; ")}  # fmt: skip


def hand_rows(llvm: Llvm) -> list[McaRow]:
    """:data:`HAND_SEQUENCES` through both models."""
    from .decode import decode_block

    rows = []
    for name, asm in HAND_SEQUENCES.items():
        insns = decode_block(assemble(llvm, asm))
        rows.append(McaRow(name, "hand", len(insns), our_cycles_per_iteration(insns),
                           mca_cycles_per_iteration(llvm, asm), asm))  # fmt: skip
    return rows


_BRANCH_TARGET = re.compile(r"(0x[0-9a-f]+|[0-9a-f]+)\s*(<[^>]*>)?\s*$")
_CONTROL = ("beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez", "bltz",
            "bgtz", "bgt", "ble", "bgtu", "bleu", "j", "jal")  # fmt: skip


def disassemble(llvm: Llvm, elf: str, addr: int, size: int) -> list[str]:
    """Instructions of ``[addr, addr + size)`` as assemblable text (branch targets -> ``1f``)."""
    proc = subprocess.run(
        [llvm.objdump, "-d", "--no-show-raw-insn", "--mattr=+m,+a,+f,+d,+c",
         f"--start-address={addr:#x}", f"--stop-address={addr + size:#x}", elf],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"llvm-objdump failed: {proc.stderr}")
    lines = []
    for line in proc.stdout.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if not m or int(m.group(1), 16) < addr:
            continue
        op, args = m.group(2), m.group(3).split("#")[0].strip()
        if op in _CONTROL and args:
            args = _BRANCH_TARGET.sub("1f", args)
        lines.append(f"{op} {args}".strip())
    return lines


def hot_blocks(problem, cores, per_core: int = 3, cpu: str = "sifive_u74"):
    """The ``per_core`` most executed basic blocks of each core on ``problem``:
    ``[(core, address, size, executions, code bytes)]`` (blocks of one instruction skipped)."""
    import numpy as np

    from .build import build_image
    from .cycles import CORE_MODELS
    from .emulate import code_table, run_core

    img = build_image(cpu)
    base, code, _ = code_table(img)
    out = []
    for core in cores:
        run = run_core(img, core, problem.starts, problem.ends, problem.sizes, problem.alignments,
                       problem.resident.astype(np.int64), models=[CORE_MODELS["u74"]])  # fmt: skip
        ranked = sorted(run.sim.block_counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
        k = 0
        for a, (count, size) in ranked:
            body = code[a - base : a - base + size]
            if size <= 4:
                continue
            out.append((core, a, size, count, body))
            k += 1
            if k == per_core:
                break
    return img, out


def core_rows(llvm: Llvm, problem, cores, per_core: int = 3) -> list[McaRow]:
    """The hottest blocks of each core (:func:`hot_blocks`) through both models."""
    from .decode import decode_block

    img, blocks = hot_blocks(problem, cores, per_core)
    rows, seen = [], set()
    for core, a, size, count, body in blocks:
        if a in seen:
            continue
        seen.add(a)
        asm = "\n".join(disassemble(llvm, str(img.path), a, size)) + "\n1:"
        insns = decode_block(body)
        rows.append(McaRow(f"{core}@{a:#x} ({count} runs)", "core", len(insns),
                           our_cycles_per_iteration(insns), mca_cycles_per_iteration(llvm, asm),
                           asm))  # fmt: skip
    return rows
