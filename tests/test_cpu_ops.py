"""bench/cpu_ops/vnni_scale_mix.c: it builds, runs, and times the instructions it names (a scale gcc can
see as a constant turns vpmulld into shifts and adds, which then look free: the benchmark hides its
scales from the compiler, and this checks the instructions are in the binary)."""
import os
import platform
import re
import shutil
import subprocess

import pytest

from glmbench.measure.machine import cpu_flags

SRC = os.path.join(os.path.dirname(__file__), "..", "bench", "cpu_ops", "vnni_scale_mix.c")


X86_GCC = platform.machine() == "x86_64" and bool(shutil.which("gcc")) and bool(shutil.which("objdump"))
needs_x86_gcc = pytest.mark.skipif(not X86_GCC, reason="needs an x86-64 machine with gcc and objdump")
needs_vnni = pytest.mark.skipif(
    not X86_GCC or not {"avx512f", "avx512bw", "avx512_vnni"} <= (cpu_flags() or set()),
    reason="needs an x86-64 CPU with AVX-512 VNNI, gcc and objdump")
# each mix holds the instruction it is named after (not strength-reduced away)
MIX_INSNS = {"mix_mulld": ["vpmulld", "vpdpbusd"], "mix_8dp_mulld": ["vpmulld"],
             "mix_pshufb_dpwssd": ["vpshufb", "vpdpwssd"], "mix_cvt_fma": ["vcvtdq2ps", "vfmadd"],
             "mix_cvt_mul_add": ["vcvtdq2ps", "vmulps", "vaddps"]}


def _disasm(binary: str, fn: str) -> str:
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(rf"<{fn}>:\n(.*?)(?:\n\n|\Z)", out, re.S)
    assert m, f"{fn} not found in the binary"
    return m.group(1)


@needs_x86_gcc
def test_vnni_scale_mix_holds_the_instructions_it_names_on_any_x86(tmp_path):
    """Built for AVX-512 VNNI whatever this CPU runs (only disassembled, never run, here): the scales hidden
    from gcc keep each mix's instructions (without the empty asm on them, mix_mulld's vpmulld by 3 becomes a
    shift and an add), so CPUs without VNNI check it too."""
    exe = str(tmp_path / "vnni_scale_mix")
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-mavx512f", "-mavx512bw", "-mavx512vnni", "-mfma",
                    "-o", exe, SRC], check=True)
    for fn, insns in MIX_INSNS.items():
        body = _disasm(exe, fn)
        for insn in insns:
            assert insn in body, f"{fn} has no {insn}"


@needs_vnni
def test_vnni_scale_mix_builds_runs_and_times_what_it_names(tmp_path):
    exe = str(tmp_path / "vnni_scale_mix")
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-march=native", "-o", exe, SRC], check=True)
    for fn, insns in MIX_INSNS.items():
        body = _disasm(exe, fn)
        for insn in insns:
            assert insn in body, f"{fn} has no {insn}"
    r = subprocess.run([exe, "20000"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()[2:]]
    names = [" ".join(row[:-4]) for row in rows]
    assert names == ["none (4 vpdpbusd)", "mulld+add", "pshufb+dpwssd", "cvt+fma", "cvt only", "cvt+mul+add",
                     "8dp+mulld+add"]
    for row in rows:
        cycles, per_cycle, ratio = (float(v) for v in row[-4:-1])
        assert cycles > 0 and per_cycle > 0 and ratio > 0
    assert float(rows[0][-2]) == 1.0 and float(rows[0][-1]) == 0.0   # the plain rate is the reference
    bad = subprocess.run([exe, "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "ITERS must be a positive integer" in bad.stderr
