"""Hardware profiles for the cost model: GPUs (built-in JSON from datasheets, or the user's own TOML
or JSON file), this machine's CPU (measured ceilings), and a Rig of N identical cards joined by a
link.

Units: memory in GiB (2^30 bytes); bandwidths in GB/s (10^9 bytes/s, as datasheets state them,
including `link_gbps`); compute peaks in TFLOPS (TOPS for int8) per dtype, dense, with FP32
accumulation for the 16-bit tensor-core figures; launch and link latency in microseconds.

A profile file holds exactly these fields (unknown ones are rejected so that a typo is not
silently ignored):

    name = "RTX 3090"          # required
    memory_gib = 24            # required, > 0
    bandwidth_gbs = 936        # required, > 0
    launch_us = 3              # required, >= 0: cost of one kernel launch
    link_gbps = 25             # optional: card-to-card bandwidth when several are used
    link_latency_us = 10       # optional: per-transfer latency
    source = "..."             # optional: where the numbers come from
    kind = "gpu"               # optional: "gpu" (default) or "cpu" (a saved host profile:
                               # `glmbench hardware --save-host FILE`)
    [tflops]                   # required table: fp16 and fp32 required; bf16 defaults to fp16,
    fp16 = 71                  # int8 defaults to fp16 (no faster integer path)
    fp32 = 35.6
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field

from glmbench import vocab

_DATA = os.path.join(vocab.DATA_DIR, "hardware")

DTYPES = ("fp16", "bf16", "fp32", "int8")
GIB = 1 << 30

# Sanity ceilings: a value beyond these is a unit mistake (bytes for GiB, MB/s for GB/s...),
# not a device. The largest single accelerators today hold < 300 GB, stream < 10 TB/s and
# peak < 10 PFLOPS dense.
_LIMITS = {"memory_gib": 100_000, "bandwidth_gbs": 100_000, "tflops": 100_000, "launch_us": 100_000,
           "link_gbps": 100_000, "link_latency_us": 1_000_000}

# The study's two RTX 3090s measured only ~1.4 GB/s between them (REFERENCE.md section 3).
# REFERENCE.md section 5 speaks of "tens of microseconds of latency per transfer" for such a link;
# 30 us is an assumption inside that range.
STUDY_LINK_GBPS = 1.4
STUDY_LINK_LATENCY_US = 30.0


@dataclass(frozen=True)
class GPU:
    name: str
    memory_gib: float
    bandwidth_gbs: float
    tflops: dict = field(compare=False)
    launch_us: float
    link_gbps: float | None = None
    link_latency_us: float | None = None
    source: str = field(default="", compare=False)
    kind: str = "gpu"                     # "gpu" | "cpu"
    key: str = ""                         # built-in file name, or the profile path

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * GIB)

    def peak_flops(self, dtype: str) -> float:
        """FLOP/s for `dtype` ("fp16", "bf16", "fp32", "int8")."""
        try:
            return self.tflops[dtype] * 1e12
        except KeyError:
            raise ValueError(f"`dtype` must be one of {DTYPES}, got {dtype!r}") from None

    def __hash__(self):
        return hash((self.name, self.memory_gib, self.bandwidth_gbs, self.launch_us, self.key,
                     tuple(sorted(self.tflops.items()))))


def _num(where, key, v, *, minimum=0.0, strict=True):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{where}: field `{key}` must be a number, got {v!r}")
    if (v <= minimum) if strict else (v < minimum):
        raise ValueError(f"{where}: field `{key}` must be {'>' if strict else '>='} {minimum:g}, got {v!r}")
    limit = _LIMITS.get(key.split(".")[0])
    if limit is not None and v > limit:
        raise ValueError(f"{where}: field `{key}` = {v!r} is not plausible (limit {limit}); check its unit")
    return float(v)


def profile_from_dict(d: dict, where: str = "profile", key: str = "") -> GPU:
    """Validate a profile dict (see the module docstring) -> GPU."""
    vocab.check_table(d, where, known={"name", "memory_gib", "bandwidth_gbs", "tflops", "launch_us", "link_gbps",
                                       "link_latency_us", "source", "kind"},
                      required=("name", "memory_gib", "bandwidth_gbs", "tflops", "launch_us"))
    name = d["name"]
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: field `name` must be a non-empty string, got {name!r}")
    tf = d["tflops"]
    if not isinstance(tf, dict):
        raise ValueError(f"{where}: field `tflops` must be a table of dtype = TFLOPS, got {tf!r}")
    bad = sorted(set(tf) - set(DTYPES))
    if bad:
        raise ValueError(f"{where}: field `tflops.{bad[0]}` is not a dtype (known: {', '.join(DTYPES)})")
    for k in ("fp16", "fp32"):
        if k not in tf:
            raise ValueError(f"{where}: field `tflops.{k}` is missing")
    tflops = {k: _num(where, f"tflops.{k}", v) for k, v in tf.items()}
    tflops.setdefault("bf16", tflops["fp16"])
    tflops.setdefault("int8", tflops["fp16"])
    link = d.get("link_gbps")
    lat = d.get("link_latency_us")
    source = d.get("source", "")
    if not isinstance(source, str):
        raise ValueError(f"{where}: field `source` must be a string, got {source!r}")
    kind = d.get("kind", "gpu")
    if kind not in ("gpu", "cpu"):
        raise ValueError(f"{where}: field `kind` must be 'gpu' or 'cpu', got {kind!r}")
    return GPU(
        name=name.strip(),
        memory_gib=_num(where, "memory_gib", d["memory_gib"]),
        bandwidth_gbs=_num(where, "bandwidth_gbs", d["bandwidth_gbs"]),
        tflops=tflops,
        launch_us=_num(where, "launch_us", d["launch_us"], strict=False),
        link_gbps=None if link is None else _num(where, "link_gbps", link),
        link_latency_us=None if lat is None else _num(where, "link_latency_us", lat, strict=False),
        source=source, kind=kind, key=key or name.strip(),
    )


def profile_to_dict(gpu: GPU) -> dict:
    """The profile as the fields profile_from_dict reads (a saved `host` profile loads back as one:
    `glmbench hardware --save-host FILE`)."""
    d = {k: v for k, v in dataclasses.asdict(gpu).items() if v is not None}
    d.pop("key", None)
    return d


def _read_table(path: str) -> dict:
    if path.endswith(".toml"):
        try:
            import tomllib
        except ModuleNotFoundError:   # Python 3.10
            try:
                import tomli as tomllib
            except ModuleNotFoundError:
                raise RuntimeError(f"{path}: reading TOML needs Python 3.11+ (tomllib) or the tomli package") from None
        try:
            with open(path, "rb") as f:
                return tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: not valid TOML ({e})") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    if path.endswith(".json"):
        try:
            with open(path) as f:
                return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    raise ValueError(f"profile path must end in .toml or .json, got {path!r}")


def load_profile(path) -> GPU:
    """A user GPU profile from a TOML or JSON file (fields in the module docstring)."""
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise ValueError(f"profile file {p!r} does not exist")
    return profile_from_dict(_read_table(p), where=p, key=p)


def _norm(name: str) -> str:
    return name.strip().lower().replace(" ", "-").replace("_", "-")


def list_gpus() -> list[str]:
    """Built-in GPU profile keys ("rtx-3090", "h100-sxm", ...)."""
    return sorted(f[:-5] for f in os.listdir(_DATA) if f.endswith(".json"))


def get_gpu(name) -> GPU:
    """A built-in GPU by key or display name ("rtx-3090" or "RTX 3090"); "host"/"cpu" (this
    machine, measured) is resolved on the measured side and refused here; a path loads a profile file; a GPU passes through."""
    if isinstance(name, GPU):
        return name
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"`gpu` must be a name, a profile path or a GPU, got {type(name).__name__}")
    s = os.fspath(name)
    if _norm(s) in HOST_NAMES:
        raise ValueError(f"{s!r} is this machine's CPU, measured now: resolve it with "
                         "glmbench.measure.machine.host_profile() (the CLI and report do) and pass the profile")
    k = _norm(s)
    if k in list_gpus():
        return profile_from_dict(_read_table(os.path.join(_DATA, k + ".json")), where=k, key=k)
    if s.endswith((".toml", ".json")):
        return load_profile(s)
    raise ValueError(f"unknown GPU {s!r}; built-in: {', '.join(list_gpus())}, or a .toml/.json profile path")


HOST_NAMES = ("host", "cpu", "host-cpu")


def is_host(name) -> bool:
    """True for the names that mean "this machine's CPU, measured now" (resolved on the measured
    side: glmbench.measure.machine.host_profile)."""
    return isinstance(name, (str, os.PathLike)) and _norm(os.fspath(name)) in HOST_NAMES


def cpu_profile(ceilings: dict, *, launch_us: float, source: str) -> GPU:
    """A CPU as a profile from its measured ceilings ({'bandwidth_gbs', 'fma_gflops', 'threads',
    'cpu'}); the numbers are given, nothing is measured here."""
    if not isinstance(ceilings, dict):
        raise ValueError(f"`ceilings` must be a dict, got {type(ceilings).__name__}")
    for k in ("bandwidth_gbs", "fma_gflops"):
        if k not in ceilings:
            raise ValueError(f"ceilings: field `{k}` is missing")
    bw = _num("ceilings", "bandwidth_gbs", ceilings["bandwidth_gbs"])
    gf = _num("ceilings", "fma_gflops", ceilings["fma_gflops"])
    threads = ceilings.get("threads", os.cpu_count())
    cpu = str(ceilings.get("cpu", "host CPU"))
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    except (ValueError, OSError, AttributeError):
        mem = 0.0
    t = gf / 1000.0
    return GPU(name=f"{cpu} ({threads} threads)", memory_gib=mem, bandwidth_gbs=bw,
               tflops={"fp16": t, "bf16": t, "fp32": t, "int8": t}, launch_us=launch_us,
               source=source, kind="cpu", key="host")


@dataclass(frozen=True)
class Rig:
    """N identical cards joined by a link of `link_gbps` GB/s (per direction) with
    `link_latency_us` per transfer. Defaults: the GPU profile's own link (PCIe or NVLink)."""
    gpu: GPU
    n_cards: int = 1
    link_gbps: float | None = None
    link_latency_us: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "gpu", get_gpu(self.gpu))
        n = self.n_cards
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"`n_cards` must be an integer >= 1, got {n!r}")
        lg = self.gpu.link_gbps if self.link_gbps is None else self.link_gbps
        ll = self.gpu.link_latency_us if self.link_latency_us is None else self.link_latency_us
        if n > 1:
            if lg is None:
                raise ValueError(f"`link_gbps` is needed for {n} x {self.gpu.name} (the profile has no link)")
            lg = _num("Rig", "link_gbps", lg)
            ll = _num("Rig", "link_latency_us", 0.0 if ll is None else ll, strict=False)
        else:
            lg = None if lg is None else _num("Rig", "link_gbps", lg)
            ll = None if ll is None else _num("Rig", "link_latency_us", ll, strict=False)
        object.__setattr__(self, "link_gbps", lg)
        object.__setattr__(self, "link_latency_us", ll)

    @property
    def name(self) -> str:
        if self.n_cards == 1:
            return self.gpu.name
        return f"{self.n_cards} x {self.gpu.name} @ {self.link_gbps:g} GB/s"


def study_rig() -> Rig:
    """The study's machine: two RTX 3090 that measured ~1.4 GB/s between them."""
    return Rig(get_gpu("rtx-3090"), 2, link_gbps=STUDY_LINK_GBPS, link_latency_us=STUDY_LINK_LATENCY_US)


# ---- the host (CPU + system memory) for partial offload ------------------------------------------
_HOSTS = os.path.join(vocab.DATA_DIR, "hosts")
DEFAULT_HOST = "desktop-ddr5"


@dataclass(frozen=True)
class Host:
    """The machine a card sits in, for weights kept in system memory (llama.cpp's partial offload):
    its streamed memory bandwidth (GB/s, what a STREAM-like triad reaches, not the datasheet peak),
    the FLOP/s its CPU matmuls reach per dtype (TFLOPS), its cores and memory, and the PCIe link to
    the card (GB/s per direction, latency per transfer)."""
    name: str
    memory_gib: float
    bandwidth_gbs: float
    tflops: dict = field(compare=False)
    cores: int = 0
    pcie_gbps: float | None = None       # None: the card profile's link_gbps
    pcie_latency_us: float | None = None
    source: str = field(default="", compare=False)
    key: str = ""

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * GIB)

    def __hash__(self):
        return hash((self.name, self.memory_gib, self.bandwidth_gbs, self.cores, self.pcie_gbps,
                     self.pcie_latency_us, self.key, tuple(sorted(self.tflops.items()))))


def host_from_dict(d: dict, where: str = "host", key: str = "") -> Host:
    """A host profile from a table of its fields (unknown ones rejected)."""
    vocab.check_table(d, where, known={"name", "memory_gib", "bandwidth_gbs", "tflops", "cores", "pcie_gbps",
                                       "pcie_latency_us", "source"},
                      required=("name", "bandwidth_gbs", "tflops"))
    tf = d["tflops"]
    if not isinstance(tf, dict) or "fp32" not in tf:
        raise ValueError(f"{where}: field `tflops` must be a table with at least `fp32`, got {tf!r}")
    bad = sorted(set(tf) - set(DTYPES))
    if bad:
        raise ValueError(f"{where}: field `tflops.{bad[0]}` is not one of {', '.join(DTYPES)}")
    t = {k: _num(where, f"tflops.{k}", v) for k, v in tf.items()}
    for k in ("fp16", "bf16", "int8"):
        t.setdefault(k, t["fp32"])
    cores = d.get("cores", 0)
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 0:
        raise ValueError(f"{where}: field `cores` must be a whole number >= 0, got {cores!r}")
    pg = d.get("pcie_gbps")
    pl = d.get("pcie_latency_us")
    return Host(name=str(d["name"]), memory_gib=_num(where, "memory_gib", d.get("memory_gib", 0.0), strict=False),
                bandwidth_gbs=_num(where, "bandwidth_gbs", d["bandwidth_gbs"]), tflops=t, cores=cores,
                pcie_gbps=None if pg is None else _num(where, "pcie_gbps", pg),
                pcie_latency_us=None if pl is None else _num(where, "pcie_latency_us", pl, strict=False),
                source=str(d.get("source", "")), key=key)


def list_hosts() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(_HOSTS) if f.endswith(".json"))


def host_from_cpu(cpu: GPU) -> Host:
    """A host profile from a CPU profile (cpu_profile / glmbench.measure.machine.host_profile: this
    machine measured): its bandwidth, FLOP/s and memory; PCIe from the card's profile."""
    if not isinstance(cpu, GPU) or cpu.kind != "cpu":
        raise ValueError(f"`cpu` must be a CPU profile (kind 'cpu'), got {cpu!r}")
    return Host(name=cpu.name, memory_gib=cpu.memory_gib, bandwidth_gbs=cpu.bandwidth_gbs, tflops=dict(cpu.tflops),
                cores=0, source=cpu.source, key=cpu.key)


def get_host(src=None) -> Host:
    """A host profile: a Host, a built-in name (desktop-ddr5, workstation-ddr5; None: the default
    desktop), a CPU profile (this machine, measured: `host` is resolved on the measured side by
    glmbench.measure.machine.host_profile), or a .json/.toml path."""
    if src is None:
        src = DEFAULT_HOST
    if isinstance(src, Host):
        return src
    if isinstance(src, GPU):
        return host_from_cpu(src)
    if isinstance(src, dict):
        return host_from_dict(src)
    if isinstance(src, (str, os.PathLike)):
        s = os.fspath(src)
        if _norm(s) in list_hosts():
            p = os.path.join(_HOSTS, _norm(s) + ".json")
            with open(p) as f:
                return host_from_dict(json.load(f), where=p, key=_norm(s))
        if is_host(s):
            raise ValueError("host profile 'host' (this machine) is measured: resolve it with "
                             "glmbench.measure.machine.host_profile() and pass the result")
        if s.endswith((".json", ".toml")):
            if not os.path.isfile(s):
                raise ValueError(f"host profile file {s!r} does not exist")
            return host_from_dict(_read_table(s), where=s, key=s)
        raise ValueError(f"unknown host profile {s!r}; built-in: {', '.join(list_hosts())}, 'host' (this machine), "
                         f"or a .json/.toml path")
    raise TypeError(f"`host` must be a name, a path, a dict or a Host, got {type(src).__name__}")
