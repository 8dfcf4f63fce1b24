"""This machine: its CPU's name, memory, the process's RSS, and its measured ceilings (memory
bandwidth and FMA peak, csrc/bench.c), which the kernel benchmark, the measurements and the
`host` hardware profile all stand on."""
from __future__ import annotations

import os
import platform

import numpy as np

from glmbench.core._loader import _core
from glmbench.predict import hardware

# ---- facts -----------------------------------------------------------------------
def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> frozenset | None:
    """The instruction-set flags the kernel reports for this CPU (/proc/cpuinfo's first `flags`
    line, e.g. "avx512_vnni"), or None where it cannot be read (no /proc)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def _proc_status(field: str) -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes() -> tuple[int, int]:
    """(current, peak) resident set size of this process in bytes (0 where /proc is missing)."""
    return _proc_status("VmRSS"), _proc_status("VmHWM")


def available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


# ---- ceilings ---------------------------------------------------------------------------------

def _l3_bytes() -> int:
    for idx in range(6):
        base = f"/sys/devices/system/cpu/cpu0/cache/index{idx}"
        try:
            with open(f"{base}/level") as f:
                if f.read().strip() != "3":
                    continue
            with open(f"{base}/size") as f:
                s = f.read().strip().upper()
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1], 1)
            return int(s.rstrip("KMG")) * mult
        except (OSError, ValueError):
            continue
    return 32 << 20  # assumption when sysfs does not say


def measure_ceilings(quick: bool = False) -> dict:
    """{"bandwidth_gbs": triad GB/s, "bandwidth_read_gbs": read-only GB/s, "fma_gflops",
    "fma_vector_bits", "int8_gops", "int8_instr", "threads", "cpu"} for this machine at the current
    thread count. int8: the dot-product peak the quantized GEMMs run on (vpdpbusd with AVX-512 VNNI,
    vpmaddubsw + vpmaddwd on AVX2-only CPUs; _core.bench_int8), NaN / None where neither is built."""
    # STREAM's rule: each array at least 4x the last-level cache, so no pass is served from it.
    n = max(1 << 24, 4 * _l3_bytes() // 4)
    triad, read = _core.bench_bandwidth(n, 4 if quick else 10)
    # 2M iterations x 16 chains x 16 lanes x 2 = 1 GFLOP per thread, ~10 ms: long against the
    # fork/join, short against a scheduler time slice, so the best of many runs on a shared
    # machine is one that ran undisturbed (0.1 s runs measured 40% low under load here)
    gf, bits = _core.bench_fma(2_000_000, 10 if quick else 40)
    try:  # ~1 GOP per thread, as the FMA loop
        i8, instr = _core.bench_int8(1_000_000, 10 if quick else 40)
    except ValueError:  # a portable build: no int8 dot-product instruction compiled in
        i8, instr = float("nan"), None
    return {"bandwidth_gbs": triad, "bandwidth_read_gbs": read, "fma_gflops": gf, "fma_vector_bits": bits,
            "int8_gops": i8, "int8_instr": instr, "threads": _core.get_num_threads(), "cpu": cpu_name()}


def llc_bytes() -> int:
    """The last-level cache of the whole machine: every distinct L3 (by the CPUs sharing it) summed,
    as sysfs reports it; _l3_bytes() when sysfs lists none. A virtual machine may report less than
    the chip has (the probe's size floor covers that)."""
    seen, total = set(), 0
    try:
        cpus = sorted(d for d in os.listdir("/sys/devices/system/cpu") if d[3:].isdigit() and d.startswith("cpu"))
    except OSError:
        cpus = []
    for c in cpus:
        for idx in range(6):
            base = f"/sys/devices/system/cpu/{c}/cache/index{idx}"
            try:
                with open(f"{base}/level") as f:
                    if f.read().strip() != "3":
                        continue
                with open(f"{base}/shared_cpu_list") as f:
                    who = f.read().strip()
                with open(f"{base}/size") as f:
                    sz = f.read().strip().upper()
            except OSError:
                continue
            if who in seen:
                continue
            seen.add(who)
            try:
                total += int(sz.rstrip("KMG")) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(sz[-1], 1)
            except ValueError:
                continue
    return total or _l3_bytes()


# The stability probe reads DRAM: a buffer PROBE_LLC_MULTIPLE times the last-level cache and at
# least PROBE_MIN_BYTES (a VM's sysfs may show one CCX's 32 MiB of a chip with hundreds: a probe of
# twice that read partly from cache and swung 55 -> 94 GB/s by itself on a quiet machine, issue 25),
# at most 1/8 of the available memory. GLMBENCH_PROBE_MIB overrides the size.
PROBE_LLC_MULTIPLE = 4
PROBE_MIN_BYTES = 1 << 30
_DRAM: list = []   # the DRAM probe's buffer, allocated and touched once per process


def probe_buffer_bytes() -> int:
    """Bytes the DRAM probe holds (0 before its first use): part of this process's RSS."""
    return _DRAM[0].nbytes if _DRAM else 0


def _dram_probe_size() -> int:
    env = os.environ.get("GLMBENCH_PROBE_MIB")
    if env:
        try:
            mib = int(env)
        except ValueError:
            raise ValueError(f"GLMBENCH_PROBE_MIB must be a whole number of MiB, got {env!r}") from None
        if mib < 1:
            raise ValueError(f"GLMBENCH_PROBE_MIB must be >= 1, got {mib}")
        return mib << 20
    want = max(PROBE_LLC_MULTIPLE * llc_bytes(), PROBE_MIN_BYTES)
    return max(64 << 20, min(want, available_bytes() // 8))


def probe_dram(reps: int = 2) -> float:
    """Read-only GB/s now, over a buffer several times the last-level cache (so from DRAM), read
    the way a decode step reads its weights (long streams, nothing written; csrc/bench.c
    gb_bench_read), best of `reps` passes (~40 ms each at 25 GB/s for 1 GiB)."""
    if not _DRAM:
        n = _dram_probe_size() // 4
        buf = np.ones(n, np.float32)   # touched: the first timed pass measures no page faults
        _DRAM.append(buf)
        _core.bench_read(buf, 1)
    return float(_core.bench_read(_DRAM[0], int(reps)))


def probe_noise(n: int = 5, reps: int = 2) -> dict:
    """The probe's own variation: `n` readings back to back (nothing else should change between
    them). {"gbs": readings, "spread": largest / smallest}: a drift across a point within this is
    the probe, not the machine."""
    g = [probe_dram(reps) for _ in range(int(n))]
    lo = min(g)
    return {"gbs": g, "spread": (max(g) / lo) if lo > 0 else float("inf")}


_PROBE: list = []  # the probe's three arrays, allocated and touched once per process


def probe_bandwidth(reps: int = 1) -> tuple[float, float]:
    """(triad GB/s, read-only GB/s) now: best of `reps` passes of each over three float32 arrays
    of twice the L3 each (allocated once; ~10 ms a call at reps=1), cheap enough to run after every
    decode step. measure() pairs it with each step when asked to (bandwidth_probe=True), with one
    pass each: a best-of would pick the machine's quiet moments, while the step it is paired with
    runs through the noisy ones too."""
    if not _PROBE:
        n = max(1 << 22, 2 * _l3_bytes() // 4)
        _PROBE.extend([np.full(n, 0.0, np.float32), np.ones(n, np.float32), np.full(n, 2.0, np.float32)])
        _core.bench_probe(*_PROBE, 1)  # untimed: the first pass over fresh pages measures page faults
    a, b, c = _PROBE
    triad, read = _core.bench_probe(a, b, c, int(reps))
    return float(triad), float(read)


def probe_read() -> float:
    """Read-only GB/s now: one pass over probe_bandwidth's b array (twice the L3), nothing written.
    measure(bandwidth_probe="read") pairs it with each decode step: unlike the triad, it leaves no
    dirty lines in the cache for the next step to write back while it streams its weights (the
    triad's cost a glm-Q4_K_M decode step at depth 0 ~8% on a Zen 3 VM, 2026-12-03)."""
    if not _PROBE:
        probe_bandwidth()                # allocates and touches the arrays (a triad pass) ...
        _core.bench_read(_PROBE[1], 1)   # ... whose written lines this untimed read evicts now
    return float(_core.bench_read(_PROBE[1], 1))



# ---- the host as a hardware profile ------------------------------------------------------------
# The CPU "launch" is an OpenMP fork/join: a few microseconds on a 2-16 core machine (assumption).
_CPU_LAUNCH_US = 2.0


def host_profile(ceilings: dict | None = None):
    """This machine's CPU as a hardware profile (glmbench.predict.hardware.GPU, kind "cpu"), from
    its ceilings measured now (measure_ceilings()) unless given. The same FMA peak stands for every
    dtype: glmbench's CPU kernels convert to f32 and multiply there."""
    return hardware.cpu_profile(measure_ceilings() if ceilings is None else ceilings,
                                launch_us=_CPU_LAUNCH_US, source="measured by glmbench.measure.machine.measure_ceilings()")
