"""Hardware profiles for the cost model: GPUs (built-in JSON from datasheets, or the user's own TOML
or JSON file), this machine's CPU (measured ceilings), and a Rig of N identical cards joined by a
link.

Units: memory in GiB (2^30 bytes); bandwidths in GB/s (10^9 bytes/s, as datasheets state them,
including `link_gbps`); compute peaks in TFLOPS (TOPS for int8) per dtype, dense, with FP32
accumulation for the 16-bit tensor-core figures; launch and link latency in microseconds.

A profile file holds exactly these fields (unknown ones are rejected so that a typo is not
silently ignored):

    name = "RTX 3090"          # required
    memory_gib = 24            # required, > 0 (a GPU's 1 to 4096: else a unit mistake, TB or MiB)
    bandwidth_gbs = 936        # required, > 0 (a GPU's >= 10: else TB/s)
    launch_us = 3              # required, >= 0: cost of one kernel launch
    link_gbps = 25             # optional: card-to-card bandwidth when several are used
    link_latency_us = 10       # optional: per-transfer latency
    source = "..."             # optional: where the numbers come from
    kind = "gpu"               # optional: "gpu" (default) or "cpu" (a saved host profile:
                               # `glmbench hardware --save-host FILE`)
    aliases = ["NVIDIA GeForce RTX 3090"]   # optional: other names of the card (resolve_gpu_name)
    arch = "Ampere"            # optional, descriptive: architecture,
    compute_capability = "8.6" #   CUDA compute capability (major.minor),
    bus = "PCIe 4.0 x16"       #   host bus or form factor ("SXM5", "SoC"),
    memory_type = "GDDR6X"     #   memory technology,
    nvlink_gbps = 56.25        #   NVLink per direction where the card has one (a bridge is not
                               #   assumed: `link_gbps` is what a Rig uses)
    boost_mhz = 1695           # optional (>= 100: else GHz): the GPU's boost clock; a runtime model's fixed time per
                               # kernel is latency (clock cycles), so it scales as 1 / clock
                               # (kernels.clock_scale; without it: the 2 GHz reference clock)
    [tflops]                   # required table: fp16 and fp32 required; bf16 defaults to fp16,
    fp16 = 71                  # int8 defaults to fp16 (no faster integer path)
    fp32 = 35.6
    fp16_acc16 = 142           # optional: f16 tensor rate with f16 accumulate (GeForce cards run
                               # f16 x f16 -> f32 at half this rate; `fp16` is the f32-accumulate
                               # rate); peak_flops("fp16_acc16") falls back to `fp16`
    fp8 = 330.3                # optional: dense FP8 (e4m3) tensor rate with f32 accumulate, only on
                               # cards with FP8 tensor cores (Ada sm_89, Hopper, Blackwell); what
                               # vLLM's W8A8 fp8 GEMMs run against (costmodel: fp8 weights)

The built-in catalog (data/hardware/*.json, docs/SOURCES.md "GPU catalog") holds every NVIDIA GPU
from Volta (sm_70) on that llama.cpp and vLLM users run; `resolve_gpu_name` maps the names tools
print ("NVIDIA GeForce RTX 3090 Ti", "Tesla T4", "NVIDIA A100-SXM4-80GB", "A100 80 GB") to a key.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import os
import re
from dataclasses import dataclass, field

from glmbench import vocab

_DATA = os.path.join(vocab.DATA_DIR, "hardware")

DTYPES = ("fp16", "bf16", "fp32", "int8")
# Rates a profile may add beside DTYPES: f16 tensor with f16 accumulate (what cuBLAS runs for
# CUBLAS_COMPUTE_16F; twice `fp16` on GeForce cards, equal to it on the others); the dense FP8 tensor
# rate with f32 accumulate (only cards with FP8 tensor cores: sm_89 and later).
EXTRA_RATES = ("fp16_acc16", "fp8")
# Descriptive profile fields (strings; the cost model does not read them).
_DESCRIPTIVE = ("arch", "compute_capability", "bus", "memory_type")
GIB = 1 << 30

# Sanity ceilings: a value beyond these is a unit mistake (bytes for GiB, MB/s for GB/s...),
# not a device. The largest single accelerators today hold < 300 GB, stream < 10 TB/s and
# peak < 10 PFLOPS dense.
_LIMITS = {"memory_gib": 100_000, "bandwidth_gbs": 100_000, "tflops": 100_000, "launch_us": 100_000,
           "link_gbps": 100_000, "link_latency_us": 1_000_000, "boost_mhz": 10_000}
# Sanity ranges of a GPU profile (kind "gpu"; a measured CPU may be slower, or hold terabytes): a
# value outside these is a unit mistake the ceilings above let through (TB or MiB for GiB, TB/s for
# GB/s, GHz for MHz). The catalog's cards hold 4-185 GiB and stream 102-8000 GB/s; boost clocks run
# 0.6-3 GHz.
_GPU_RANGES = {"memory_gib": (1, 4096, "GiB, not TB or MiB"), "bandwidth_gbs": (10, None, "GB/s, not TB/s"),
               "boost_mhz": (100, None, "MHz, not GHz")}
# A host's alike: any host's DRAM streams GB/s (a single DDR4 channel ~20, a Raspberry Pi 4 ~4), so under
# 1 is TB/s written as GB/s; over 64 TiB of memory is MiB written as GiB
_HOST_RANGES = {"bandwidth_gbs": (1, None, "GB/s, not TB/s"), "memory_gib": (None, 65536, "GiB, not MiB")}

# The study's two RTX 3090s measured only ~1.4 GB/s between them (docs/SOURCES.md §3).
# docs/SOURCES.md §5 speaks of "tens of microseconds of latency per transfer" for such a link;
# 30 us is an assumption inside that range.
STUDY_LINK_GBPS = 1.4
STUDY_LINK_LATENCY_US = 30.0


def default_link_latency_us(gpu, link_gbps: float | None) -> float:
    """Per-transfer latency of a multi-card rig's link when none is given: the card profile's stated
    latency where the rig uses the profile's stated link (link_gbps None or equal to it: NVLink 5 us,
    PCIe 10 us in the catalog), else the study's assumed 30 us (a link given by its bandwidth alone,
    such as the study's 1.4 GB/s path between two RTX 3090s)."""
    stated = getattr(gpu, "link_gbps", None)
    lat = getattr(gpu, "link_latency_us", None)
    if lat is not None and (link_gbps is None or (stated is not None and float(link_gbps) == float(stated))):
        return float(lat)
    return STUDY_LINK_LATENCY_US


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
    aliases: tuple = field(default=(), compare=False)
    arch: str = field(default="", compare=False)
    compute_capability: str = field(default="", compare=False)
    bus: str = field(default="", compare=False)
    memory_type: str = field(default="", compare=False)
    nvlink_gbps: float | None = field(default=None, compare=False)
    boost_mhz: float | None = field(default=None, compare=False)

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * GIB)

    def peak_flops(self, dtype: str) -> float:
        """FLOP/s for `dtype` ("fp16", "bf16", "fp32", "int8"; "fp16_acc16": f16 with f16
        accumulate, the `fp16` rate where the profile does not give it; "fp8": only where the profile
        gives it, else a ValueError)."""
        if dtype == "fp16_acc16" and dtype not in self.tflops:
            dtype = "fp16"
        try:
            return self.tflops[dtype] * 1e12
        except KeyError:
            if dtype in EXTRA_RATES:
                raise ValueError(f"{self.name}: the profile has no `tflops.{dtype}` peak (no FP8 tensor cores: "
                                 "Ada sm_89 and later have them)" if dtype == "fp8" else
                                 f"{self.name}: the profile has no `tflops.{dtype}` peak") from None
            raise ValueError(f"`dtype` must be one of {DTYPES + EXTRA_RATES}, got {dtype!r}") from None

    def __hash__(self):
        return hash((self.name, self.memory_gib, self.bandwidth_gbs, self.launch_us, self.key,
                     tuple(sorted(self.tflops.items()))))


# the catalog's words (tools/gpu_catalog.py) for a boost clock NVIDIA does not publish
_REPORTED_CLOCK = "not published by NVIDIA; a reported figure"


def clock_unpublished(gpu) -> bool:
    """True for a catalog card whose boost clock (and so its SMs x clock, kernels.sm_ghz) is a
    reported figure, not NVIDIA's (GB10, B200, GB200, H20): its per-SM rates are less certain than
    a datasheet card's."""
    return _REPORTED_CLOCK in (getattr(gpu, "source", "") or "")


def _num(where, key, v, *, minimum=0.0, strict=True):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{where}: field `{key}` must be a number, got {v!r}")
    if (v <= minimum) if strict else (v < minimum):
        raise ValueError(f"{where}: field `{key}` must be {'>' if strict else '>='} {minimum:g}, got {v!r}")
    limit = _LIMITS.get(key.split(".")[0])
    if limit is not None and v > limit:
        raise ValueError(f"{where}: field `{key}` = {v!r} is not plausible (limit {limit}); check its unit")
    return float(v)


def _check_units(d: dict, where: str, ranges: dict, what: str, lenient=()) -> None:
    """A field of `ranges` (field -> (low, high, the unit it is in); None: no bound) outside its range is a
    unit mistake (_GPU_RANGES, _HOST_RANGES), one error naming the unit; each is a number (_num; >= 0 for
    the `lenient` fields, > 0 for the others) first."""
    for k, (lo, hi, unit) in ranges.items():
        v = d.get(k)
        if v is None:
            continue
        x = _num(where, k, v, strict=k not in lenient)
        if (lo is not None and x < lo) or (hi is not None and x > hi):
            bound = f"{lo} to {hi}" if lo is not None and hi is not None else \
                f"at least {lo}" if lo is not None else f"at most {hi}"
            raise ValueError(f"{where}: field `{k}` = {v!r} is not plausible for a {what} ({bound}); "
                             f"check its unit ({unit})")


def profile_from_dict(d: dict, where: str = "profile", key: str = "") -> GPU:
    """Validate a profile dict (see the module docstring) -> GPU."""
    vocab.check_table(d, where, known={"name", "memory_gib", "bandwidth_gbs", "tflops", "launch_us", "link_gbps",
                                       "link_latency_us", "source", "kind", *_DESCRIPTIVE, "aliases", "nvlink_gbps",
                                       "boost_mhz"},
                      required=("name", "memory_gib", "bandwidth_gbs", "tflops", "launch_us"))
    name = d["name"]
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: field `name` must be a non-empty string, got {name!r}")
    tf = d["tflops"]
    if not isinstance(tf, dict):
        raise ValueError(f"{where}: field `tflops` must be a table of dtype = TFLOPS, got {tf!r}")
    bad = sorted(set(tf) - set(DTYPES) - set(EXTRA_RATES))
    if bad:
        raise ValueError(f"{where}: field `tflops.{bad[0]}` is not a dtype (known: {', '.join(DTYPES + EXTRA_RATES)})")
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
    aliases = d.get("aliases", [])
    if not isinstance(aliases, (list, tuple)) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise ValueError(f"{where}: field `aliases` must be a list of non-empty names, got {aliases!r}")
    for k in _DESCRIPTIVE:
        if not isinstance(d.get(k, ""), str):
            raise ValueError(f"{where}: field `{k}` must be a string, got {d[k]!r}")
    cc = d.get("compute_capability", "")
    if cc and not re.fullmatch(r"\d+\.\d+", cc):
        raise ValueError(f"{where}: field `compute_capability` must be 'major.minor' (such as '8.6'), got {cc!r}")
    nvl = d.get("nvlink_gbps")
    clk = d.get("boost_mhz")
    if kind == "gpu":
        _check_units(d, where, _GPU_RANGES, "GPU")
    return GPU(
        name=name.strip(),
        memory_gib=_num(where, "memory_gib", d["memory_gib"]),
        bandwidth_gbs=_num(where, "bandwidth_gbs", d["bandwidth_gbs"]),
        tflops=tflops,
        launch_us=_num(where, "launch_us", d["launch_us"], strict=False),
        link_gbps=None if link is None else _num(where, "link_gbps", link),
        link_latency_us=None if lat is None else _num(where, "link_latency_us", lat, strict=False),
        source=source, kind=kind, key=key or name.strip(),
        aliases=tuple(a.strip() for a in aliases), nvlink_gbps=None if nvl is None else _num(where, "nvlink_gbps", nvl),
        boost_mhz=None if clk is None else _num(where, "boost_mhz", clk),
        **{k: d.get(k, "") for k in _DESCRIPTIVE},
    )



def profile_to_dict(gpu: GPU) -> dict:
    """The profile as the fields profile_from_dict reads (a saved `host` profile loads back as one:
    `glmbench hardware --save-host FILE`)."""
    d = {k: v for k, v in dataclasses.asdict(gpu).items() if v is not None and v != "" and v != ()}
    d.pop("key", None)
    if "aliases" in d:
        d["aliases"] = list(d["aliases"])
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
    """Built-in GPU profile keys ("rtx-3090", "h100-sxm", ...), sorted."""
    return list(_catalog())


def get_gpu(name) -> GPU:
    """A built-in GPU by key, display name or any name `resolve_gpu_name` knows ("rtx-3090",
    "RTX 3090", "NVIDIA GeForce RTX 3090", "Tesla T4"); "host"/"cpu" (this machine, measured) is
    resolved on the measured side and refused here; a path loads a profile file; a GPU passes
    through. An unknown name -> one ValueError listing the nearest catalog names."""
    if isinstance(name, GPU):
        return name
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"`gpu` must be a name, a profile path or a GPU, got {type(name).__name__}")
    s = os.fspath(name)
    if _norm(s) in HOST_NAMES:
        raise ValueError(f"{s!r} is this machine's CPU, measured now: resolve it with "
                         "glmbench.measure.machine.host_profile() (the CLI and report do) and pass the profile")
    k = _norm(s)
    if k in _catalog():
        return _builtin(k)
    if s.endswith((".toml", ".json")):
        return load_profile(s)
    k = resolve_gpu_name(s)
    if k is not None:
        return _builtin(k)
    raise ValueError(unknown_gpu_message(s))


def _builtin(key: str) -> GPU:
    return profile_from_dict(_read_table(os.path.join(_DATA, key + ".json")), where=key, key=key)


# ---- names -> catalog keys -----------------------------------------------------------------------
# Words that name the vendor, brand or product line but not the card; dropped before matching.
_NOISE = {"nvidia", "geforce", "tesla", "quadro", "graphics", "gpu", "generation", "workstation", "edition",
          "design", "card", "cuda", "vulkan", "hbm2", "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x", "gddr7",
          "ws", "dgx", "jetson"}
_LAPTOP = {"laptop", "mobile", "notebook"}
_FORMS = {"sxm": "sxm", "sxm2": "sxm", "sxm3": "sxm", "sxm4": "sxm", "sxm5": "sxm", "sxm6": "sxm",
          "pcie": "pcie", "nvl": "nvl"}
_MEM = re.compile(r"^(\d+(?:\.\d+)?)(gb|gib|g)$")
# A llama.cpp/ggml device line: "Device 0: NVIDIA GeForce RTX 3090 Ti, compute capability 8.6, VMM: yes",
# "ggml_vulkan: 0 = NVIDIA GeForce RTX 3090 (NVIDIA) | uma: 0 | ...", "using device CUDA0 (NVIDIA ...)".
_DEVICE_LINE = (re.compile(r"device\s+\d+\s*:\s*([^,|]+)", re.I), re.compile(r"^\S*:\s*\d+\s*=\s*([^|]+)", re.I),
                re.compile(r"using device \w+ \(([^)]+)\)", re.I))


@dataclass(frozen=True)
class _Name:
    base: str            # the card's words, vendor and qualifiers dropped ("rtx 3090 ti", "a100")
    form: str | None     # "sxm" | "pcie" | "nvl" | None
    mem_gb: float | None

    @property
    def canon(self) -> str:
        return " ".join([self.base] + ([self.form] if self.form else []) +
                        ([f"{self.mem_gb:g}gb"] if self.mem_gb is not None else []))


def _parse_name(text: str) -> _Name:
    """A GPU name as (card words, form factor, memory size): case, spaces, hyphens, underscores,
    vendor words and "(TM)" do not matter; "80GB", "80 GB", "80G" are the memory; SXM2/SXM4/SXM5
    are "sxm", "PCIe"/"PCI-E"/"PCI Express" "pcie"; Laptop/Mobile/Notebook are "laptop"."""
    s = str(text).strip()
    for rx in _DEVICE_LINE:
        m = rx.search(s)
        if m:
            s = m.group(1)
            break
    # the `device` glmbench's own CUDA measurement writes: "GPU: NVIDIA H200" (glmbench/measure/cuda.py)
    s = re.sub(r"^gpu\s*:\s*", "", s, flags=re.I)
    s = s.lower().replace("(tm)", " ").replace("(r)", " ").replace("\u2122", " ").replace("\u00ae", " ")
    s = re.sub(r"\(nvidia\)|\((?:cuda|vulkan)\)|\(one gpu\)", " ", s)
    s = re.sub(r"pci[\s_-]*e(?:xpress)?\b", "pcie", s)
    s = re.sub(r"max[\s_-]*q", "maxq", s)
    s = re.sub(r"(\d+(?:\.\d+)?)\s+(gb|gib)\b", r"\1\2", s)
    toks = [t for t in re.split(r"[\s_\-/,()\[\]]+", s) if t]
    base, form, mem = [], None, None
    for t in toks:
        m = _MEM.match(t)
        if m:
            mem = float(m.group(1))
        elif t in _FORMS:
            form = _FORMS[t]
        elif t in _LAPTOP:
            base.append("laptop")
        elif t not in _NOISE:
            base.append(t)
    # "V100S" and "A100X" are names, not qualifiers; "RTX4090" is "RTX 4090", "RTX6000Ada" "RTX 6000 Ada"
    words = " ".join(base)
    words = re.sub(r"\b(rtx|gtx|gt)(\d)", r"\1 \2", words)
    words = re.sub(r"\b(\d{3,4})(ti|super|d)\b", r"\1 \2", words)
    words = re.sub(r"\b(\d{4})(ada|blackwell)\b", r"\1 \2", words)     # "RTX4000Ada" (a file or folder name)
    return _Name(words, form, mem)


@functools.lru_cache(maxsize=None)
def _catalog() -> dict:
    """{key: profile} of every built-in GPU, read once."""
    return {k: profile_from_dict(_read_table(os.path.join(_DATA, k + ".json")), where=k, key=k)
            for k in sorted(f[:-5] for f in os.listdir(_DATA) if f.endswith(".json"))}


def _form_of(gpu: GPU) -> str | None:
    f = _parse_name(gpu.name).form
    if f:
        return f
    b = gpu.bus.lower()
    return "sxm" if b.startswith("sxm") else "pcie" if b.startswith("pcie") else None


@functools.lru_cache(maxsize=None)
def _name_index() -> dict:
    """{canonical name: key} over every profile's key, name and aliases; a name two profiles claim
    is an error in the catalog (tests/test_hardware.py checks there is none)."""
    out = {}
    for k, g in _catalog().items():
        for n in (k, g.name, *g.aliases):
            c = _parse_name(n).canon
            if out.get(c, k) != k:
                raise ValueError(f"GPU catalog: the name {n!r} ({c!r}) is claimed by both {out[c]} and {k}")
            out[c] = k
    return out


def _mem_matches(gpu: GPU, mem_gb: float) -> bool:
    # a marketed "80 GB" is what nvidia-smi shows less ECC and driver reserves: up to 1/16 less
    return abs(gpu.memory_gib - mem_gb) <= 0.08 * mem_gb


def resolve_gpu_name(text: str) -> str | None:
    """The catalog key of a GPU named as tools print it, or None when the catalog has no such card.

    Accepts a key ("a100-sxm-80gb"), a display name, an alias, a CUDA device name ("NVIDIA GeForce
    RTX 3090 Ti", "NVIDIA A100-SXM4-80GB", "Tesla V100-PCIE-32GB", "NVIDIA H100 80GB HBM3"), a
    llama.cpp device line ("Device 0: NVIDIA GeForce RTX 3090 Ti, compute capability 8.6, VMM: yes")
    or a scoreboard name ("RTX A5000", "A100 80 GB", "Tesla T4"). Case, spaces, hyphens and the words
    NVIDIA/GeForce/Tesla/Quadro do not matter. A memory size ("80GB", "80 GB") or form factor
    (PCIe, SXM, NVL) picks among variants; without one, the variant named bare in the catalog's
    aliases: the one most sold (H100 -> SXM, A100 -> SXM 80 GB, V100 -> SXM2 16 GB, RTX 4060 Ti ->
    8 GB; docs/SOURCES.md "GPU catalog" lists them). Pre-Volta cards (Pascal, Maxwell, Kepler) are
    not in the catalog: None (see `is_pre_volta`)."""
    if not isinstance(text, str) or not text.strip():
        return None
    q = _parse_name(text)
    if not q.base:
        return None
    idx = _name_index()
    if q.canon in idx:
        return idx[q.canon]
    cat = _catalog()
    # every profile with a name of the same card words, then narrowed by form and memory
    cands = sorted({k for c, k in idx.items() if _parse_name_cached(c).base == q.base})
    if q.form:
        cands = [k for k in cands if _form_of(cat[k]) == q.form]
    if q.mem_gb is not None:
        cands = [k for k in cands if _mem_matches(cat[k], q.mem_gb)]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        return None
    # several variants fit: the one that owns the bare name (the most sold), if it is among them
    bare = idx.get(q.base)
    return bare if bare in cands else None


@functools.lru_cache(maxsize=4096)
def _parse_name_cached(c: str) -> _Name:
    return _parse_name(c)


_PRE_VOLTA = re.compile(r"^(?:(?:gtx|gt) (?:[1-9]\d\d|10[1-9]0)\b|gtx titan|titan (?:x|xp|z|black)\b|"
                        r"(?:tesla )?[kmp]\d{1,3}\b|quadro [kmp]\d|gp100\b|mx ?[1-3]\d0\b|grid [km]\d)")


def is_pre_volta(text: str) -> bool:
    """True for cards older than Volta (sm_70) that the catalog leaves out: GTX 10/9/7 series, Titan X/Xp,
    Tesla P/M/K (P40, P100, M40, K80), Quadro P/M/K. GTX 16 (Turing, sm_75) is not pre-Volta."""
    if not isinstance(text, str):
        return False
    q = _parse_name(text)
    raw = re.sub(r"[\s_-]+", " ", str(text).lower())
    return bool(_PRE_VOLTA.match(q.base) or re.search(r"\bquadro [kmp]\d", raw) or
                re.search(r"\btitan (?:x|xp|z|black)\b", q.base))


def unknown_gpu_message(text: str) -> str:
    """The one error for a name the catalog does not have: pre-Volta, or the nearest names."""
    s = str(text)
    if is_pre_volta(s):
        return (f"unknown GPU {s!r}: not in the catalog (pre-Volta: the catalog starts at Volta, sm_70); "
                "give a .toml/.json profile path with its figures")
    q = _parse_name(s)
    idx = _name_index()
    cat = _catalog()
    variants = sorted({k for c, k in idx.items() if q.base and _parse_name_cached(c).base == q.base})
    if variants:   # the card is in the catalog, not with this memory size or form factor
        have = ", ".join(f"{k} ({cat[k].memory_gib:g} GiB, {_form_of(cat[k]) or cat[k].bus})" for k in variants)
        return (f"unknown GPU {s!r}: the catalog has no such variant of this card; it has {have}; "
                "or give a .toml/.json profile path")
    near = []
    for c in difflib.get_close_matches(q.canon or s.lower(), list(idx), n=12, cutoff=0.5):
        if idx[c] not in near:
            near.append(idx[c])
    hint = f"nearest: {', '.join(near[:5])}" if near else f"{len(_catalog())} built-in cards"
    return f"unknown GPU {s!r}; {hint} (all: `glmbench hardware`), or a .toml/.json profile path"


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
    def switched(self) -> bool:
        """The cards reach each other through an NVLink switch: SXM4 and later SXM boards (HGX /
        DGX: NVSwitch) and the Grace superchips' NVLink domains, on the profile's own NVLink
        bandwidth or a faster one (a what-if NVLink on the same fabric: a faster link never prices
        slower). Not SXM2 (DGX-1's hybrid cube mesh: not every pair linked), not PCIe cards
        (bridged pairs at most), not a slower link (PCIe between the boards, say: a ring)."""
        g = self.gpu
        bus = str(getattr(g, "bus", "") or "")
        m = re.match(r"SXM(\d+)", bus)
        fabric = (m is not None and int(m.group(1)) >= 4) or bus.startswith("Superchip")
        nv = getattr(g, "nvlink_gbps", None)
        return bool(self.n_cards > 1 and fabric and nv and self.link_gbps is not None
                    and float(self.link_gbps) >= float(nv))

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
    _check_units(d, where, _HOST_RANGES, "host", lenient=("memory_gib",))
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
